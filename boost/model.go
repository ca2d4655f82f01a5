package boost

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ppboost/ppboost/dataset"
)

// ModelFormat and ModelVersion identify model files.
const (
	ModelFormat  = "ppboost-model"
	ModelVersion = 1
)

// Model is a trained boosted classifier with everything needed to use it:
// the session configuration, the feature schema, the class names and the
// public thresholds.
type Model struct {
	Format     string          `json:"format"`
	Version    int             `json:"version"`
	Config     Config          `json:"config"`
	Schema     *dataset.Schema `json:"schema,omitempty"`
	Features   []string        `json:"features"`
	ClassNames []string        `json:"class_names"`
	Splits     []Split         `json:"splits,omitempty"`
	// Fill holds the values `predict --missing mean|zero` fills gaps with:
	// the data user's own rows' means and most frequent categories (see
	// NewModel). Models written before it have none (predict then fills
	// from the predicted file, with a warning).
	Fill *dataset.Fill `json:"fill,omitempty"`
	Ensemble
	// Partial, when set, labels a model whose session stopped before its
	// planned rounds: it holds the rounds that were accepted.
	Partial *Partial `json:"partial,omitempty"`
}

// Partial is the label of a model trained by a session that stopped early.
type Partial struct {
	Rounds  int    `json:"rounds"`  // rounds accepted (len of the model's rounds)
	Planned int    `json:"planned"` // rounds the session asked for
	Reason  string `json:"reason"`  // why it stopped
}

// String says what the label means, e.g. for predict.
func (p *Partial) String() string {
	return fmt.Sprintf("partial model: %d of %d planned rounds (%s)", p.Rounds, p.Planned, p.Reason)
}

// NewModel starts an empty model for data shaped like d, the data user's own
// rows, whose fill values (dataset.FillOf) it stores. d is never the owners'
// data: in a session the user holds only its own rows (its --data
// file), and the one-process trainers pass the user's share.
func NewModel(cfg Config, d *dataset.Dataset, splits []Split) *Model {
	return &Model{
		Format: ModelFormat, Version: ModelVersion, Config: cfg, Schema: d.Schema,
		Features: d.Features, ClassNames: d.Classes, Splits: splits, Fill: dataset.FillOf(d),
		Ensemble: Ensemble{Classes: d.NumClasses()},
	}
}

// ErrModelFile marks an unreadable or invalid model file.
var ErrModelFile = errors.New("invalid model file")

// Write encodes the model as indented JSON.
func (m *Model) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
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

// ReadModel decodes and validates a model.
func ReadModel(r io.Reader, name string) (*Model, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var m Model
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrModelFile, err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &m, nil
}

// Validate checks a decoded model (from a file or the wire): format,
// version, class names, every round against K and d, the schema's width
// and the partial label. Errors wrap ErrModelFile.
func (m *Model) Validate() error {
	if m.Format != ModelFormat {
		return fmt.Errorf("%w: format %q, want %q", ErrModelFile, m.Format, ModelFormat)
	}
	if m.Version != ModelVersion {
		return fmt.Errorf("%w: version %d, this build reads %d", ErrModelFile, m.Version, ModelVersion)
	}
	if len(m.ClassNames) != m.Classes {
		return fmt.Errorf("%w: %d class names for %d classes", ErrModelFile, len(m.ClassNames), m.Classes)
	}
	if err := m.Ensemble.Check(len(m.Features)); err != nil {
		return fmt.Errorf("%w: %v", ErrModelFile, err)
	}
	if m.Schema != nil && m.Schema.Dim() != len(m.Features) {
		return fmt.Errorf("%w: schema has %d features, model %d", ErrModelFile, m.Schema.Dim(), len(m.Features))
	}
	if m.Fill != nil && m.Schema == nil {
		return fmt.Errorf("%w: fill values without a schema", ErrModelFile)
	}
	if m.Fill != nil {
		if err := m.Fill.Check(m.Schema); err != nil {
			return fmt.Errorf("%w: %v", ErrModelFile, err)
		}
	}
	if p := m.Partial; p != nil && (p.Rounds != len(m.Rounds) || p.Rounds >= p.Planned) {
		return fmt.Errorf("%w: labelled partial with %d of %d rounds, holds %d", ErrModelFile, p.Rounds, p.Planned, len(m.Rounds))
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

// CheckData reports whether d has the features and classes the model expects.
func (m *Model) CheckData(d *dataset.Dataset) error {
	if d.Dim() != len(m.Features) {
		return fmt.Errorf("data %q has %d features, model expects %d", d.Name, d.Dim(), len(m.Features))
	}
	if d.NumClasses() > m.Classes {
		return fmt.Errorf("data %q has %d classes, model knows %d", d.Name, d.NumClasses(), m.Classes)
	}
	return nil
}
