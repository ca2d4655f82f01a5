package dpboost

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ppboost/ppboost/dataset"
)

// Binning maps features to bins of equal width over their public range:
// [-1, 1] for a numeric feature (scaled with the schema's PUBLIC bounds),
// which gets Config.Bins bins, and [0, 1] for a one-hot feature of a
// categorical column (values 0 or 1 by the schema), which gets 2. Nothing is
// derived from the data.
type Binning struct {
	Bins   []int     // bins of feature f
	Lo     []float64 // lower end of feature f's range (-1 or 0); the upper is 1
	offset []int     // first histogram cell of feature f; offset[F] = cells
	cand   []int     // first candidate of feature f; cand[F] = candidates
}

// NewBinning makes the binning for dim features described by schema (nil:
// every feature numeric).
func NewBinning(schema *dataset.Schema, dim, bins int) (*Binning, error) {
	if bins < 2 || bins > MaxBins {
		return nil, fmt.Errorf("%w: Bins = %d, want 2 to %d", ErrConfig, bins, MaxBins)
	}
	b := make([]int, 0, dim)
	lo := make([]float64, 0, dim)
	if schema != nil {
		if schema.Dim() != dim {
			return nil, fmt.Errorf("%w: schema has %d features, data %d", ErrData, schema.Dim(), dim)
		}
		for _, c := range schema.Columns {
			switch c.Kind {
			case dataset.KindNumeric:
				b, lo = append(b, bins), append(lo, -1)
			case dataset.KindCategorical:
				for range c.Categories {
					b, lo = append(b, 2), append(lo, 0)
				}
			}
		}
	} else {
		for range dim {
			b, lo = append(b, bins), append(lo, -1)
		}
	}
	return newBinning(b, lo)
}

func newBinning(bins []int, lo []float64) (*Binning, error) {
	if len(bins) == 0 {
		return nil, fmt.Errorf("%w: no features", ErrData)
	}
	if len(lo) != len(bins) {
		return nil, fmt.Errorf("%w: %d ranges for %d features", ErrModel, len(lo), len(bins))
	}
	b := &Binning{Bins: bins, Lo: lo, offset: make([]int, len(bins)+1), cand: make([]int, len(bins)+1)}
	for f, n := range bins {
		if n < 2 || n > MaxBins {
			return nil, fmt.Errorf("%w: feature %d has %d bins, want 2 to %d", ErrModel, f, n, MaxBins)
		}
		if lo[f] != -1 && lo[f] != 0 {
			return nil, fmt.Errorf("%w: feature %d range starts at %v, want -1 or 0", ErrModel, f, lo[f])
		}
		b.offset[f+1] = b.offset[f] + n
		b.cand[f+1] = b.cand[f] + n - 1
	}
	return b, nil
}

// Features is the number of features.
func (b *Binning) Features() int { return len(b.Bins) }

// Cells is the size of a histogram: the sum of the bin counts.
func (b *Binning) Cells() int { return b.offset[len(b.Bins)] }

// Candidates is the number of split candidates of every node: (feature f,
// bin k) for k = 0..Bins[f]-2, sending bins <= k left.
func (b *Binning) Candidates() int { return b.cand[len(b.Bins)] }

// Candidate returns the feature and bin of candidate i.
func (b *Binning) Candidate(i int) (feature, bin int) {
	lo, hi := 0, len(b.Bins)
	for hi-lo > 1 { // largest f with cand[f] <= i
		mid := (lo + hi) / 2
		if b.cand[mid] <= i {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, i - b.cand[lo]
}

// Bin is the bin of value x of feature f: floor((x-lo)/(1-lo) * Bins[f]),
// clamped to the bins.
func (b *Binning) Bin(f int, x float64) int { return binOf(x, b.Lo[f], b.Bins[f]) }

func binOf(x, lo float64, n int) int {
	v := (x - lo) / (1 - lo) * float64(n)
	switch {
	case !(v >= 0): // also NaN
		return 0
	case v >= float64(n-1):
		return n - 1
	}
	return int(v)
}

// Threshold is the upper edge of bin k of feature f: rows with x below it
// (bin <= k) go left. For reading models; prediction compares bins.
func (b *Binning) Threshold(f, k int) float64 {
	return b.Lo[f] + (1-b.Lo[f])*float64(k+1)/float64(b.Bins[f])
}

// Binned is a dataset quantized by a Binning: Idx[i*Features+f] is the bin of
// row i, feature f.
type Binned struct {
	Rows, Features int
	Idx            []uint8
}

// Quantize bins every row of X.
func (b *Binning) Quantize(X [][]float64) (*Binned, error) {
	F := b.Features()
	q := &Binned{Rows: len(X), Features: F, Idx: make([]uint8, len(X)*F)}
	for i, x := range X {
		if len(x) != F {
			return nil, fmt.Errorf("%w: row %d has %d features, want %d", ErrData, i, len(x), F)
		}
		row := q.Idx[i*F : (i+1)*F]
		for f, v := range x {
			row[f] = uint8(binOf(v, b.Lo[f], b.Bins[f]))
		}
	}
	return q, nil
}

// Histogram is the per-node statistic everything after it is computed from:
// for every (feature f, bin k), the sum of the gradients and the number of
// the node's rows whose feature f falls in bin k, at cell Offset(f)+k. Two
// histograms of disjoint row sets add up to the histogram of their union
// (Add): this is the step a federated trainer sums securely across owners.
type Histogram struct {
	G []float64 `json:"g"` // sum of gradients per cell
	N []float64 `json:"n"` // row count per cell (float64 so that sums of shares fit)
}

// NewHistogram allocates a zero histogram for b.
func NewHistogram(b *Binning) *Histogram {
	c := b.Cells()
	return &Histogram{G: make([]float64, c), N: make([]float64, c)}
}

// Reset zeroes h.
func (h *Histogram) Reset() {
	clear(h.G)
	clear(h.N)
}

// Add adds o into h (the union of disjoint row sets).
func (h *Histogram) Add(o *Histogram) {
	for i := range h.G {
		h.G[i] += o.G[i]
		h.N[i] += o.N[i]
	}
}

// sub sets h = a - o (the sibling of o under parent a).
func (h *Histogram) sub(a, o *Histogram) {
	for i := range h.G {
		h.G[i] = a.G[i] - o.G[i]
		h.N[i] = a.N[i] - o.N[i]
	}
}

// BuildHistogram resets h and fills it from rows (indices into data) with
// their gradients grad[row].
func BuildHistogram(h *Histogram, b *Binning, data *Binned, rows []int32, grad []float64) {
	h.Reset()
	F := data.Features
	off := b.offset[:F]
	G, N := h.G, h.N
	for _, r := range rows {
		g := grad[r]
		row := data.Idx[int(r)*F : int(r)*F+F]
		for f, k := range row {
			c := off[f] + int(k)
			G[c] += g
			N[c]++
		}
	}
}

// Totals returns the node's gradient sum and row count (from feature 0:
// every row is in exactly one bin of every feature).
func (h *Histogram) Totals(b *Binning) (g, n float64) {
	for c := b.offset[0]; c < b.offset[1]; c++ {
		g += h.G[c]
		n += h.N[c]
	}
	return g, n
}

// Gains writes into out (grown if short) the gain G(I_L, I_R) =
// (sum_L g)^2/(|I_L|+lambda) + (sum_R g)^2/(|I_R|+lambda) of every candidate,
// in candidate order, and returns it. The parent's score is not subtracted:
// it is the same for all candidates of a node and changes neither the argmax
// nor the exponential mechanism's distribution (scores shifted by the same
// amount give the same probabilities, so the privacy loss is that of the
// unshifted gain, whose sensitivity is Config.SplitSensitivity). An empty
// side with lambda = 0 contributes 0, the limit of G^2/(n+lambda) at G = 0
// (its histogram sum may be a rounding residue of a subtraction rather than
// an exact 0, and 0/0 would be NaN).
func Gains(b *Binning, h *Histogram, lambda float64, out []float64) []float64 {
	out = grow(out, b.Candidates())
	gt, nt := h.Totals(b)
	i := 0
	for f, n := range b.Bins {
		o := b.offset[f]
		gl, nl := 0.0, 0.0
		for k := range n - 1 {
			gl += h.G[o+k]
			nl += h.N[o+k]
			gr, nr := gt-gl, nt-nl
			out[i] = score(gl, nl, lambda) + score(gr, nr, lambda)
			i++
		}
	}
	return out
}

// score is one side's term G^2/(n+lambda), 0 for an empty side when lambda
// is 0.
func score(g, n, lambda float64) float64 {
	if n+lambda <= 0 {
		return 0
	}
	return g * g / (n + lambda)
}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// SplitRule says how a node's split is chosen: Eps > 0 runs the exponential
// mechanism with budget Eps and sensitivity Sensitivity; Eps == 0 takes the
// best gain (NP).
type SplitRule struct {
	Lambda      float64
	Eps         float64
	Sensitivity float64
}

// ChooseSplit picks the split of a node from its histogram alone: with
// rule.Eps > 0, candidate i with probability proportional to
// exp(Eps G_i / (2 Sensitivity)) over ALL candidates (zero-gain ones and
// those with an empty side included: the candidate set must not depend on
// the data); otherwise the first candidate with the best gain. scratch is
// reused if large enough. It returns the feature and the bin k (bins <= k go
// left).
func ChooseSplit(b *Binning, h *Histogram, rule SplitRule, r *rand.Rand, scratch []float64) (feature, bin int, _ []float64) {
	s := rule.scores(b, h, scratch)
	var i int
	if rule.Eps > 0 {
		i = ExpMech(r, s)
	} else {
		best := math.Inf(-1)
		for j, v := range s {
			if v > best {
				best, i = v, j
			}
		}
	}
	f, k := b.Candidate(i)
	return f, k, s
}

// scores writes into out (grown if short) the exponential mechanism's score
// Eps G_i / (2 Sensitivity) of every candidate (the gains themselves when
// Eps == 0): ChooseSplit draws candidate i with probability exp(s_i) /
// sum_j exp(s_j), and the privacy tests compute that probability exactly
// from the same scores.
func (rule SplitRule) scores(b *Binning, h *Histogram, out []float64) []float64 {
	s := Gains(b, h, rule.Lambda, out)
	if rule.Eps > 0 {
		c := rule.Eps / (2 * rule.Sensitivity)
		for j := range s {
			s[j] *= c
		}
	}
	return s
}

// LeafRule says how a leaf value is released: V = -sum g / (n + Lambda),
// clipped to [-Bound, Bound] (GLC; +Inf: none), plus Lap(Sensitivity/Eps)
// when Eps > 0.
type LeafRule struct {
	Lambda      float64
	Bound       float64
	Eps         float64
	Sensitivity float64
}

// ReleaseLeaf computes a leaf's value from the leaf's gradient sum g and row
// count n (its histogram totals).
func ReleaseLeaf(g, n float64, rule LeafRule, r *rand.Rand) float64 {
	v := -g / (n + rule.Lambda)
	if n+rule.Lambda == 0 {
		v = 0 // empty leaf and lambda = 0
	}
	v = math.Max(-rule.Bound, math.Min(rule.Bound, v))
	if rule.Eps > 0 {
		v = Laplace(r, v, rule.Sensitivity, rule.Eps)
	}
	return v
}

// ReleaseLeafFrom releases a leaf's value from its histogram alone (its
// totals), the form a federated trainer uses after summing owners'
// histograms.
func ReleaseLeafFrom(b *Binning, h *Histogram, rule LeafRule, r *rand.Rand) float64 {
	g, n := h.Totals(b)
	return ReleaseLeaf(g, n, rule, r)
}
