package dpnoise

import (
	"math"
	"slices"
)

// ChiSquare is Pearson's goodness-of-fit statistic of integer samples
// against a pmf: the integers are cut into cells, each holding expected
// count >= minExpected (5), outward from the mode 0, with both tails merged
// into the outermost cells, and it returns sum (O-E)^2/E and the degrees of
// freedom (cells - 1). The pmf must be symmetric and unimodal at 0 (every
// pmf of this package is).
func ChiSquare(samples []int64, pmf func(int64) float64) (stat float64, df int) {
	const minExpected = 5
	n := float64(len(samples))
	// Cell edges: [lo_i, hi_i] on the positive side, mirrored.
	type cell struct{ lo, hi int64 }
	var pos []cell // cells covering 1.. (0 is its own cell)
	start := int64(1)
	for {
		e, k := 0.0, start
		for e < minExpected/n && k < start+1<<20 {
			e += pmf(k)
			k++
		}
		tail := 0.0 // what lies beyond this cell
		for j := k; j < k+1<<12; j++ {
			p := pmf(j)
			tail += p
			if p < 1e-14 {
				break
			}
		}
		if e < minExpected/n || tail < minExpected/n {
			pos = append(pos, cell{start, math.MaxInt64}) // the tail cell
			break
		}
		pos = append(pos, cell{start, k - 1})
		start = k
	}
	cells := []cell{{0, 0}}
	for _, c := range pos {
		cells = append(cells, c, cell{-c.hi, -c.lo})
	}
	slices.SortFunc(cells, func(a, b cell) int {
		if a.lo < b.lo {
			return -1
		}
		return 1
	})
	obs := make([]float64, len(cells))
	for _, s := range samples {
		i, _ := slices.BinarySearchFunc(cells, s, func(c cell, v int64) int {
			switch {
			case c.hi < v:
				return -1
			case c.lo > v:
				return 1
			}
			return 0
		})
		obs[i]++
	}
	// Expected counts: inner cells by summing the pmf, the tail cells by
	// what is left of the total mass.
	inner := 0.0
	exp := make([]float64, len(cells))
	for i, c := range cells {
		if c.lo == math.MinInt64+1 || c.hi == math.MaxInt64 {
			continue
		}
		for k := c.lo; k <= c.hi; k++ {
			exp[i] += pmf(k)
		}
		inner += exp[i]
	}
	for i, c := range cells {
		if c.lo == math.MinInt64+1 || c.hi == math.MaxInt64 {
			exp[i] = (1 - inner) / 2
		}
	}
	for i := range cells {
		e := exp[i] * n
		stat += (obs[i] - e) * (obs[i] - e) / e
	}
	return stat, len(cells) - 1
}

// ChiSquareCritical is the upper-alpha quantile of the chi-square
// distribution with df degrees of freedom by the Wilson-Hilferty cube-root
// normal approximation, df (1 - 2/(9 df) + z sqrt(2/(9 df)))^3 with z the
// upper-alpha normal quantile (relative error below 1% for df >= 10 at
// alpha >= 1e-6).
func ChiSquareCritical(df int, alpha float64) float64 {
	z := math.Sqrt2 * math.Erfinv(1-2*alpha)
	k := float64(df)
	c := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * c * c * c
}
