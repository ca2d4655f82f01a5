package pfds

import (
	"fmt"
	"math"
	"slices"
)

// SolveTree solves the post-processing of Alg. 5 (line 3) exactly:
//
//	minimize  sum_v w[v] (x[v] - c[v])^2
//	subject to x[v] = sum of x over v's children, x >= 0,
//
// for a tree given by parent (parent[v] < v for every v > 0, parent[0] =
// -1). Nodes without children are the leaves; their values are the free
// variables and the rest are their sums, so the problem is a strictly convex
// NNLS when every leaf has w > 0.
//
// The solver is a two-pass dynamic program over the tree, exact up to
// floating point. Bottom-up, every subtree's optimal cost as a function of
// its total s is convex piecewise quadratic; SolveTree keeps the inverse of
// its derivative, s_v(mu) = argmin_s F_v(s) - mu*s, which is convex,
// piecewise linear, non-decreasing and 0 below some mu: a sum of hinges
// sum_k d_k max(0, mu - m_k). A leaf is one hinge; the children of a node
// combine by adding their functions (the KKT conditions of the sum
// constraint equalize their multipliers); the node's own term maps the
// hinges in closed form. Top-down, the root takes s_root(0) (F' = 0) and each
// node splits its total among its children at the multiplier where their
// sum equals it. The cost is O(L log L) per level for L leaves.
func SolveTree(parent []int, c, w []float64) ([]float64, error) {
	n := len(parent)
	if len(c) != n || len(w) != n {
		return nil, fmt.Errorf("pfds: SolveTree: %d parents, %d counts, %d weights", n, len(c), len(w))
	}
	if n == 0 {
		return nil, nil
	}
	children, err := treeChildren(parent)
	if err != nil {
		return nil, err
	}
	for v := range w {
		if w[v] < 0 || math.IsNaN(w[v]) || math.IsInf(w[v], 0) || math.IsNaN(c[v]) || math.IsInf(c[v], 0) {
			return nil, fmt.Errorf("pfds: SolveTree: node %d: weight %v, count %v", v, w[v], c[v])
		}
		if len(children[v]) == 0 && w[v] == 0 {
			return nil, fmt.Errorf("pfds: SolveTree: leaf %d has weight 0", v)
		}
	}
	f, g := solveUp(children, c, w)
	return solveDown(children, f, g), nil
}

// treeChildren lists every node's children, checking that parent[0] is -1
// and every other node's parent comes before it.
func treeChildren(parent []int) ([][]int, error) {
	children := make([][]int, len(parent))
	if parent[0] != -1 {
		return nil, fmt.Errorf("pfds: SolveTree: root parent %d, want -1", parent[0])
	}
	for v := 1; v < len(parent); v++ {
		if parent[v] < 0 || parent[v] >= v {
			return nil, fmt.Errorf("pfds: SolveTree: node %d has parent %d, want in [0, %d)", v, parent[v], v)
		}
		children[parent[v]] = append(children[parent[v]], v)
	}
	return children, nil
}

// solveUp is the bottom-up pass: f[v] is s_v(mu) and g[v] the sum of v's
// children's s_c(mu).
func solveUp(children [][]int, c, w []float64) (f, g []hinges) {
	n := len(children)
	f = make([]hinges, n)
	g = make([]hinges, n)
	for v := n - 1; v >= 0; v-- {
		if len(children[v]) == 0 {
			f[v] = hinges{m: []float64{-2 * w[v] * c[v]}, d: []float64{1 / (2 * w[v])}}
			f[v].prefix()
			continue
		}
		parts := make([]hinges, len(children[v]))
		for i, ch := range children[v] {
			parts[i] = f[ch]
		}
		g[v] = sumHinges(parts)
		f[v] = g[v].withOwnTerm(w[v], c[v])
	}
	return f, g
}

// solveDown is the top-down pass: the root takes s_root(0) and each node
// splits its total among its children at the multiplier where their sum
// equals it.
func solveDown(children [][]int, f, g []hinges) []float64 {
	x := make([]float64, len(children))
	x[0] = math.Max(0, f[0].eval(0))
	for v := range children {
		if len(children[v]) == 0 || x[v] <= 0 {
			continue // a leaf; or the children stay 0
		}
		mu := g[v].inverse(x[v])
		sum := 0.0
		for _, ch := range children[v] {
			x[ch] = math.Max(0, f[ch].eval(mu))
			sum += x[ch]
		}
		// Rescale the float rounding away so that the sums hold exactly
		// up to one ulp-level correction on the largest child.
		if sum > 0 && sum != x[v] {
			big := children[v][0]
			for _, ch := range children[v] {
				if x[ch] > x[big] {
					big = ch
				}
			}
			x[big] = math.Max(0, x[big]+x[v]-sum)
		}
	}
	return x
}

// hinges is the function s(mu) = sum_k d[k] * max(0, mu - m[k]) with m
// sorted ascending and every d[k] > 0; D[k] and M[k] are the prefix sums of
// d and d*m through k.
type hinges struct {
	m, d []float64
	D, M []float64
}

func (h *hinges) prefix() {
	h.D = make([]float64, len(h.m))
	h.M = make([]float64, len(h.m))
	sd, sm := 0.0, 0.0
	for k := range h.m {
		sd += h.d[k]
		sm += h.d[k] * h.m[k]
		h.D[k], h.M[k] = sd, sm
	}
}

// eval returns s(mu).
func (h *hinges) eval(mu float64) float64 {
	k, _ := slices.BinarySearch(h.m, mu) // m[k-1] < mu <= m[k]
	if k == 0 {
		return 0
	}
	return h.D[k-1]*mu - h.M[k-1]
}

// at returns s(m[k]).
func (h *hinges) at(k int) float64 {
	if k == 0 {
		return 0
	}
	return h.D[k-1]*h.m[k] - h.M[k-1]
}

// inverse returns the mu with s(mu) = s for s > 0 (s is strictly increasing
// above m[0]).
func (h *hinges) inverse(s float64) float64 {
	// Find the last k with s(m[k]) <= s; s is linear with slope D[k] on
	// [m[k], m[k+1]].
	k := sortSearch(len(h.m), func(k int) bool { return h.at(k) > s }) - 1
	if k < 0 {
		k = 0
	}
	return h.m[k] + (s-h.at(k))/h.D[k]
}

func sortSearch(n int, f func(int) bool) int {
	lo, hi := 0, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if !f(mid) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// sumHinges adds functions: the union of their hinges, sorted.
func sumHinges(parts []hinges) hinges {
	total := 0
	for _, p := range parts {
		total += len(p.m)
	}
	type hk struct{ m, d float64 }
	all := make([]hk, 0, total)
	for _, p := range parts {
		for k := range p.m {
			all = append(all, hk{p.m[k], p.d[k]})
		}
	}
	slices.SortFunc(all, func(a, b hk) int {
		switch {
		case a.m < b.m:
			return -1
		case a.m > b.m:
			return 1
		}
		return 0
	})
	h := hinges{m: make([]float64, len(all)), d: make([]float64, len(all))}
	for k, e := range all {
		h.m[k], h.d[k] = e.m, e.d
	}
	h.prefix()
	return h
}

// withOwnTerm maps g (the children's multiplier-to-total function) to the
// node's: with its own term w (s - c)^2, F'(s) = 2w(s - c) + G'(s). On the
// piece of g after hinge k (slope sigma_k) the node's function has its hinge
// at mu_k = m_k + 2w(g(m_k) - c) and slope sigma_k / (1 + 2w sigma_k).
func (g *hinges) withOwnTerm(w, c float64) hinges {
	h := hinges{m: make([]float64, len(g.m)), d: make([]float64, len(g.m))}
	prev := 0.0
	for k := range g.m {
		h.m[k] = g.m[k] + 2*w*(g.at(k)-c)
		slope := g.D[k] / (1 + 2*w*g.D[k])
		h.d[k] = slope - prev
		prev = slope
	}
	h.prefix()
	return h
}
