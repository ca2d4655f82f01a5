package boost

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/ppboost/ppboost/crypto/dpnoise"
	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/ldp"
	"github.com/ppboost/ppboost/dataset"
)

// Privacy says how an owner's released statistic is protected.
type Privacy string

const (
	// PrivacyLDP: every owner perturbs its own share (the papers; the
	// default). The data user sees each owner's perturbed share.
	PrivacyLDP Privacy = "ldp"
	// PrivacyDistributed: the round's selected owners secure-sum their
	// clipped, unperturbed statistics, each adding a share of discrete
	// Laplace noise (crypto/dpnoise), so the data user sees only the noisy
	// total of at least Floor owners. Stumps and logistic regression only.
	PrivacyDistributed Privacy = "distributed"
)

// ParsePrivacy accepts "ldp" (also "") or "distributed".
func ParsePrivacy(s string) (Privacy, error) {
	switch p := Privacy(strings.ToLower(s)); p {
	case "", PrivacyLDP:
		return PrivacyLDP, nil
	case PrivacyDistributed:
		return p, nil
	}
	return "", fmt.Errorf("unknown privacy %q (want ldp or distributed)", s)
}

// Distributed-privacy defaults.
const (
	DefaultPrivacyClip  = 2.0 // B: an owner's weight total in its statistic is clipped to this
	DefaultDropFraction = 0.1 // the share sum survives this fraction of silent selected owners
	// distributedMinParties mirrors securesum.DefaultMinParties (boost sits
	// below protocol/); the protocol passes its own through Spec.WithSum.
	distributedMinParties = 3
)

// Distributed reports whether the spec's shares go through a noisy secure sum.
func (s *Spec) Distributed() bool { return s.Privacy == PrivacyDistributed }

// DealerPlan is the share sum of a distributed round that selects h owners
// per round with drop fraction f and the secure sums' minParties: it
// survives tol silent selected owners, tol = max(1, floor(f h)) (0 when f
// is 0: every selected owner must deal); its dealer floor is m = max(
// minParties, h - tol); and the round selects s = max(h, m + tol) owners,
// so that the sum still reaches m when tol of them are silent. s exceeds h
// only when h - tol < minParties (h = 3 with the default 3 and f = 0.1: four
// owners, any three of which complete the sum): the spares are what lets a
// round of minParties owners survive a dead one, since no sum may reveal a
// total over fewer than minParties dealers. h < minParties is refused
// (WithSum). PROTOCOL.md, "Surviving silent owners".
func DealerPlan(h int, f float64, minParties int) (floor, selected, tol int) {
	if f > 0 {
		tol = max(1, int(math.Floor(f*float64(h))))
	}
	floor = max(minParties, h-tol)
	selected = h
	if h >= minParties {
		selected = max(h, floor+tol)
	}
	return floor, selected, tol
}

// WithSum sets the secure-sum parameters a distributed spec depends on: the
// dealer floor m and the owners selected per round (DealerPlan), the honest
// contributors h = HonestFor(m, Colluders) the noise shares are sized for,
// the err sum's ErrHonest = HonestFor(minParties, Colluders), and the
// fixed-point scale. Config.Spec applies the defaults (3, 2^24).
func (s *Spec) WithSum(minParties int, scaleBits uint) error {
	s.ScaleBits = scaleBits
	s.Floor, s.Select, s.Tolerance = DealerPlan(s.OwnersPerRound, s.DropFraction, minParties)
	s.Honest = HonestFor(s.Floor, s.Colluders)
	s.ErrHonest = HonestFor(minParties, s.Colluders)
	if !s.Distributed() {
		s.Select, s.Tolerance = s.OwnersPerRound, 0
		return nil
	}
	if s.Floor > s.OwnersPerRound {
		return fmt.Errorf("spec: the share sum needs %d dealers but only %d owners are selected per round", s.Floor, s.OwnersPerRound)
	}
	return nil
}

// Selected is how many of avail unused owners a round attempt selects: H,
// or with distributed privacy H plus the spares of DealerPlan while the
// roster still has them (fewer spares, down to none, when it does not;
// fewer than H unused owners is the caller's ErrOutOfOwners).
func (s *Spec) Selected(avail int) int {
	if !s.Distributed() || s.Select <= s.OwnersPerRound {
		return s.OwnersPerRound
	}
	return max(s.OwnersPerRound, min(s.Select, avail))
}

// SetColumns groups the features by the schema's columns: the one-hot
// features of a categorical column form one column (a row has one of them),
// every other feature is a column of its own. With a nil schema every
// feature is its own column. Owners and the data user derive the same
// grouping from the same (digest-checked) schema.
func (s *Spec) SetColumns(schema *dataset.Schema) {
	s.Columns, s.Categorical = nil, nil
	if schema == nil || schema.Dim() != s.Features {
		return
	}
	s.Columns = make([]int, 0, s.Features)
	for _, c := range schema.Columns {
		switch c.Kind {
		case dataset.KindNumeric:
			s.Columns = append(s.Columns, len(s.Categorical))
			s.Categorical = append(s.Categorical, false)
		case dataset.KindCategorical:
			for range c.Categories {
				s.Columns = append(s.Columns, len(s.Categorical))
			}
			s.Categorical = append(s.Categorical, true)
		}
	}
}

// distColumn is one column of a distributed stump statistic: the cells a
// row falls into (exactly one per column).
type distColumn struct {
	cat   bool
	feats []int     // numeric: [f]; categorical: the one-hot features with a split in (0, 1]
	thr   []float64 // numeric: f's sorted distinct thresholds; categorical: per feature its smallest threshold
	off   int       // first cell
	cells int
}

// cell is the cell of x in the column: numeric, the number of thresholds
// <= x[f]; categorical, the first feature that is set, or the last cell
// (none of the split features).
func (c *distColumn) cell(x []float64) int {
	if !c.cat {
		v := x[c.feats[0]]
		return sort.Search(len(c.thr), func(i int) bool { return c.thr[i] > v })
	}
	for i, f := range c.feats {
		if x[f] >= c.thr[i] {
			return i
		}
	}
	return len(c.feats)
}

// distLayout is the layout of a distributed stump statistic: per column
// with at least one split, per cell, the signed weight sum (K = 2: class 0
// positive, others negative) or K class weight sums.
type distLayout struct {
	cols  []distColumn
	colOf map[int]int // feature -> index in cols
	width int
	cells int
}

func (s *Spec) distLayout() *distLayout {
	l := &distLayout{colOf: map[int]int{}, width: 1}
	if s.Classes > 2 {
		l.width = s.Classes
	}
	column := func(f int) int {
		if s.Columns == nil {
			return f
		}
		return s.Columns[f]
	}
	byCol := map[int][]Split{}
	var order []int
	for _, sp := range s.Splits {
		c := column(sp.Feature)
		if _, ok := byCol[c]; !ok {
			order = append(order, c)
		}
		byCol[c] = append(byCol[c], sp)
	}
	slices.Sort(order)
	for _, c := range order {
		dc := distColumn{cat: s.Categorical != nil && s.Categorical[c]}
		if dc.cat {
			min := map[int]float64{}
			for _, sp := range byCol[c] {
				if sp.Threshold > 0 && sp.Threshold <= 1 {
					if t, ok := min[sp.Feature]; !ok || sp.Threshold < t {
						min[sp.Feature] = sp.Threshold
					}
				}
			}
			for f := range min {
				dc.feats = append(dc.feats, f)
			}
			slices.Sort(dc.feats)
			for _, f := range dc.feats {
				dc.thr = append(dc.thr, min[f])
			}
			dc.cells = len(dc.feats) + 1
		} else {
			dc.feats = []int{byCol[c][0].Feature}
			for _, sp := range byCol[c] {
				dc.thr = append(dc.thr, sp.Threshold)
			}
			slices.Sort(dc.thr)
			dc.thr = slices.Compact(dc.thr)
			dc.cells = len(dc.thr) + 1
		}
		dc.off = l.cells
		l.cells += dc.cells
		for _, sp := range byCol[c] {
			l.colOf[sp.Feature] = len(l.cols)
		}
		l.cols = append(l.cols, dc)
	}
	return l
}

// side1 returns the cells of column c on the x >= t side of split sp.
func (l *distLayout) side1(sp Split) (c *distColumn, lo, hi int) {
	c = &l.cols[l.colOf[sp.Feature]]
	if !c.cat {
		i, _ := slices.BinarySearch(c.thr, sp.Threshold)
		return c, i + 1, c.cells // rows with more than i thresholds <= x
	}
	switch {
	case sp.Threshold <= 0:
		return c, 0, c.cells // everything (binary features)
	case sp.Threshold > 1:
		return c, 0, 0 // nothing
	}
	i, _ := slices.BinarySearch(c.feats, sp.Feature)
	return c, i, i + 1
}

// DistributedLen is the length of a distributed share vector.
func (s *Spec) DistributedLen() int {
	switch s.Learner {
	case Stump:
		l := s.distLayout()
		return l.cells * l.width
	case LogReg:
		return s.ShareDim(0)
	}
	return 0
}

// DistributedSensitivity is the L1 distance between any two owners'
// distributed share vectors (the owner is the privacy unit, as with LDP):
// stumps 2 B per column (a row is in one cell of each column and the
// owner's weights add up to at most B), logistic regression 2 per
// parameter (each is clipped to [-1, 1]).
func (s *Spec) DistributedSensitivity() float64 {
	switch s.Learner {
	case Stump:
		return 2 * s.Clip * float64(len(s.distLayout().cols))
	case LogReg:
		return 2 * float64(s.ShareDim(0))
	}
	return 0
}

// DistributedNoise is the noise design of the share sum: shares of
// DLap(t) sized for Honest owners with t = (ceil(Delta S) + L) / eps, so that
// the total over at least Floor dealers is eps-DP for every owner in it
// towards the data user and up to Colluders owners. ok is false without
// noise (mechanism none).
func (s *Spec) DistributedNoise() (p dpnoise.Params, ok bool, err error) {
	if s.Mechanism == ldp.None {
		return dpnoise.Params{}, false, nil
	}
	codec, err := field.NewCodec(s.ScaleBits)
	if err != nil {
		return dpnoise.Params{}, false, err
	}
	p, err = dpnoise.ForEpsilon(s.Epsilon, s.DistributedSensitivity(), codec, s.DistributedLen(), s.Honest)
	return p, err == nil, err
}

// NoiseVariance is the variance, in real units, of each coordinate of a
// share-sum total over k dealers (0 without noise).
func (s *Spec) NoiseVariance(k int) float64 {
	p, ok, err := s.DistributedNoise()
	return s.realVariance(p, ok && err == nil, k)
}

// DistributedShare is this owner's clipped, unperturbed statistic for a
// distributed round; the noise share is added after encoding (AddNoise, or
// the secure sum's noise hook).
func (o *Owner) DistributedShare(s *Spec) ([]float64, error) {
	d := o.Data
	if d.Dim() != s.Features || d.NumClasses() != s.Classes {
		return nil, fmt.Errorf("owner %q: data has %d features and %d classes, session wants %d and %d", d.Name, d.Dim(), d.NumClasses(), s.Features, s.Classes)
	}
	switch s.Learner {
	case Stump:
		return stumpCells(s, d.X, d.Y, o.W), nil
	case LogReg:
		v, err := fitLogReg(s, d.X, d.Y, o.W)
		if err != nil {
			return nil, fmt.Errorf("owner %q: %w", d.Name, err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("learner %q has no distributed share", s.Learner)
}

// stumpCells is the per-column cell histogram of the owner's weights, with
// the weight total clipped to B.
func stumpCells(s *Spec, X [][]float64, Y []int, W []float64) []float64 {
	l := s.distLayout()
	v := make([]float64, l.cells*l.width)
	total := 0.0
	for _, w := range W {
		total += w
	}
	scale := 1.0
	if total > s.Clip {
		scale = s.Clip / total
	}
	for i, x := range X {
		w, y := W[i]*scale, Y[i]
		for c := range l.cols {
			col := &l.cols[c]
			cell := col.off + col.cell(x)
			if l.width == 1 {
				if y != 0 {
					v[cell] -= w
				} else {
					v[cell] += w
				}
			} else {
				v[cell*l.width+y] += w
			}
		}
	}
	return v
}

// AggregateSum builds the round's learner from a distributed share sum: the
// total of `parties` owners' statistics plus the noise. Stumps pick the
// split with the largest estimated score (K = 2: each branch's |class
// difference| estimated as sqrt(max(v^2 - c sigma^2, 0)) for a branch of c
// cells, so that branches made of many noisy cells are not preferred;
// without noise exactly the LDP path's score); logistic regression
// averages the parameters over the parties.
func AggregateSum(s *Spec, total []float64, parties int) (*Base, error) {
	if len(total) != s.DistributedLen() || parties < 1 {
		return nil, fmt.Errorf("aggregate: sum of %d values over %d owners, want %d values", len(total), parties, s.DistributedLen())
	}
	for k, v := range total {
		if !finite(v) {
			return nil, fmt.Errorf("aggregate: sum value %d is %v", k, v)
		}
	}
	switch s.Learner {
	case LogReg:
		mean := make([]float64, len(total))
		for k, v := range total {
			mean[k] = v / float64(parties)
		}
		return aggregateLogReg(s, []Share{{Values: mean}})
	case Stump:
		return aggregateStumpSum(s, total, s.NoiseVariance(parties))
	}
	return nil, fmt.Errorf("aggregate: learner %q has no distributed share", s.Learner)
}

func aggregateStumpSum(s *Spec, total []float64, variance float64) (*Base, error) {
	l := s.distLayout()
	K := s.Classes
	best, bestPhi := -1, 0.0
	var bestLab [2]int
	side := make([][]float64, 2)
	for b := range side {
		side[b] = make([]float64, l.width)
	}
	for j, sp := range s.Splits {
		c, lo, hi := l.side1(sp)
		for b := range side {
			clear(side[b])
		}
		cells := [2]int{}
		for cell := 0; cell < c.cells; cell++ {
			b := 0
			if cell >= lo && cell < hi {
				b = 1
			}
			cells[b]++
			for y := 0; y < l.width; y++ {
				side[b][y] += total[(c.off+cell)*l.width+y]
			}
		}
		phi := 0.0
		var lab [2]int
		for b := range side {
			if K == 2 {
				v := side[b][0]
				phi += math.Sqrt(math.Max(v*v-float64(cells[b])*variance, 0))
				if v < 0 {
					lab[b] = 1
				}
				continue
			}
			y := argmax(side[b])
			phi += side[b][y]
			lab[b] = y
		}
		if best < 0 || phi > bestPhi {
			best, bestPhi, bestLab = j, phi, lab
		}
	}
	sp := s.Splits[best]
	return &Base{Stump: &StumpModel{Feature: sp.Feature, Threshold: sp.Threshold, Left: bestLab[0], Right: bestLab[1]}}, nil
}

// DistributedRound is what Train does for one distributed round: every
// selected owner's share encoded at the sum's scale, plus its noise share
// drawn from noise(i), summed exactly in the field and decoded. The
// protocol's secure sum computes the same total.
func DistributedRound(s *Spec, owners []*Owner, noise func(i int) func([]field.Elem) error) ([]float64, error) {
	codec, err := field.NewCodec(s.ScaleBits)
	if err != nil {
		return nil, err
	}
	sum := make([]field.Elem, s.DistributedLen())
	for i, o := range owners {
		v, err := o.DistributedShare(s)
		if err != nil {
			return nil, err
		}
		enc, err := codec.EncodeVec(v)
		if err != nil {
			return nil, err
		}
		if f := noise(i); f != nil {
			if err := f(enc); err != nil {
				return nil, err
			}
		}
		for k := range sum {
			sum[k] = sum[k].Add(enc[k])
		}
	}
	return codec.DecodeVec(sum), nil
}
