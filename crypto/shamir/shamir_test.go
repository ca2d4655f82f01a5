package shamir

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/rng"
)

func secretVec(r *rand.Rand, n int) []field.Elem {
	s := make([]field.Elem, n)
	for i := range s {
		s[i] = field.Random(r)
	}
	return s
}

func equal(a, b []field.Elem) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// subsets calls f with every k-subset of [0, n).
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

func TestReconstructFromEveryTSubset(t *testing.T) {
	r := rng.ForName(t.Name())
	for n := 1; n <= 7; n++ {
		for th := 1; th <= n; th++ {
			secret := secretVec(r, 3)
			shares, err := Split(r, secret, Points(n), th)
			if err != nil {
				t.Fatal(err)
			}
			subsets(n, th, func(idx []int) {
				sub := make([]Share, len(idx))
				for i, j := range idx {
					sub[i] = shares[j]
				}
				got, err := Reconstruct(sub, th)
				if err != nil || !equal(got, secret) {
					t.Fatalf("n=%d t=%d subset %v: %v, %v", n, th, idx, got, err)
				}
			})
			if th > 1 {
				if _, err := Reconstruct(shares[:th-1], th); !errors.Is(err, ErrTooFewShares) {
					t.Fatalf("t-1 shares: %v", err)
				}
			}
		}
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
		shares, _ := Split(r, s, Points(n), th)
		for i := range held {
			if d == 0 {
				held[i] = shares[i]
				continue
			}
			var err error
			if held[i], err = Add(held[i], shares[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := Reconstruct(held[3:3+th], th)
	if err != nil || !equal(got, total) {
		t.Fatalf("sum: %v, %v", got, err)
	}
	if _, err := Add(held[0], held[1]); err == nil {
		t.Fatal("adding shares at different points accepted")
	}
}

func TestErrors(t *testing.T) {
	r := rng.ForName(t.Name())
	s := secretVec(r, 2)
	if _, err := Split(r, s, Points(3), 4); !errors.Is(err, ErrThreshold) {
		t.Error(err)
	}
	if _, err := Split(r, s, Points(3), 0); !errors.Is(err, ErrThreshold) {
		t.Error(err)
	}
	if _, err := Split(r, s, []field.Elem{1, 2, 2}, 2); !errors.Is(err, ErrDuplicateX) {
		t.Error(err)
	}
	if _, err := Split(r, s, []field.Elem{1, 0}, 2); !errors.Is(err, ErrZeroX) {
		t.Error(err)
	}
	shares, _ := Split(r, s, Points(3), 2)
	shares[1].Y = shares[1].Y[:1]
	if _, err := Reconstruct(shares, 2); !errors.Is(err, ErrLength) {
		t.Error(err)
	}
	shares, _ = Split(r, s, Points(3), 2)
	shares[1].X = shares[0].X
	if _, err := Reconstruct(shares, 2); !errors.Is(err, ErrDuplicateX) {
		t.Error(err)
	}
}

// chiSquare2 is the two-sample chi-square statistic over matching bins.
func chiSquare2(a, b []float64) (stat float64, df int) {
	na, nb := 0.0, 0.0
	for i := range a {
		na += a[i]
		nb += b[i]
	}
	ka, kb := math.Sqrt(nb/na), math.Sqrt(na/nb)
	for i := range a {
		if a[i]+b[i] == 0 {
			continue
		}
		d := ka*a[i] - kb*b[i]
		stat += d * d / (a[i] + b[i])
		df++
	}
	return stat, df - 1
}

// histogram of t-1 shares (x = 1..t-1) of secret s, each projected to its
// low 3 bits, as one cell index of 8^(t-1) cells.
func histogram(split func(*rand.Rand, []field.Elem, []field.Elem, int) ([]Share, error), r *rand.Rand, s field.Elem, th, trials int) []float64 {
	cells := 1 << (3 * (th - 1))
	h := make([]float64, cells)
	xs := Points(th)
	for i := 0; i < trials; i++ {
		shares, _ := split(r, []field.Elem{s}, xs, th)
		c := 0
		for _, sh := range shares[:th-1] {
			c = c<<3 | int(sh.Y[0]&7)
		}
		h[c]++
	}
	return h
}

// TestFewerThanTSharesRevealNothing: t-1 shares of two different secrets
// have the same distribution. The statistic is chi-square with df degrees
// of freedom under that hypothesis; the bound df + 6 sqrt(2 df) is beyond
// its 1 - 1e-6 quantile. A split with non-random (small) coefficients must
// fail the same test, so the test can detect dependence.
func TestFewerThanTSharesRevealNothing(t *testing.T) {
	trials := 40000
	if testing.Short() {
		trials = 20000
	}
	for _, th := range []int{2, 3} {
		r := rng.ForName(fmt.Sprint(t.Name(), th))
		a := histogram(Split, r, field.Elem(5), th, trials)
		b := histogram(Split, r, field.Elem(field.P-1234567), th, trials)
		stat, df := chiSquare2(a, b)
		if limit := float64(df) + 6*math.Sqrt(2*float64(df)); stat > limit {
			t.Errorf("t=%d: chi-square %.1f > %.1f (df %d): t-1 shares depend on the secret", th, stat, limit, df)
		}
		weak := func(r *rand.Rand, s []field.Elem, xs []field.Elem, th int) ([]Share, error) {
			return splitWith(func() field.Elem { return field.Elem(r.IntN(3)) }, s, xs, th)
		}
		a = histogram(weak, r, field.Elem(5), th, trials)
		b = histogram(weak, r, field.Elem(field.P-1234567), th, trials)
		if stat, df := chiSquare2(a, b); stat < float64(df)+6*math.Sqrt(2*float64(df)) {
			t.Errorf("t=%d: negative control not detected (chi-square %.1f, df %d)", th, stat, df)
		}
	}
}

func FuzzReconstruct(f *testing.F) {
	f.Add([]byte{3, 1, 0, 0, 0, 0, 0, 0, 0, 5, 2, 0, 0, 0, 0, 0, 0, 0, 9}, uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, th uint8) {
		// Decode shares: [x][8-byte y] repeated; one coordinate.
		var shares []Share
		for len(b) >= 9 {
			y := uint64(0)
			for i := 1; i < 9; i++ {
				y = y<<8 | uint64(b[i])
			}
			shares = append(shares, Share{X: field.Elem(b[0]), Y: []field.Elem{field.Elem(y)}})
			b = b[9:]
		}
		Reconstruct(shares, int(th))
	})
}

func benchSplit(b *testing.B, n, th, length int) {
	r := rng.Seeded(1)
	s := secretVec(r, length)
	xs := Points(n)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Split(r, s, xs, th); err != nil {
			b.Fatal(err)
		}
	}
}

func benchReconstruct(b *testing.B, n, th, length int) {
	r := rng.Seeded(1)
	shares, _ := Split(r, secretVec(r, length), Points(n), th)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
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
