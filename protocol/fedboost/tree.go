package fedboost

import (
	"fmt"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/protocol/wire"
)

// partial is a tree as far as the data user decided it: the splits of the
// first `levels` levels (breadth-first) and, once complete, the leaves.
//
// A Newton round of K > 2 classes is boosters = K trees of the full depth,
// their splits and leaves concatenated class by class (class returns one);
// boosters 0 means one tree.
type partial struct {
	levels   int
	feature  []int
	bin      []int
	leaf     []float64
	complete bool
	boosters int
}

// count is the number of trees p carries (at least 1).
func (p *partial) count() int { return max(1, p.boosters) }

// class is tree k of a round of several (sharing p's slices; p itself for
// a single tree).
func (p *partial) class(k int) *partial {
	if p.count() == 1 {
		return p
	}
	in, L := 1<<p.levels-1, 1<<p.levels
	c := &partial{levels: p.levels, feature: p.feature[k*in : (k+1)*in], bin: p.bin[k*in : (k+1)*in], complete: p.complete}
	if p.complete {
		c.leaf = p.leaf[k*L : (k+1)*L]
	}
	return c
}

// nodeOf walks a binned row down the decided levels to its node at depth d
// (breadth-first index) or, with d = depth, to its leaf (index among the
// leaves).
func (p *partial) nodeOf(row []uint8, d int) int {
	n := 0
	for l := 0; l < d; l++ {
		if int(row[p.feature[n]]) <= p.bin[n] {
			n = 2*n + 1
		} else {
			n = 2*n + 2
		}
	}
	return n - (1<<d - 1)
}

func (p *partial) wire() *wire.FedTree {
	w := &wire.FedTree{Levels: uint32(p.levels), Leaf: p.leaf, Complete: p.complete}
	for i := range p.feature {
		w.Feature = append(w.Feature, uint32(p.feature[i]))
		w.Bin = append(w.Bin, uint32(p.bin[i]))
	}
	return w
}

// parseTree checks a FedTree against the binning, the depth and the
// number of trees a round carries (boosters, 1 but for a Newton round of
// K > 2 classes, whose trees are all of the full depth).
func parseTree(w *wire.FedTree, b *dpboost.Binning, depth, boosters int) (*partial, error) {
	lv := int(w.GetLevels())
	B := max(1, boosters)
	if lv > depth || (B > 1 && lv != depth) || len(w.GetFeature()) != B*(1<<lv-1) || len(w.GetBin()) != len(w.GetFeature()) {
		return nil, fmt.Errorf("%d trees of %d levels with %d splits (depth %d)", B, lv, len(w.GetFeature()), depth)
	}
	p := &partial{levels: lv, complete: w.GetComplete()}
	if B > 1 {
		p.boosters = B
	}
	for i, f := range w.GetFeature() {
		k := w.GetBin()[i]
		if int(f) >= b.Features() || int(k) >= b.Bins[f]-1 {
			return nil, fmt.Errorf("node %d: feature %d bin %d out of range", i, f, k)
		}
		p.feature = append(p.feature, int(f))
		p.bin = append(p.bin, int(k))
	}
	if p.complete {
		if lv != depth || len(w.GetLeaf()) != B<<depth {
			return nil, fmt.Errorf("complete tree with %d levels and %d leaves", lv, len(w.GetLeaf()))
		}
		p.leaf = append([]float64(nil), w.GetLeaf()...)
	} else if len(w.GetLeaf()) != 0 {
		return nil, fmt.Errorf("leaves in an incomplete tree")
	}
	return p, nil
}

func (p *partial) tree() dpboost.Tree {
	return dpboost.Tree{Feature: append([]int(nil), p.feature...), Bin: append([]int(nil), p.bin...), Leaf: append([]float64(nil), p.leaf...)}
}
