package pfds

import (
	"math"
	"math/rand/v2"

	"github.com/ppboost/ppboost/crypto/dlap"
)

// counter releases counts of sensitivity 1 (one row changes one count by
// one) with the geometric mechanism: count + DLap(1/eps), the exact discrete
// Laplace of crypto/dlap (integer arithmetic only, output an integer), so
// a release is exactly eps'-DP with eps' = m.Epsilon() <= eps and no
// floating-point caveat. Its variance is 1/(2 sinh^2(eps/2)), a little
// below the 2/eps^2 of Lap(1/eps).
type counter struct {
	m  dlap.Mech
	ok bool
}

// newCounter builds the mechanism once for a tree or a generator; ok is
// false only for a budget dlap refuses (not positive and finite, or below
// about 2^-54), and then every count is released as 0, which does not
// depend on the data.
func newCounter(eps float64) counter {
	m, err := dlap.NewInt(1, eps)
	return counter{m: m, ok: err == nil}
}

// release returns the noisy count of c, an integer-valued float64.
func (c counter) release(r *rand.Rand, count float64) float64 {
	if !c.ok {
		return 0
	}
	return float64(c.m.ReleaseInt(r, int64(count)))
}

// expMech returns index i with probability proportional to
// exp(eps*u[i]/(2*sens)), computed stably (shifted by the maximum). It is
// exact up to float64 rounding, with the guarantee of dpboost.ExpMech's
// comment: (eps + 2^-49, delta) with delta = (e^eps + 1) n (2n + 1) 2^-53
// for n candidates (u takes 2^53 values, so a candidate below about 2^-53
// of the total may be impossible under one input and possible under
// another).
func expMech(r *rand.Rand, u []float64, eps, sens float64) int {
	maxU := math.Inf(-1)
	for _, v := range u {
		maxU = math.Max(maxU, v)
	}
	w := make([]float64, len(u))
	total := 0.0
	for i, v := range u {
		w[i] = math.Exp(eps * (v - maxU) / (2 * sens))
		total += w[i]
	}
	x := r.Float64() * total
	for i, wi := range w {
		if x < wi {
			return i
		}
		x -= wi
	}
	return len(u) - 1
}

// argmax returns the first index of the largest value (ties go to the
// smallest index, deterministically).
func argmax(v []float64) int {
	best := 0
	for i := 1; i < len(v); i++ {
		if v[i] > v[best] {
			best = i
		}
	}
	return best
}
