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
	bOut    float64 // density outside [l(t), r(t)]: 1/((z+1)(C+1))
	mid     int64   // pIn 2^63: how many of the 2^63 words fall inside
	midStep float64 // (C-1)/mid: width per word inside
	outStep float64 // 2^-63/bOut: width per word outside (0 if bOut is 0)
	grid    float64 // 2^(e-31) for C in [2^(e-1), 2^e): PM outputs are multiples
	invGrid float64 // 1/grid, exact (a power of two)
	maxK    float64 // floor(C/grid): |output| <= maxK grid <= C
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
	invOut := (zm1 + 2) * (2 + 2/zm1)
	o.bOut = 1 / invOut
	o.mid = math.MaxInt64
	if m := o.pIn * 0x1p63; m < 0x1p63 {
		o.mid = int64(m)
	}
	o.midStep = (o.c - 1) / float64(o.mid)
	if o.bOut > 0 {
		o.outStep = invOut * 0x1p-63
	}
	_, e := math.Frexp(o.c)
	o.grid = math.Ldexp(1, e-31)
	o.invGrid = math.Ldexp(1, 31-e)
	o.maxK = math.Floor(o.c / o.grid)
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
// its piecewise-linear CDF with one uniform 63-bit word u: the first
// bOut(l+C) 2^63 words map linearly onto the left piece, the next mid =
// pIn 2^63 (a constant, so the middle piece's step does not depend on t)
// onto [l, r), the rest onto the right piece. The point is clamped to
// [-C, C] and snapped to the nearest multiple of grid = 2^(e-31)
// (C in [2^(e-1), 2^e)), at most maxK grid <= C in magnitude.
//
// Why the snap: a point l + U (r - l) in float64 ranges over a set of
// floats that depends on t, so some outputs are possible under one input
// and impossible under another (an infinite likelihood ratio, Mironov's
// observation for Laplace). After the snap the outputs are one fixed set
// of grid points for every t, and each grid cell's probability is
// (words mapped into it) 2^-63. Ideally that is the integral of the density
// over the cell, between w p_out and w p_in for a cell of width w
// (w >= grid/2: the edge cells reach to +-C), whatever t is, with
// p_in/p_out = e^eps, so every cell's ratio between two inputs is at most
// e^eps. The implementation's word counts differ from the ideal by the
// integer rounding of the piece boundaries (a few words per cell) and by
// the float rounding of the computed point (at most about 2^-50 C in x,
// i.e. a relative 2^-17 of a cell of width grid/2 >= C 2^-32; the same
// density applies on both sides of a cell boundary, so the displaced words
// are a fraction of the cell's own). With N_min = (grid/2) p_out 2^63 >=
// 2^30/(z+1) words in the smallest cell, the relative error is
// rho <= 2^-17 + 8/N_min, and the implementation is
// (eps + 2 rho/(1 - rho))-LDP (PMRoundingExcess computes rho): 7.7e-6 up
// to eps = 10, 4.9e-5 at eps = 20, 0.006 at eps = 30; near eps = 40 the
// bound is vacuous (there the noise interval C - 1 = 2/(z - 1) is a few
// grid steps wide: the release is close to t itself anyway). Multi-
// dimensional PM runs this at eps/k < 5 when d > 1.
func (o *oneDim) pm(r *rand.Rand, t float64) float64 {
	l := o.half*t - (o.c-1)/2
	u := int64(r.Uint64() >> 1) // int64: the fast conversions
	var x float64
	left := int64(0)
	if m := o.bOut * (l + o.c) * 0x1p63; m > 0 {
		left = int64(min(m, float64(math.MaxInt64-o.mid)))
	}
	switch {
	case u < left:
		x = -o.c + float64(u)*o.outStep
	case u-left < o.mid:
		x = l + float64(u-left)*o.midStep
	default:
		x = l + (o.c - 1) + float64(u-left-o.mid)*o.outStep
	}
	// y = x/grid in [-2^31, 2^31] (x is finite: every step is finite), rounded
	// half away from zero by truncating y +- 1/2 (a fixed monotone map of x).
	y := max(-o.c, min(o.c, x)) * o.invGrid
	k := float64(int64(y + math.Copysign(0.5, y)))
	return max(-o.maxK, min(o.maxK, k)) * o.grid
}

// PMRoundingExcess is the rho of the pm comment for the one-value PM at eps:
// 2^-17 + 8/N_min with N_min = (grid/2) p_out 2^63 words in the smallest
// output cell. The implementation's likelihood ratio is at most
// e^eps (1 + rho)/(1 - rho).
func PMRoundingExcess(eps float64) float64 {
	o := newOneDim(Piecewise, eps)
	nMin := o.grid / 2 * o.bOut * 0x1p63
	return 0x1p-17 + 8/nMin
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
