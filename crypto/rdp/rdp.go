package rdp

import "math"

// Curve is a Renyi-DP curve: eps(alpha) for alpha > 1, non-decreasing.
type Curve func(alpha float64) float64

// ZCDP is the curve of rho-zCDP: alpha rho.
func ZCDP(rho float64) Curve { return func(a float64) float64 { return a * rho } }

// PureZCDP is the curve of a mechanism known to be both eps-DP and
// rho-zCDP: min(eps, alpha rho) (a likelihood ratio within e^eps bounds
// every Renyi divergence by eps). Independent discrete Laplace noise of
// scale tau on a vector whose integer shift has L1 norm k1 and L2 norm k2
// is such a mechanism with eps = k1/tau and rho = k2^2/(2 tau^2): each
// coordinate i is (|k_i|/tau)-DP, hence k_i^2/(2 tau^2)-zCDP (eps-DP
// implies eps^2/2-zCDP, Bun and Steinke 2016, Proposition 3.3), and
// independent coordinates add their divergences.
func PureZCDP(eps, rho float64) Curve {
	return func(a float64) float64 { return min(eps, a*rho) }
}

// Sum composes curves (the mechanisms run one after another on the same
// data, each chosen adaptively).
func Sum(cs ...Curve) Curve {
	return func(a float64) float64 {
		s := 0.0
		for _, c := range cs {
			s += c(a)
		}
		return s
	}
}

// Times is k compositions of c.
func Times(c Curve, k float64) Curve { return func(a float64) float64 { return k * c(a) } }

// Epsilon converts a curve to (eps, delta)-DP (delta in (0, 1)): the
// minimum over alpha in (1, 1+e^20) of the CKS conversion, by a
// golden-section search on log(alpha-1) (the objective is unimodal there
// for the curves of this package: convex in alpha), refined from the best
// of a coarse grid so a non-unimodal curve still gets a valid (if looser)
// bound: every value returned is the conversion at some alpha, hence sound.
func Epsilon(c Curve, delta float64) float64 {
	f := func(la float64) float64 {
		a := 1 + math.Exp(la)
		return c(a) + (math.Log(1/delta)-math.Log(a))/(a-1) + math.Log1p(-1/a)
	}
	best, at := math.Inf(1), 0.0
	for la := -12.0; la <= 20; la += 0.5 {
		if v := f(la); v < best {
			best, at = v, la
		}
	}
	lo, hi := at-0.5, at+0.5
	g := (math.Sqrt(5) - 1) / 2
	x1, x2 := hi-g*(hi-lo), lo+g*(hi-lo)
	f1, f2 := f(x1), f(x2)
	for range 100 {
		if f1 < f2 {
			hi, x2, f2 = x2, x1, f1
			x1 = hi - g*(hi-lo)
			f1 = f(x1)
		} else {
			lo, x1, f1 = x1, x2, f2
			x2 = lo + g*(hi-lo)
			f2 = f(x2)
		}
	}
	return max(0, min(best, f1, f2))
}

// ZCDPEpsilon is Epsilon(ZCDP(rho), delta), never above the classical rho
// + 2 sqrt(rho log(1/delta)); 0 for rho <= 0.
func ZCDPEpsilon(rho, delta float64) float64 {
	if rho <= 0 {
		return 0
	}
	return min(Epsilon(ZCDP(rho), delta), rho+2*math.Sqrt(rho*math.Log(1/delta)))
}

// ZCDPRho is the largest rho with ZCDPEpsilon(rho, delta) <= eps (to a
// relative 1e-12), by bisection.
func ZCDPRho(eps, delta float64) float64 {
	return Largest(func(rho float64) float64 { return ZCDPEpsilon(rho, delta) }, eps, eps+1)
}

// Largest is the largest x > 0 with f(x) <= target, for f increasing from
// f(0) <= target, by doubling from start then bisection (relative 1e-12).
func Largest(f func(float64) float64, target, start float64) float64 {
	lo, hi := 0.0, start
	for f(hi) <= target {
		lo, hi = hi, hi*2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if f(mid) <= target {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo <= 1e-12*hi {
			break
		}
	}
	return lo
}

// DLap is the exact Renyi divergence curve of the discrete Laplace
// mechanism with scale tau (P(x) proportional to a^|x|, a = exp(-1/tau)) and
// an integer shift k >= 0: D_alpha(DLap + k || DLap), in closed form (the
// sum over x splits into x <= 0, 0 < x < k and x >= k, three geometric
// series), computed in log space. It is symmetric in the order of the two
// distributions (the shift's sign), so it bounds both directions.
func DLap(tau float64, k int64) Curve {
	if k < 0 {
		k = -k
	}
	return func(alpha float64) float64 {
		if k == 0 {
			return 0
		}
		la := -1 / tau // log a
		kf := float64(k)
		// log of sum_x a^(alpha|x-k| + (1-alpha)|x|), times (1-a)/(1+a).
		l1a := math.Log(-math.Expm1(la)) // log(1 - a), accurate for tiny 1/tau
		l1 := alpha*kf*la - l1a          // x <= 0
		l3 := (1-alpha)*kf*la - l1a      // x >= k
		terms := []float64{l1, l3}
		if k > 1 { // 0 < x < k: a^(alpha k) sum_{x=1}^{k-1} a^(x(1-2alpha))
			r := (1 - 2*alpha) * la // log ratio, > 0
			// sum_{x=1}^{k-1} e^(r x) = e^r (e^(r(k-1)) - 1)/(e^r - 1)
			l2 := alpha*kf*la + r + logExpm1(r*(kf-1)) - logExpm1(r)
			terms = append(terms, l2)
		}
		m := math.Inf(-1)
		for _, t := range terms {
			m = max(m, t)
		}
		s := 0.0
		for _, t := range terms {
			s += math.Exp(t - m)
		}
		logNorm := l1a - math.Log1p(math.Exp(la))
		return (m + math.Log(s) + logNorm) / (alpha - 1)
	}
}

// logExpm1 is log(e^x - 1) for x > 0, stable for small and large x.
func logExpm1(x float64) float64 {
	if x > 30 {
		return x + math.Log1p(-math.Exp(-x))
	}
	return math.Log(math.Expm1(x))
}

// GaussianDelta is the exact privacy profile of the Gaussian mechanism
// whose sensitivity is mu standard deviations (Balle & Wang, ICML 2018,
// Theorem 8): delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu).
// Compositions of Gaussians with mu_1..mu_T are exactly one Gaussian with
// mu = sqrt(sum mu_i^2).
func GaussianDelta(mu, eps float64) float64 {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	return phi(mu/2-eps/mu) - math.Exp(eps)*phi(-mu/2-eps/mu)
}

// GaussianEpsilon inverts GaussianDelta in eps by bisection.
func GaussianEpsilon(mu, delta float64) float64 {
	lo, hi := 0.0, 1.0
	for GaussianDelta(mu, hi) > delta {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if GaussianDelta(mu, mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
