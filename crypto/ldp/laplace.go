package ldp

import (
	"math"
	"math/rand/v2"
)

// laplace adds Lap(2d/eps) noise to every coordinate (eps/d each).
type laplace struct {
	base
	scale float64 // b = 2d/eps
}

// Bound is the largest |output| the sampler below can produce: an input in
// [-1, 1] plus at most 53 ln 2 b of noise (the noise is b ln w with w >= 2^-53).
func (m *laplace) Bound() float64 { return 1 + 53*math.Ln2*m.scale }

// Perturb samples by the inverse CDF F^-1(u) = t + b ln(2u) for u <= 1/2,
// t - b ln(2 - 2u) for u >= 1/2, with u uniform in (0, 1) drawn from one
// Uint64: the low bit picks the half, the top 53 bits give
// w = 1 - k 2^-53 in (0, 1] (exact), and u = w/2 or 1 - w/2. So the noise
// is -+b ln(w): finite, at most 53 ln 2 b ~ 36.7 b in magnitude.
func (m *laplace) Perturb(r *rand.Rand, t, out []float64) error {
	if err := m.check(t, out); err != nil {
		return err
	}
	for j, x := range t {
		v, _ := m.input(x)
		bits := r.Uint64()
		noise := m.scale * math.Log(1-float64(bits>>11)*0x1p-53) // <= 0
		if bits&1 == 1 {
			noise = -noise
		}
		out[j] = v + noise
	}
	return nil
}

// Variance is 2b^2 = 8d^2/eps^2.
func (m *laplace) Variance(t []float64, j int) float64 {
	if v, ok := m.at(t, j); !ok || math.IsNaN(v) {
		return math.NaN()
	}
	return 2 * m.scale * m.scale
}
