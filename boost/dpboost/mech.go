package dpboost

import (
	"math"
	"math/rand/v2"

	"github.com/ppboost/ppboost/crypto/dlap"
)

// Laplace releases v + Lap(sensitivity/eps) as crypto/dlap's discrete
// Laplace mechanism, dlap.New(sensitivity, 1, eps): v is rounded at random
// (unbiased) to a power-of-two grid g <= min(sensitivity, b) 2^-21 (b =
// sensitivity/eps), exact discrete Laplace noise of scale b' in
// [b, b (1 + 2^-19)] is added in integer grid units, and the result is an
// integer times g. The release is exactly eps'-DP for inputs that differ by
// at most sensitivity, eps' = dlap.Mech.Epsilon() <= eps, with no
// floating-point caveat (every input has the same set of possible outputs,
// the grid; Mironov's attack on float64 Laplace does not apply). If the
// mechanism cannot be built (eps below about 2^-54, or a sensitivity that is
// not positive and finite) the release is 0, which does not depend on v.
func Laplace(r *rand.Rand, v, sensitivity, eps float64) float64 {
	m, err := LeafMech(sensitivity, eps)
	if err != nil {
		return 0
	}
	return m.Release(r, v)
}

// LeafMech is the mechanism Laplace releases a leaf value with: it knows its
// grid, integer sensitivity and scale, and its Epsilon() is the leaf's
// privacy charge (at most eps).
func LeafMech(sensitivity, eps float64) (dlap.Mech, error) {
	return dlap.New(sensitivity, 1, eps)
}

// ExpMech samples index i with probability exp(s_i) / sum_j exp(s_j) (the
// exponential mechanism with s_i = eps u_i / (2 Delta u)). It is exact up to
// floating point: the scores are shifted by their maximum (which leaves the
// distribution unchanged) so every weight exp(s_i - max) is in [0, 1] and the
// largest is 1, then one uniform u in [0, total) from r selects the first i
// whose cumulative weight exceeds u. Weights below 2^-1074 of the largest
// underflow to 0: candidates that unlikely are never chosen. scores must be
// finite and non-empty. It writes the weights into scores.
//
// Floating-point guarantee (the output is an index, so there are no low
// bits to leak, but its probabilities are computed in float64): each
// weight is exp to within 1 ulp, the running sums of n weights are within
// n 2^-53 of the total, and u takes 2^53 values, so the probability of
// candidate i is p_i (1 +- 2^-51) +- (2n + 1) 2^-53, p_i the exact
// exponential-mechanism probability of the computed scores. For
// neighbouring inputs whose scores differ by at most eps/2 this gives, for
// one candidate, P(i | D) <= e^(eps + 2^-49) P(i | D') + (e^eps + 1)(2n + 1)
// 2^-53, and for an event of several candidates the additive terms add up:
// (eps + 2^-49, delta)-DP with delta = (e^eps + 1) n (2n + 1) 2^-53 per
// selection (4e-8 for n = 10^4 candidates at eps = 1). The delta is real,
// not only an artefact of the proof: a candidate with p_i below about 2^-53
// may get probability 0 or 2^-53 depending on where its interval falls. Rounding in the
// scores themselves (computed gains times eps/(2 Delta)) adds a few ulps of
// |s_i| to the eps/2 bound.
func ExpMech(r *rand.Rand, scores []float64) int {
	m := math.Inf(-1)
	for _, s := range scores {
		m = max(m, s)
	}
	total := 0.0
	for i, s := range scores {
		w := math.Exp(s - m)
		scores[i] = w
		total += w
	}
	u := r.Float64() * total
	acc := 0.0
	for i, w := range scores {
		acc += w
		if u < acc {
			return i
		}
	}
	// Rounding can leave u >= acc by a few ulps: the last candidate with a
	// positive weight takes it.
	for i := len(scores) - 1; i >= 0; i-- {
		if scores[i] > 0 {
			return i
		}
	}
	return len(scores) - 1
}
