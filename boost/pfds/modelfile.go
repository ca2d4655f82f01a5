package pfds

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/ppboost/ppboost/dataset"
)

// ModelFileFormat names a saved PFDS predictor in its "format" field, which
// `ppboost predict` and the Python reader dispatch on.
const ModelFileFormat = "ppboost-pfds-linear"

// ErrModelFile marks a saved predictor that does not decode or validate.
var ErrModelFile = errors.New("pfds model file")

// ModelFile is one agent's final predictor as a file: the linear model
// (score = W[:d].x + W[d], class 1 when the score is non-negative) over the
// features the public schema encodes, with the class names and, optionally,
// the agent's own fill values for predict --missing. An agent's predictor is
// trained on its own rows and the DP shares it received: the file is the
// agent's, as its rows are.
type ModelFile struct {
	Format     string          `json:"format"`
	Version    int             `json:"version"`
	Learner    string          `json:"learner"` // logreg | svm
	Agent      int             `json:"agent"`   // whose predictor (0-based)
	Schema     *dataset.Schema `json:"schema"`
	Features   []string        `json:"features"` // the schema's features, in W's order
	ClassNames []string        `json:"class_names"`
	Fill       *dataset.Fill   `json:"fill,omitempty"`
	W          []float64       `json:"w"`
}

// NewModelFile wraps agent's predictor m for the data d it was trained on
// (schema, class names); fill may be nil.
func NewModelFile(m *Model, agent int, d *dataset.Dataset, fill *dataset.Fill) *ModelFile {
	return &ModelFile{Format: ModelFileFormat, Version: 1, Learner: m.Learner.String(), Agent: agent,
		Schema: d.Schema, Features: append([]string(nil), d.Features...), ClassNames: append([]string(nil), d.Classes...), Fill: fill, W: append([]float64(nil), m.W...)}
}

// Validate checks a decoded file: format, version, the schema, two classes,
// one weight per feature plus the bias, all finite, and the fill values.
func (f *ModelFile) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrModelFile, fmt.Sprintf(format, a...))
	}
	switch {
	case f.Format != ModelFileFormat:
		return bad("format %q, want %q", f.Format, ModelFileFormat)
	case f.Version != 1:
		return bad("version %d, want 1", f.Version)
	case f.Learner != LogReg.String() && f.Learner != SVM.String():
		return bad("learner %q, want %s or %s", f.Learner, LogReg, SVM)
	case f.Schema == nil:
		return bad("no schema")
	case len(f.ClassNames) != 2:
		return bad("%d class names, a PFDS predictor has 2", len(f.ClassNames))
	}
	if err := f.Schema.Validate(); err != nil {
		return bad("schema: %v", err)
	}
	if d := f.Schema.Dim(); len(f.W) != d+1 || len(f.Features) != d {
		return bad("%d weights and %d feature names, the schema's %d features need %d and %d", len(f.W), len(f.Features), d, d+1, d)
	}
	for j, w := range f.W {
		if math.IsNaN(w) || math.IsInf(w, 0) {
			return bad("weight %d is %v", j, w)
		}
	}
	if f.Fill != nil {
		if err := f.Fill.Check(f.Schema); err != nil {
			return bad("fill: %v", err)
		}
	}
	return nil
}

// Score is the predictor's linear score of x.
func (f *ModelFile) Score(x []float64) float64 { return (&Model{W: f.W}).Score(x) }

// Predict is the class of x: 1 for a non-negative score, else 0.
func (f *ModelFile) Predict(x []float64) int { return (&Model{W: f.W}).Class(x) }

// CheckData checks that d has the model's features and at most its classes.
func (f *ModelFile) CheckData(d *dataset.Dataset) error {
	if d.Dim() != len(f.W)-1 {
		return fmt.Errorf("data %q has %d features, model expects %d", d.Name, d.Dim(), len(f.W)-1)
	}
	if d.NumClasses() > 2 {
		return fmt.Errorf("data %q has %d classes, model knows 2", d.Name, d.NumClasses())
	}
	return nil
}

// Save writes the file as indented JSON.
func (f *ModelFile) Save(path string) error {
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	return nil
}

// ReadModelFile decodes and validates a saved predictor; name labels errors.
func ReadModelFile(r io.Reader, name string) (*ModelFile, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var f ModelFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrModelFile, err)
	}
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &f, nil
}
