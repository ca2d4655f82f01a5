package fedboost

import (
	"math"
	"slices"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/dataset"
)

// A column is one input column of the schema: a numeric column is one
// feature with Bins[f] bins; a categorical column is its m one-hot
// features. A node's histogram is released per column with one cell per
// bin (numeric) or per category (categorical): every row falls in exactly
// one cell of every column (the schema rejects unknown categories), so a
// row changes one G cell and one N cell per column: the L1 sensitivity of
// K columns is 2K (|g| <= g* = 1), against 2F for DPBoost's (feature, bin)
// histogram over F features (Adult: 14 columns, 108 features).
//
// The one-hot feature's two bins are post-processed from its category cell
// and the column's total: bin 1 (the category) is the cell, bin 0 the rest
// of the column.
type column struct {
	feats   []int // binning features, in order
	numeric bool
}

// columnsOf lists the columns of the binning (schema order; nil schema:
// every feature numeric).
func columnsOf(s *dataset.Schema, b *dpboost.Binning) []column {
	var cols []column
	if s == nil {
		for f := range b.Features() {
			cols = append(cols, column{feats: []int{f}, numeric: true})
		}
		return cols
	}
	f := 0
	for _, c := range s.Columns {
		switch c.Kind {
		case dataset.KindNumeric:
			cols = append(cols, column{feats: []int{f}, numeric: true})
			f++
		case dataset.KindCategorical:
			col := column{}
			for range c.Categories {
				col.feats = append(col.feats, f)
				f++
			}
			cols = append(cols, col)
		}
	}
	return cols
}

// cells is the number of cells of column c.
func (c column) cells(b *dpboost.Binning) int {
	if c.numeric {
		return b.Bins[c.feats[0]]
	}
	return len(c.feats)
}

// cell is the cell of a binned row in column c, or -1 (a categorical row
// without a category: impossible with a schema, kept for safety).
func (c column) cell(row []uint8) int {
	if c.numeric {
		return int(row[c.feats[0]])
	}
	for i, f := range c.feats {
		if row[f] == 1 {
			return i
		}
	}
	return -1
}

// NodeColumns are the columns whose cells node's histogram covers: all of
// them with ColumnsPerNode = 0, else ColumnsPerNode distinct columns drawn
// from the beacon (sorted).
func (p *Public) NodeColumns(t, node, ncols int) []int {
	k := p.ColumnsPerNode
	if k == 0 || k >= ncols {
		out := make([]int, ncols)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := p.seeded("fedboost/columns", uint64(t), uint64(node)).Perm(ncols)[:k]
	slices.Sort(out)
	return out
}

// bestSplit picks (feature, bin) from a node's released vector over the
// columns cols (G cells of every column, then N cells in the same order):
// the first candidate whose gain is within tieTol of the largest, in
// (feature, bin) order.
//
// With noise (noiseVar > 0, the variance of one cell's noise) the gain is
// estimated, not computed: a side covering c cells has a noisy gradient
// sum G + Z with Var Z = c noiseVar, so G^2 is estimated by
// max((G+Z)^2 - c noiseVar, 0), and the side's count by max(N + Z', 0); a
// candidate with a side whose noisy count is below two standard deviations
// of its noise, 2 sqrt(c noiseVar), is not considered (its gain is mostly
// noise: with lambda in the denominator a noisy G over an empty side looks
// like a large gain). All of this is post-processing of the release. Without
// noise the gain is DPBoost's exactly.
func bestSplit(b *dpboost.Binning, cols []column, v []float64, lambda, noiseVar float64) (feature, bin int) {
	C := len(v) / 2
	G, N := v[:C], v[C:]
	n := func(i int) float64 {
		if noiseVar > 0 {
			return max(N[i], 0)
		}
		return N[i]
	}
	// side is one side's gain term over c cells, or NaN if too uncertain.
	side := func(g, cnt float64, c int) float64 {
		if noiseVar == 0 {
			return g * g / (cnt + lambda)
		}
		v := float64(c) * noiseVar
		if cnt < 2*math.Sqrt(v) {
			return math.NaN()
		}
		return max(g*g-v, 0) / (cnt + lambda)
	}
	type cand struct {
		f, k int
		gain float64
	}
	var cs []cand
	off := 0
	for _, c := range cols {
		m := c.cells(b)
		gt, nt := 0.0, 0.0
		for i := off; i < off+m; i++ {
			gt += G[i]
			nt += n(i)
		}
		if c.numeric {
			gl, nl := 0.0, 0.0
			for k := range m - 1 {
				gl += G[off+k]
				nl += n(off + k)
				cs = append(cs, cand{c.feats[0], k, side(gl, nl, k+1) + side(gt-gl, nt-nl, m-k-1)})
			}
		} else {
			for i, f := range c.feats {
				// Bin 0 (not this category) goes left.
				gr, nr := G[off+i], n(off+i)
				cs = append(cs, cand{f, 0, side(gt-gr, nt-nr, m-1) + side(gr, nr, 1)})
			}
		}
		off += m
	}
	slices.SortStableFunc(cs, func(a, b cand) int {
		if a.f != b.f {
			return a.f - b.f
		}
		return a.k - b.k
	})
	best := math.Inf(-1)
	for _, c := range cs {
		if !math.IsNaN(c.gain) {
			best = max(best, c.gain)
		}
	}
	if math.IsInf(best, -1) {
		return cs[0].f, cs[0].k // every candidate is noise: any split (the shape is fixed)
	}
	tol := tieTol * math.Abs(best)
	for _, c := range cs {
		if c.gain >= best-tol {
			return c.f, c.k
		}
	}
	return cs[0].f, cs[0].k
}
