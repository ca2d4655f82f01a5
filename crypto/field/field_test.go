package field

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/ppboost/ppboost/crypto/rng"
)

var bigP = new(big.Int).SetUint64(P)

func bigOf(a Elem) *big.Int { return new(big.Int).SetUint64(uint64(a)) }

// edge are canonical values where carries and reductions change behaviour.
func edge() []Elem {
	return []Elem{0, 1, 2, 3, 7, 8, Elem(P - 1), Elem(P - 2), Elem(P - 8), 1 << 60, 1<<60 - 1, 1<<60 + 1,
		Elem(half), Elem(half + 1), 1 << 32, 1<<32 - 1, 12345678901234}
}

func wantMod(x *big.Int) uint64 { return new(big.Int).Mod(x, bigP).Uint64() }

func checkOps(t *testing.T, a, b Elem) {
	t.Helper()
	A, B := bigOf(a), bigOf(b)
	if got, want := a.Add(b), wantMod(new(big.Int).Add(A, B)); uint64(got) != want {
		t.Fatalf("%d + %d = %d, want %d", a, b, got, want)
	}
	if got, want := a.Sub(b), wantMod(new(big.Int).Sub(A, B)); uint64(got) != want {
		t.Fatalf("%d - %d = %d, want %d", a, b, got, want)
	}
	if got, want := a.Mul(b), wantMod(new(big.Int).Mul(A, B)); uint64(got) != want {
		t.Fatalf("%d * %d = %d, want %d", a, b, got, want)
	}
	for _, c := range []Elem{0, 1, Elem(P - 1), a, b} {
		if got, want := a.MulAdd(b, c), wantMod(new(big.Int).Add(new(big.Int).Mul(A, B), bigOf(c))); uint64(got) != want {
			t.Fatalf("%d * %d + %d = %d, want %d", a, b, c, got, want)
		}
	}
}

func TestArithmeticAgainstBig(t *testing.T) {
	es := edge()
	for _, a := range es { // every pair of edge values
		for _, b := range es {
			checkOps(t, a, b)
		}
	}
	r := rng.ForName(t.Name())
	for i := 0; i < 20000; i++ {
		a, b := Random(r), Random(r)
		if i%4 == 0 { // mix edge values with random ones
			a = es[r.IntN(len(es))]
		}
		checkOps(t, a, b)
	}
}

func TestNegInvPowAgainstBig(t *testing.T) {
	r := rng.ForName(t.Name())
	vals := edge()
	for i := 0; i < 500; i++ {
		vals = append(vals, Random(r))
	}
	for _, a := range vals {
		if got, want := a.Neg(), wantMod(new(big.Int).Neg(bigOf(a))); uint64(got) != want {
			t.Fatalf("-%d = %d, want %d", a, got, want)
		}
		if a.Add(a.Neg()) != 0 {
			t.Fatalf("%d + (-%d) != 0", a, a)
		}
		e := r.Uint64()
		if got, want := a.Pow(e), new(big.Int).Exp(bigOf(a), new(big.Int).SetUint64(e), bigP).Uint64(); uint64(got) != want {
			t.Fatalf("%d^%d = %d, want %d", a, e, got, want)
		}
		if a == 0 {
			continue
		}
		inv, err := a.Inv()
		if err != nil {
			t.Fatalf("inverse of %d: %v", a, err)
		}
		if want := new(big.Int).ModInverse(bigOf(a), bigP).Uint64(); uint64(inv) != want {
			t.Fatalf("1/%d = %d, want %d", a, inv, want)
		}
	}
	if _, err := Elem(0).Inv(); !errors.Is(err, ErrZeroInverse) {
		t.Fatalf("inverse of zero: %v", err)
	}
	if Elem(0).Pow(0) != 1 || Elem(5).Pow(0) != 1 || Elem(5).Pow(P-1) != 1 {
		t.Fatal("Pow: 0^0, 5^0 or Fermat's little theorem")
	}
}

func TestNewFromIntLift(t *testing.T) {
	for _, v := range []uint64{0, 1, P - 1, P, P + 1, 2 * P, 2*P + 5, 1 << 61, 1 << 63, math.MaxUint64, math.MaxUint64 - 1} {
		if got, want := New(v), wantMod(new(big.Int).SetUint64(v)); uint64(got) != want {
			t.Errorf("New(%d) = %d, want %d", v, got, want)
		}
	}
	ints := []int64{0, 1, -1, 5, -5, int64(half), -int64(half), int64(half) + 1, -int64(half) - 1,
		int64(P), -int64(P), int64(P) + 1, -int64(P) - 1, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for _, v := range ints {
		if got, want := FromInt(v), wantMod(big.NewInt(v)); uint64(got) != want {
			t.Errorf("FromInt(%d) = %d, want %d", v, got, want)
		}
	}
	// The centered lift inverts FromInt exactly on [-(P-1)/2, (P-1)/2].
	for _, v := range []int64{0, 1, -1, -5, int64(half), -int64(half), 1 << 40, -(1 << 40)} {
		if got := FromInt(v).Int(); got != v {
			t.Errorf("FromInt(%d).Int() = %d", v, got)
		}
	}
	if Elem(half).Int() != int64(half) || Elem(half+1).Int() != -int64(half) || Elem(P-1).Int() != -1 {
		t.Error("centered lift at the boundary (P-1)/2")
	}
}

// scripted is a rand.Source that replays fixed words, then a counter.
type scripted struct {
	words []uint64
	n     uint64
}

func (s *scripted) Uint64() uint64 {
	if len(s.words) > 0 {
		w := s.words[0]
		s.words = s.words[1:]
		return w
	}
	s.n++
	return s.n << 3
}

func TestRandomRejectsP(t *testing.T) {
	// Top 61 bits equal to P must be rejected, the next word accepted.
	src := &scripted{words: []uint64{P<<3 | 5, (P-1)<<3 | 7}}
	if got := Random(rand.New(src)); got != Elem(P-1) {
		t.Fatalf("Random = %d, want P-1 after rejecting P", got)
	}
}

func TestRandomUniform(t *testing.T) {
	// 64 bins by the top 6 of 61 bits. Each bin holds 2^55 values (the last
	// one 2^55 - 1), so the bin probabilities are 1/64 up to 2^-61.
	const bins, draws = 64, 64 * 400
	r := rng.ForName(t.Name())
	var count [bins]float64
	for i := 0; i < draws; i++ {
		e := Random(r)
		if uint64(e) >= P {
			t.Fatalf("Random returned %d >= P", e)
		}
		count[uint64(e)>>55]++
	}
	stat, exp := 0.0, float64(draws)/bins
	for _, c := range count {
		stat += (c - exp) * (c - exp) / exp
	}
	// Pearson's statistic is chi-square with 63 degrees of freedom under
	// uniformity; reject only beyond its 1 - 1e-6 quantile (≈ 131).
	if limit := (distuv.ChiSquared{K: bins - 1}).Quantile(1 - 1e-6); stat > limit {
		t.Fatalf("chi-square %.1f > %.1f: Random is not uniform", stat, limit)
	}
}

func TestVecAdd(t *testing.T) {
	a, b := []Elem{1, Elem(P - 1), 5}, []Elem{2, 3, Elem(P - 5)}
	dst := make([]Elem, 3)
	if err := VecAdd(dst, a, b); err != nil || dst[0] != 3 || dst[1] != 2 || dst[2] != 0 {
		t.Fatalf("VecAdd = %v, %v", dst, err)
	}
	AddVec(a, a, b) // aliasing dst and a
	if a[0] != 3 || a[1] != 2 || a[2] != 0 {
		t.Fatalf("AddVec in place = %v", a)
	}
	err := VecAdd(dst, a, b[:2])
	if !errors.Is(err, ErrLength) || !strings.Contains(err.Error(), "b 2") {
		t.Fatalf("VecAdd with short b: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("AddVec with different lengths did not panic")
		}
	}()
	AddVec(dst[:1], a, b)
}

func mustCodec(t testing.TB, bits uint) Codec {
	t.Helper()
	c, err := NewCodec(bits)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCodecRoundTrip(t *testing.T) {
	r := rng.ForName(t.Name())
	for _, bits := range []uint{0, 1, 12, DefaultScaleBits, 40, MaxScaleBits} {
		c := mustCodec(t, bits)
		if c.Scale() != math.Ldexp(1, int(bits)) {
			t.Fatalf("Scale() = %v at %d bits", c.Scale(), bits)
		}
		encoded := 0
		for i := 0; i < 5000; i++ {
			// Magnitudes from 2^-70 to 2^70, both signs, so some overflow.
			v := (r.Float64()*2 - 1) * math.Ldexp(1, r.IntN(141)-70)
			e, err := c.Encode(v)
			if err != nil {
				if !errors.Is(err, ErrOverflow) || math.Abs(v) <= c.maxMagnitude() {
					t.Fatalf("encode %v at 2^%d: %v", v, bits, err)
				}
				continue
			}
			encoded++
			// v*S and the rounding are exact, and Decode(e) - v is exact by
			// Sterbenz's lemma, so the bound 1/(2S) holds with no slack.
			if got := c.Decode(e); math.Abs(got-v) > 0.5/c.Scale() {
				t.Fatalf("decode(encode(%v)) = %v at 2^%d", v, got, bits)
			}
		}
		if encoded < 1000 {
			t.Fatalf("only %d of 5000 values encodable at 2^%d: the test covers too little", encoded, bits)
		}
	}
}

func TestCodecValues(t *testing.T) {
	c := mustCodec(t, DefaultScaleBits)
	S := c.Scale()
	cases := []struct {
		v    float64
		want Elem
	}{
		{0, 0},
		{1, 1 << 24},
		{-1.5, Elem(P - 3<<23)},
		{0.5 / S, 1},              // half away from zero
		{-0.5 / S, Elem(P - 1)},   // half away from zero
		{0.49 / S, 0},             // rounds to 0
		{-0.49 / S, 0},            // -0 encodes as 0
		{math.Copysign(0, -1), 0}, // negative zero
		{2.5 / S, 3},              // ties go away from zero, not to even
		{-(1 << 35), Elem(P - 1<<59)},
	}
	for _, tc := range cases {
		got, err := c.Encode(tc.v)
		if err != nil || got != tc.want {
			t.Errorf("Encode(%v) = %d, %v; want %d", tc.v, got, err, tc.want)
		}
	}
	if got := c.Decode(Elem(P - 3<<23)); got != -1.5 {
		t.Errorf("Decode(P - 1.5 S) = %v, want -1.5", got)
	}
	var zero Codec // S = 1
	if e, err := zero.Encode(-2.5); err != nil || e != Elem(P-3) || zero.Decode(e) != -3 {
		t.Errorf("zero Codec: Encode(-2.5) = %d, %v", e, err)
	}
}

func TestCodecRange(t *testing.T) {
	for _, bits := range []uint{0, DefaultScaleBits, MaxScaleBits} {
		c := mustCodec(t, bits)
		max := c.maxMagnitude() // (2^60 - 128) / S
		for _, v := range []float64{max, -max} {
			e, err := c.Encode(v)
			if err != nil || c.Decode(e) != v {
				t.Errorf("2^%d: the largest magnitude %v must round-trip exactly: %d, %v", bits, v, e, err)
			}
		}
		// 2^60 / S is the next float64: round(v*S) = 2^60 > (P-1)/2. Before
		// this check was exact it encoded to 2^60 and decoded to -(2^60-1)/S.
		over := math.Ldexp(1, 60-int(bits))
		for _, v := range []float64{over, -over, math.MaxFloat64, -math.MaxFloat64} {
			_, err := c.Encode(v)
			if !errors.Is(err, ErrOverflow) {
				t.Errorf("2^%d: Encode(%v) = %v, want ErrOverflow", bits, v, err)
			} else if !strings.Contains(err.Error(), fmt.Sprint(v)) {
				t.Errorf("error does not name the value %v: %v", v, err)
			}
		}
	}
	c := mustCodec(t, DefaultScaleBits)
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := c.Encode(bad)
		if !errors.Is(err, ErrNotFinite) || !strings.Contains(err.Error(), fmt.Sprint(bad)) {
			t.Errorf("Encode(%v): %v", bad, err)
		}
	}
	if _, err := NewCodec(MaxScaleBits + 1); !errors.Is(err, ErrScale) || !strings.Contains(err.Error(), "53") {
		t.Errorf("NewCodec(53): %v", err)
	}
	_, err := c.EncodeVec([]float64{1, 2, math.NaN()})
	if !errors.Is(err, ErrNotFinite) || !strings.Contains(err.Error(), "value 2") {
		t.Errorf("EncodeVec must name the index: %v", err)
	}
	xs, err := c.EncodeVec([]float64{0.25, -3})
	if err != nil || len(xs) != 2 {
		t.Fatalf("EncodeVec: %v, %v", xs, err)
	}
	if got := c.DecodeVec(xs); got[0] != 0.25 || got[1] != -3 {
		t.Errorf("DecodeVec = %v", got)
	}
}

func TestSumDecodes(t *testing.T) {
	// Within the budget, the field sum of encodings decodes to the exact sum
	// of the rounded values.
	c := mustCodec(t, DefaultScaleBits)
	r := rng.ForName(t.Name())
	const parties, bound = 1000, 1e6
	if err := c.CheckBudget(parties, bound); err != nil {
		t.Fatal(err)
	}
	var acc Elem
	var want int64 // |sum| <= 1000 * 2^44 < 2^63
	for i := 0; i < parties; i++ {
		v := (r.Float64()*2 - 1) * bound
		e, err := c.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		acc = acc.Add(e)
		want += int64(math.Round(v * c.Scale()))
	}
	if got := acc.Int(); got != want {
		t.Fatalf("sum lifts to %d, want %d", got, want)
	}
}

func TestCheckBudgetBoundary(t *testing.T) {
	cases := []struct {
		bits  uint
		bound float64
	}{
		{24, 1}, {24, 0.3}, {24, 1e-12}, {24, 12345.678}, {24, 1 << 35}, {0, 1 << 58}, {52, 1}, {52, 255.5},
	}
	for _, tc := range cases {
		c := mustCodec(t, tc.bits)
		// Independent reference: limit = floor(((P-1)/2) / ceil(bound*S)) in big arithmetic.
		per, _ := new(big.Float).SetFloat64(tc.bound * c.Scale()).Int(nil)
		if new(big.Float).SetInt(per).Cmp(big.NewFloat(tc.bound*c.Scale())) != 0 {
			per.Add(per, big.NewInt(1))
		}
		limit := new(big.Int).Quo(new(big.Int).SetUint64(half), per).Int64()
		if err := c.CheckBudget(int(limit), tc.bound); err != nil {
			t.Errorf("2^%d bound %v: exactly at the limit %d: %v", tc.bits, tc.bound, limit, err)
		}
		err := c.CheckBudget(int(limit)+1, tc.bound)
		if !errors.Is(err, ErrBudget) {
			t.Errorf("2^%d bound %v: one above the limit %d accepted: %v", tc.bits, tc.bound, limit, err)
			continue
		}
		for _, want := range []string{fmt.Sprint(limit + 1), fmt.Sprint(tc.bound), fmt.Sprint("2^", tc.bits), fmt.Sprint("at most ", limit, " parties")} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error does not name %q: %v", want, err)
			}
		}
	}
}

func TestCheckBudgetMatchesArithmetic(t *testing.T) {
	// At S = 1 and bound 2^58 the limit is floor((2^60-1)/2^58) = 3: three
	// extreme values sum correctly and a fourth wraps, as CheckBudget says.
	c := mustCodec(t, 0)
	const bound = 1 << 58
	e, err := c.Encode(bound)
	if err != nil {
		t.Fatal(err)
	}
	for parties := 1; parties <= 4; parties++ {
		var acc Elem
		for i := 0; i < parties; i++ {
			acc = acc.Add(e)
		}
		correct := c.Decode(acc) == float64(parties)*bound
		if ok := c.CheckBudget(parties, bound) == nil; ok != correct {
			t.Errorf("%d parties: CheckBudget ok=%v but the sum decodes correctly=%v", parties, ok, correct)
		}
	}
}

func TestCheckBudgetErrors(t *testing.T) {
	c := mustCodec(t, DefaultScaleBits)
	if err := c.CheckBudget(1<<40, 0); err != nil {
		t.Errorf("bound 0 fits any number of parties: %v", err)
	}
	for _, tc := range []struct {
		parties int
		bound   float64
		names   string
	}{
		{0, 1, "0 parties"}, {-3, 1, "-3 parties"}, {5, -1, "-1"}, {5, math.NaN(), "NaN"}, {5, math.Inf(1), "+Inf"},
		{1, 1 << 36, "at most 0 parties"}, {1, math.MaxFloat64, "at most 0 parties"},
	} {
		err := c.CheckBudget(tc.parties, tc.bound)
		if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), tc.names) {
			t.Errorf("CheckBudget(%d, %v) = %v, want ErrBudget naming %q", tc.parties, tc.bound, err, tc.names)
		}
	}
}

func FuzzCodec(f *testing.F) {
	for _, v := range []float64{0, -1.5, 0.5, math.MaxFloat64, 1e-300, math.Ldexp(1, 36), math.Ldexp(1, 36) - 1e-5, math.NaN(), math.Inf(-1)} {
		f.Add(math.Float64bits(v), uint8(DefaultScaleBits))
	}
	f.Add(math.Float64bits(math.Ldexp(1, 60)), uint8(0))
	f.Fuzz(func(t *testing.T, bits uint64, scale uint8) {
		v := math.Float64frombits(bits)
		c, err := NewCodec(uint(scale))
		if err != nil {
			if scale <= MaxScaleBits || !errors.Is(err, ErrScale) {
				t.Fatalf("NewCodec(%d): %v", scale, err)
			}
			return
		}
		e, err := c.Encode(v)
		if err != nil {
			if !errors.Is(err, ErrNotFinite) && !errors.Is(err, ErrOverflow) {
				t.Fatalf("Encode(%v): unexpected error %v", v, err)
			}
			if !math.IsNaN(v) && !math.IsInf(v, 0) && math.Abs(v) <= c.maxMagnitude() {
				t.Fatalf("Encode(%v) refused a value within range: %v", v, err)
			}
			return
		}
		if uint64(e) >= P {
			t.Fatalf("Encode(%v) = %d is not canonical", v, e)
		}
		// Exact bound: see TestCodecRoundTrip.
		if got := c.Decode(e); math.Abs(got-v) > 0.5/c.Scale() {
			t.Fatalf("decode(encode(%v)) = %v at 2^%d", v, got, scale)
		}
	})
}

func FuzzMul(f *testing.F) {
	f.Add(uint64(P-1), uint64(P-1))
	f.Add(uint64(1)<<63, uint64(12345))
	f.Add(uint64(math.MaxUint64), uint64(P))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		x, y := New(a), New(b)
		if uint64(x) != wantMod(new(big.Int).SetUint64(a)) {
			t.Fatalf("New(%d) = %d", a, x)
		}
		checkOps(t, x, y)
	})
}

func BenchmarkMul(b *testing.B) {
	b.Run("latency", func(b *testing.B) {
		x, y := Elem(123456789123), Elem(P-77)
		for i := 0; i < b.N; i++ {
			x = x.Mul(y) // each product depends on the previous one
		}
		sink = x
	})
	b.Run("throughput", func(b *testing.B) {
		// Eight independent chains: how fast a Horner loop over many points can go.
		var xs [8]Elem
		for i := range xs {
			xs[i] = Elem(123456789 + i)
		}
		y := Elem(P - 77)
		for i := 0; i < b.N; i += 8 {
			for j := range xs {
				xs[j] = xs[j].Mul(y)
			}
		}
		sink = xs[0]
	})
}

func BenchmarkMulAdd(b *testing.B) {
	// Eight independent Horner chains, as in shamir.Split.
	var xs [8]Elem
	for i := range xs {
		xs[i] = Elem(123456789 + i)
	}
	y, c := Elem(P-77), Elem(1<<60+3)
	for i := 0; i < b.N; i += 8 {
		for j := range xs {
			xs[j] = xs[j].MulAdd(y, c)
		}
	}
	sink = xs[0]
}

func BenchmarkInv(b *testing.B) {
	x := Elem(123456789123)
	for i := 0; i < b.N; i++ {
		x, _ = x.Add(1).Inv()
	}
	sink = x
}

func BenchmarkEncode(b *testing.B) {
	c, _ := NewCodec(DefaultScaleBits)
	v := -1234.5678
	for i := 0; i < b.N; i++ {
		e, _ := c.Encode(v)
		sink = e
	}
}

var sink Elem
