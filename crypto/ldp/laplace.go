package ldp

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ppboost/ppboost/crypto/dlap"
)

// laplace releases every coordinate with the discrete Laplace mechanism of
// crypto/dlap: sensitivity 2 (an input in [-1, 1]) at eps/d each, on a
// power-of-two grid g <= min(2, 2d/eps) 2^-21, with noise of scale
// b' = g num/den, b <= b' <= b (1 + 2^-19), b = 2d/eps. Each coordinate is
// exactly (eps/d)-DP (dlap.Mech.Epsilon, at most eps/d), so the vector is
// eps-LDP, with no floating-point caveat: outputs are multiples of g.
type laplace struct {
	base
	mech  dlap.Mech
	clamp int64 // |output| <= clamp grid units
}

// tailScales is where the output is clamped: 1 + 64 b' (in grid units,
// rounded up). The clamp is post-processing (no privacy cost); it moves the
// mean by at most b' e^-64 / 2 ~ 8e-29 b' and the variance by less.
const tailScales = 64

func newLaplace(b base) (*laplace, error) {
	m, err := dlap.New(2, 1, b.eps/float64(b.d))
	if err != nil {
		return nil, fmt.Errorf("%w: eps %v for laplace with d=%d: %v", ErrEpsilon, b.eps, b.d, err)
	}
	g := m.Grid()
	units := math.Ceil(1/g + tailScales*m.RealScale()/g)
	if !(units <= dlap.MaxUnits) {
		return nil, fmt.Errorf("%w: eps %v is too small for laplace with d=%d (output bound overflows)", ErrEpsilon, b.eps, b.d)
	}
	return &laplace{base: b, mech: m, clamp: int64(units)}, nil
}

// Bound is the clamp, 1 + 64 b' rounded up to the grid.
func (m *laplace) Bound() float64 { return m.mech.Grid() * float64(m.clamp) }

// Perturb releases g clamp(round(t_j/g) + DLap(num/den)) for every j: the
// input rounded at random to a neighbouring grid point (unbiased), plus
// exact discrete Laplace noise, clamped to +-Bound.
func (m *laplace) Perturb(r *rand.Rand, t, out []float64) error {
	if err := m.check(t, out); err != nil {
		return err
	}
	g := m.mech.Grid()
	for j, x := range t {
		v, _ := m.input(x)
		u := max(-m.clamp, min(m.clamp, m.mech.Units(r, v)))
		out[j] = g * float64(u)
	}
	return nil
}

// Variance is 2a/(1-a)^2 g^2 (a = exp(-den/num), within 2^-18 of
// 2b^2 = 8d^2/eps^2) plus the rounding variance g^2 f(1-f) <= g^2/4,
// f = frac(t_j/g); the clamp changes it by a relative e^-60 or less.
func (m *laplace) Variance(t []float64, j int) float64 {
	v, ok := m.at(t, j)
	if !ok || math.IsNaN(v) {
		return math.NaN()
	}
	return m.mech.Variance(v)
}
