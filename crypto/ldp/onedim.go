package ldp

import (
	"math"
	"math/rand/v2"
)

// EpsStar is the budget below which HM is pure Duchi: z* = e^{eps*/2} is the
// real root of 3z^3 - z^2 + z - 7 = 0.
const EpsStar = 0.6093524930273093

// oneDim perturbs one value in [-1, 1] with PM, Duchi, or their HM mixture.
// All constants depend only on eps and are computed once.
type oneDim struct {
	eps   float64
	alpha float64 // probability of the PM branch: 1 for PM, 0 for Duchi
	// PM
	c, half, pIn float64 // C, (C+1)/2, z/(z+1)
	z            float64
	invIn, bOut  float64 // 1/density inside [l, r]; density outside
	invOut       float64 // 1/bOut
	// Duchi
	dd, slope float64 // D, (E-1)/(2E+2)
}

func newOneDim(kind Kind, eps float64) oneDim {
	z := math.Exp(eps / 2)
	e := math.Exp(eps)
	o := oneDim{eps: eps, z: z}
	o.c = (z + 1) / (z - 1)
	o.half = (o.c + 1) / 2
	o.pIn = z / (z + 1)
	o.invIn = (o.c - 1) / o.pIn
	o.bOut = 1 / ((z + 1) * (o.c + 1))
	o.invOut = 1 / o.bOut
	o.dd = (e + 1) / (e - 1)
	o.slope = (e - 1) / (2*e + 2)
	switch kind {
	case Piecewise:
		o.alpha = 1
	case Duchi:
		o.alpha = 0
	case Hybrid:
		if eps > EpsStar {
			o.alpha = 1 - math.Exp(-eps/2)
		}
	}
	return o
}

// bound is the largest output magnitude.
func (o *oneDim) bound() float64 {
	switch {
	case o.alpha == 1:
		return o.c
	case o.alpha == 0:
		return o.dd
	}
	return math.Max(o.c, o.dd)
}

// pm samples the Piecewise Mechanism — uniform on [l(t), r(t)] with
// probability z/(z+1), else uniform on [-C, l) U (r, C] — by inverting its
// piecewise-linear CDF with one uniform draw: the left piece has mass
// bOut*(l+C), the middle pIn, the right the rest.
func (o *oneDim) pm(r *rand.Rand, t float64) float64 {
	l := o.half*t - (o.c-1)/2
	u := r.Float64()
	left := o.bOut * (l + o.c)
	if u < left {
		return -o.c + u*o.invOut
	}
	u -= left
	if u < o.pIn {
		return l + u*o.invIn
	}
	return l + o.c - 1 + (u-o.pIn)*o.invOut
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

// variance is Var[output | t]: for the mixture, the second moments mix
// (both branches are unbiased).
func (o *oneDim) variance(t float64) float64 {
	z := o.z
	vPM := t*t/(z-1) + (z+3)/(3*(z-1)*(z-1))
	vD := o.dd*o.dd - t*t
	return o.alpha*vPM + (1-o.alpha)*vD
}
