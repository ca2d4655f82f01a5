package ldp

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

// oldPMRight is the right-piece branch of the PM sampler before the snap:
// u a multiple of 2^-53 (Float64), x = l + (C-1) + ((u - left) - pIn) invOut.
func oldPMRight(o *oneDim, t, u float64) float64 {
	l := o.half*t - (o.c-1)/2
	left := o.bOut * (l + o.c)
	return l + (o.c - 1) + ((u-left)-o.pIn)/o.bOut
}

// oldPMMid is the middle branch: x = l + (u - left) invIn.
func oldPMMid(o *oneDim, t, u float64) float64 {
	l := o.half*t - (o.c-1)/2
	left := o.bOut * (l + o.c)
	return l + (u-left)*(o.c-1)/o.pIn
}

// The float version of PM (before the snap) has the floating-point
// weakness the task describes: at t = 1 its middle piece [1, C] is covered
// by the affine image of the 2^-53 uniforms, and at t = -1 the same
// interval is the right outside piece, another affine image with another
// step. Outputs of t = 1 that no uniform produces at t = -1 have an
// infinite likelihood ratio (negative control: a large share of them).
// After the snap every output of either input is a multiple of the fixed
// grid within +-maxK grid, and every such cell has positive probability
// under both inputs (the density is at least p_out > 0 everywhere on
// [-C, C]): the sets are the same.
func TestPMOutputsOnInputIndependentGrid(t *testing.T) {
	const n = 20000
	const eps = 1.0
	o := newOneDim(Piecewise, eps)
	r := rng.ForName(t.Name())
	// Negative control on the old arithmetic.
	tried, unreachable := 0, 0
	for range n {
		u := r.Float64() // the old sampler's uniform, a multiple of 2^-53
		if left := o.bOut * (o.half*1 - (o.c-1)/2 + o.c); u < left || u-left >= o.pIn {
			continue // not the middle branch at t = 1
		}
		x := oldPMMid(&o, 1, u)
		if x <= 1 || x >= o.c {
			continue
		}
		tried++
		// Invert the right branch at t = -1 and scan +-64 uniforms.
		lm := o.half*-1 - (o.c-1)/2
		u0 := (x-lm-(o.c-1))*o.bOut + o.pIn + o.bOut*(lm+o.c)
		k0 := math.Round(u0 * 0x1p53)
		found := false
		for k := k0 - 64; k <= k0+64 && !found; k++ {
			found = oldPMRight(&o, -1, k*0x1p-53) == x
		}
		if !found {
			unreachable++
		}
	}
	t.Logf("old PM: %d of %d outputs of t = 1 in (1, C) impossible at t = -1", unreachable, tried)
	if unreachable < tried/10 {
		t.Fatalf("negative control: only %d of %d distinguishable", unreachable, tried)
	}
	// The snapped sampler.
	for _, eps := range []float64{0.5, 1, 5, 20} {
		o := newOneDim(Piecewise, eps)
		for _, in := range []float64{-1, 1, 0.3} {
			for range n {
				x := o.pm(r, in)
				k := x / o.grid
				if k != math.Trunc(k) || math.Abs(k) > o.maxK || math.Abs(x) > o.c {
					t.Fatalf("eps %v t %v: output %v not on the grid %v (max %v)", eps, in, x, o.grid, o.maxK)
				}
			}
		}
		if rho := PMRoundingExcess(eps); eps <= 10 && rho > 1e-5 {
			t.Errorf("eps %v: rounding excess %v", eps, rho)
		}
	}
}

// Exact cell probabilities of the implementation, by counting 63-bit words: for
// eps = 1 and the inputs t = -1, 1 the word ranges of each branch are known
// in closed form, so the probability of the cell around a grid point is the
// number of 64-bit words whose computed point snaps there. Binary search
// over the monotone map word -> snapped point finds each cell's word
// interval; the worst ratio between the inputs over a sample of cells must
// be within e^eps (1 + rho)/(1 - rho).
func TestPMCellRatioExact(t *testing.T) {
	const eps = 1.0
	o := newOneDim(Piecewise, eps)
	rho := PMRoundingExcess(eps)
	limit := math.Exp(eps) * (1 + rho) / (1 - rho)
	// snapAt is pm with the word fixed.
	snapAt := func(tv float64, u uint64) float64 { return o.pm(rand.New(fixedWord(u<<1)), tv) } // pm uses the top 63 bits
	// first word whose snapped point is >= x (the map is monotone in u).
	first := func(tv, x float64) uint64 {
		lo, hi := uint64(0), uint64(math.MaxInt64)
		for lo < hi {
			mid := lo + (hi-lo)/2
			if snapAt(tv, mid) >= x {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		return lo
	}
	count := func(tv, x float64) float64 {
		return float64(first(tv, x+o.grid/2) - first(tv, x-o.grid/2))
	}
	r := rng.ForName(t.Name())
	worst := 0.0
	cells := []float64{-o.maxK * o.grid, o.maxK * o.grid, 0, 1, -1, (o.maxK - 1) * o.grid}
	for range 300 {
		cells = append(cells, math.Round((2*r.Float64()-1)*o.maxK)*o.grid)
	}
	for _, x := range cells {
		a, b := count(-1, x), count(1, x)
		if a == 0 || b == 0 {
			t.Fatalf("cell %v: counts %v, %v (a cell impossible under one input)", x, a, b)
		}
		worst = max(worst, a/b, b/a)
	}
	t.Logf("worst cell ratio %.9f, e^eps = %.9f, bound %.9f", worst, math.Exp(eps), limit)
	if worst > limit {
		t.Fatalf("worst cell ratio %v > %v", worst, limit)
	}
}

// fixedWord is a source that returns one word (for evaluating pm at a
// chosen uniform).
type fixedWord uint64

func (f fixedWord) Uint64() uint64 { return uint64(f) }
