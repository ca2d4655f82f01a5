package wire

import (
	"fmt"
	"math"
	"slices"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/dataset"
)

// Bounds on a model received from the network, checked before anything is
// allocated from a count the sender chose. A frame's size cap
// (MaxControlBytes) bounds the total; these bound each dimension so that a
// short message cannot declare a huge matrix or tree.
const (
	MaxModelClasses  = 1 << 10 // K, class names, boosters
	MaxModelFeatures = 1 << 16 // d, feature names, bins, splits
	MaxModelRounds   = 1 << 16 // accepted W&C rounds
	maxNameBytes     = 32      // a W&C config's names (learner, mechanism, ...)
)

// modelErr is a malformed model: it names the message and field.
func modelErr(path, format string, a ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrMalformed, path, fmt.Sprintf(format, a...))
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// finites checks that every value of vs is finite.
func finites(path string, vs []float64) error {
	for i, v := range vs {
		if !finite(v) {
			return modelErr(fmt.Sprintf("%s[%d]", path, i), "%v is not finite", v)
		}
	}
	return nil
}

// field is a named scalar of a message, for checks in field order.
type field struct {
	name string
	v    float64
}

// namedFloats checks named scalar fields, in order.
func namedFloats(path string, fs ...field) error {
	for _, f := range fs {
		if !finite(f.v) {
			return modelErr(path+"."+f.name, "%v is not finite", f.v)
		}
	}
	return nil
}

// --- W&C base learners ---

// LearnerOf is the Learner message that publishes b.
func LearnerOf(b *boost.Base) (*Learner, error) {
	w, err := BaseLearnerOf(b)
	if err != nil {
		return nil, err
	}
	return &Learner{Base: w}, nil
}

// BaseLearnerOf is the wire form of a base learner: exactly one kind, and
// rectangular matrices.
func BaseLearnerOf(b *boost.Base) (*BaseLearner, error) {
	if b == nil {
		return nil, fmt.Errorf("wire: base learner: nil")
	}
	switch {
	case b.Stump != nil && b.NCC == nil && b.LogReg == nil:
		s := b.Stump
		if s.Feature < 0 || s.Left < 0 || s.Right < 0 || s.Feature > math.MaxUint32 || s.Left > math.MaxUint32 || s.Right > math.MaxUint32 {
			return nil, fmt.Errorf("wire: stump feature %d, labels %d/%d", s.Feature, s.Left, s.Right)
		}
		return &BaseLearner{Kind: &BaseLearner_Stump{Stump: &Stump{Feature: uint32(s.Feature), Threshold: s.Threshold,
			Left: uint32(s.Left), Right: uint32(s.Right)}}}, nil
	case b.NCC != nil && b.Stump == nil && b.LogReg == nil:
		m, err := matrixOf(b.NCC.Centroids)
		if err != nil {
			return nil, fmt.Errorf("wire: ncc centroids: %w", err)
		}
		return &BaseLearner{Kind: &BaseLearner_Ncc{Ncc: m}}, nil
	case b.LogReg != nil && b.Stump == nil && b.NCC == nil:
		m, err := matrixOf(b.LogReg.Theta)
		if err != nil {
			return nil, fmt.Errorf("wire: logreg theta: %w", err)
		}
		return &BaseLearner{Kind: &BaseLearner_Logreg{Logreg: m}}, nil
	}
	return nil, fmt.Errorf("wire: base learner must have exactly one kind")
}

func matrixOf(rows [][]float64) (*Matrix, error) {
	m := &Matrix{Rows: uint32(len(rows))}
	if len(rows) > 0 {
		m.Cols = uint32(len(rows[0]))
	}
	m.Values = make([]float64, 0, len(rows)*int(m.Cols))
	for i, r := range rows {
		if len(r) != int(m.Cols) {
			return nil, fmt.Errorf("row %d has %d values, row 0 %d", i, len(r), m.Cols)
		}
		m.Values = append(m.Values, r...)
	}
	return m, nil
}

// ToBase decodes the published learner and checks it against K classes and
// d features (the announced shape), so that Predict cannot index out of
// range. Errors name the field (Learner.base.stump.feature, ...).
func (l *Learner) ToBase(classes, features int) (*boost.Base, error) {
	if l == nil {
		return nil, modelErr("Learner", "missing")
	}
	return baseFrom(l.GetBase(), classes, features, "Learner.base")
}

// baseFrom decodes a base learner for K classes and d features; path names
// it in errors.
func baseFrom(w *BaseLearner, classes, features int, path string) (*boost.Base, error) {
	if w == nil {
		return nil, modelErr(path, "missing")
	}
	var b boost.Base
	switch k := w.GetKind().(type) {
	case *BaseLearner_Stump:
		s := k.Stump
		p := path + ".stump"
		switch {
		case s == nil:
			return nil, modelErr(p, "missing")
		case int64(s.Feature) >= int64(features):
			return nil, modelErr(p+".feature", "%d outside [0,%d)", s.Feature, features)
		case int64(s.Left) >= int64(classes):
			return nil, modelErr(p+".left", "class %d outside [0,%d)", s.Left, classes)
		case int64(s.Right) >= int64(classes):
			return nil, modelErr(p+".right", "class %d outside [0,%d)", s.Right, classes)
		case !finite(s.Threshold):
			return nil, modelErr(p+".threshold", "%v is not finite", s.Threshold)
		}
		b.Stump = &boost.StumpModel{Feature: int(s.Feature), Threshold: s.Threshold, Left: int(s.Left), Right: int(s.Right)}
	case *BaseLearner_Ncc:
		m, err := matrixFrom(k.Ncc, classes, features, path+".ncc")
		if err != nil {
			return nil, err
		}
		b.NCC = &boost.NCCModel{Centroids: m}
	case *BaseLearner_Logreg:
		rows := classes
		if classes == 2 {
			rows = 1
		}
		m, err := matrixFrom(k.Logreg, rows, features+1, path+".logreg")
		if err != nil {
			return nil, err
		}
		b.LogReg = &boost.LogRegModel{Theta: m}
	default:
		return nil, modelErr(path+".kind", "missing (want stump, ncc or logreg)")
	}
	// The same checks as a model file's; a backstop for the ones above.
	if err := b.Check(classes, features); err != nil {
		return nil, modelErr(path, "%v", err)
	}
	return &b, nil
}

// matrixFrom decodes a rows x cols matrix: the declared shape must be the
// expected one before anything is allocated.
func matrixFrom(m *Matrix, rows, cols int, path string) ([][]float64, error) {
	switch {
	case m == nil:
		return nil, modelErr(path, "missing")
	case int64(m.Rows) != int64(rows):
		return nil, modelErr(path+".rows", "%d, want %d", m.Rows, rows)
	case int64(m.Cols) != int64(cols):
		return nil, modelErr(path+".cols", "%d, want %d", m.Cols, cols)
	case len(m.Values) != rows*cols:
		return nil, modelErr(path+".values", "%d values for %d x %d", len(m.Values), rows, cols)
	}
	if err := finites(path+".values", m.Values); err != nil {
		return nil, err
	}
	out := make([][]float64, rows)
	for i := range out {
		out[i] = append([]float64(nil), m.Values[i*cols:(i+1)*cols]...)
	}
	return out, nil
}

// --- W&C model ---

// FinalWC is the Final message that publishes a W&C model with its outcome.
func FinalWC(m *boost.Model, out *Outcome) (*Final, error) {
	w, err := WCModelOf(m)
	if err != nil {
		return nil, err
	}
	return &Final{Outcome: out, Model: &Final_Wc{Wc: w}}, nil
}

// WCModelOf is the wire form of a W&C model.
func WCModelOf(m *boost.Model) (*WCModel, error) {
	c := m.Config
	w := &WCModel{
		Config: &BoostConfig{Learner: string(c.Learner), Mechanism: c.Mechanism, Epsilon: c.Epsilon,
			Rounds: uint32(c.Rounds), OwnersPerRound: uint32(c.OwnersPerRound), Alpha: string(c.Alpha),
			Thresholds: string(c.Thresholds), SplitsPerFeature: uint32(c.SplitsPerFeature), MaxSplits: uint32(c.MaxSplits),
			MaxAttempts: uint32(c.MaxAttempts), Significance: c.Significance, LogregIterations: uint32(c.LogRegIterations),
			LogregL2: c.LogRegL2, LogregNormalize: c.LogRegNormalize, Privacy: string(c.Privacy),
			PrivacyClip: c.PrivacyClip, DropFraction: c.DropFraction, Colluders: int64(c.Colluders),
			ErrEpsilon: c.ErrEpsilon, ErrClip: c.ErrClip, Seed: c.Seed},
		Schema: SchemaOf(m.Schema), Features: slices.Clone(m.Features), ClassNames: slices.Clone(m.ClassNames),
		Classes: uint32(m.Classes),
	}
	for _, s := range m.Splits {
		w.Splits = append(w.Splits, &Split{Feature: uint32(s.Feature), Threshold: s.Threshold})
	}
	for i := range m.Rounds {
		r := &m.Rounds[i]
		b, err := BaseLearnerOf(&r.Base)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", i+1, err)
		}
		w.Rounds = append(w.Rounds, &WCRound{Alpha: r.Alpha, Err: r.Err, Base: b})
	}
	if p := m.Partial; p != nil {
		w.Partial = &WCPartial{Rounds: uint32(p.Rounds), Planned: uint32(p.Planned), Reason: p.Reason}
	}
	return w, nil
}

// ToBoostModel decodes and validates the W&C model a Final carries. Errors
// name the field (Final.wc.rounds[2].base.stump.feature, ...).
func (f *Final) ToBoostModel() (*boost.Model, error) {
	const path = "Final.wc"
	if f == nil {
		return nil, modelErr("Final", "missing")
	}
	w := f.GetWc()
	if w == nil {
		if f.GetDpboost() != nil {
			return nil, modelErr(path, "missing (the Final carries a DPBoost model)")
		}
		return nil, modelErr(path, "missing")
	}
	K, d := int(w.Classes), len(w.Features)
	switch {
	case K < 2 || K > MaxModelClasses:
		return nil, modelErr(path+".classes", "%d outside [2,%d]", w.Classes, MaxModelClasses)
	case len(w.ClassNames) != K:
		return nil, modelErr(path+".class_names", "%d names for %d classes", len(w.ClassNames), K)
	case d == 0 || d > MaxModelFeatures:
		return nil, modelErr(path+".features", "%d names, want 1 to %d", d, MaxModelFeatures)
	case len(w.Splits) > MaxModelFeatures*16:
		return nil, modelErr(path+".splits", "%d, over %d", len(w.Splits), MaxModelFeatures*16)
	case len(w.Rounds) > MaxModelRounds:
		return nil, modelErr(path+".rounds", "%d, over %d", len(w.Rounds), MaxModelRounds)
	}
	c, err := boostConfigFrom(w.Config, path+".config")
	if err != nil {
		return nil, err
	}
	m := &boost.Model{Format: boost.ModelFormat, Version: boost.ModelVersion, Config: c,
		Features: append([]string{}, w.Features...), ClassNames: append([]string{}, w.ClassNames...),
		Ensemble: boost.Ensemble{Classes: K, Rounds: make([]boost.ModelRound, len(w.Rounds))}}
	if m.Schema, err = schemaFrom(w.GetSchema(), path+".schema"); err != nil {
		return nil, err
	}
	for i, s := range w.Splits {
		p := fmt.Sprintf("%s.splits[%d]", path, i)
		switch {
		case s == nil:
			return nil, modelErr(p, "missing")
		case int64(s.Feature) >= int64(d):
			return nil, modelErr(p+".feature", "%d outside [0,%d)", s.Feature, d)
		case !finite(s.Threshold):
			return nil, modelErr(p+".threshold", "%v is not finite", s.Threshold)
		}
		m.Splits = append(m.Splits, boost.Split{Feature: int(s.Feature), Threshold: s.Threshold})
	}
	for i, r := range w.Rounds {
		p := fmt.Sprintf("%s.rounds[%d]", path, i)
		switch {
		case r == nil:
			return nil, modelErr(p, "missing")
		case !finite(r.Alpha) || r.Alpha <= 0:
			return nil, modelErr(p+".alpha", "%v, want positive and finite", r.Alpha)
		case !finite(r.Err):
			return nil, modelErr(p+".err", "%v is not finite", r.Err)
		}
		b, err := baseFrom(r.Base, K, d, p+".base")
		if err != nil {
			return nil, err
		}
		m.Rounds[i] = boost.ModelRound{Alpha: r.Alpha, Err: r.Err, Base: *b}
	}
	if p := w.GetPartial(); p != nil {
		switch {
		case int64(p.Rounds) != int64(len(w.Rounds)):
			return nil, modelErr(path+".partial.rounds", "%d, the model holds %d", p.Rounds, len(w.Rounds))
		case p.Planned <= p.Rounds:
			return nil, modelErr(path+".partial.planned", "%d, not above rounds %d", p.Planned, p.Rounds)
		case len(p.Reason) > MaxTextBytes:
			return nil, modelErr(path+".partial.reason", "%d bytes, over %d", len(p.Reason), MaxTextBytes)
		}
		m.Partial = &boost.Partial{Rounds: int(p.Rounds), Planned: int(p.Planned), Reason: p.Reason}
	}
	if err := m.Validate(); err != nil { // a model file's checks, as a backstop
		return nil, modelErr(path, "%v", err)
	}
	return m, nil
}

// schemaFrom decodes and validates a model's public schema (nil for none):
// finite bounds, distinct names (dataset.Schema.Validate), so that the model
// file an owner saves is one it can read back.
func schemaFrom(w *Schema, path string) (*dataset.Schema, error) {
	if w == nil {
		return nil, nil
	}
	s, err := w.ToDataset()
	if err == nil {
		err = s.Validate()
	}
	if err != nil {
		return nil, modelErr(path, "%v", err)
	}
	return s, nil
}

// boostConfigFrom decodes a W&C model's configuration: every float finite,
// every count an int.
func boostConfigFrom(w *BoostConfig, path string) (boost.Config, error) {
	if w == nil {
		return boost.Config{}, modelErr(path, "missing")
	}
	if err := namedFloats(path,
		field{"epsilon", w.Epsilon}, field{"significance", w.Significance}, field{"logreg_l2", w.LogregL2},
		field{"privacy_clip", w.PrivacyClip}, field{"drop_fraction", w.DropFraction},
		field{"err_epsilon", w.ErrEpsilon}, field{"err_clip", w.ErrClip}); err != nil {
		return boost.Config{}, err
	}
	if w.Colluders < boost.ColludersAll || w.Colluders > math.MaxInt32 {
		return boost.Config{}, modelErr(path+".colluders", "%d outside [%d,%d]", w.Colluders, boost.ColludersAll, math.MaxInt32)
	}
	for _, f := range []struct{ name, s string }{{"learner", w.Learner}, {"mechanism", w.Mechanism}, {"alpha", w.Alpha},
		{"thresholds", w.Thresholds}, {"privacy", w.Privacy}} {
		if len(f.s) > maxNameBytes {
			return boost.Config{}, modelErr(path+"."+f.name, "%d bytes, over %d", len(f.s), maxNameBytes)
		}
	}
	return boost.Config{Learner: boost.Learner(w.Learner), Mechanism: w.Mechanism, Epsilon: w.Epsilon,
		Rounds: int(w.Rounds), OwnersPerRound: int(w.OwnersPerRound), Alpha: boost.AlphaMode(w.Alpha),
		Thresholds: boost.ThresholdMethod(w.Thresholds), SplitsPerFeature: int(w.SplitsPerFeature),
		MaxSplits: int(w.MaxSplits), MaxAttempts: int(w.MaxAttempts), Significance: w.Significance,
		LogRegIterations: int(w.LogregIterations), LogRegL2: w.LogregL2, LogRegNormalize: w.LogregNormalize,
		Privacy: boost.Privacy(w.Privacy), PrivacyClip: w.PrivacyClip, DropFraction: w.DropFraction,
		Colluders: int(w.Colluders), ErrEpsilon: w.ErrEpsilon, ErrClip: w.ErrClip, Seed: w.Seed}, nil
}

// --- federated DPBoost model ---

// FinalDPBoost is the Final message that publishes a DPBoost model with its
// outcome.
func FinalDPBoost(m *dpboost.Model, out *Outcome) *Final {
	return &Final{Outcome: out, Model: &Final_Dpboost{Dpboost: DPBoostModelOf(m)}}
}

// DPBoostConfigOf is the wire form of a DPBoost configuration.
func DPBoostConfigOf(b dpboost.Config) *DPBoostConfig {
	return &DPBoostConfig{Method: b.Method.String(), Task: b.Task.String(), Epsilon: b.Epsilon,
		Trees: uint32(b.Trees), EnsembleSize: uint32(b.EnsembleSize), Depth: uint32(b.Depth),
		LearningRate: b.LearningRate, Lambda: b.Lambda, Bins: uint32(b.Bins),
		ClipPerEnsemble: b.ClipPerEnsemble, ClipGradients: b.ClipGradients,
		Delta: b.Delta, HessianShare: b.HessianShare, LeafMax: b.LeafMax}
}

// DPBoostModelOf is the wire form of a DPBoost model.
func DPBoostModelOf(m *dpboost.Model) *DPBoostModel {
	a := m.Account
	w := &DPBoostModel{Config: DPBoostConfigOf(m.Config),
		Account: &DPBoostAccount{Method: a.Method.String(), Private: a.Private, Classes: uint32(a.Classes),
			Ensembles: uint32(a.Ensembles), PerTree: slices.Clone(a.PerTree), SplitPerDepth: slices.Clone(a.SplitPerDepth),
			Leaf: slices.Clone(a.Leaf), Sequential: a.Sequential, Total: a.Total},
		Schema: SchemaOf(m.Schema), Features: slices.Clone(m.Features), ClassNames: slices.Clone(m.ClassNames),
		RangeLow: slices.Clone(m.Lo)}
	if n := a.Newton; n != nil {
		w.Account.Newton = &NewtonAccount{Rho: n.Rho, RhoRound: n.RhoRound, Epsilon: n.Epsilon, Delta: n.Delta,
			Unit: n.Unit, NoiseG: n.NoiseG, NoiseH: n.NoiseH}
	}
	for _, b := range m.Bins {
		w.Bins = append(w.Bins, uint32(b))
	}
	for _, ts := range m.Boosters {
		bw := &DPBoostBooster{}
		for i := range ts {
			t := &ts[i]
			tw := &DPBoostTree{Feature: make([]uint32, len(t.Feature)), Bin: make([]uint32, len(t.Bin)), Leaf: slices.Clone(t.Leaf)}
			for j, f := range t.Feature {
				tw.Feature[j] = uint32(f)
			}
			for j, b := range t.Bin {
				tw.Bin[j] = uint32(b)
			}
			bw.Trees = append(bw.Trees, tw)
		}
		w.Boosters = append(w.Boosters, bw)
	}
	return w
}

// ToDPBoost decodes a DPBoost configuration; the counts are bounded
// (dpboost's limits) before they become ints, dpboost.Config.Validate does
// the rest.
func (w *DPBoostConfig) ToDPBoost(path string) (dpboost.Config, error) {
	if w == nil {
		return dpboost.Config{}, modelErr(path, "missing")
	}
	method, err := dpboost.ParseMethod(w.Method)
	if err != nil {
		return dpboost.Config{}, modelErr(path+".method", "%v", err)
	}
	var task dpboost.Task
	if err := task.UnmarshalText([]byte(w.Task)); err != nil {
		return dpboost.Config{}, modelErr(path+".task", "%v", err)
	}
	switch {
	case w.Depth > dpboost.MaxDepth:
		return dpboost.Config{}, modelErr(path+".depth", "%d, over %d", w.Depth, dpboost.MaxDepth)
	case w.Trees > dpboost.MaxTrees:
		return dpboost.Config{}, modelErr(path+".trees", "%d, over %d", w.Trees, dpboost.MaxTrees)
	case w.Bins > dpboost.MaxBins:
		return dpboost.Config{}, modelErr(path+".bins", "%d, over %d", w.Bins, dpboost.MaxBins)
	case w.EnsembleSize > dpboost.MaxTrees:
		return dpboost.Config{}, modelErr(path+".ensemble_size", "%d, over %d", w.EnsembleSize, dpboost.MaxTrees)
	}
	if err := namedFloats(path,
		field{"epsilon", w.Epsilon}, field{"learning_rate", w.LearningRate}, field{"lambda", w.Lambda},
		field{"delta", w.Delta}, field{"hessian_share", w.HessianShare}, field{"leaf_max", w.LeafMax}); err != nil {
		return dpboost.Config{}, err
	}
	return dpboost.Config{Method: method, Task: task, Epsilon: w.Epsilon, Trees: int(w.Trees),
		EnsembleSize: int(w.EnsembleSize), Depth: int(w.Depth), LearningRate: w.LearningRate, Lambda: w.Lambda,
		Bins: int(w.Bins), ClipPerEnsemble: w.ClipPerEnsemble, ClipGradients: w.ClipGradients,
		Delta: w.Delta, HessianShare: w.HessianShare, LeafMax: w.LeafMax}, nil
}

// ToDPBoostModel decodes and validates the DPBoost model a Final carries.
// Errors name the field (Final.dpboost.boosters[0].trees[3].bin[5], ...).
func (f *Final) ToDPBoostModel() (*dpboost.Model, error) {
	const path = "Final.dpboost"
	if f == nil {
		return nil, modelErr("Final", "missing")
	}
	w := f.GetDpboost()
	if w == nil {
		if f.GetWc() != nil {
			return nil, modelErr(path, "missing (the Final carries a W&C model)")
		}
		return nil, modelErr(path, "missing")
	}
	c, err := w.Config.ToDPBoost(path + ".config")
	if err != nil {
		return nil, err
	}
	acc, err := accountFrom(w.Account, path+".account")
	if err != nil {
		return nil, err
	}
	d := len(w.Features)
	switch {
	case d == 0 || d > MaxModelFeatures:
		return nil, modelErr(path+".features", "%d names, want 1 to %d", d, MaxModelFeatures)
	case len(w.Bins) != d:
		return nil, modelErr(path+".bins", "%d bin counts for %d features", len(w.Bins), d)
	case len(w.RangeLow) != d:
		return nil, modelErr(path+".range_low", "%d values for %d features", len(w.RangeLow), d)
	case len(w.ClassNames) > MaxModelClasses:
		return nil, modelErr(path+".class_names", "%d, over %d", len(w.ClassNames), MaxModelClasses)
	case len(w.Boosters) == 0 || len(w.Boosters) > MaxModelClasses:
		return nil, modelErr(path+".boosters", "%d, want 1 to %d", len(w.Boosters), MaxModelClasses)
	}
	m := &dpboost.Model{Format: dpboost.ModelFormat, Version: dpboost.ModelVersion, Config: c, Account: acc,
		Features: append([]string{}, w.Features...), Bins: make([]int, d),
		Lo: append([]float64{}, w.RangeLow...), Boosters: make([][]dpboost.Tree, len(w.Boosters))}
	if len(w.ClassNames) > 0 {
		m.ClassNames = append([]string{}, w.ClassNames...)
	}
	if m.Schema, err = schemaFrom(w.GetSchema(), path+".schema"); err != nil {
		return nil, err
	}
	for j, b := range w.Bins {
		if b < 2 || b > dpboost.MaxBins {
			return nil, modelErr(fmt.Sprintf("%s.bins[%d]", path, j), "%d outside [2,%d]", b, dpboost.MaxBins)
		}
		m.Bins[j] = int(b)
	}
	if err := finites(path+".range_low", w.RangeLow); err != nil {
		return nil, err
	}
	internal := 1<<c.Depth - 1
	for k, bw := range w.Boosters {
		p := fmt.Sprintf("%s.boosters[%d]", path, k)
		if bw == nil || len(bw.Trees) != c.Trees {
			return nil, modelErr(p+".trees", "%d trees, config.trees %d", len(bw.GetTrees()), c.Trees)
		}
		ts := make([]dpboost.Tree, len(bw.Trees))
		for i, tw := range bw.Trees {
			t, err := treeFrom(tw, internal, m.Bins, fmt.Sprintf("%s.trees[%d]", p, i))
			if err != nil {
				return nil, err
			}
			ts[i] = t
		}
		m.Boosters[k] = ts
	}
	if err := m.Validate(); err != nil { // a model file's checks; sets the binning
		return nil, modelErr(path, "%v", err)
	}
	return m, nil
}

// treeFrom decodes one tree of the given internal node count over features
// with bins[f] bins each.
func treeFrom(w *DPBoostTree, internal int, bins []int, path string) (dpboost.Tree, error) {
	switch {
	case w == nil:
		return dpboost.Tree{}, modelErr(path, "missing")
	case len(w.Feature) != internal:
		return dpboost.Tree{}, modelErr(path+".feature", "%d nodes, the depth has %d", len(w.Feature), internal)
	case len(w.Bin) != internal:
		return dpboost.Tree{}, modelErr(path+".bin", "%d nodes, the depth has %d", len(w.Bin), internal)
	case len(w.Leaf) != internal+1:
		return dpboost.Tree{}, modelErr(path+".leaf", "%d leaves, the depth has %d", len(w.Leaf), internal+1)
	}
	t := dpboost.Tree{Feature: make([]int, internal), Bin: make([]int, internal), Leaf: append([]float64{}, w.Leaf...)}
	for j, f := range w.Feature {
		if int64(f) >= int64(len(bins)) {
			return dpboost.Tree{}, modelErr(fmt.Sprintf("%s.feature[%d]", path, j), "%d outside [0,%d)", f, len(bins))
		}
		if b := w.Bin[j]; int64(b) >= int64(bins[f]-1) {
			return dpboost.Tree{}, modelErr(fmt.Sprintf("%s.bin[%d]", path, j), "%d outside [0,%d) of feature %d", b, bins[f]-1, f)
		}
		t.Feature[j], t.Bin[j] = int(f), int(w.Bin[j])
	}
	if err := finites(path+".leaf", w.Leaf); err != nil {
		return dpboost.Tree{}, err
	}
	return t, nil
}

// accountFrom decodes a DPBoost model's privacy account.
func accountFrom(w *DPBoostAccount, path string) (dpboost.Accounting, error) {
	if w == nil {
		return dpboost.Accounting{}, modelErr(path, "missing")
	}
	method, err := dpboost.ParseMethod(w.Method)
	if err != nil {
		return dpboost.Accounting{}, modelErr(path+".method", "%v", err)
	}
	for _, f := range []struct {
		name string
		vs   []float64
	}{{"per_tree", w.PerTree}, {"split_per_depth", w.SplitPerDepth}, {"leaf", w.Leaf}} {
		if len(f.vs) > dpboost.MaxTrees {
			return dpboost.Accounting{}, modelErr(path+"."+f.name, "%d values, over %d", len(f.vs), dpboost.MaxTrees)
		}
		if err := finites(path+"."+f.name, f.vs); err != nil {
			return dpboost.Accounting{}, err
		}
	}
	if err := namedFloats(path, field{"sequential", w.Sequential}, field{"total", w.Total}); err != nil {
		return dpboost.Accounting{}, err
	}
	a := dpboost.Accounting{Method: method, Private: w.Private, Classes: int(w.Classes), Ensembles: int(w.Ensembles),
		PerTree: append([]float64{}, w.PerTree...), SplitPerDepth: append([]float64{}, w.SplitPerDepth...),
		Leaf: append([]float64{}, w.Leaf...), Sequential: w.Sequential, Total: w.Total}
	if n := w.GetNewton(); n != nil {
		if err := namedFloats(path+".newton",
			field{"rho", n.Rho}, field{"rho_round", n.RhoRound}, field{"epsilon", n.Epsilon},
			field{"delta", n.Delta}, field{"unit", n.Unit}, field{"noise_g", n.NoiseG},
			field{"noise_h", n.NoiseH}); err != nil {
			return dpboost.Accounting{}, err
		}
		a.Newton = &dpboost.NewtonAccount{Rho: n.Rho, RhoRound: n.RhoRound, Epsilon: n.Epsilon, Delta: n.Delta,
			Unit: n.Unit, NoiseG: n.NoiseG, NoiseH: n.NoiseH}
	}
	return a, nil
}
