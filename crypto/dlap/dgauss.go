package dlap

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// BernoulliExp is Bernoulli(exp(-num/den)) for any num >= 0, den >= 1,
// exactly: floor(num/den) draws of Bernoulli(exp(-1)) that must all
// succeed, then Bernoulli(exp(-(num mod den)/den)) (CKS Algorithm 1 on
// each piece). It panics on den = 0.
func BernoulliExp(r *rand.Rand, num, den uint64) bool {
	if den == 0 {
		panic("dlap: BernoulliExp with den 0")
	}
	return bernExpWide(r, 0, num, den)
}

// bernExpWide is Bernoulli(exp(-(hi 2^64 + lo)/den)). A quotient of 2^64 or
// more is treated as 2^64 - 1 draws of Bernoulli(exp(-1)): the return is
// false except with probability below exp(-(2^64 - 1)).
func bernExpWide(r *rand.Rand, hi, lo, den uint64) bool {
	q, rem := uint64(math.MaxUint64), uint64(0)
	if hi < den {
		q, rem = bits.Div64(hi, lo, den)
	}
	for range q {
		if !bernExp(r, 1, 1) {
			return false
		}
	}
	return bernExp(r, rem, den)
}

// MaxGaussVariance bounds SampleGauss's variance parameter (sigma^2 <=
// 2^30, sigma <= 2^15): it keeps 2 s t^2 below 2^63 (t = floor(sqrt(s)) +
// 1), so the acceptance exponent is an exact 128-bit by 64-bit ratio.
const MaxGaussVariance = 1 << 30

// SampleGauss draws X from the discrete Gaussian N_Z(0, s): P(X = x)
// proportional to exp(-x^2/(2 s)) on the integers, exactly (CKS
// Algorithm 3): Y ~ DLap(t), t = floor(sqrt(s)) + 1, accepted with
// probability exp(-(|Y| - s/t)^2/(2 s)) = exp(-(|Y| t - s)^2/(2 s t^2)), an
// exact rational exponent for BernoulliExp. The expected number of
// DLap draws is below 2 for every s >= 1. s must be in [1,
// MaxGaussVariance]; SampleGauss panics otherwise (callers validate).
func SampleGauss(r *rand.Rand, s uint64) int64 {
	if s < 1 || s > MaxGaussVariance {
		panic("dlap: SampleGauss variance out of range")
	}
	t := uint64(math.Sqrt(float64(s)))
	for t*t > s { // exact integer square root floor
		t--
	}
	for (t+1)*(t+1) <= s {
		t++
	}
	t++
	den := 2 * s * t * t // below 2^63 for s <= MaxGaussVariance
	for {
		y := Sample(r, t, 1)
		a := uint64(y)
		if y < 0 {
			a = uint64(-y)
		}
		// d = | |Y| t - s |, as 128 bits; the exponent is d^2 / den.
		mh, ml := bits.Mul64(a, t)
		var dh, dl uint64
		if mh > 0 || ml >= s {
			var b uint64
			dl, b = bits.Sub64(ml, s, 0)
			dh = mh - b
		} else {
			dl = s - ml
		}
		if dh != 0 {
			// d^2/den >= 2^128/2^63: accept with probability below exp(-2^65).
			continue
		}
		sh, sl := bits.Mul64(dl, dl)
		if bernExpWide(r, sh, sl, den) {
			return y
		}
	}
}

// GaussPMF is P(X = x) for N_Z(0, s), from the normalizing sum over |x| <=
// 12 sqrt(s) + 12 (the rest is below exp(-72) of it); for tests and the
// audit.
func GaussPMF(s float64, x int64) float64 {
	w := int64(12*math.Sqrt(s)) + 12
	z := 0.0
	for k := -w; k <= w; k++ {
		z += math.Exp(-float64(k*k) / (2 * s))
	}
	return math.Exp(-float64(x)*float64(x)/(2*s)) / z
}
