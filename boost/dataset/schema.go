package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// Column kinds.
const (
	KindNumeric     = "numeric"
	KindCategorical = "categorical"
	KindIgnore      = "ignore"
)

// Schema is the public description of a raw record: per-column bounds or
// categories, the label column and the class names. It is a small JSON file
// that owners and the data user share (compare Digest).
type Schema struct {
	Version int      `json:"version"`
	Label   string   `json:"label"`
	Classes []string `json:"classes"`
	Columns []Column `json:"columns"`
}

// Column is one non-label input column.
type Column struct {
	Name       string   `json:"name"`
	Kind       string   `json:"kind"`
	Min        float64  `json:"min,omitempty"`
	Max        float64  `json:"max,omitempty"`
	Categories []string `json:"categories,omitempty"`
}

// ErrSchema marks an invalid schema or a record that does not fit it.
var ErrSchema = errors.New("schema")

// Validate checks the schema's own consistency.
func (s *Schema) Validate() error {
	if s.Version != 1 {
		return fmt.Errorf("%w: version %d, want 1", ErrSchema, s.Version)
	}
	if s.Label == "" {
		return fmt.Errorf("%w: no label column", ErrSchema)
	}
	if len(s.Classes) < 2 {
		return fmt.Errorf("%w: %d classes, need at least 2", ErrSchema, len(s.Classes))
	}
	if dup := firstDuplicate(s.Classes); dup != "" {
		return fmt.Errorf("%w: class %q listed twice", ErrSchema, dup)
	}
	names := map[string]bool{s.Label: true}
	dim := 0
	for i, c := range s.Columns {
		if c.Name == "" || names[c.Name] {
			return fmt.Errorf("%w: column %d: empty or repeated name %q", ErrSchema, i, c.Name)
		}
		names[c.Name] = true
		switch c.Kind {
		case KindNumeric:
			if !(c.Max > c.Min) || math.IsInf(c.Min, 0) || math.IsInf(c.Max, 0) {
				return fmt.Errorf("%w: column %q: bounds [%v, %v] must be finite with min < max", ErrSchema, c.Name, c.Min, c.Max)
			}
			dim++
		case KindCategorical:
			if len(c.Categories) == 0 {
				return fmt.Errorf("%w: column %q: no categories", ErrSchema, c.Name)
			}
			if dup := firstDuplicate(c.Categories); dup != "" {
				return fmt.Errorf("%w: column %q: category %q listed twice", ErrSchema, c.Name, dup)
			}
			dim += len(c.Categories)
		case KindIgnore:
		default:
			return fmt.Errorf("%w: column %q: unknown kind %q (want numeric, categorical or ignore)", ErrSchema, c.Name, c.Kind)
		}
	}
	if dim == 0 {
		return fmt.Errorf("%w: no feature columns", ErrSchema)
	}
	return nil
}

func firstDuplicate(v []string) string {
	seen := map[string]bool{}
	for _, s := range v {
		if seen[s] {
			return s
		}
		seen[s] = true
	}
	return ""
}

// Features lists the feature names: numeric columns by name, categorical
// ones as name=category.
func (s *Schema) Features() []string {
	var f []string
	for _, c := range s.Columns {
		switch c.Kind {
		case KindNumeric:
			f = append(f, c.Name)
		case KindCategorical:
			for _, cat := range c.Categories {
				f = append(f, c.Name+"="+cat)
			}
		}
	}
	return f
}

// Dim is the number of features.
func (s *Schema) Dim() int { return len(s.Features()) }

// Digest is the hex SHA-256 of the schema's canonical JSON.
func (s *Schema) Digest() string {
	b, _ := json.Marshal(s)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// ParseSchema decodes and validates a schema; name is used in errors.
func ParseSchema(b []byte, name string) (*Schema, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Schema
	if err := dec.Decode(&s); err != nil {
		return nil, &ParseError{File: name, Err: fmt.Errorf("%w: %v", ErrSchema, err)}
	}
	if err := s.Validate(); err != nil {
		return nil, &ParseError{File: name, Err: err}
	}
	return &s, nil
}

// LoadSchema reads a schema file.
func LoadSchema(path string) (*Schema, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &ParseError{File: path, Err: err}
	}
	return ParseSchema(b, path)
}

// Save writes the schema as indented JSON.
func (s *Schema) Save(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// encoder maps header positions to schema columns for one file.
type encoder struct {
	s      *Schema
	label  int   // header index of the label
	col    []int // header index of schema column i
	offset []int // first feature index of schema column i
	cats   []map[string]int
	class  map[string]int
	dim    int
}

func (s *Schema) encoder(header []string) (*encoder, error) {
	e := &encoder{s: s, label: -1, col: make([]int, len(s.Columns)), offset: make([]int, len(s.Columns)),
		cats: make([]map[string]int, len(s.Columns)), class: map[string]int{}}
	pos := map[string]int{}
	for i, h := range header {
		if _, dup := pos[h]; dup {
			return nil, fmt.Errorf("%w: header names column %q twice", ErrSchema, h)
		}
		pos[h] = i
	}
	var ok bool
	if e.label, ok = pos[s.Label]; !ok {
		return nil, fmt.Errorf("%w: label column %q not in header", ErrSchema, s.Label)
	}
	for i, c := range s.Columns {
		if e.col[i], ok = pos[c.Name]; !ok && c.Kind != KindIgnore {
			return nil, fmt.Errorf("%w: column %q not in header", ErrSchema, c.Name)
		}
		e.offset[i] = e.dim
		switch c.Kind {
		case KindNumeric:
			e.dim++
		case KindCategorical:
			e.cats[i] = map[string]int{}
			for k, cat := range c.Categories {
				e.cats[i][cat] = k
			}
			e.dim += len(c.Categories)
		}
	}
	if len(header) != len(s.Columns)+1 {
		known := map[string]bool{s.Label: true}
		for _, c := range s.Columns {
			known[c.Name] = true
		}
		for _, h := range header {
			if !known[h] {
				return nil, fmt.Errorf("%w: column %q is not in the schema", ErrSchema, h)
			}
		}
	}
	for k, c := range s.Classes {
		e.class[c] = k
	}
	return e, nil
}

// record encodes one record into out (len dim) and returns its label.
func (e *encoder) record(fields []string, out []float64) (int, error) {
	clear(out)
	for i, c := range e.s.Columns {
		if c.Kind == KindIgnore {
			continue
		}
		v := strings.TrimSpace(fields[e.col[i]])
		switch c.Kind {
		case KindNumeric:
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("column %q: %q is not a number", c.Name, v)
			}
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return 0, fmt.Errorf("column %q: %v is not finite", c.Name, x)
			}
			out[e.offset[i]] = math.Max(-1, math.Min(1, 2*(x-c.Min)/(c.Max-c.Min)-1))
		case KindCategorical:
			k, ok := e.cats[i][v]
			if !ok {
				return 0, fmt.Errorf("column %q: unknown category %q", c.Name, v)
			}
			out[e.offset[i]+k] = 1
		}
	}
	lab := strings.TrimSpace(fields[e.label])
	y, ok := e.class[lab]
	if !ok {
		return 0, fmt.Errorf("unknown label %q (classes %s)", lab, strings.Join(e.s.Classes, ", "))
	}
	return y, nil
}

// EncodeRecord maps one raw record, whose fields are in header order, to
// scaled features in out (len Dim) and returns its label.
func (s *Schema) EncodeRecord(header, fields []string, out []float64) (int, error) {
	e, err := s.encoder(header)
	if err != nil {
		return 0, err
	}
	if len(fields) != len(header) || len(out) != e.dim {
		return 0, fmt.Errorf("%w: %d fields for %d columns, output %d for %d features", ErrSchema, len(fields), len(header), len(out), e.dim)
	}
	return e.record(fields, out)
}
