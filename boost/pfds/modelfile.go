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
// over the features the public schema encodes, with the class names and,
// optionally, the agent's own fill values for predict --missing. An
// agent's predictor is trained on its own rows and the DP shares it
// received: the file is the agent's, as its rows are.
//
// Version 1 (two classes, unchanged since the first release): W is one
// vector, score = W[:d].x + W[d], class 1 when the score is non-negative.
// Version 2 (K > 2 classes): Weights holds K vectors of that shape, one
// per class name, W is absent, and the class is the argmax of the K
// scores (ties to the smallest index). A two-class predictor is always
// written as version 1, so files of two-class data read as before.
type ModelFile struct {
	Format     string          `json:"format"`
	Version    int             `json:"version"`
	Learner    string          `json:"learner"` // logreg | svm
	Agent      int             `json:"agent"`   // whose predictor (0-based)
	Schema     *dataset.Schema `json:"schema"`
	Features   []string        `json:"features"` // the schema's features, in W's order
	ClassNames []string        `json:"class_names"`
	Fill       *dataset.Fill   `json:"fill,omitempty"`
	W          []float64       `json:"w,omitempty"`       // version 1
	Weights    [][]float64     `json:"weights,omitempty"` // version 2: one vector per class
}

// ModelFileVersion is the version of a K > 2 class file; two-class files
// are version 1.
const ModelFileVersion = 2

// NewModelFile wraps agent's predictor m for the data d it was trained on
// (schema, class names); fill may be nil.
func NewModelFile(m *Model, agent int, d *dataset.Dataset, fill *dataset.Fill) *ModelFile {
	f := &ModelFile{Format: ModelFileFormat, Version: 1, Learner: m.Learner.String(), Agent: agent,
		Schema: d.Schema, Features: append([]string(nil), d.Features...), ClassNames: append([]string(nil), d.Classes...), Fill: fill}
	if m.Multi == nil {
		f.W = append([]float64(nil), m.W...)
		return f
	}
	f.Version = ModelFileVersion
	for _, w := range m.Multi {
		f.Weights = append(f.Weights, append([]float64(nil), w...))
	}
	return f
}

// Validate checks a decoded file: format, version, the schema, two class
// names with one weight vector (version 1) or K > 2 with K vectors
// (version 2), one weight per feature plus the bias in each, all finite,
// and the fill values.
func (f *ModelFile) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrModelFile, fmt.Sprintf(format, a...))
	}
	switch {
	case f.Format != ModelFileFormat:
		return bad("format %q, want %q", f.Format, ModelFileFormat)
	case f.Version != 1 && f.Version != ModelFileVersion:
		return bad("version %d, want 1 (two classes) or %d (more)", f.Version, ModelFileVersion)
	case f.Learner != LogReg.String() && f.Learner != SVM.String():
		return bad("learner %q, want %s or %s", f.Learner, LogReg, SVM)
	case f.Schema == nil:
		return bad("no schema")
	case f.Version == 1 && len(f.ClassNames) != 2:
		return bad("version 1 with %d class names: it holds a two-class predictor", len(f.ClassNames))
	case f.Version == 1 && f.Weights != nil:
		return bad("version 1 with \"weights\": it holds one vector in \"w\"")
	case f.Version == ModelFileVersion && len(f.ClassNames) < 3:
		return bad("version %d with %d class names: it holds three or more classes (two are version 1)", f.Version, len(f.ClassNames))
	case f.Version == ModelFileVersion && f.W != nil:
		return bad("version %d with \"w\": it holds one vector per class in \"weights\"", f.Version)
	case f.Version == ModelFileVersion && len(f.Weights) != len(f.ClassNames):
		return bad("%d weight vectors for %d class names", len(f.Weights), len(f.ClassNames))
	}
	if err := f.Schema.Validate(); err != nil {
		return bad("schema: %v", err)
	}
	vecs := f.Weights
	if f.Version == 1 {
		vecs = [][]float64{f.W}
	}
	d := f.Schema.Dim()
	if len(f.Features) != d {
		return bad("%d feature names, the schema has %d features", len(f.Features), d)
	}
	for k, w := range vecs {
		if len(w) != d+1 {
			return bad("weight vector %d has %d weights, the schema's %d features need %d", k, len(w), d, d+1)
		}
		for j, v := range w {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return bad("weight %d of vector %d is %v", j, k, v)
			}
		}
	}
	if f.Fill != nil {
		if err := f.Fill.Check(f.Schema); err != nil {
			return bad("fill: %v", err)
		}
	}
	return nil
}

// Model is the file's predictor.
func (f *ModelFile) Model() *Model {
	l, _ := ParseLearner(f.Learner)
	if f.Version == 1 {
		return &Model{Learner: l, W: f.W}
	}
	return &Model{Learner: l, Multi: f.Weights}
}

// Classes is K, the number of class names.
func (f *ModelFile) Classes() int { return len(f.ClassNames) }

// Score is a two-class predictor's linear score of x (0 for K > 2; see
// Scores).
func (f *ModelFile) Score(x []float64) float64 { return f.Model().Score(x) }

// Scores is one score per class (Model.Scores): -s and s for two classes,
// the K linear scores otherwise.
func (f *ModelFile) Scores(x []float64) []float64 { return f.Model().Scores(x) }

// Predict is the class of x (Model.Class).
func (f *ModelFile) Predict(x []float64) int { return f.Model().Class(x) }

// CheckData checks that d has the model's features and at most its classes.
func (f *ModelFile) CheckData(d *dataset.Dataset) error {
	if d.Dim() != len(f.Features) {
		return fmt.Errorf("data %q has %d features, model expects %d", d.Name, d.Dim(), len(f.Features))
	}
	if d.NumClasses() > f.Classes() {
		return fmt.Errorf("data %q has %d classes, model knows %d", d.Name, d.NumClasses(), f.Classes())
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
