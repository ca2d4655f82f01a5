package pfds

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ppboost/ppboost/crypto/dlap"
	"github.com/ppboost/ppboost/crypto/rng"
)

// Variant is PFDS-cv ("count vote"), a departure from the paper stated in
// doc.go and RESULTS.md; it is not the paper's algorithm. It is run by
// SimulateVariant, not by Simulate.
const Variant Mode = 3

// VariantParams are the public parameters of PFDS-cv. Each agent:
//
//  1. grows a data-independent random tree: the attribute is drawn
//     uniformly as in Alg. 3, but a numeric split value is drawn uniformly
//     in the active interval without the exponential mechanism (the
//     paper's t random candidates scored on the data), so the structure
//     costs nothing;
//  2. releases the class counts of every leaf with the geometric mechanism
//     at the whole budget Eps (one row changes one count by one) and
//     publishes them with the tree (the paper publishes only their argmax
//     and keeps Eps/2 for the splits and Eps/2 for level counts);
//  3. samples its synthetic rows uniformly in the leaf boxes as Alg. 5
//     does, with leaf j's size its noisy leaf total if that is at least
//     Threshold/Eps and 0 otherwise (no level counts, no least squares);
//  4. labels each synthetic row by the pooled noisy class counts of the
//     leaves it falls into in every shared tree whose noisy leaf total is
//     at least Threshold/Eps (all trees if none is), instead of the
//     majority vote of every tree's argmax: the argmax of the pooled
//     counts, or with Sample a class drawn in proportion to them (clipped
//     at 0) from the public sampling seed.
//
// Steps 3 and 4 read only public values (the trees, their noisy counts and
// the seed), so an agent's release is the noisy counts of step 2 alone:
// Eps-DP (VariantParams.Charge).
type VariantParams struct {
	Eps       float64 // each agent's whole budget, spent on the leaf class counts
	HMax      int     // tree depth in levels, as Params.HMax
	MaxLeaves int     // public leaf cap, as Params.MaxLeaves (0: none)
	// Threshold is in units of the count noise scale 1/Eps: a leaf whose
	// noisy total is below Threshold/Eps gets no synthetic rows and its
	// tree does not vote on a row in it. Negative: every leaf and tree.
	Threshold float64
	Sample    bool // labels drawn from the pooled counts instead of their argmax
}

// DefaultVariant is the setting chosen on the validation split of
// `ppboost experiment pfds-variant` (RESULTS.md, "## PFDS"): the lowest
// validation error at eps 1 with LogReg; no outer test row is read.
func DefaultVariant() VariantParams {
	return VariantParams{Eps: 1, HMax: 8, MaxLeaves: 1024, Threshold: 12, Sample: true}
}

// Validate checks every field and names the bad one.
func (v VariantParams) Validate() error {
	switch {
	case !(v.Eps > 0) || math.IsInf(v.Eps, 0):
		return fmt.Errorf("%w: variant Eps %v must be positive and finite", ErrParams, v.Eps)
	case v.HMax < 1 || v.HMax > 32:
		return fmt.Errorf("%w: variant HMax %d must be in [1, 32]", ErrParams, v.HMax)
	case v.MaxLeaves < 0 || v.MaxLeaves > 1<<22:
		return fmt.Errorf("%w: variant MaxLeaves %d must be in [0, 4194304]", ErrParams, v.MaxLeaves)
	case math.IsNaN(v.Threshold) || math.IsInf(v.Threshold, 0):
		return fmt.Errorf("%w: variant Threshold %v must be finite", ErrParams, v.Threshold)
	}
	return nil
}

// String names the setting for logs and tables.
func (v VariantParams) String() string {
	return fmt.Sprintf("h_max %d, cap %d, threshold %g/eps, sample %v", v.HMax, v.MaxLeaves, v.Threshold, v.Sample)
}

// countMech is the geometric mechanism of the leaf class counts.
func (v VariantParams) countMech() (dlap.Mech, error) { return dlap.NewInt(1, v.Eps) }

// Charge is the privacy loss of one agent's release: the leaf class counts
// are one histogram over (leaf, class) cells, each row in exactly one, so
// the geometric mechanism at sensitivity 1 costs its own epsilon
// (<= Eps) by parallel composition; the tree's structure, the sizes, the
// rows and the labels are computed from public values only and cost 0.
func (v VariantParams) Charge() (float64, error) {
	if err := v.Validate(); err != nil {
		return 0, err
	}
	m, err := v.countMech()
	if err != nil {
		return 0, err
	}
	return m.Epsilon(), nil
}

// treeParams are the Params MakeVariantTree grows its tree with.
func (v VariantParams) treeParams() Params {
	return Params{Eps: v.Eps, HMax: v.HMax, T: 1, P: 2, MaxLeaves: v.MaxLeaves}
}

// MakeVariantTree grows agent data's random tree and releases its leaf
// class counts: the only function of the variant that reads private rows.
// The returned tree, counts included, is what the agent publishes.
func MakeVariantTree(dom *Domain, X [][]float64, Y []int, v VariantParams, r *rand.Rand) (*Tree, error) {
	if err := v.Validate(); err != nil {
		return nil, err
	}
	m, err := v.countMech()
	if err != nil {
		return nil, err
	}
	return makeTree(&builder{dom: dom, X: X, Y: Y, p: v.treeParams(), count: counter{m: m, ok: true}, r: r, random: true}), nil
}

// threshold is the noisy-total cut of a leaf, in records.
func (v VariantParams) threshold() float64 { return v.Threshold / v.Eps }

func total(c []float64) float64 {
	s := 0.0
	for _, x := range c {
		s += x
	}
	return s
}

// VariantSizes is step 3's leaf sizes from the published tree alone.
func VariantSizes(t *Tree, v VariantParams) *Sizes {
	leaves := t.Leaves()
	real := make([]float64, len(leaves))
	cut := math.Max(0, v.threshold())
	for j, l := range leaves {
		if n := total(t.Nodes[l].Counts); n >= cut && n > 0 {
			real[j] = n
		}
	}
	return &Sizes{Leaves: leaves, Counts: apportion(real), Real: real}
}

// streamLabel labels the label-sampling stream derived from a public seed.
const streamLabel = 0x4c4142454c // "LABEL"

// CountVote is step 4: the label of every row from the published trees
// (with their noisy counts) and the public seed.
func CountVote(dom *Domain, trees []*Tree, rows [][]float64, v VariantParams, seed uint64) []int {
	r := rng.Derive(seed, streamLabel)
	cut := v.threshold()
	out := make([]int, len(rows))
	pooled := make([]float64, dom.Classes)
	all := make([]float64, dom.Classes)
	for i, x := range rows {
		clear(pooled)
		clear(all)
		voters := 0
		for _, t := range trees {
			c := t.Nodes[t.leafOf(dom, x)].Counts
			for l, n := range c {
				all[l] += n
			}
			if total(c) >= cut {
				voters++
				for l, n := range c {
					pooled[l] += n
				}
			}
		}
		if voters == 0 {
			copy(pooled, all)
		}
		out[i] = pick(pooled, v.Sample, r)
	}
	return out
}

// pick returns the argmax of w, or with sample a class drawn in
// proportion to w clipped at 0 (the argmax if no weight is positive).
func pick(w []float64, sample bool, r *rand.Rand) int {
	if !sample {
		return argmax(w)
	}
	sum := 0.0
	for _, x := range w {
		sum += math.Max(0, x)
	}
	u := r.Float64() * sum
	if !(sum > 0) {
		return argmax(w)
	}
	for l, x := range w {
		x = math.Max(0, x)
		if u < x {
			return l
		}
		u -= x
	}
	return argmax(w)
}

// ShareVariant is one agent's data share from public values only: its own
// published tree, every shared tree and a sampling seed drawn from r.
func ShareVariant(dom *Domain, own *Tree, trees []*Tree, v VariantParams, r *rand.Rand) (*DataShare, [][]float64) {
	sizes := VariantSizes(own, v)
	seed := r.Uint64()
	rows := Sample(dom, own, sizes, seed)
	return &DataShare{Counts: sizes.Counts, Seed: seed, Labels: CountVote(dom, trees, rows, v, seed)}, rows
}

// SimulateVariant runs PFDS-cv for every agent in one process; agent i
// draws from AgentRand(seed, i) (its tree, then its sampling seed). The
// Shared trees carry their noisy leaf counts: in the variant they are
// published.
func SimulateVariant(dom *Domain, agents []Local, v VariantParams, seed uint64) ([]Shared, error) {
	if err := v.Validate(); err != nil {
		return nil, err
	}
	rs := make([]*rand.Rand, len(agents))
	trees := make([]*Tree, len(agents))
	for i, a := range agents {
		rs[i] = AgentRand(seed, i)
		t, err := MakeVariantTree(dom, a.X, a.Y, v, rs[i])
		if err != nil {
			return nil, fmt.Errorf("agent %d: %w", i, err)
		}
		trees[i] = t
	}
	out := make([]Shared, len(agents))
	for i := range agents {
		ds, rows := ShareVariant(dom, trees[i], trees, v, rs[i])
		out[i] = Shared{Tree: trees[i], Data: ds, Rows: rows}
	}
	return out, nil
}
