package field

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

var bigP = new(big.Int).SetUint64(P)

func edge() []Elem {
	return []Elem{0, 1, 2, Elem(P - 1), Elem(P - 2), 1 << 60, 1<<60 - 1, Elem(half), Elem(half + 1), 12345678901234}
}

func TestArithmeticAgainstBig(t *testing.T) {
	r := rng.ForName(t.Name())
	vals := edge()
	for i := 0; i < 2000; i++ {
		vals = append(vals, Random(r))
	}
	check := func(op string, got Elem, want *big.Int) {
		t.Helper()
		want.Mod(want, bigP)
		if uint64(got) != want.Uint64() {
			t.Fatalf("%s = %d, want %s", op, got, want)
		}
	}
	for i, a := range vals {
		b := vals[(i*7+3)%len(vals)]
		A, B := new(big.Int).SetUint64(uint64(a)), new(big.Int).SetUint64(uint64(b))
		check("add", a.Add(b), new(big.Int).Add(A, B))
		check("sub", a.Sub(b), new(big.Int).Sub(A, B))
		check("mul", a.Mul(b), new(big.Int).Mul(A, B))
		check("neg", a.Neg(), new(big.Int).Neg(A))
		if a != 0 {
			inv, err := a.Inv()
			if err != nil || a.Mul(inv) != 1 {
				t.Fatalf("inverse of %d: %d, %v", a, inv, err)
			}
		}
	}
	if _, err := Elem(0).Inv(); !errors.Is(err, ErrZeroInverse) {
		t.Fatal("inverse of zero")
	}
	if FromInt(-5) != Elem(P-5) || FromInt(-5).Int() != -5 || New(P+3) != 3 {
		t.Fatal("FromInt/Int/New")
	}
}

func TestCodec(t *testing.T) {
	c, err := NewCodec(DefaultScaleBits)
	if err != nil {
		t.Fatal(err)
	}
	r := rng.ForName(t.Name())
	for i := 0; i < 10000; i++ {
		v := (r.Float64() - 0.5) * math.Ldexp(1, r.IntN(60)-20)
		e, err := c.Encode(v)
		if err != nil {
			if !errors.Is(err, ErrOverflow) {
				t.Fatal(err)
			}
			continue
		}
		// Rounding to the nearest 1/S: error at most 1/(2S).
		if got := c.Decode(e); math.Abs(got-v) > 0.5/c.Scale()+1e-9*math.Abs(v) {
			t.Fatalf("decode(encode(%v)) = %v", v, got)
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := c.Encode(bad); !errors.Is(err, ErrNotFinite) {
			t.Errorf("encode %v: %v", bad, err)
		}
	}
	if _, err := c.Encode(1e12); !errors.Is(err, ErrOverflow) {
		t.Errorf("encode 1e12 at 2^24: %v", err)
	}
	if _, err := NewCodec(53); !errors.Is(err, ErrScale) {
		t.Error("scale 53 accepted")
	}
	// Sum of encodings decodes to the sum of values.
	vs := []float64{0.25, -1.5, 3.125, -0.0625}
	var acc Elem
	for _, v := range vs {
		e, _ := c.Encode(v)
		acc = acc.Add(e)
	}
	if got := c.Decode(acc); got != 1.8125 {
		t.Fatalf("sum decodes to %v", got)
	}
}

func TestCheckBudgetBoundary(t *testing.T) {
	c, _ := NewCodec(24)
	per := uint64(1 << 24) // bound 1 at 2^24
	limit := half / per
	if err := c.CheckBudget(int(limit), 1); err != nil {
		t.Fatalf("exactly at the limit: %v", err)
	}
	err := c.CheckBudget(int(limit)+1, 1)
	if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("one above the limit: %v", err)
	}
	if err := c.CheckBudget(10000, 10000); err != nil {
		t.Fatalf("10^4 parties with bound 10^4 should fit at 2^24: %v", err)
	}
	if err := c.CheckBudget(0, 1); !errors.Is(err, ErrBudget) {
		t.Fatal("zero parties accepted")
	}
}

func FuzzCodec(f *testing.F) {
	f.Add(0.0)
	f.Add(-1.5)
	f.Add(math.MaxFloat64)
	f.Add(1e-300)
	c, _ := NewCodec(DefaultScaleBits)
	f.Fuzz(func(t *testing.T, v float64) {
		e, err := c.Encode(v)
		if err != nil {
			return
		}
		if got := c.Decode(e); math.Abs(got-v) > 0.5/c.Scale()+1e-9*math.Abs(v) {
			t.Fatalf("decode(encode(%v)) = %v", v, got)
		}
	})
}

func FuzzMul(f *testing.F) {
	f.Add(uint64(P-1), uint64(P-1))
	f.Add(uint64(1)<<63, uint64(12345))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		x, y := New(a), New(b)
		want := new(big.Int).Mul(new(big.Int).SetUint64(uint64(x)), new(big.Int).SetUint64(uint64(y)))
		want.Mod(want, bigP)
		if got := x.Mul(y); uint64(got) != want.Uint64() {
			t.Fatalf("%d*%d = %d, want %s", x, y, got, want)
		}
	})
}

func BenchmarkMul(b *testing.B) {
	x, y := Elem(123456789123), Elem(P-77)
	for i := 0; i < b.N; i++ {
		x = x.Mul(y)
	}
	if x == 0 {
		b.Fatal("zero")
	}
}
