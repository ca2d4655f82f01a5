package dpboost

import (
	"math/rand/v2"
)

// Tree is one complete binary tree of a fixed depth D: 2^D - 1 internal
// nodes in breadth-first order (node i's children are 2i+1 and 2i+2) and 2^D
// leaves. A row goes left at node i when its bin of feature Feature[i] is at
// most Bin[i].
type Tree struct {
	Feature []int     `json:"feature"`
	Bin     []int     `json:"bin"`
	Leaf    []float64 `json:"leaf"` // leaf outputs, shrinkage eta already applied
}

// leafOf walks the binned row to its leaf.
func (t *Tree) leafOf(row []uint8) int {
	n := 0
	for n < len(t.Feature) {
		if int(row[t.Feature[n]]) <= t.Bin[n] {
			n = 2*n + 1
		} else {
			n = 2*n + 2
		}
	}
	return n - len(t.Feature)
}

// Value is the tree's output for a raw row (features scaled by the schema),
// for staged predictions (test error after each tree).
func (t *Tree) Value(b *Binning, x []float64) float64 { return t.value(b, x) }

func (t *Tree) value(b *Binning, x []float64) float64 {
	n := 0
	for n < len(t.Feature) {
		f := t.Feature[n]
		if binOf(x[f], b.Lo[f], b.Bins[f]) <= t.Bin[n] {
			n = 2*n + 1
		} else {
			n = 2*n + 2
		}
	}
	return t.Leaf[n-len(t.Feature)]
}

// treeParams are one tree's public parameters.
type treeParams struct {
	depth  int
	eta    float64
	split  SplitRule // Eps per depth level
	leaf   LeafRule
	random *rand.Rand
}

// grower holds the buffers reused from tree to tree.
type grower struct {
	b       *Binning
	data    *Binned
	hists   [][]*Histogram // per depth, per node
	scratch []float64
	bounds  []int // segment boundaries of the current level, len nodes+1
	next    []int
}

func newGrower(b *Binning, data *Binned, depth int) *grower {
	g := &grower{b: b, data: data, hists: make([][]*Histogram, depth)}
	for d := range depth {
		g.hists[d] = make([]*Histogram, 1<<d)
		for i := range g.hists[d] {
			g.hists[d][i] = NewHistogram(b)
		}
	}
	return g
}

// grow trains one tree (Alg. 1 after filtering) on rows, which it reorders.
// Every node at depths 0..D-1 is split (the shape does not depend on the
// data); a node's split comes from its histogram alone. Histograms of the
// larger child are the parent's minus the smaller child's.
func (g *grower) grow(rows []int32, grad []float64, p treeParams) Tree {
	internal := 1<<p.depth - 1
	t := Tree{Feature: make([]int, internal), Bin: make([]int, internal), Leaf: make([]float64, internal+1)}
	g.bounds = append(g.bounds[:0], 0, len(rows))
	F := g.data.Features
	for d := range p.depth {
		nodes := 1 << d
		// Histograms of this level.
		for j := 0; j < nodes; j++ {
			seg := rows[g.bounds[j]:g.bounds[j+1]]
			if d == 0 {
				BuildHistogram(g.hists[0][0], g.b, g.data, seg, grad)
				continue
			}
			if j%2 == 1 {
				continue // built with its sibling
			}
			left, right := rows[g.bounds[j]:g.bounds[j+1]], rows[g.bounds[j+1]:g.bounds[j+2]]
			parent := g.hists[d-1][j/2]
			hl, hr := g.hists[d][j], g.hists[d][j+1]
			if len(left) <= len(right) {
				BuildHistogram(hl, g.b, g.data, left, grad)
				hr.sub(parent, hl)
			} else {
				BuildHistogram(hr, g.b, g.data, right, grad)
				hl.sub(parent, hr)
			}
		}
		// Splits, then partition every segment in place.
		g.next = append(g.next[:0], 0)
		for j := 0; j < nodes; j++ {
			node := nodes - 1 + j
			f, k, s := ChooseSplit(g.b, g.hists[d][j], p.split, p.random, g.scratch)
			g.scratch = s
			t.Feature[node], t.Bin[node] = f, k
			lo, hi := g.bounds[j], g.bounds[j+1]
			kb := uint8(k)
			i, e := lo, hi
			for i < e {
				if g.data.Idx[int(rows[i])*F+f] <= kb {
					i++
				} else {
					e--
					rows[i], rows[e] = rows[e], rows[i]
				}
			}
			g.next = append(g.next, i, hi)
		}
		g.bounds, g.next = g.next, g.bounds
	}
	for j := range internal + 1 {
		sum := 0.0
		seg := rows[g.bounds[j]:g.bounds[j+1]]
		for _, r := range seg {
			sum += grad[r]
		}
		t.Leaf[j] = p.eta * ReleaseLeaf(sum, float64(len(seg)), p.leaf, p.random)
	}
	return t
}
