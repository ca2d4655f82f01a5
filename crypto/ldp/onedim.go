package ldp

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// EpsStar is the budget at or below which HM is pure Duchi: z* = e^{eps*/2}
// is the real root of 3z^3 - z^2 + z - 7 = 0.
const EpsStar = 0.6093524930273093

// oneDim perturbs one value in [-1, 1] with PM, Duchi, or their HM mixture.
// Every constant depends only on eps and is computed once, from
// e^x - 1 = math.Expm1(x) so that tiny and huge budgets stay accurate and
// finite (as eps grows, C and D tend to 1 and the output to t).
type oneDim struct {
	alpha float64 // probability of the PM branch: 1 for PM, 0 for Duchi
	zm1   float64 // z - 1 = e^{eps/2} - 1
	// PM
	c, half float64 // C = (z+1)/(z-1), (C+1)/2
	pIn     float64 // z/(z+1): mass of [l(t), r(t)]
	invIn   float64 // (C-1)/pIn: width per unit of mass inside
	bOut    float64 // density outside [l(t), r(t)]: 1/((z+1)(C+1))
	invOut  float64 // 1/bOut
	// Duchi
	dd, slope float64 // D = (E+1)/(E-1), (E-1)/(2E+2)
}

func newOneDim(kind Kind, eps float64) oneDim {
	zm1 := math.Expm1(eps / 2)
	em1 := math.Expm1(eps)
	o := oneDim{zm1: zm1}
	o.c = 1 + 2/zm1
	o.half = 1 + 1/zm1
	o.pIn = 1 - 1/(zm1+2)
	o.invIn = (2 / zm1) / o.pIn
	o.invOut = (zm1 + 2) * (2 + 2/zm1)
	o.bOut = 1 / o.invOut
	o.dd = 1 + 2/em1
	o.slope = 0.5 - 1/(em1+2)
	switch kind {
	case Piecewise:
		o.alpha = 1
	case Hybrid:
		if eps > EpsStar {
			o.alpha = -math.Expm1(-eps / 2) // 1 - e^{-eps/2}
		}
	}
	return o
}

// bound is the largest output magnitude.
func (o *oneDim) bound() float64 {
	switch o.alpha {
	case 1:
		return o.c
	case 0:
		return o.dd
	}
	return math.Max(o.c, o.dd)
}

// pm samples the Piecewise Mechanism, uniform on [l(t), r(t)] with
// probability z/(z+1), else uniform on [-C, l(t)) U (r(t), C], by inverting
// its piecewise-linear CDF with one uniform u: the left piece has mass
// bOut(l+C), the middle pIn, the right the rest. The result is clamped to
// [-C, C] against rounding, so Bound holds exactly.
func (o *oneDim) pm(r *rand.Rand, t float64) float64 {
	l := o.half*t - (o.c-1)/2
	u := r.Float64()
	var x float64
	if left := o.bOut * (l + o.c); u < left {
		x = -o.c + u*o.invOut
	} else if u -= left; u < o.pIn {
		x = l + u*o.invIn
	} else {
		x = l + (o.c - 1) + (u-o.pIn)*o.invOut
	}
	if x > o.c {
		x = o.c
	} else if x < -o.c {
		x = -o.c
	}
	return x
}

// duchi outputs +D with probability (E-1)/(2E+2) t + 1/2, else -D.
func (o *oneDim) duchi(r *rand.Rand, t float64) float64 {
	if r.Float64() < o.slope*t+0.5 {
		return o.dd
	}
	return -o.dd
}

func (o *oneDim) perturb(r *rand.Rand, t float64) float64 {
	switch {
	case o.alpha == 1:
		return o.pm(r, t)
	case o.alpha == 0:
		return o.duchi(r, t)
	case r.Float64() < o.alpha:
		return o.pm(r, t)
	}
	return o.duchi(r, t)
}

// variance is Var[output | t]. PM: t^2/(z-1) + (z+3)/(3(z-1)^2); Duchi:
// D^2 - t^2; HM mixes the second moments (both branches are unbiased).
func (o *oneDim) variance(t float64) float64 {
	vPM := t*t/o.zm1 + (1+4/o.zm1)/(3*o.zm1)
	vD := o.dd*o.dd - t*t
	switch o.alpha { // no 0 * Inf when eps is tiny
	case 1:
		return vPM
	case 0:
		return vD
	}
	return o.alpha*vPM + (1-o.alpha)*vD
}

// scalar is PM, HM or Duchi for d = 1: the one-value mechanism.
type scalar struct {
	base
	one oneDim
}

func (m *scalar) Bound() float64 { return m.one.bound() }

func (m *scalar) Perturb(r *rand.Rand, t, out []float64) error {
	if len(t) != 1 || len(out) != 1 {
		return fmt.Errorf("%w: input %d, output %d, dim 1", ErrLength, len(t), len(out))
	}
	v, err := m.input(t[0])
	if err != nil {
		return fmt.Errorf("coordinate 0: %w", err)
	}
	out[0] = m.one.perturb(r, v)
	return nil
}

func (m *scalar) Variance(t []float64, j int) float64 {
	v, ok := m.at(t, j)
	if !ok {
		return math.NaN()
	}
	return m.one.variance(v)
}
