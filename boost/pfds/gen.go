package pfds

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/ppboost/ppboost/crypto/rng"
)

// Sizes is the outcome of optPrivateGen's counting part: the number of
// synthetic records of every leaf of a tree (leaves in preorder).
type Sizes struct {
	Leaves []int // leaf node indices in preorder
	Counts []int // records to sample in each leaf
	// Real are the post-processed leaf sizes before apportionment to
	// integers (the solver's output; the noisy leaf totals clipped at 0
	// without Optimize).
	Real []float64
}

// Total is the number of synthetic records.
func (s *Sizes) Total() int {
	n := 0
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// LeafSizes runs the counting part of optPrivateGen (Alg. 5, lines 1-4) on
// the tree t grown on (X, Y). With p.Optimize it queries the size of every
// internal node of levels 1..P-1 with Lap((P-1)/(Eps/2)) noise (Eps/2 in
// all, parallel within a level), takes each leaf's noisy size as the sum of
// its noisy class counts (already paid for by MakeTree) and solves the
// weighted least squares of line 3 with weights 1/m_i (m_i nodes on level i,
// the leaves forming level P) on the tree whose level P-1 nodes have their
// descendant leaves as children. Without Optimize it spends nothing more and
// clips the noisy leaf sizes at 0 (PFDS-). Either way the real sizes are
// apportioned to integers that sum to the rounded total by largest
// remainders (ties to the earlier leaf).
func LeafSizes(dom *Domain, t *Tree, X [][]float64, Y []int, p Params, r *rand.Rand) (*Sizes, error) {
	leaves := t.Leaves()
	noisyLeaf := make([]float64, len(leaves))
	for j, l := range leaves {
		for _, c := range t.Nodes[l].Counts {
			noisyLeaf[j] += c
		}
	}
	real := make([]float64, len(leaves))
	if !p.Optimize {
		for j, v := range noisyLeaf {
			real[j] = math.Max(0, v)
		}
		return &Sizes{Leaves: leaves, Counts: apportion(real), Real: real}, nil
	}
	parent, c, w, keep := collapsed(dom, t, X, noisyLeaf, leaves, p, r)
	x, err := SolveTree(parent, c, w)
	if err != nil {
		return nil, err
	}
	for j, l := range leaves {
		real[j] = x[keep[l]]
	}
	return &Sizes{Leaves: leaves, Counts: apportion(real), Real: real}, nil
}

// apportion rounds non-negative reals to integers summing to the rounded
// total, by largest remainders (ties to the smaller index).
func apportion(v []float64) []int {
	total := 0.0
	out := make([]int, len(v))
	type rem struct {
		i int
		f float64
	}
	rems := make([]rem, len(v))
	assigned := 0
	for i, x := range v {
		total += x
		fl := math.Floor(x)
		out[i] = int(fl)
		assigned += out[i]
		rems[i] = rem{i, x - fl}
	}
	left := int(math.Round(total)) - assigned
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].f > rems[b].f })
	for k := 0; k < left && k < len(rems); k++ {
		out[rems[k].i]++
	}
	return out
}

// box is the region of a leaf: an interval per numeric attribute and a
// category (or -1, any) per categorical one.
type box struct {
	lo, hi []float64
	cat    []int
}

// boxes returns the box of every leaf, in the order of leaves.
func boxes(dom *Domain, t *Tree, leaves []int) []box {
	na := len(dom.Attrs)
	at := make(map[int]box, len(leaves))
	lo, hi, cat := make([]float64, na), make([]float64, na), make([]int, na)
	for a := range dom.Attrs {
		lo[a], hi[a], cat[a] = -1, 1, -1
	}
	var walk func(i int)
	walk = func(i int) {
		n := &t.Nodes[i]
		if n.Attr == Leaf {
			at[i] = box{lo: append([]float64(nil), lo...), hi: append([]float64(nil), hi...), cat: append([]int(nil), cat...)}
			return
		}
		a := n.Attr
		if dom.Attrs[a].Cats > 0 {
			old := cat[a]
			for k, ch := range n.Children {
				cat[a] = k
				walk(int(ch))
			}
			cat[a] = old
			return
		}
		old := hi[a]
		hi[a] = math.Min(hi[a], n.Split)
		walk(int(n.Children[0]))
		hi[a] = old
		old = lo[a]
		lo[a] = math.Max(lo[a], n.Split)
		walk(int(n.Children[1]))
		lo[a] = old
	}
	walk(0)
	out := make([]box, len(leaves))
	for j, l := range leaves {
		out[j] = at[l]
	}
	return out
}

// Sample draws the synthetic records (Alg. 5, lines 5-7): counts[j] records
// uniformly in the box of leaf j (an unconstrained numeric attribute in its
// public domain [-1, 1], an unconstrained categorical one uniformly among
// its categories), from the public seed alone, so that anyone holding the
// tree, the counts and the seed regenerates the same rows.
func Sample(dom *Domain, t *Tree, s *Sizes, seed uint64) [][]float64 {
	r := rng.Derive(seed, streamSample)
	bx := boxes(dom, t, s.Leaves)
	rows := make([][]float64, 0, s.Total())
	back := make([]float64, s.Total()*dom.Dim)
	for j, n := range s.Counts {
		b := &bx[j]
		for k := 0; k < n; k++ {
			x := back[:dom.Dim:dom.Dim]
			back = back[dom.Dim:]
			for a, at := range dom.Attrs {
				if at.Cats > 0 {
					c := b.cat[a]
					if c < 0 {
						c = r.IntN(at.Cats)
					}
					x[at.Offset+c] = 1
					continue
				}
				x[at.Offset] = b.lo[a] + (b.hi[a]-b.lo[a])*r.Float64()
			}
			rows = append(rows, x)
		}
	}
	return rows
}

// streamSample labels the sampling stream derived from a public seed.
const streamSample = 0x53414d50 // "SAMP"

// Vote labels every row by the majority vote of the trees (Alg. 4, lines
// 4-6); a tie goes to the smallest class index.
func Vote(dom *Domain, trees []*Tree, rows [][]float64) []int {
	out := make([]int, len(rows))
	votes := make([]float64, dom.Classes)
	for i, x := range rows {
		clear(votes)
		for _, t := range trees {
			votes[t.Predict(dom, x)]++
		}
		out[i] = argmax(votes)
	}
	return out
}

// collapsed builds the post-processing problem of Alg. 5: the tree of the
// internal nodes of levels 1..P-1 and every leaf, each under its nearest
// kept ancestor (preorder keeps parents first); their noisy sizes (internal
// nodes: true size + Lap((P-1)/(Eps/2)); leaves: the noisy leaf totals) and
// weights 1/m_i. keep maps a tree node to its index (-1 if dropped).
func collapsed(dom *Domain, t *Tree, X [][]float64, noisyLeaf []float64, leaves []int, p Params, r *rand.Rand) (parent []int, c, w []float64, keep []int) {
	// True sizes of every node.
	size := make([]float64, len(t.Nodes))
	for _, x := range X {
		i := 0
		size[0]++
		for t.Nodes[i].Attr != Leaf {
			n := &t.Nodes[i]
			i = int(n.Children[t.branch(dom, n, x)])
			size[i]++
		}
	}
	keep = make([]int, len(t.Nodes))
	count := newCounter(p.CountEps())
	var level []int
	anc := make([]int, p.HMax+2) // collapsed index of the kept ancestor at each level
	for i := range t.Nodes {
		n := &t.Nodes[i]
		keep[i] = -1
		if n.Attr != Leaf && n.Level > p.P-1 {
			continue
		}
		par := -1
		if n.Level > 1 {
			par = anc[min(n.Level-1, p.P-1)]
		}
		keep[i] = len(parent)
		parent = append(parent, par)
		if n.Attr == Leaf {
			c = append(c, 0) // filled below
			level = append(level, p.P)
		} else {
			c = append(c, count.release(r, size[i]))
			level = append(level, n.Level)
			anc[n.Level] = keep[i]
		}
	}
	for j, l := range leaves {
		c[keep[l]] = noisyLeaf[j]
	}
	m := make([]int, p.P+1)
	for _, lv := range level {
		m[lv]++
	}
	w = make([]float64, len(level))
	for v, lv := range level {
		w[v] = 1 / float64(m[lv])
	}
	return parent, c, w, keep
}
