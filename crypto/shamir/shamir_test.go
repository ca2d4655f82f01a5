package shamir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/rng"
)

var sentinels = []error{ErrThreshold, ErrTooFewShares, ErrDuplicateX, ErrZeroX, ErrLength, ErrMismatchX, ErrNotElement, ErrNoRandom}

func secretVec(r *rand.Rand, n int) []field.Elem {
	s := make([]field.Elem, n)
	for i := range s {
		s[i] = field.Random(r)
	}
	return s
}

// subsets calls f with every k-subset of [0, n), in increasing order.
func subsets(n, k int, f func([]int)) {
	idx := make([]int, k)
	var rec func(start, depth int)
	rec = func(start, depth int) {
		if depth == k {
			f(idx)
			return
		}
		for i := start; i < n; i++ {
			idx[depth] = i
			rec(i+1, depth+1)
		}
	}
	rec(0, 0)
}

func pick(shares []Share, idx []int) []Share {
	out := make([]Share, len(idx))
	for i, j := range idx {
		out[i] = shares[j]
	}
	return out
}

// randomPoints returns n distinct non-zero points spread over the field.
func randomPoints(r *rand.Rand, n int) []field.Elem {
	var xs []field.Elem
	for len(xs) < n {
		if x := field.Random(r); x != 0 && !slices.Contains(xs, x) {
			xs = append(xs, x)
		}
	}
	return xs
}

func TestReconstructFromEveryTSubset(t *testing.T) {
	r := rng.ForName(t.Name())
	for n := 1; n <= 7; n++ {
		for th := 1; th <= n; th++ {
			for _, xs := range [][]field.Elem{Points(n), randomPoints(r, n)} {
				secret := secretVec(r, 3)
				shares, err := Split(r, secret, xs, th)
				if err != nil {
					t.Fatal(err)
				}
				subsets(n, th, func(idx []int) {
					sub := pick(shares, idx)
					got, err := Reconstruct(sub, th)
					if err != nil || !slices.Equal(got, secret) {
						t.Fatalf("n=%d t=%d xs=%v subset %v: %v, %v", n, th, xs, idx, got, err)
					}
					slices.Reverse(sub) // the order of the shares does not matter
					if got, err := Reconstruct(sub, th); err != nil || !slices.Equal(got, secret) {
						t.Fatalf("n=%d t=%d subset %v reversed: %v, %v", n, th, idx, got, err)
					}
				})
				if th > 1 {
					if _, err := Reconstruct(shares[:th-1], th); !errors.Is(err, ErrTooFewShares) {
						t.Fatalf("n=%d t=%d: t-1 shares: %v", n, th, err)
					}
				}
			}
		}
	}
}

func TestManyPoints(t *testing.T) {
	// Above quadraticLimit points the duplicate check sorts a copy.
	r := rng.ForName(t.Name())
	const n, th = 150, 101
	secret := secretVec(r, 4)
	shares, err := Split(r, secret, Points(n), th)
	if err != nil {
		t.Fatal(err)
	}
	r.Shuffle(len(shares), func(i, j int) { shares[i], shares[j] = shares[j], shares[i] })
	if got, err := Reconstruct(shares, th); err != nil || !slices.Equal(got, secret) {
		t.Fatalf("reconstruct from %d of %d shuffled shares: %v", th, n, err)
	}
	xs := Points(n)
	xs[120] = xs[7]
	if _, err := Split(r, secret, xs, th); !errors.Is(err, ErrDuplicateX) || !strings.Contains(err.Error(), "x = 8") {
		t.Fatalf("duplicate among %d points: %v", n, err)
	}
	shares[100].X = shares[3].X
	if _, err := Reconstruct(shares, th); !errors.Is(err, ErrDuplicateX) {
		t.Fatalf("duplicate among %d shares: %v", th, err)
	}
}

func TestSplitShape(t *testing.T) {
	r := rng.ForName(t.Name())
	secret := secretVec(r, 3)
	xs := randomPoints(r, 5)
	shares, err := Split(r, secret, xs, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range shares {
		// Degree 0: every share is the secret itself.
		if s.X != xs[i] || !slices.Equal(s.Y, secret) || cap(s.Y) != len(secret) {
			t.Fatalf("t=1 share %d = %+v (cap %d), secret %v", i, s, cap(s.Y), secret)
		}
	}
	shares, _ = Split(r, secret, xs, 3)
	before := slices.Clone(shares[1].Y)
	_ = append(shares[0].Y, 42) // capped: must not write into share 1
	if !slices.Equal(shares[1].Y, before) {
		t.Fatal("appending to one share's Y overwrote the next share")
	}
	empty, err := Split(r, nil, xs, 2)
	if err != nil || len(empty) != 5 || len(empty[0].Y) != 0 {
		t.Fatalf("empty secret: %v, %v", empty, err)
	}
	if got, err := Reconstruct(empty, 2); err != nil || len(got) != 0 {
		t.Fatalf("reconstruct empty secret: %v, %v", got, err)
	}
}

func TestSumOfShares(t *testing.T) {
	r := rng.ForName(t.Name())
	const n, th, dealers = 9, 5, 6
	total := make([]field.Elem, 4)
	held := make([]Share, n)
	for d := 0; d < dealers; d++ {
		s := secretVec(r, 4)
		field.AddVec(total, total, s)
		shares, err := Split(r, s, Points(n), th)
		if err != nil {
			t.Fatal(err)
		}
		for i := range held {
			if d == 0 {
				held[i] = shares[i]
				continue
			}
			if held[i], err = Add(held[i], shares[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	subsets(n, th, func(idx []int) {
		if got, err := Reconstruct(pick(held, idx), th); err != nil || !slices.Equal(got, total) {
			t.Fatalf("sum from subset %v: %v, %v (want %v)", idx, got, err, total)
		}
	})
}

// bigLagrangeAtZero is an independent reference in math/big.
func bigLagrangeAtZero(xs []field.Elem) []field.Elem {
	p := new(big.Int).SetUint64(field.P)
	out := make([]field.Elem, len(xs))
	for i := range xs {
		l := big.NewInt(1)
		xi := new(big.Int).SetUint64(uint64(xs[i]))
		for j := range xs {
			if j == i {
				continue
			}
			xj := new(big.Int).SetUint64(uint64(xs[j]))
			den := new(big.Int).Sub(xj, xi)
			den.Mod(den, p).ModInverse(den, p)
			l.Mul(l, xj).Mul(l, den).Mod(l, p)
		}
		out[i] = field.Elem(l.Uint64())
	}
	return out
}

func TestLagrangeAtZero(t *testing.T) {
	r := rng.ForName(t.Name())
	for _, n := range []int{1, 2, 3, 8, 17, 70} {
		for _, xs := range [][]field.Elem{Points(n), randomPoints(r, n)} {
			lam, err := LagrangeAtZero(xs)
			if err != nil {
				t.Fatal(err)
			}
			if want := bigLagrangeAtZero(xs); !slices.Equal(lam, want) {
				t.Fatalf("n=%d: lambda = %v, want %v", n, lam, want)
			}
			// The constant polynomial 1 interpolates to 1: the lambdas sum to 1.
			var sum field.Elem
			for _, l := range lam {
				sum = sum.Add(l)
			}
			if sum != 1 {
				t.Fatalf("n=%d: lambdas sum to %d", n, sum)
			}
		}
	}
	// Points 1, 2, 3: f(0) = 3 f(1) - 3 f(2) + f(3).
	lam, _ := LagrangeAtZero(Points(3))
	if !slices.Equal(lam, []field.Elem{3, field.FromInt(-3), 1}) {
		t.Fatalf("lambda(1,2,3) = %v", lam)
	}
}

func TestErrors(t *testing.T) {
	r := rng.ForName(t.Name())
	s := secretVec(r, 2)
	good := func() []Share { sh, _ := Split(r, s, Points(3), 2); return sh }
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"split t > n", second(Split(r, s, Points(3), 4)), ErrThreshold},
		{"split t = 0", second(Split(r, s, Points(3), 0)), ErrThreshold},
		{"split t < 0", second(Split(r, s, Points(3), -1)), ErrThreshold},
		{"split no points", second(Split(r, s, nil, 1)), ErrThreshold},
		{"split duplicate x", second(Split(r, s, []field.Elem{1, 2, 2}, 2)), ErrDuplicateX},
		{"split zero x", second(Split(r, s, []field.Elem{1, 0}, 2)), ErrZeroX},
		{"split x >= p", second(Split(r, s, []field.Elem{1, field.Elem(field.P + 1)}, 2)), ErrNotElement},
		{"split secret >= p", second(Split(r, []field.Elem{1, field.Elem(field.P)}, Points(3), 2)), ErrNotElement},
		{"split nil rand", second(Split(nil, s, Points(3), 2)), ErrNoRandom},
		{"reconstruct t = 0", second(Reconstruct(good(), 0)), ErrThreshold},
		{"reconstruct too few", second(Reconstruct(good()[:1], 2)), ErrTooFewShares},
		{"reconstruct nil", second(Reconstruct(nil, 1)), ErrTooFewShares},
		{"reconstruct length", second(Reconstruct(func() []Share { sh := good(); sh[1].Y = sh[1].Y[:1]; return sh }(), 2)), ErrLength},
		{"reconstruct duplicate", second(Reconstruct(func() []Share { sh := good(); sh[1].X = sh[0].X; return sh }(), 2)), ErrDuplicateX},
		{"reconstruct zero x", second(Reconstruct(func() []Share { sh := good(); sh[1].X = 0; return sh }(), 2)), ErrZeroX},
		{"reconstruct x >= p", second(Reconstruct(func() []Share { sh := good(); sh[1].X = field.Elem(field.P + 1); return sh }(), 2)), ErrNotElement},
		{"reconstruct y >= p", second(Reconstruct(func() []Share { sh := good(); sh[0].Y[1] = field.Elem(field.P); return sh }(), 2)), ErrNotElement},
		{"lagrange empty", second(LagrangeAtZero(nil)), ErrTooFewShares},
		{"lagrange duplicate", second(LagrangeAtZero([]field.Elem{4, 4})), ErrDuplicateX},
		{"add different x", second(Add(good()[0], good()[1])), ErrMismatchX},
		{"add different length", second(Add(Share{X: 1, Y: s}, Share{X: 1, Y: s[:1]})), ErrLength},
	}
	for _, tc := range cases {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if Points(0) != nil || Points(-2) != nil || len(Points(4)) != 4 {
		t.Error("Points(0), Points(-2) must be nil")
	}
	// Reconstruct reads only the first t shares: a bad extra share is ignored.
	sh := good()
	sh[2].Y = nil
	if got, err := Reconstruct(sh, 2); err != nil || !slices.Equal(got, s) {
		t.Errorf("bad share beyond the first t: %v, %v", got, err)
	}
}

func second[T any](_ T, err error) error { return err }

// histogram splits secret `trials` times at xs and counts the joint value of
// the shares at positions `use`, each reduced mod m, over m^len(use) cells.
func histogram(split func(*rand.Rand, []field.Elem, []field.Elem, int) ([]Share, error),
	r *rand.Rand, secret field.Elem, xs []field.Elem, th int, use []int, m uint64, trials int) []float64 {
	cells := 1
	for range use {
		cells *= int(m)
	}
	h := make([]float64, cells)
	for i := 0; i < trials; i++ {
		shares, err := split(r, []field.Elem{secret}, xs, th)
		if err != nil {
			panic(err) // test helper: parameters are fixed and valid
		}
		c := 0
		for _, j := range use {
			c = c*int(m) + int(uint64(shares[j].Y[0])%m)
		}
		h[c]++
	}
	return h
}

// chiSquare2 is the two-sample chi-square statistic for equal sample sizes,
// sum (a-b)^2/(a+b) over non-empty cells, and its degrees of freedom.
func chiSquare2(a, b []float64) (stat float64, df int) {
	for i := range a {
		if a[i]+b[i] == 0 {
			continue
		}
		d := a[i] - b[i]
		stat += d * d / (a[i] + b[i])
		df++
	}
	return stat, df - 1
}

// TestFewerThanTSharesRevealNothing: t-1 shares of two different secrets
// have the same distribution. Projected mod m, the joint histograms of two
// samples of equal size give a two-sample chi-square statistic with
// (cells - 1) degrees of freedom when the distributions agree; the test
// rejects beyond its 1 - 1e-6 quantile. The projection of a uniform element
// mod m is not exactly uniform (p is not a multiple of m), but that is the
// same for both secrets, so the two-sample test is exact.
//
// Two negative controls show the test can fail: t shares (which determine
// the secret) and t-1 shares from a split with weak coefficients in {0,1,2}.
// Both must exceed the same threshold. Points 1..t keep the Lagrange
// coefficients small, so the secret's residue mod m shows through t shares.
func TestFewerThanTSharesRevealNothing(t *testing.T) {
	const trials = 30000
	s0, s1 := field.Elem(5), field.Elem(field.P-1234567) // 5 and 0 mod 8
	weak := func(r *rand.Rand, s []field.Elem, xs []field.Elem, th int) ([]Share, error) {
		return split(func() field.Elem { return field.Elem(r.IntN(3)) }, s, xs, th)
	}
	for _, tc := range []struct {
		th int
		m  uint64
	}{{2, 8}, {3, 8}, {4, 8}} {
		th, m := tc.th, tc.m
		xs := Points(th + 2)
		run := func(name string, split func(*rand.Rand, []field.Elem, []field.Elem, int) ([]Share, error), use []int) (float64, float64, int) {
			r := rng.ForName(fmt.Sprint(t.Name(), "/", th, "/", name))
			a := histogram(split, r, s0, xs, th, use, m, trials)
			b := histogram(split, r, s1, xs, th, use, m, trials)
			stat, df := chiSquare2(a, b)
			limit := distuv.ChiSquared{K: float64(df)}.Quantile(1 - 1e-6)
			t.Logf("t=%d m=%d %-8s chi-square %8.1f, df %4d, limit %6.1f", th, m, name, stat, df, limit)
			return stat, limit, df
		}
		// t-1 shares at the last points (3.. t+2), not 1..t-1.
		last := make([]int, th-1)
		for i := range last {
			last[i] = th + 2 - (th - 1) + i
		}
		if stat, limit, df := run("hiding", Split, last); stat > limit {
			t.Errorf("t=%d: chi-square %.1f > %.1f (df %d): t-1 shares depend on the secret", th, stat, limit, df)
		}
		first := make([]int, th)
		for i := range first {
			first[i] = i
		}
		if stat, limit, df := run("t shares", Split, first); stat <= limit {
			t.Errorf("t=%d: negative control (t shares) not detected: chi-square %.1f <= %.1f (df %d)", th, stat, limit, df)
		}
		if stat, limit, df := run("weak", weak, first[:th-1]); stat <= limit {
			t.Errorf("t=%d: negative control (weak coefficients) not detected: chi-square %.1f <= %.1f (df %d)", th, stat, limit, df)
		}
	}
}

// decodeShares reads a share set from fuzz bytes: b[0]%4 coordinates, then
// per share a header byte h (bit 0: 8-byte X, else 1-byte X; bit 1: one value
// too many; bit 2: reduce values mod p, else raw) and the values (8 bytes
// each). Trailing bytes that do not make a whole share are ignored.
func decodeShares(b []byte) []Share {
	if len(b) == 0 {
		return nil
	}
	L := int(b[0] % 4)
	b = b[1:]
	var shares []Share
	for len(b) > 0 {
		h := b[0]
		b = b[1:]
		var x uint64
		if h&1 == 1 {
			if len(b) < 8 {
				break
			}
			x, b = binary.LittleEndian.Uint64(b), b[8:]
		} else {
			if len(b) < 1 {
				break
			}
			x, b = uint64(b[0]), b[1:]
		}
		n := L
		if h&2 != 0 {
			n++
		}
		if len(b) < 8*n {
			break
		}
		y := make([]field.Elem, n)
		for i := range y {
			v := binary.LittleEndian.Uint64(b)
			b = b[8:]
			if h&4 != 0 {
				v = uint64(field.New(v))
			}
			y[i] = field.Elem(v)
		}
		shares = append(shares, Share{X: field.Elem(x), Y: y})
	}
	return shares
}

// valid reports whether Reconstruct(shares, t) must succeed.
func valid(shares []Share, t int) bool {
	if t < 1 || len(shares) < t {
		return false
	}
	seen := map[field.Elem]bool{}
	for _, s := range shares[:t] {
		if s.X == 0 || uint64(s.X) >= field.P || seen[s.X] || len(s.Y) != len(shares[0].Y) {
			return false
		}
		seen[s.X] = true
		for _, y := range s.Y {
			if uint64(y) >= field.P {
				return false
			}
		}
	}
	return true
}

func FuzzReconstruct(f *testing.F) {
	f.Add([]byte{1, 4, 1, 5, 0, 0, 0, 0, 0, 0, 0, 4, 2, 9, 0, 0, 0, 0, 0, 0, 0}, 2)
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 1)                                  // x = 0
	f.Add([]byte{1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 1, 0, 0, 0, 0, 0, 0, 0}, 1)          // x = p
	f.Add([]byte{1, 0, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 3, 1, 0, 0, 0, 0, 0, 0, 0}, 2) // duplicate x, y >= p
	f.Add([]byte{0, 0, 1, 0, 2, 0, 3}, 3)
	f.Add([]byte{1, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}, 1) // one value too many
	f.Fuzz(func(t *testing.T, b []byte, th int) {
		shares := decodeShares(b)
		got, err := Reconstruct(shares, th)
		if err != nil {
			if valid(shares, th) {
				t.Fatalf("valid input refused: %v", err)
			}
			for _, s := range sentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error wraps no sentinel: %v", err)
		}
		if !valid(shares, th) {
			t.Fatalf("invalid input accepted (t = %d, %d shares)", th, len(shares))
		}
		xs := make([]field.Elem, th)
		for i := range xs {
			xs[i] = shares[i].X
		}
		lam := bigLagrangeAtZero(xs)
		for c := range got {
			var want field.Elem
			for i := range xs {
				want = want.Add(lam[i].Mul(shares[i].Y[c]))
			}
			if got[c] != want {
				t.Fatalf("coordinate %d = %d, reference %d", c, got[c], want)
			}
		}
	})
}

func FuzzSplit(f *testing.F) {
	f.Add(uint64(1), []byte{1, 2, 3, 4, 5, 6, 7, 8}, uint8(5), uint8(3))
	f.Add(uint64(2), []byte{}, uint8(1), uint8(1))
	f.Add(uint64(3), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, uint8(4), uint8(5))
	f.Fuzz(func(t *testing.T, seed uint64, sb []byte, n, th uint8) {
		r := rng.Seeded(seed)
		secret := make([]field.Elem, min(len(sb)/8, 8))
		for i := range secret {
			secret[i] = field.New(binary.LittleEndian.Uint64(sb[8*i:]))
		}
		nn, tt := int(n%24), int(th%25)
		shares, err := Split(r, secret, Points(nn), tt)
		if tt < 1 || tt > nn {
			if !errors.Is(err, ErrThreshold) {
				t.Fatalf("n=%d t=%d: %v, want ErrThreshold", nn, tt, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("n=%d t=%d: %v", nn, tt, err)
		}
		r.Shuffle(len(shares), func(i, j int) { shares[i], shares[j] = shares[j], shares[i] })
		if got, err := Reconstruct(shares, tt); err != nil || !slices.Equal(got, secret) {
			t.Fatalf("n=%d t=%d: reconstructed %v, %v; want %v", nn, tt, got, err, secret)
		}
	})
}

func benchSplit(b *testing.B, n, th, length int) {
	r := rng.Seeded(1)
	s := secretVec(r, length)
	xs := Points(n)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Split(r, s, xs, th); err != nil {
			b.Fatal(err)
		}
	}
}

func benchReconstruct(b *testing.B, n, th, length int) {
	r := rng.Seeded(1)
	shares, err := Split(r, secretVec(r, length), Points(n), th)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Reconstruct(shares, th); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSplit(b *testing.B) {
	for _, l := range []int{2, 64} {
		b.Run(fmt.Sprintf("n=32/t=17/len=%d", l), func(b *testing.B) { benchSplit(b, 32, 17, l) })
	}
}

func BenchmarkReconstruct(b *testing.B) {
	for _, l := range []int{2, 64} {
		b.Run(fmt.Sprintf("n=32/t=17/len=%d", l), func(b *testing.B) { benchReconstruct(b, 32, 17, l) })
	}
}

func BenchmarkLagrangeAtZero(b *testing.B) {
	xs := Points(17)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LagrangeAtZero(xs); err != nil {
			b.Fatal(err)
		}
	}
}
