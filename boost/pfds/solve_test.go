package pfds

import (
	"math"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
	"gonum.org/v1/gonum/mat"
)

// objective is the weighted squared distance of Alg. 5's line 3.
func objective(x, c, w []float64) float64 {
	s := 0.0
	for v := range x {
		s += w[v] * (x[v] - c[v]) * (x[v] - c[v])
	}
	return s
}

// leafSets returns, for every node, the leaves under it (leaves: itself).
func leafSets(parent []int) (leaves []int, under [][]int) {
	n := len(parent)
	hasChild := make([]bool, n)
	for v := 1; v < n; v++ {
		hasChild[parent[v]] = true
	}
	under = make([][]int, n)
	for v := 0; v < n; v++ {
		if hasChild[v] {
			continue
		}
		leaves = append(leaves, v)
		for u := v; u >= 0; u = parent[u] {
			under[u] = append(under[u], v)
			if u == 0 {
				break
			}
		}
	}
	return leaves, under
}

// bruteForce solves the NNLS by enumerating which leaves are zero and
// solving the unconstrained weighted least squares on the others with
// gonum; the best feasible candidate is the optimum (the problem is
// strictly convex, so some active set yields it).
func bruteForce(t *testing.T, parent []int, c, w []float64) []float64 {
	leaves, under := leafSets(parent)
	n, L := len(parent), len(leaves)
	pos := map[int]int{}
	for j, l := range leaves {
		pos[l] = j
	}
	best, bestObj := []float64(nil), math.Inf(1)
	for mask := 0; mask < 1<<L; mask++ {
		var free []int
		for j := 0; j < L; j++ {
			if mask&(1<<j) == 0 {
				free = append(free, j)
			}
		}
		z := make([]float64, L)
		if len(free) > 0 {
			// rows: sqrt(w_v) * [leaf in v], rhs sqrt(w_v) c_v
			A := mat.NewDense(n, len(free), nil)
			b := mat.NewVecDense(n, nil)
			for v := 0; v < n; v++ {
				sw := math.Sqrt(w[v])
				for _, l := range under[v] {
					for k, j := range free {
						if j == pos[l] {
							A.Set(v, k, sw)
						}
					}
				}
				b.SetVec(v, sw*c[v])
			}
			var sol mat.VecDense
			if err := sol.SolveVec(A, b); err != nil {
				t.Fatalf("least squares: %v", err)
			}
			for k, j := range free {
				z[j] = sol.AtVec(k)
			}
		}
		feasible := true
		for _, v := range z {
			if v < -1e-12 {
				feasible = false
			}
		}
		if !feasible {
			continue
		}
		x := make([]float64, n)
		for v := 0; v < n; v++ {
			for _, l := range under[v] {
				x[v] += z[pos[l]]
			}
		}
		if o := objective(x, c, w); o < bestObj {
			best, bestObj = x, o
		}
	}
	return best
}

// randomTree draws a tree of n nodes with parent[v] < v.
func randomTreeParents(n int, seed string) []int {
	r := rng.ForName(seed)
	p := make([]int, n)
	p[0] = -1
	for v := 1; v < n; v++ {
		p[v] = r.IntN(v)
	}
	return p
}

func checkConsistent(t *testing.T, parent []int, x []float64) {
	t.Helper()
	sum := make([]float64, len(x))
	has := make([]bool, len(x))
	for v := 1; v < len(x); v++ {
		sum[parent[v]] += x[v]
		has[parent[v]] = true
	}
	for v := range x {
		if x[v] < 0 {
			t.Errorf("x[%d] = %v < 0", v, x[v])
		}
		// The constraint holds exactly up to float summation: a relative
		// 1e-12 (a few ulps of the sum of at most 15 terms).
		if has[v] && math.Abs(sum[v]-x[v]) > 1e-12*math.Max(1, math.Abs(x[v])) {
			t.Errorf("node %d: x = %.17g, children sum %.17g", v, x[v], sum[v])
		}
	}
}

func TestSolveTreeMatchesBruteForce(t *testing.T) {
	r := rng.ForName(t.Name())
	compared := 0
	defer func() {
		if compared < 20 {
			t.Errorf("only %d trials compared", compared)
		}
	}()
	for trial := 0; trial < 40; trial++ {
		n := 3 + r.IntN(10)
		parent := randomTreeParents(n, t.Name()+string(rune('a'+trial)))
		leaves, _ := leafSets(parent)
		if len(leaves) > 10 {
			continue
		}
		c := make([]float64, n)
		w := make([]float64, n)
		for v := range c {
			c[v] = 20*r.Float64() - 8 // some negative: non-negativity binds
			w[v] = 0.05 + r.Float64()
		}
		got, err := SolveTree(parent, c, w)
		if err != nil {
			t.Fatal(err)
		}
		checkConsistent(t, parent, got)
		want := bruteForce(t, parent, c, w)
		compared++
		og, ow := objective(got, c, w), objective(want, c, w)
		// Both are the unique optimum: objectives agree to float rounding.
		if math.Abs(og-ow) > 1e-9*math.Max(1, ow) {
			t.Errorf("trial %d: objective %v, brute force %v (parents %v)", trial, og, ow, parent)
		}
		for v := range got {
			if math.Abs(got[v]-want[v]) > 1e-6 {
				t.Errorf("trial %d: x[%d] = %v, brute force %v", trial, v, got[v], want[v])
			}
		}
	}
}

// TestSolveTreeNegativeControl: the naive answers the solver replaces are
// worse than its optimum, and a feasible perturbation of the optimum is
// worse too (so the brute-force comparison can fail).
func TestSolveTreeNegativeControl(t *testing.T) {
	// root(0) -> a(1), b(2); a -> 3, 4, 5; b -> 6, 7
	parent := []int{-1, 0, 0, 1, 1, 1, 2, 2}
	c := []float64{100, 70, 20, 40, -5, 30, 15, 12}
	w := []float64{1, 0.5, 0.5, 0.2, 0.2, 0.2, 0.2, 0.2}
	x, err := SolveTree(parent, c, w)
	if err != nil {
		t.Fatal(err)
	}
	checkConsistent(t, parent, x)
	opt := objective(x, c, w)
	// Leaves clipped at 0 and summed upward (PFDS-).
	naive := make([]float64, len(c))
	for _, l := range []int{3, 4, 5, 6, 7} {
		naive[l] = math.Max(0, c[l])
	}
	naive[1] = naive[3] + naive[4] + naive[5]
	naive[2] = naive[6] + naive[7]
	naive[0] = naive[1] + naive[2]
	if objective(naive, c, w) <= opt {
		t.Errorf("clipped leaves objective %v not above the optimum %v", objective(naive, c, w), opt)
	}
	// Move 0.5 from leaf 3 to leaf 6: still feasible, strictly worse.
	y := append([]float64(nil), x...)
	y[3] -= 0.5
	y[1] -= 0.5
	y[6] += 0.5
	y[2] += 0.5
	if objective(y, c, w) <= opt {
		t.Errorf("perturbed objective %v not above the optimum %v", objective(y, c, w), opt)
	}
	if x[4] != 0 {
		t.Errorf("leaf with count -5 got %v, want 0 (non-negativity binds)", x[4])
	}
}

func TestSolveTreeErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		parent []int
		c, w   []float64
	}{
		"lengths":     {[]int{-1, 0}, []float64{1}, []float64{1, 1}},
		"root parent": {[]int{0, 0}, []float64{1, 1}, []float64{1, 1}},
		"forward":     {[]int{-1, 2, 0}, []float64{1, 1, 1}, []float64{1, 1, 1}},
		"zero leaf":   {[]int{-1, 0}, []float64{1, 1}, []float64{1, 0}},
		"nan":         {[]int{-1, 0}, []float64{math.NaN(), 1}, []float64{1, 1}},
	} {
		if _, err := SolveTree(tc.parent, tc.c, tc.w); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
