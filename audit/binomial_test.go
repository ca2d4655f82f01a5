package audit

import (
	"math"
	"testing"
)

// binomCDF is P(X <= k) for X ~ Bin(n, p), summed like binomTail.
func binomCDF(k, n int, p float64) float64 {
	if k >= n {
		return 1
	}
	return binomSum(0, k, n, p)
}

// binomTail is P(X >= k) for X ~ Bin(n, p), by direct summation of the pmf
// in logs: an independent check of the incomplete-beta route.
func binomTail(k, n int, p float64) float64 {
	return binomSum(k, n, n, p)
}

func binomSum(from, to, n int, p float64) float64 {
	s := 0.0
	for j := from; j <= to; j++ {
		lc, _ := math.Lgamma(float64(n + 1))
		a, _ := math.Lgamma(float64(j + 1))
		b, _ := math.Lgamma(float64(n - j + 1))
		s += math.Exp(lc - a - b + float64(j)*math.Log(p) + float64(n-j)*math.Log1p(-p))
	}
	return s
}

func TestClopperPearsonKnownValues(t *testing.T) {
	// R: binom.test(5, 10)$conf.int (two-sided 95 %, so one-sided 2.5 %
	// each way) = 0.1870860 0.8129140; binom.test(0, 20) upper 0.1684335;
	// binom.test(20, 20) lower 0.8315665; binom.test(1, 100) upper
	// 0.05445939 (its lower bound has the closed form 1 - 0.975^(1/100)).
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{
		{5, 10, 0.1870860, 0.8129140},
		{0, 20, 0, 0.1684335},
		{20, 20, 0.8315665, 1},
		{1, 100, -math.Expm1(math.Log(0.975) / 100), 0.05445939},
	} {
		lo, hi := ClopperPearsonLower(c.k, c.n, 0.025), ClopperPearsonUpper(c.k, c.n, 0.025)
		// The reference values have 7 significant digits.
		if math.Abs(lo-c.lo) > 1e-6*math.Max(c.lo, 1e-3) || math.Abs(hi-c.hi) > 1e-6*c.hi {
			t.Errorf("k=%d n=%d: [%.10g, %.10g], want [%.7g, %.7g]", c.k, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

// TestClopperPearsonDefinition checks the defining equations P(X >= k | lo)
// = alpha and P(X <= k | hi) = alpha by direct binomial sums, at the small
// levels the audit uses (relative error 1e-6: the sums themselves are
// accurate to about 1e-12).
func TestClopperPearsonDefinition(t *testing.T) {
	for _, n := range []int{1, 7, 100, 2000} {
		for _, k := range []int{0, 1, 2, n / 3, n / 2, n - 1, n} {
			if k < 0 || k > n {
				continue
			}
			for _, alpha := range []float64{0.05, 1e-4, 1e-8} {
				lo, hi := ClopperPearsonLower(k, n, alpha), ClopperPearsonUpper(k, n, alpha)
				if !(0 <= lo && lo <= hi && hi <= 1) {
					t.Fatalf("k=%d n=%d alpha=%g: bounds [%g, %g]", k, n, alpha, lo, hi)
				}
				if k > 0 {
					if got := binomTail(k, n, lo); math.Abs(got-alpha) > 1e-6*alpha {
						t.Errorf("k=%d n=%d alpha=%g: P(X >= k | lo=%g) = %g", k, n, alpha, lo, got)
					}
				}
				if k < n {
					if got := binomCDF(k, n, hi); math.Abs(got-alpha) > 1e-6*alpha {
						t.Errorf("k=%d n=%d alpha=%g: P(X <= k | hi=%g) = %g", k, n, alpha, hi, got)
					}
				}
			}
		}
	}
}
