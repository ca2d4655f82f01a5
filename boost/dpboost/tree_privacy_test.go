package dpboost

import (
	"math"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

// TestTreePrivacyRatio grows a whole depth-1 tree (exponential mechanism for
// the split with eps_t/2, Laplace leaves with eps_t/2) on neighbouring
// datasets D and D' = D minus one row with gradient -1, and checks the
// released (split, left leaf) pair: for every output cell, |log P_D/P_D'|
// <= eps_t, up to sampling error.
func TestTreePrivacyRatio(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical: 2 x 300,000 trees")
	}
	const n, epsT, lambda = 300000, 1.0, 0.1
	b, _ := newBinning([]int{4}, []float64{-1})
	// Five rows in bins 0, 1, 1, 2, 3 with gradients; row 0 (bin 0, g = -1) is
	// the one D' lacks.
	data := &Binned{Rows: 5, Features: 1, Idx: []uint8{0, 1, 1, 2, 3}}
	grad := []float64{-1, 1, -0.5, 0.8, -1}
	cfg := DefaultConfig()
	cfg.Lambda = lambda
	params := func(leafSens float64) treeParams {
		return treeParams{depth: 1, eta: 1,
			split: SplitRule{Lambda: lambda, Eps: epsT / 2, Sensitivity: cfg.SplitSensitivity()},
			leaf:  LeafRule{Lambda: lambda, Bound: math.Inf(1), Eps: epsT / 2, Sensitivity: leafSens}}
	}
	const buckets, lo, width = 12, -3.0, 0.5
	cell := func(tr Tree) int {
		k := int(math.Floor((tr.Leaf[0] - lo) / width))
		k = max(0, min(buckets-1, k))
		return tr.Bin[0]*buckets + k
	}
	run := func(p treeParams) (worst float64) {
		r := rng.ForName(t.Name())
		g := newGrower(b, data, 1)
		c1, c2 := make([]float64, 3*buckets), make([]float64, 3*buckets)
		for range n {
			p.random = r
			c1[cell(g.grow([]int32{0, 1, 2, 3, 4}, grad, p))]++
			c2[cell(g.grow([]int32{1, 2, 3, 4}, grad, p))]++
		}
		worst = math.Inf(-1)
		for i := range c1 {
			if c1[i] < 1000 || c2[i] < 1000 {
				continue
			}
			// 4 standard errors of log(c1/c2) per cell (~30 cells checked).
			tol := 4 * math.Sqrt(1/c1[i]+1/c2[i])
			worst = max(worst, math.Abs(math.Log(c1[i]/c2[i]))-epsT-tol)
		}
		return worst
	}
	if w := run(params(GStar / (1 + lambda))); w > 0 {
		t.Errorf("a (split, leaf) cell exceeds e^eps_t: |log ratio| - eps_t - 4 se = %v", w)
	}
	// Negative control: leaves with a quarter of the noise (a 2 eps_t leaf
	// release) must be caught.
	if w := run(params(GStar / (1 + lambda) / 4)); w <= 0 {
		t.Errorf("negative control: under-noised leaves passed (%v)", w)
	}
}
