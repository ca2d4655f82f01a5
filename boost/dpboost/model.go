package dpboost

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"

	"github.com/ppboost/ppboost/dataset"
)

// ModelFormat and ModelVersion identify DPBoost model files.
const (
	ModelFormat  = "ppboost-dpboost-model"
	ModelVersion = 1
)

// Model is a trained DPBoost (or baseline) model with everything needed to
// use it: configuration, accounting, schema, feature and class names, the
// public binning and the trees, one booster per one-vs-rest class (a single
// one for binary classification, whose score > 0 means class 1, and for
// regression).
type Model struct {
	Format     string          `json:"format"`
	Version    int             `json:"version"`
	Config     Config          `json:"config"`
	Account    Accounting      `json:"account"`
	Schema     *dataset.Schema `json:"schema,omitempty"`
	Features   []string        `json:"features"`
	ClassNames []string        `json:"class_names,omitempty"`
	Bins       []int           `json:"bins"`      // bins per feature (public)
	Lo         []float64       `json:"range_low"` // each feature's range is [Lo, 1]
	Boosters   [][]Tree        `json:"boosters"`
	// Fill holds the values `predict --missing mean|zero` fills gaps with
	// (dataset.Fill): set by the trainer from the data user's own rows.
	// The privacy accounting does not cover them. Older models have none.
	Fill *dataset.Fill `json:"fill,omitempty"`

	binning *Binning
}

// Classes is the number of classes (0 for regression).
func (m *Model) Classes() int { return len(m.ClassNames) }

// Binning is the model's public binning.
func (m *Model) Binning() *Binning { return m.binning }

// Scores returns the booster outputs for a row (features in [-1, 1]).
func (m *Model) Scores(x []float64, out []float64) []float64 {
	out = grow(out, len(m.Boosters))
	for k, ts := range m.Boosters {
		s := 0.0
		for i := range ts {
			s += ts[i].value(m.binning, x)
		}
		out[k] = s
	}
	return out
}

// ClassScores is one row's value per class and whether they are
// probabilities: a Newton model's sigmoid of its margin for two classes
// (1-p, p) and softmax over its boosters for more; for the square-loss
// methods the booster outputs (-F, F for two classes, class 1 when F > 0).
// Predict is their argmax, ties to the smaller class index.
func (m *Model) ClassScores(x []float64) (probabilities bool, s []float64) {
	f := m.Scores(x, nil)
	newton := m.Config.Method == Newton
	switch {
	case len(f) == 1 && newton:
		p := Sigmoid(f[0])
		return true, []float64{1 - p, p}
	case len(f) == 1:
		return false, []float64{-f[0], f[0]}
	case newton:
		Softmax(f, f)
		return true, f
	}
	return false, f
}

// Value is the regression output (the first booster's score).
func (m *Model) Value(x []float64) float64 {
	s := 0.0
	for i := range m.Boosters[0] {
		s += m.Boosters[0][i].value(m.binning, x)
	}
	return s
}

// Predict returns the predicted class of a row.
func (m *Model) Predict(x []float64) int {
	if len(m.Boosters) == 1 {
		if m.Value(x) > 0 {
			return 1
		}
		return 0
	}
	best, arg := math.Inf(-1), 0
	for k, ts := range m.Boosters {
		s := 0.0
		for i := range ts {
			s += ts[i].value(m.binning, x)
		}
		if s > best {
			best, arg = s, k
		}
	}
	return arg
}

// Error is the test error rate of a classifier on d.
func (m *Model) Error(d *dataset.Dataset) float64 {
	wrong := 0
	for i, x := range d.X {
		if m.Predict(x) != d.Y[i] {
			wrong++
		}
	}
	return float64(wrong) / float64(max(1, d.Len()))
}

// RMSE is the root mean squared error of a regressor on rows X, targets y.
func (m *Model) RMSE(X [][]float64, y []float64) float64 {
	s := 0.0
	for i, x := range X {
		e := m.Value(x) - y[i]
		s += e * e
	}
	return math.Sqrt(s / float64(max(1, len(X))))
}

// CheckData reports whether d has the features and classes the model expects.
func (m *Model) CheckData(d *dataset.Dataset) error {
	if d.Dim() != len(m.Features) {
		return fmt.Errorf("data %q has %d features, model expects %d", d.Name, d.Dim(), len(m.Features))
	}
	if d.NumClasses() > m.Classes() {
		return fmt.Errorf("data %q has %d classes, model knows %d", d.Name, d.NumClasses(), m.Classes())
	}
	return nil
}

// TrainClassifier trains on a labelled dataset: one booster on labels +-1
// (class 1 is +1) for two classes, else one-vs-rest boosters, each with
// cfg.Epsilon/K (they all read every row: sequential composition).
// cfg.Task must be Classification.
func TrainClassifier(cfg Config, d *dataset.Dataset, r *rand.Rand, progress func(TreeInfo)) (*Model, error) {
	if cfg.Task != Classification {
		return nil, fmt.Errorf("%w: Task = %v, TrainClassifier wants classification", ErrConfig, cfg.Task)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	K := d.NumClasses()
	if K < 2 || d.Len() == 0 {
		return nil, fmt.Errorf("%w: %q has %d classes and %d rows", ErrData, d.Name, K, d.Len())
	}
	b, err := NewBinning(d.Schema, d.Dim(), cfg.Bins)
	if err != nil {
		return nil, err
	}
	data, err := b.Quantize(d.X)
	if err != nil {
		return nil, err
	}
	boosters := 1
	if K > 2 {
		boosters = K
	}
	m := newModel(cfg, d, b, boosters)
	m.ClassNames = d.Classes
	if cfg.Method == Newton {
		bs, _, err := trainNewton(cfg, b, splitGroups(d.Schema, b), data, d.Y, K, nil, r, progress)
		if err != nil {
			return nil, err
		}
		m.Boosters = bs
		return m, nil
	}
	each := cfg
	each.Epsilon = cfg.Epsilon / float64(boosters)
	y := make([]float64, d.Len())
	for k := range boosters {
		pos := k
		if boosters == 1 {
			pos = 1
		}
		for i, c := range d.Y {
			y[i] = -1
			if c == pos {
				y[i] = 1
			}
		}
		var cb func(TreeInfo)
		if progress != nil {
			cb = func(ti TreeInfo) { ti.Class = k; progress(ti) }
		}
		ts, err := Train(each, b, data, y, r, cb)
		if err != nil {
			return nil, err
		}
		m.Boosters[k] = ts
	}
	return m, nil
}

// TrainRegressor trains on rows X (features in [-1, 1]) and targets y in
// [-1, 1] (scaled by the caller with public bounds). cfg.Task must be
// Regression. schema may be nil (every feature numeric).
func TrainRegressor(cfg Config, X [][]float64, y []float64, features []string, schema *dataset.Schema, r *rand.Rand, progress func(TreeInfo)) (*Model, error) {
	if cfg.Task != Regression {
		return nil, fmt.Errorf("%w: Task = %v, TrainRegressor wants regression", ErrConfig, cfg.Task)
	}
	if len(X) == 0 {
		return nil, fmt.Errorf("%w: no rows", ErrData)
	}
	b, err := NewBinning(schema, len(X[0]), cfg.Bins)
	if err != nil {
		return nil, err
	}
	data, err := b.Quantize(X)
	if err != nil {
		return nil, err
	}
	d := &dataset.Dataset{Features: features, Schema: schema}
	m := newModel(cfg, d, b, 1)
	if cfg.Method == Newton {
		for i, v := range y {
			if !(v >= -1 && v <= 1) {
				return nil, fmt.Errorf("%w: target %d is %v, outside [-1, 1]", ErrData, i, v)
			}
		}
		bs, _, err := trainNewton(cfg, b, splitGroups(schema, b), data, nil, 0, y, r, progress)
		if err != nil {
			return nil, err
		}
		m.Boosters = bs
		return m, nil
	}
	ts, err := Train(cfg, b, data, y, r, progress)
	if err != nil {
		return nil, err
	}
	m.Boosters[0] = ts
	return m, nil
}

func newModel(cfg Config, d *dataset.Dataset, b *Binning, boosters int) *Model {
	return &Model{Format: ModelFormat, Version: ModelVersion, Config: cfg,
		Account: AccountClasses(cfg, boosters), Schema: d.Schema, Features: d.Features,
		Bins: b.Bins, Lo: b.Lo, Boosters: make([][]Tree, boosters), binning: b}
}

// Write encodes the model as indented JSON.
func (m *Model) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(m)
}

// Save writes the model to path.
func (m *Model) Save(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	if err := m.Write(f); err != nil {
		f.Close()
		return fmt.Errorf("save model %s: %w", path, err)
	}
	return f.Close()
}

// ReadModel decodes a model's JSON and validates it (Validate).
func ReadModel(r io.Reader, name string) (*Model, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var m Model
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrModel, err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &m, nil
}

// Validate checks a decoded model (from a file or the wire) and sets its
// binning: format, version, configuration, binning, and every tree's shape,
// features and bins, so that prediction cannot index out of range. Errors
// wrap ErrModel. It is a decoder's check of outside input: one flat pass,
// each check naming what is wrong, left whole (the project exempts decoders
// from its cyclomatic limit of 25).
func (m *Model) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrModel, fmt.Sprintf(format, a...))
	}
	if m.Format != ModelFormat {
		return bad("format %q, want %q", m.Format, ModelFormat)
	}
	if m.Version != ModelVersion {
		return bad("version %d, this build reads %d", m.Version, ModelVersion)
	}
	if err := m.Config.Validate(); err != nil {
		return bad("%v", err)
	}
	if len(m.Bins) != len(m.Features) {
		return bad("%d bin counts for %d features", len(m.Bins), len(m.Features))
	}
	b, err := newBinning(m.Bins, m.Lo)
	if err != nil {
		return bad("%v", err)
	}
	m.binning = b
	if m.Schema != nil && m.Schema.Dim() != len(m.Features) {
		return bad("schema has %d features, model %d", m.Schema.Dim(), len(m.Features))
	}
	if m.Fill != nil && m.Schema == nil {
		return bad("fill values without a schema")
	}
	if m.Fill != nil {
		if err := m.Fill.Check(m.Schema); err != nil {
			return bad("%v", err)
		}
	}
	switch {
	case m.Config.Task == Regression && (len(m.Boosters) != 1 || len(m.ClassNames) != 0):
		return bad("regression model with %d boosters and %d classes", len(m.Boosters), len(m.ClassNames))
	case m.Config.Task == Classification && len(m.ClassNames) < 2:
		return bad("%d class names", len(m.ClassNames))
	case m.Config.Task == Classification && len(m.ClassNames) == 2 && len(m.Boosters) != 1,
		m.Config.Task == Classification && len(m.ClassNames) > 2 && len(m.Boosters) != len(m.ClassNames):
		return bad("%d boosters for %d classes", len(m.Boosters), len(m.ClassNames))
	}
	internal := 1<<m.Config.Depth - 1
	for k, ts := range m.Boosters {
		if len(ts) != m.Config.Trees {
			return bad("booster %d has %d trees, config %d", k, len(ts), m.Config.Trees)
		}
		for i, t := range ts {
			if len(t.Feature) != internal || len(t.Bin) != internal || len(t.Leaf) != internal+1 {
				return bad("booster %d tree %d: shape does not match depth %d", k, i, m.Config.Depth)
			}
			for j, f := range t.Feature {
				if f < 0 || f >= len(m.Bins) || t.Bin[j] < 0 || t.Bin[j] >= m.Bins[f]-1 {
					return bad("booster %d tree %d node %d: feature %d bin %d out of range", k, i, j, f, t.Bin[j])
				}
			}
			for j, v := range t.Leaf {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return bad("booster %d tree %d leaf %d is %v", k, i, j, v)
				}
			}
		}
	}
	return nil
}

// LoadModel reads a model file.
func LoadModel(path string) (*Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	defer f.Close()
	return ReadModel(f, path)
}
