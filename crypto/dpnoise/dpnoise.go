package dpnoise

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ppboost/ppboost/crypto/dlap"
	"github.com/ppboost/ppboost/crypto/field"
)

// ErrParams is wrapped by every parameter error.
var ErrParams = errors.New("dpnoise: bad parameters")

// MaxScale bounds t: a share's magnitude stays far below (p-1)/2 (P(|X| >
// 40 t) < e^-40 per coordinate, and 40 * 2^50 < 2^60).
const MaxScale = 1 << 50

// Params fix one distributed-noise design.
type Params struct {
	// Scale is t, the discrete Laplace scale in encoded (integer field)
	// units: a = exp(-1/t).
	Scale float64 `json:"scale"`
	// Honest is h: any h contributors' shares add up to DLap(t) exactly.
	Honest int `json:"honest"`
}

// Validate names the bad field.
func (p Params) Validate() error {
	if !(p.Scale > 0 && p.Scale <= MaxScale) {
		return fmt.Errorf("%w: scale %v, want (0, 2^50]", ErrParams, p.Scale)
	}
	if p.Honest < 1 {
		return fmt.Errorf("%w: honest %d, want >= 1", ErrParams, p.Honest)
	}
	return nil
}

// IntSensitivity is Delta_int = ceil(Delta S) + L: the integer L1
// sensitivity of a real query of L1 sensitivity delta over coords
// coordinates a record can change, after fixed-point encoding at codec's
// scale (each coordinate's rounding moves by at most 1 between neighbours).
func IntSensitivity(delta float64, codec field.Codec, coords int) float64 {
	return math.Ceil(delta*codec.Scale()) + float64(coords)
}

// ForEpsilon is the design that makes the sum of any honest >= h shares
// eps-DP for a query of real L1 sensitivity delta over coords coordinates:
// t = Delta_int / eps.
func ForEpsilon(eps, delta float64, codec field.Codec, coords, honest int) (Params, error) {
	if !(eps > 0) || math.IsInf(eps, 0) || !(delta > 0) || coords < 1 {
		return Params{}, fmt.Errorf("%w: eps %v, sensitivity %v, %d coordinates", ErrParams, eps, delta, coords)
	}
	p := Params{Scale: IntSensitivity(delta, codec, coords) / eps, Honest: honest}
	return p, p.Validate()
}

// Epsilon is the guarantee of the released sum for an integer sensitivity:
// Delta_int / t (the sum covers at least Honest honest shares).
func (p Params) Epsilon(intSensitivity float64) float64 { return intSensitivity / p.Scale }

// A is the discrete Laplace parameter exp(-1/t).
func (p Params) A() float64 { return math.Exp(-1 / p.Scale) }

// RealScale is t in decoded units (t / S): the Laplace scale the data user
// sees on a decoded coordinate.
func (p Params) RealScale(codec field.Codec) float64 { return p.Scale / codec.Scale() }

// Share draws one contributor's noise for one coordinate:
// NB(1/h, a) - NB(1/h, a). For h = 1 that is DLap(t) itself, drawn exactly
// by crypto/dlap's integer sampler (t, a float64, is the exact rational
// mant/2^k); for h > 1 by the float Polya samplers.
func (p Params) Share(r *rand.Rand) int64 {
	if p.Honest == 1 {
		if num, den, ok := ratio(p.Scale); ok {
			return dlap.Sample(r, num, den)
		}
	}
	a := p.A()
	r0 := 1 / float64(p.Honest)
	return Polya(r, r0, a) - Polya(r, r0, a)
}

// ratio writes t > 0 as num/den exactly, both in [1, 2^62].
func ratio(t float64) (num, den uint64, ok bool) {
	if !(t > 0) || math.IsInf(t, 0) {
		return 0, 0, false
	}
	frac, exp := math.Frexp(t) // t = frac 2^exp, frac in [0.5, 1)
	mant := uint64(math.Ldexp(frac, 53))
	e := exp - 53
	for mant%2 == 0 && e < 0 {
		mant /= 2
		e++
	}
	switch {
	case e >= 0 && e <= 62 && mant <= 1<<(62-e):
		return mant << e, 1, true
	case e < 0 && e >= -62 && mant <= 1<<62:
		return mant, 1 << -e, true
	}
	return 0, 0, false
}

// Noise returns the hook for securesum.Env.Noise: it adds an independent
// share to every coordinate of the encoded value, drawing from r (the
// owner's loop owns r: the hook must run on that loop only).
func (p Params) Noise(r *rand.Rand) func(enc []field.Elem) error {
	return func(enc []field.Elem) error {
		if err := p.Validate(); err != nil {
			return err
		}
		for i := range enc {
			enc[i] = enc[i].Add(field.FromInt(p.Share(r)))
		}
		return nil
	}
}

// Polya draws NB(shape, a): P(X = k) = Gamma(k+shape)/(Gamma(shape) k!)
// (1-a)^shape a^k, as Poisson(Gamma(shape) a/(1-a)).
func Polya(r *rand.Rand, shape, a float64) int64 {
	if a <= 0 {
		return 0
	}
	lam := Gamma(r, shape) * a / (1 - a)
	return Poisson(r, lam)
}

// Gamma draws Gamma(shape, 1), shape > 0 (Marsaglia & Tsang 2000).
func Gamma(r *rand.Rand, shape float64) float64 {
	if shape < 1 {
		// Gamma(s) = Gamma(s+1) U^(1/s); in logs to keep tiny values.
		u := 1 - r.Float64() // (0, 1]
		return Gamma(r, shape+1) * math.Exp(math.Log(u)/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := 1 - r.Float64()
		if u < 1-0.0331*x*x*x*x {
			return d * v
		}
		if math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// Poisson draws Poisson(lam), lam >= 0: below mean 10 by multiplying
// uniforms (Knuth): k is the number of factors U_1 U_2 ... that keep the
// product above e^-lam, Poisson(lam) exactly in real arithmetic, with no
// truncation of the support and no running sum that float rounding could
// leave short of the uniform (the old inversion's failure mode, which was
// capped at k = 1000). Each step stops with probability at least e^-10
// (a factor below e^-lam, the product being at most 1): the loop ends with
// probability 1, after lam + 1 uniforms on average. Float rounding of the
// product (about k ulps) is the only deviation. Above mean 10, Hormann's
// PTRS (1993), a rejection sampler whose every round accepts with
// probability above 0.8.
func Poisson(r *rand.Rand, lam float64) int64 {
	switch {
	case !(lam > 0):
		return 0
	case lam < 10:
		limit := math.Exp(-lam)
		var k int64
		for p := r.Float64(); p > limit; p *= r.Float64() {
			k++
		}
		return k
	}
	slam := math.Sqrt(lam)
	loglam := math.Log(lam)
	b := 0.931 + 2.53*slam
	a := -0.059 + 0.02483*b
	invalpha := 1.1239 + 1.1328/(b-3.4)
	vr := 0.9277 - 3.6224/(b-2)
	for {
		U := r.Float64() - 0.5
		V := r.Float64()
		us := 0.5 - math.Abs(U)
		k := math.Floor((2*a/us+b)*U + lam + 0.43)
		if us >= 0.07 && V <= vr {
			return int64(k)
		}
		if k < 0 || (us < 0.013 && V > us) {
			continue
		}
		lg, _ := math.Lgamma(k + 1)
		if math.Log(V)+math.Log(invalpha)-math.Log(a/(us*us)+b) <= -lam+k*loglam-lg {
			return int64(k)
		}
	}
}
