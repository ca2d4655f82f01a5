package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// SchemaVersion is the only schema format version.
const SchemaVersion = 1

// maxSchemaBytes caps a schema file; real ones are a few kilobytes.
const maxSchemaBytes = 16 << 20

// Schema is the PUBLIC description of a raw record: the per-column bounds or
// categories, the label column and the class names. It is a small JSON file
// that owners and the data user share; they compare Digest.
type Schema struct {
	Version int      `json:"version"` // 1
	Label   string   `json:"label"`   // label column name
	Classes []string `json:"classes"` // label values, in class-index order
	Columns []Column `json:"columns"` // every non-label input column, in file order
}

// Column is one non-label input column.
type Column struct {
	Name       string   `json:"name"`
	Kind       string   `json:"kind"`                 // "numeric" | "categorical" | "ignore"
	Min        float64  `json:"min,omitempty"`        // numeric: public lower bound
	Max        float64  `json:"max,omitempty"`        // numeric: public upper bound
	Categories []string `json:"categories,omitempty"` // categorical: one-hot order
}

// MarshalJSON writes a numeric column's bounds always, a 0 included (a
// schema with "min" left out reads as 0, but a reviewer must see every
// bound it publishes), and no bounds for the other kinds.
func (c Column) MarshalJSON() ([]byte, error) {
	type plain Column // no MarshalJSON
	if c.Kind != KindNumeric {
		return json.Marshal(plain(c))
	}
	return json.Marshal(struct {
		Name       string   `json:"name"`
		Kind       string   `json:"kind"`
		Min        float64  `json:"min"`
		Max        float64  `json:"max"`
		Categories []string `json:"categories,omitempty"`
	}{c.Name, c.Kind, c.Min, c.Max, c.Categories})
}

// scale returns the midpoint and half-width of a numeric column's bounds,
// computed without overflow for any finite bounds.
func (c *Column) scale() (mid, half float64) {
	return c.Min/2 + c.Max/2, c.Max/2 - c.Min/2
}

// Validate checks the schema's own consistency: version 1, a label, at least
// two distinct classes, unique non-empty column names (not the label's),
// numeric columns with finite bounds min < max, categorical columns with
// distinct categories, no fields that do not belong to a column's kind,
// unique feature names, and at least one feature.
func (s *Schema) Validate() error {
	if s.Version != SchemaVersion {
		return fmt.Errorf("%w: version %d, want %d", ErrSchema, s.Version, SchemaVersion)
	}
	if s.Label == "" {
		return fmt.Errorf("%w: no label column name", ErrSchema)
	}
	if err := s.validateClasses(); err != nil {
		return err
	}
	names := map[string]bool{s.Label: true}
	for i, c := range s.Columns {
		switch {
		case c.Name == "":
			return fmt.Errorf("%w: column %d has no name", ErrSchema, i)
		case c.Name == s.Label:
			return fmt.Errorf("%w: column %d is the label column %q", ErrSchema, i, c.Name)
		case names[c.Name]:
			return fmt.Errorf("%w: column %q listed twice", ErrSchema, c.Name)
		}
		names[c.Name] = true
		if err := c.validate(); err != nil {
			return err
		}
	}
	features := s.Features()
	if len(features) == 0 {
		return fmt.Errorf("%w: no feature columns", ErrSchema)
	}
	if dup := firstDuplicate(features); dup != "" {
		return fmt.Errorf("%w: two columns give the feature name %q", ErrSchema, dup)
	}
	return nil
}

// validateClasses checks the class names: at least two, distinct, none
// empty.
func (s *Schema) validateClasses() error {
	if len(s.Classes) < 2 {
		return fmt.Errorf("%w: %d classes, need at least 2", ErrSchema, len(s.Classes))
	}
	if dup := firstDuplicate(s.Classes); dup != "" {
		return fmt.Errorf("%w: class %q listed twice", ErrSchema, dup)
	}
	for _, c := range s.Classes {
		if strings.TrimSpace(c) == "" {
			return fmt.Errorf("%w: an empty class name (an empty label is a missing label, not a class)", ErrSchema)
		}
	}
	return nil
}

// validate checks a column's fields for its kind: a numeric column's
// finite bounds min < max, a categorical column's distinct categories, and
// no field of the other kind.
func (c Column) validate() error {
	switch c.Kind {
	case KindNumeric:
		mid, half := c.scale()
		if math.IsNaN(c.Min) || math.IsNaN(c.Max) || math.IsInf(c.Min, 0) || math.IsInf(c.Max, 0) || !(half > 0) || math.IsInf(mid, 0) {
			return fmt.Errorf("%w: column %q: bounds [%v, %v] must be finite with min < max", ErrSchema, c.Name, c.Min, c.Max)
		}
		if len(c.Categories) > 0 {
			return fmt.Errorf("%w: numeric column %q has categories", ErrSchema, c.Name)
		}
	case KindCategorical:
		if len(c.Categories) == 0 {
			return fmt.Errorf("%w: categorical column %q has no categories", ErrSchema, c.Name)
		}
		if dup := firstDuplicate(c.Categories); dup != "" {
			return fmt.Errorf("%w: column %q: category %q listed twice", ErrSchema, c.Name, dup)
		}
		if c.Min != 0 || c.Max != 0 {
			return fmt.Errorf("%w: categorical column %q has numeric bounds", ErrSchema, c.Name)
		}
	case KindIgnore:
	default:
		return fmt.Errorf("%w: column %q: unknown kind %q (want numeric, categorical or ignore)", ErrSchema, c.Name, c.Kind)
	}
	return nil
}

func firstDuplicate(v []string) string {
	seen := make(map[string]bool, len(v))
	for _, s := range v {
		if seen[s] {
			return s
		}
		seen[s] = true
	}
	return ""
}

// Features lists the feature names in encoding order: a numeric column by
// its name, a categorical one as name=category for each category.
func (s *Schema) Features() []string {
	f := make([]string, 0, s.Dim())
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
func (s *Schema) Dim() int {
	d := 0
	for _, c := range s.Columns {
		switch c.Kind {
		case KindNumeric:
			d++
		case KindCategorical:
			d += len(c.Categories)
		}
	}
	return d
}

// Digest is the hex SHA-256 of the schema's canonical JSON: encoding/json's
// compact encoding of the struct (fields in declaration order, zero bounds
// and empty category lists omitted). Owners and the data user compare it. A
// schema that cannot be encoded (NaN bounds: never a valid schema) gets the
// digest of its Go syntax representation instead, so Digest never fails
// and never equals a valid schema's.
func (s *Schema) Digest() string {
	b, err := json.Marshal(s)
	if err != nil {
		b = fmt.Appendf(nil, "unencodable schema %#v", s)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// ParseSchema decodes and validates a JSON schema; name is used in errors.
// Unknown fields and trailing data are errors (they are usually typos).
func ParseSchema(b []byte, name string) (*Schema, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Schema
	if err := dec.Decode(&s); err != nil {
		return nil, jsonError(name, b, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, lineError(name, lineAt(b, dec.InputOffset()), fmt.Errorf("%w: data after the schema object", ErrSchema))
	}
	if err := s.Validate(); err != nil {
		return nil, fileError(name, err)
	}
	return &s, nil
}

// jsonError places a JSON decoding error at its line where the decoder says.
func jsonError(name string, b []byte, dec *json.Decoder, err error) error {
	off := dec.InputOffset()
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if errors.Is(err, io.EOF) && len(bytes.TrimSpace(b)) == 0 {
		return lineError(name, 1, fmt.Errorf("%w: empty schema file", ErrSchema))
	}
	return lineError(name, lineAt(b, off), fmt.Errorf("%w: %v", ErrSchema, err))
}

// lineAt is the 1-based line holding byte offset off of b.
func lineAt(b []byte, off int64) int {
	off = max(0, min(off, int64(len(b))))
	return 1 + bytes.Count(b[:off], []byte{'\n'})
}

// LoadSchema reads and validates a schema file; errors name the file.
func LoadSchema(path string) (*Schema, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSchemaBytes+1))
	if err != nil {
		return nil, fileError(path, err)
	}
	if len(b) > maxSchemaBytes {
		return nil, fileError(path, fmt.Errorf("%w: file larger than %d bytes", ErrSchema, maxSchemaBytes))
	}
	return ParseSchema(b, path)
}

// Save writes the schema as indented JSON to path.
func (s *Schema) Save(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("save schema %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("save schema: %w", err)
	}
	return nil
}

// Encoder maps the raw records of one file layout (a header) to scaled
// features and labels. Make one with NewEncoder and reuse it for every
// record; it is safe for concurrent use.
type Encoder struct {
	s      *Schema
	width  int   // fields per record (len(header))
	label  int   // header index of the label column, -1 if absent
	col    []int // header index of schema column i, -1 for absent ignored columns
	offset []int // first feature index of schema column i
	mid    []float64
	half   []float64
	cats   []map[string]int
	class  map[string]int
	dim    int
}

// NewEncoder prepares the encoding of records laid out as header. The header
// must name every numeric and categorical column of the schema; the label
// column and "ignore" columns may be absent; a header column the schema does
// not know is an error (declare it "ignore"). The schema must be valid.
func (s *Schema) NewEncoder(header []string) (*Encoder, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	e := &Encoder{s: s, width: len(header), label: -1, col: make([]int, len(s.Columns)),
		offset: make([]int, len(s.Columns)), mid: make([]float64, len(s.Columns)), half: make([]float64, len(s.Columns)),
		cats: make([]map[string]int, len(s.Columns)), class: make(map[string]int, len(s.Classes))}
	pos := make(map[string]int, len(header))
	for i, h := range header {
		if _, dup := pos[h]; dup {
			return nil, fmt.Errorf("%w: the header names column %q twice", ErrSchema, h)
		}
		pos[h] = i
	}
	if i, ok := pos[s.Label]; ok {
		e.label = i
		delete(pos, s.Label)
	}
	for i, c := range s.Columns {
		p, ok := pos[c.Name]
		if !ok && c.Kind != KindIgnore {
			return nil, fmt.Errorf("%w: schema column %q is not in the header", ErrSchema, c.Name)
		}
		delete(pos, c.Name)
		e.col[i] = -1
		if ok {
			e.col[i] = p
		}
		e.offset[i] = e.dim
		switch c.Kind {
		case KindNumeric:
			e.mid[i], e.half[i] = c.scale()
			e.dim++
		case KindCategorical:
			e.cats[i] = make(map[string]int, len(c.Categories))
			for k, cat := range c.Categories {
				e.cats[i][cat] = k
			}
			e.dim += len(c.Categories)
		}
	}
	for _, h := range header {
		if _, extra := pos[h]; extra {
			return nil, fmt.Errorf("%w: header column %q is not in the schema (declare it \"ignore\" to skip it)", ErrSchema, h)
		}
	}
	for k, c := range s.Classes {
		e.class[c] = k
	}
	return e, nil
}

// Dim is the number of features Encode writes.
func (e *Encoder) Dim() int { return e.dim }

// HasLabel reports whether the header has the label column.
func (e *Encoder) HasLabel() bool { return e.label >= 0 }

// Encode maps one record's fields (surrounding space ignored) to scaled
// features in out (len Dim). Numeric: 2*(v-min)/(max-min)-1, computed as
// (v-mid)/half with mid and half the bounds' midpoint and half-width (the same
// value, exact for bounds [-1, 1]), clipped to [-1, 1]; a missing value (see
// IsMissing), an unparseable number, NaN, ±Inf and magnitudes above
// MaxMagnitude are errors. Categorical: one-hot, 1 for the category and 0
// for the others; an empty field is a missing value, an unknown category an
// error naming it. Ignored columns are skipped. Errors name the column and
// the value. ReadCSV adds missing-value policies and clip counts on top.
func (e *Encoder) Encode(fields []string, out []float64) error {
	return e.encode(fields, out, nil)
}

// encodeState carries ReadCSV's missing-value policy and counters through
// encode; nil means strict (every missing value is an error) and uncounted.
type encodeState struct {
	policy  MissingPolicy
	row     int    // index of the row being encoded (for holes)
	clipLo  []int  // per schema column: values below min
	clipHi  []int  // per schema column: values above max
	missing []int  // per schema column: missing values handled
	holes   []hole // values to fill once the whole file is read
	sum     []float64
	count   []int
	catN    [][]int // per categorical column: count of each category
	fill    *Fill   // the model's training values; nil fills from the file itself
}

// hole is a missing value to fill after the pass (policy mean, or a
// categorical column under zero).
type hole struct{ row, col int }

func newEncodeState(e *Encoder, p MissingPolicy, fill *Fill) *encodeState {
	n := len(e.s.Columns)
	st := &encodeState{policy: p, fill: fill, clipLo: make([]int, n), clipHi: make([]int, n), missing: make([]int, n),
		sum: make([]float64, n), count: make([]int, n), catN: make([][]int, n)}
	for i, c := range e.s.Columns {
		if c.Kind == KindCategorical {
			st.catN[i] = make([]int, len(c.Categories))
		}
	}
	return st
}

// errSkipRow tells ReadCSV to drop a row (policy skip).
var errSkipRow = errors.New("skip row")

func (e *Encoder) encode(fields []string, out []float64, st *encodeState) error {
	if len(fields) != e.width {
		return fmt.Errorf("%w: %d fields, the header has %d", ErrFieldCount, len(fields), e.width)
	}
	if len(out) != e.dim {
		return fmt.Errorf("%w: output has room for %d features, the schema has %d", ErrSchema, len(out), e.dim)
	}
	clear(out)
	// missing handles a missing value of column i under the policy.
	missing := func(i int, v string) error {
		c := &e.s.Columns[i]
		if st == nil || st.policy == MissingError {
			return fmt.Errorf("column %q: value %q: %w", c.Name, v, ErrMissing)
		}
		switch st.policy {
		case MissingSkip:
			return errSkipRow
		case MissingZero:
			if c.Kind == KindNumeric {
				out[e.offset[i]] = clip((0 - e.mid[i]) / e.half[i])
				break
			}
			if !e.fillFrom(st.fill, i, out) {
				st.holes = append(st.holes, hole{st.row, i}) // the most frequent category
			}
		case MissingMean:
			if !e.fillFrom(st.fill, i, out) {
				st.holes = append(st.holes, hole{st.row, i})
			}
		}
		st.missing[i]++
		return nil
	}
	for i := range e.s.Columns {
		c := &e.s.Columns[i]
		switch c.Kind {
		case KindNumeric:
			v := strings.TrimSpace(fields[e.col[i]])
			if IsMissing(v) {
				if err := missing(i, v); err != nil {
					return err
				}
				continue
			}
			x, err := parseValue(v)
			if err != nil {
				return fmt.Errorf("column %q: value %q: %w", c.Name, v, err)
			}
			if st != nil { // compared in raw units: the scaled bound may round past ±1
				switch {
				case x < c.Min:
					st.clipLo[i]++
				case x > c.Max:
					st.clipHi[i]++
				}
			}
			y := clip((x - e.mid[i]) / e.half[i])
			out[e.offset[i]] = y
			if st != nil {
				st.sum[i] += y
				st.count[i]++
			}
		case KindCategorical:
			v := strings.TrimSpace(fields[e.col[i]])
			if v == "" {
				if _, listed := e.cats[i][v]; !listed {
					if err := missing(i, v); err != nil {
						return err
					}
					continue
				}
			}
			k, ok := e.cats[i][v]
			if !ok {
				return fmt.Errorf("column %q: value %q: %w (known: %s)", c.Name, v, ErrUnknownCategory, abbreviate(c.Categories))
			}
			out[e.offset[i]+k] = 1
			if st != nil {
				st.catN[i][k]++
			}
		}
	}
	return nil
}

// fillFrom writes column i's stored fill value into out: a numeric mean
// scaled (and clipped) like any raw value, a categorical mode one-hot. It
// reports false when f has no value for the column (nil f: fill from the
// file after the pass).
func (e *Encoder) fillFrom(f *Fill, i int, out []float64) bool {
	if f == nil {
		return false
	}
	c := &e.s.Columns[i]
	switch c.Kind {
	case KindNumeric:
		v, ok := f.Mean[c.Name]
		if !ok {
			return false
		}
		out[e.offset[i]] = clip((v - e.mid[i]) / e.half[i])
	case KindCategorical:
		k, ok := e.cats[i][f.Mode[c.Name]]
		if _, has := f.Mode[c.Name]; !has || !ok {
			return false
		}
		out[e.offset[i]+k] = 1
	}
	return true
}

// fill writes the values of the holes into x (the rows encoded so far):
// a numeric column's mean (scaled, after clipping), a categorical column's
// most frequent category. It fails if a column had no value to take them from.
func (e *Encoder) fill(st *encodeState, x [][]float64) error {
	for _, h := range st.holes {
		c := &e.s.Columns[h.col]
		switch c.Kind {
		case KindNumeric:
			if st.count[h.col] == 0 {
				return fmt.Errorf("column %q: %w in every row, no mean to fill them with", c.Name, ErrMissing)
			}
			x[h.row][e.offset[h.col]] = clip(st.sum[h.col] / float64(st.count[h.col]))
		case KindCategorical:
			best := -1
			for k, n := range st.catN[h.col] {
				if n > 0 && (best < 0 || n > st.catN[h.col][best]) {
					best = k
				}
			}
			if best < 0 {
				return fmt.Errorf("column %q: %w in every row, no category to fill them with", c.Name, ErrMissing)
			}
			x[h.row][e.offset[h.col]+best] = 1
		}
	}
	return nil
}

// MaxMagnitude bounds the absolute value of a numeric field. Larger values
// are refused (ErrMagnitude): no feature of real data needs them, and they
// are nearly always a unit or encoding mistake (or an attack on the bounds).
const MaxMagnitude = 1e15

// parseValue parses a numeric field: a finite float of magnitude at most
// MaxMagnitude. Errors wrap ErrNotNumber, ErrNotFinite or ErrMagnitude.
func parseValue(v string) (float64, error) {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			if math.Abs(x) < 1 { // underflow: a tiny number, which is 0 to us
				return 0, nil
			}
			return 0, ErrNotFinite
		}
		return 0, ErrNotNumber
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, ErrNotFinite
	}
	if math.Abs(x) > MaxMagnitude {
		return 0, fmt.Errorf("%w: |v| > %g", ErrMagnitude, float64(MaxMagnitude))
	}
	return x, nil
}

// IsMissing reports whether a numeric field (space trimmed) marks a missing
// value: empty, "?", "NA", "N/A", "NaN" or "null" (any case). In a
// categorical column only the empty field is missing ("?" is an ordinary
// category there, as in UCI Adult).
func IsMissing(v string) bool {
	switch strings.ToLower(v) {
	case "", "?", "na", "n/a", "nan", "null":
		return true
	}
	return false
}

// Label maps the record's label field to its class index.
func (e *Encoder) Label(fields []string) (int, error) {
	if e.label < 0 {
		return 0, fmt.Errorf("%w: label column %q is not in the header", ErrSchema, e.s.Label)
	}
	if len(fields) != e.width {
		return 0, fmt.Errorf("%w: %d fields, the header has %d", ErrFieldCount, len(fields), e.width)
	}
	v := strings.TrimSpace(fields[e.label])
	if v == "" {
		return 0, fmt.Errorf("label column %q: %w", e.s.Label, ErrEmptyLabel)
	}
	y, ok := e.class[v]
	if !ok {
		return 0, fmt.Errorf("column %q: %q: %w (classes: %s)", e.s.Label, v, ErrUnknownLabel, abbreviate(e.s.Classes))
	}
	return y, nil
}

// EncodeRecord maps one raw record (fields in the column order given by
// header; the label column may be present and is then not looked at) to
// scaled features in out (len Dim). See Encoder.Encode for the mapping. It
// prepares an Encoder on every call; use NewEncoder for many records.
func (s *Schema) EncodeRecord(header []string, fields []string, out []float64) error {
	e, err := s.NewEncoder(header)
	if err != nil {
		return err
	}
	return e.Encode(fields, out)
}

// clip limits v to [-1, 1].
func clip(v float64) float64 {
	if v < -1 {
		return -1
	}
	if v > 1 {
		return 1
	}
	return v
}

// abbreviate lists at most 10 quoted values for an error message.
func abbreviate(v []string) string {
	const most = 10
	q := make([]string, 0, min(len(v), most)+1)
	for i, s := range v {
		if i == most {
			q = append(q, fmt.Sprintf("... %d more", len(v)-most))
			break
		}
		q = append(q, strconv.Quote(s))
	}
	return strings.Join(q, ", ")
}
