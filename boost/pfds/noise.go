package pfds

import (
	"math"
	"math/rand/v2"
)

// laplace draws Lap(b): by the inverse CDF with u from one Uint64 (the low bit
// picks the sign, the top 53 bits w in (0, 1]), so the noise is -+b ln(w),
// finite. b must be positive.
func laplace(r *rand.Rand, b float64) float64 {
	bits := r.Uint64()
	n := -b * math.Log(1-float64(bits>>11)*0x1p-53)
	if bits&1 == 1 {
		return -n
	}
	return n
}

// expMech returns index i with probability proportional to
// exp(eps*u[i]/(2*sens)), computed stably (shifted by the maximum).
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
