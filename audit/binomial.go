package audit

import (
	"math"

	"gonum.org/v1/gonum/mathext"
)

// ClopperPearsonLower is the one-sided Clopper–Pearson lower bound on a
// binomial proportion after k successes in n trials at level alpha: the p
// with P(X >= k | n, p) = alpha, i.e. the alpha quantile of Beta(k, n-k+1)
// (0 when k = 0). P(p_true < bound) <= alpha whatever p_true is.
func ClopperPearsonLower(k, n int, alpha float64) float64 {
	switch {
	case k <= 0:
		return 0
	case k > n:
		return math.NaN()
	}
	return betaQuantile(float64(k), float64(n-k+1), alpha)
}

// betaQuantile is the alpha quantile of Beta(a, b): gonum's inverse
// regularized incomplete beta (relative error up to about 1e-6 in the level
// at alpha = 1e-8), polished by Newton steps on I_p(a, b) - alpha with the
// Beta density as derivative, kept inside (0, 1).
func betaQuantile(a, b, alpha float64) float64 {
	p := mathext.InvRegIncBeta(a, b, alpha)
	lb := mathext.Lbeta(a, b)
	for range 3 {
		if !(p > 0 && p < 1) {
			break
		}
		f := mathext.RegIncBeta(a, b, p) - alpha
		d := math.Exp((a-1)*math.Log(p) + (b-1)*math.Log1p(-p) - lb)
		if !(d > 0) || math.IsInf(d, 0) {
			break
		}
		q := p - f/d
		if !(q > 0 && q < 1) {
			break
		}
		p = q
	}
	return p
}

// ClopperPearsonUpper is the one-sided upper bound: the p with
// P(X <= k | n, p) = alpha, i.e. the 1-alpha quantile of Beta(k+1, n-k)
// (1 when k = n). It is computed as 1 - ClopperPearsonLower(n-k, n, alpha)
// (the failures' lower bound), which keeps the tail quantile in the
// incomplete beta's accurate range for small alpha.
func ClopperPearsonUpper(k, n int, alpha float64) float64 {
	switch {
	case k >= n:
		return 1
	case k < 0:
		return math.NaN()
	case k == 0:
		// Closed form: (1-p)^n = alpha. -expm1(log(alpha)/n) keeps the
		// small bound accurate.
		return -math.Expm1(math.Log(alpha) / float64(n))
	}
	return 1 - ClopperPearsonLower(n-k, n, alpha)
}
