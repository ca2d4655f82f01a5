package dpboost

import (
	"math"
	"math/rand/v2"
)

// Laplace returns a draw from Lap(0, b), b > 0, by the inverse CDF of one
// uniform: one Uint64 gives the sign (low bit) and w = 1 - k 2^-53 in (0, 1]
// (top 53 bits, exact), and the draw is -+b ln w. This is the same sampler
// as crypto/ldp's Laplace mechanism, which cannot be reused here because it
// fixes the sensitivity of an input in [-1, 1] (scale 2d/eps), while leaves
// need Delta V / eps. |draw| <= 53 ln 2 b ~ 36.7 b.
func Laplace(r *rand.Rand, b float64) float64 {
	bits := r.Uint64()
	x := b * math.Log(1-float64(bits>>11)*0x1p-53) // <= 0
	if bits&1 == 1 {
		x = -x
	}
	return x
}

// ExpMech samples index i with probability exp(s_i) / sum_j exp(s_j) (the
// exponential mechanism with s_i = eps u_i / (2 Delta u)). It is exact up to
// floating point: the scores are shifted by their maximum (which leaves the
// distribution unchanged) so every weight exp(s_i - max) is in [0, 1] and the
// largest is 1, then one uniform u in [0, total) from r selects the first i
// whose cumulative weight exceeds u. Weights below 2^-1074 of the largest
// underflow to 0: candidates that unlikely are never chosen. scores must be
// finite and non-empty. It writes the weights into scores.
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
