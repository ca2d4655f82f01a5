package pfds

import (
	"math/rand/v2"
)

// Leaf is the Attr of a leaf node.
const Leaf = -1

// Node is one node of a private tree.
type Node struct {
	Attr     int     // attribute index into Domain.Attrs, or Leaf
	Split    float64 // numeric attribute: the left child takes x < Split
	Children []int32 // numeric: [left, right]; categorical: one per category
	Level    int     // root is 1
	Label    int     // leaf: the noisy argmax class
	// Counts are a leaf's noisy class counts |D^{y=l}| + Lap(1/eps'). They
	// are the builder's private input to Generate and are not shared.
	Counts []float64
}

// Tree is a private decision tree (Alg. 3). Nodes[0] is the root; nodes are
// in preorder (a node before its children, children in order).
type Tree struct {
	Nodes []Node
}

// Predict returns the label of the leaf x falls into.
func (t *Tree) Predict(dom *Domain, x []float64) int {
	return t.Nodes[t.leafOf(dom, x)].Label
}

// leafOf returns the index of the leaf x falls into.
func (t *Tree) leafOf(dom *Domain, x []float64) int {
	i := 0
	for t.Nodes[i].Attr != Leaf {
		n := &t.Nodes[i]
		i = int(n.Children[t.branch(dom, n, x)])
	}
	return i
}

func (t *Tree) branch(dom *Domain, n *Node, x []float64) int {
	at := dom.Attrs[n.Attr]
	if at.Cats > 0 {
		return dom.category(n.Attr, x)
	}
	if x[at.Offset] < n.Split {
		return 0
	}
	return 1
}

// Leaves returns the leaf indices in preorder.
func (t *Tree) Leaves() []int {
	var out []int
	for i := range t.Nodes {
		if t.Nodes[i].Attr == Leaf {
			out = append(out, i)
		}
	}
	return out
}

// Public returns a copy without the leaf counts: what an agent shares.
func (t *Tree) Public() *Tree {
	c := &Tree{Nodes: make([]Node, len(t.Nodes))}
	for i, n := range t.Nodes {
		n.Counts = nil
		c.Nodes[i] = n
	}
	return c
}

// MakeTree grows a private tree on the rows X (encoded features) with
// labels Y (Alg. 3). It spends p.Eps/2 in all: eps' = p.Eps/(2 p.HMax) for
// each of the at most HMax-1 split selections on a path and eps' for the
// leaf counts (parallel composition across the nodes of a level).
func MakeTree(dom *Domain, X [][]float64, Y []int, p Params, r *rand.Rand) *Tree {
	return makeTree(&builder{dom: dom, X: X, Y: Y, p: p, eps: p.TreeEps(), count: newCounter(p.TreeEps()), r: r})
}

// makeTree grows b's tree: splits by the exponential mechanism at b.eps
// (or at random with b.random), leaf class counts released by b.count.
func makeTree(b *builder) *Tree {
	dom, X, p := b.dom, b.X, b.p
	b.lo, b.hi, b.used = make([]float64, len(dom.Attrs)), make([]float64, len(dom.Attrs)), make([]bool, len(dom.Attrs))
	for a := range dom.Attrs {
		b.lo[a], b.hi[a] = -1, 1
	}
	idx := make([]int, len(X))
	for i := range idx {
		idx[i] = i
	}
	budget := p.MaxLeaves
	if budget == 0 {
		budget = int(^uint(0) >> 1)
	}
	b.grow(idx, 1, budget)
	return &b.t
}

type builder struct {
	dom   *Domain
	X     [][]float64
	Y     []int
	p     Params
	eps   float64
	count counter // leaf class counts at eps
	r     *rand.Rand
	// random draws a numeric split uniformly in the active interval
	// without looking at the rows (the variant's data-independent trees).
	random bool
	lo, hi []float64 // active interval of each numeric attribute
	used   []bool    // categorical attributes used on the path
	t      Tree
}

// grow appends the subtree on rows idx at level h with leaf budget and
// returns its index.
func (b *builder) grow(idx []int, h, budget int) int32 {
	self := int32(len(b.t.Nodes))
	b.t.Nodes = append(b.t.Nodes, Node{Attr: Leaf, Level: h})
	a := -1
	if h < b.p.HMax {
		a = b.selectAttribute(budget)
	}
	if a < 0 {
		counts := make([]float64, b.dom.Classes)
		for _, i := range idx {
			counts[b.Y[i]]++
		}
		for l := range counts {
			counts[l] = b.count.release(b.r, counts[l])
		}
		n := &b.t.Nodes[self]
		n.Counts, n.Label = counts, argmax(counts)
		return self
	}
	at := b.dom.Attrs[a]
	k := at.Branches()
	children := make([]int32, k)
	if at.Cats > 0 {
		parts := make([][]int, k)
		for _, i := range idx {
			c := b.dom.category(a, b.X[i])
			parts[c] = append(parts[c], i)
		}
		b.used[a] = true
		for c := range parts {
			children[c] = b.grow(parts[c], h+1, budget/k)
		}
		b.used[a] = false
	} else {
		v := b.selectSplit(idx, a)
		var left, right []int
		for _, i := range idx {
			if b.X[i][at.Offset] < v {
				left = append(left, i)
			} else {
				right = append(right, i)
			}
		}
		b.t.Nodes[self].Split = v
		oldHi := b.hi[a]
		b.hi[a] = v
		children[0] = b.grow(left, h+1, budget/2)
		b.hi[a] = oldHi
		oldLo := b.lo[a]
		b.lo[a] = v
		children[1] = b.grow(right, h+1, budget/2)
		b.lo[a] = oldLo
	}
	n := &b.t.Nodes[self]
	n.Attr, n.Children = a, children
	return self
}

// selectAttribute draws an attribute uniformly among those still available
// (numeric ones always; categorical ones not yet used on the path) whose
// branching fits the leaf budget; -1 if none does.
func (b *builder) selectAttribute(budget int) int {
	var cand []int
	for a, at := range b.dom.Attrs {
		if (at.Cats == 0 || !b.used[a]) && at.Branches() <= budget {
			cand = append(cand, a)
		}
	}
	if len(cand) == 0 {
		return -1
	}
	return cand[b.r.IntN(len(cand))]
}

// selectSplit draws T candidates uniformly in the attribute's active
// interval and picks one by the exponential mechanism with the Max utility
// u(v) = max_l |D_{a<v}^l| + max_l |D_{a>=v}^l| (sensitivity 1).
func (b *builder) selectSplit(idx []int, a int) float64 {
	if b.random {
		return b.lo[a] + (b.hi[a]-b.lo[a])*b.r.Float64()
	}
	off := b.dom.Attrs[a].Offset
	cands := make([]float64, b.p.T)
	for i := range cands {
		cands[i] = b.lo[a] + (b.hi[a]-b.lo[a])*b.r.Float64()
	}
	u := make([]float64, len(cands))
	left := make([]float64, b.dom.Classes)
	right := make([]float64, b.dom.Classes)
	for j, v := range cands {
		clear(left)
		clear(right)
		for _, i := range idx {
			if b.X[i][off] < v {
				left[b.Y[i]]++
			} else {
				right[b.Y[i]]++
			}
		}
		u[j] = maxUtility(left, right)
	}
	return cands[expMech(b.r, u, b.eps, 1)]
}

// maxUtility is the Max operator of Friedman & Schuster.
func maxUtility(left, right []float64) float64 {
	return left[argmax(left)] + right[argmax(right)]
}
