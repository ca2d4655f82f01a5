package dataset

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// CSVOptions configures LoadCSV and ReadCSV.
type CSVOptions struct {
	// Label is the label column; required when Schema is nil, ignored
	// otherwise (the schema names its label column).
	Label string
	// Schema holds the public bounds. nil infers a schema from the data
	// itself (see InferSchema) and calls Warn, because bounds computed from
	// private data leak it.
	Schema *Schema
	// Categorical names columns that schema inference must treat as
	// categorical even if their values look numeric (codes, zip codes).
	// Ignored when Schema is set.
	Categorical []string
	// Missing is the missing-value policy; the zero value makes every
	// missing value an error.
	Missing MissingPolicy
	// Fill, if not nil, holds the values policies mean and zero fill in (a
	// model's training values, see Fill) instead of this file's own mean or
	// most frequent category, so a row is encoded the same whatever the
	// other rows are. A column it has no value for is filled from the file.
	Fill *Fill
	// Report, if not nil, receives the counts of dropped rows, filled
	// values and clipped values.
	Report *CSVReport
	// Warn receives warnings: the privacy warning of an inferred schema,
	// and the counts of dropped, filled and clipped values. nil discards them.
	Warn func(msg string)
}

// LoadCSV reads a CSV file with a header line into a Dataset named path.
// The file may be gzip-compressed (name ending in .gz, or starting with the
// gzip magic). Fields are separated by "," with optional surrounding spaces
// (Adult uses ", "), may be quoted as in RFC 4180. Blank lines are skipped.
// Errors are *ParseError naming the file and line; value errors also name
// the column and the value.
func LoadCSV(path string, opt CSVOptions) (*Dataset, error) {
	f, r, err := openMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadCSV(r, path, opt)
}

// ReadCSV is LoadCSV on an uncompressed reader; name is used in errors and
// as the Dataset's name.
//
// Missing values (IsMissing in a numeric column, an empty field in a
// categorical one) are handled by opt.Missing; an empty label is always an
// error (ErrEmptyLabel). Values outside the schema's bounds are clipped and
// counted: Warn gets one line with the count per column.
func ReadCSV(r io.Reader, name string, opt CSVOptions) (*Dataset, error) {
	cr := newCSVReader(r, name)
	header, err := cr.header()
	if err != nil {
		return nil, err
	}
	s := opt.Schema
	next := func() ([]string, int, error) { return cr.next(len(header)) }
	if s == nil {
		if opt.Label == "" {
			return nil, fileError(name, fmt.Errorf("%w: no schema and no label column given", ErrConfig))
		}
		rows, lines, err := cr.all(len(header))
		if err != nil {
			return nil, err
		}
		if s, err = inferSchema(header, rows, lines, opt.Label, opt.Categorical, name); err != nil {
			return nil, err
		}
		if opt.Warn != nil {
			opt.Warn(inferWarning(name))
		}
		i := 0
		next = func() ([]string, int, error) {
			if i == len(rows) {
				return nil, 0, io.EOF
			}
			i++
			return rows[i-1], lines[i-1], nil
		}
	} else if err := s.Validate(); err != nil {
		return nil, fileError(name, err)
	}
	return encodeAll(name, s, header, next, opt)
}

// encodeAll encodes every record next returns with schema s.
func encodeAll(name string, s *Schema, header []string, next func() ([]string, int, error), opt CSVOptions) (*Dataset, error) {
	enc, err := s.NewEncoder(header)
	if err != nil {
		return nil, lineError(name, 1, err)
	}
	if !enc.HasLabel() {
		return nil, lineError(name, 1, labelMissing(s.Label, header))
	}
	st := newEncodeState(enc, opt.Missing, opt.Fill)
	d := &Dataset{Name: name, Classes: s.Classes, Features: s.Features(), Schema: s}
	arena := rowArena{dim: enc.Dim()}
	var x []float64 // a row not used yet (after a skipped record)
	skipped := 0
	for {
		rec, line, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if x == nil {
			x = arena.next()
		}
		st.row = len(d.X)
		if err := enc.encode(rec, x, st); err != nil {
			if errors.Is(err, errSkipRow) {
				skipped++
				continue
			}
			return nil, lineError(name, line, err)
		}
		y, err := enc.Label(rec)
		if err != nil {
			return nil, lineError(name, line, err)
		}
		d.X, d.Y = append(d.X, x), append(d.Y, y)
		x = nil
	}
	if len(d.Y) == 0 {
		if skipped > 0 {
			return nil, fileError(name, fmt.Errorf("%w: every one of the %d rows has a missing value", ErrEmpty, skipped))
		}
		return nil, lineError(name, 1, fmt.Errorf("%w: a header but no data rows", ErrEmpty))
	}
	if err := enc.fill(st, d.X); err != nil {
		return nil, fileError(name, err)
	}
	rep := &CSVReport{Rows: len(d.Y), Skipped: skipped}
	rep.add(s, st)
	if opt.Report != nil {
		*opt.Report = *rep
	}
	if opt.Warn != nil {
		for _, w := range rep.warnings(name, s, opt.Missing, opt.Fill != nil) {
			opt.Warn(w)
		}
	}
	return d, nil
}

// rowsOf cuts back into n rows of dim values (capacities cut at the row end).
func rowsOf(back []float64, n, dim int) [][]float64 {
	x := make([][]float64, n)
	for i := range x {
		x[i] = back[i*dim : (i+1)*dim : (i+1)*dim]
	}
	return x
}

func inferWarning(name string) string {
	out := SchemaPathFor(name)
	return fmt.Sprintf("%s: no public schema given, so the feature bounds and categories were computed from the data itself; "+
		"bounds computed from private data leak information about it (its extreme records, its rare categories). "+
		"Write a schema to review with `ppboost schema infer --data %s --out %s`, replace its bounds by public ones, "+
		"and keep it as %s: it is then found for this file only (a schema.json would be read for every CSV file of the folder)",
		name, name, out, out)
}

// SchemaPathFor is where a schema for the CSV file path is found for that
// file alone: X.schema.json beside X.csv (PATH.schema.json for a path
// without the .csv suffix).
func SchemaPathFor(path string) string {
	if base, ok := strings.CutSuffix(path, ".csv"); ok {
		return base + ".schema.json"
	}
	return path + ".schema.json"
}

// InferSchema derives a schema from a CSV file's own data (see ReadCSV
// without a schema): a column is categorical, with its observed values
// (sorted) as categories, if it is listed in categorical or if none of its
// values is a number; otherwise it is numeric, with the observed minimum and
// maximum as bounds, and every value must be a number or missing (IsMissing):
// a malformed value is an error naming its line, column and value. Classes
// are the label column's values, sorted (numerically when they all are
// numbers); an empty label is an error. Bounds computed from private data
// leak it: use this only to draft a schema, then replace the bounds by
// public ones.
func InferSchema(path string, label string, categorical ...string) (*Schema, error) {
	header, rows, lines, err := readRecords(path)
	if err != nil {
		return nil, err
	}
	return inferSchema(header, rows, lines, label, categorical, path)
}

// readRecords reads a CSV file's header and every record, with the line
// of each.
func readRecords(path string) (header []string, rows [][]string, lines []int, err error) {
	f, r, err := openMaybeGzip(path)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	cr := newCSVReader(r, path)
	if header, err = cr.header(); err != nil {
		return nil, nil, nil, err
	}
	rows, lines, err = cr.all(len(header))
	return header, rows, lines, err
}

// CodeColumns lists the numeric columns of s whose values in the CSV file
// path include numbers written with leading zeros ("02139"): read as numbers
// they lose the zeros, and such columns are usually codes (zip codes,
// identifiers) that belong categorical. Each entry says the column and an
// example value.
func CodeColumns(path string, s *Schema) ([]string, error) {
	header, rows, _, err := readRecords(path)
	if err != nil {
		return nil, err
	}
	numeric := map[string]bool{}
	for _, c := range s.Columns {
		numeric[c.Name] = c.Kind == KindNumeric
	}
	var out []string
	for i, h := range header {
		if !numeric[h] {
			continue
		}
		for _, row := range rows {
			if v := strings.TrimSpace(row[i]); leadingZero(v) {
				out = append(out, fmt.Sprintf("column %q: values such as %q have leading zeros, lost as numbers (%s reads as %s); if they are codes, make it categorical (--categorical %s)",
					h, v, v, strings.TrimLeft(v, "0"), h))
				break
			}
		}
	}
	return out, nil
}

// leadingZero reports a number written with a leading zero before another
// digit ("007", "02139"; not "0", "0.5" or "-0.5").
func leadingZero(v string) bool {
	v = strings.TrimLeft(v, "+-")
	return len(v) > 1 && v[0] == '0' && v[1] >= '0' && v[1] <= '9' && looksNumeric(v)
}

func inferSchema(header []string, rows [][]string, lines []int, label string, categorical []string, name string) (*Schema, error) {
	li := slices.Index(header, label)
	if li < 0 {
		return nil, lineError(name, 1, labelMissing(label, header))
	}
	for _, c := range categorical {
		if !slices.Contains(header, c) || c == label {
			return nil, lineError(name, 1, fmt.Errorf("%w: categorical column %q is not a feature column of the header", ErrSchema, c))
		}
	}
	s := &Schema{Version: SchemaVersion, Label: label}
	classes := map[string]bool{}
	for k, r := range rows {
		if r[li] == "" {
			return nil, lineError(name, lines[k], fmt.Errorf("label column %q: %w", label, ErrEmptyLabel))
		}
		classes[r[li]] = true
	}
	s.Classes = sortedKeys(classes)
	if len(s.Classes) < 2 {
		return nil, fileError(name, fmt.Errorf("%w: label column %q has %d distinct values, need at least 2", ErrSchema, label, len(s.Classes)))
	}
	numeric := make([]bool, len(header))
	for i, h := range header {
		if i == li {
			continue
		}
		// Categorical when asked, or when no value looks like a number;
		// a single number makes the column numeric, and then every other
		// value must be a number or missing.
		numeric[i] = !slices.Contains(categorical, h) && slices.ContainsFunc(rows, func(r []string) bool { return looksNumeric(r[i]) })
	}
	lo, hi, err := numericRanges(header, rows, lines, numeric, name)
	if err != nil {
		return nil, err
	}
	for i, h := range header {
		if i == li {
			continue
		}
		c, err := inferColumn(h, i, numeric[i], lo[i], hi[i], rows, name)
		if err != nil {
			return nil, err
		}
		s.Columns = append(s.Columns, c)
	}
	if err := s.Validate(); err != nil {
		return nil, fileError(name, err)
	}
	return s, nil
}

// numericRanges is every numeric column's smallest and largest value,
// checked row by row so that the first bad line is reported.
func numericRanges(header []string, rows [][]string, lines []int, numeric []bool, name string) (lo, hi []float64, err error) {
	lo, hi = make([]float64, len(header)), make([]float64, len(header))
	for i := range lo {
		lo[i], hi[i] = math.Inf(1), math.Inf(-1)
	}
	for k, r := range rows {
		for i, v := range r {
			if !numeric[i] || IsMissing(v) {
				continue
			}
			x, err := parseValue(v)
			if err != nil {
				if errors.Is(err, ErrNotNumber) {
					ex := slices.IndexFunc(rows, func(r []string) bool { return looksNumeric(r[i]) })
					return nil, nil, lineError(name, lines[k], fmt.Errorf("column %q: value %q: %w (the column is numeric because line %d holds %q; "+
						"if it is categorical, say so in a schema)", header[i], v, err, lines[ex], rows[ex][i]))
				}
				return nil, nil, lineError(name, lines[k], fmt.Errorf("column %q: value %q: %w", header[i], v, err))
			}
			lo[i], hi[i] = min(lo[i], x), max(hi[i], x)
		}
	}
	return lo, hi, nil
}

// inferColumn drafts column i (named h): numeric over [lo, hi] (a constant
// column gets an interval around its value), or categorical over the
// values it holds.
func inferColumn(h string, i int, numeric bool, lo, hi float64, rows [][]string, name string) (Column, error) {
	if numeric {
		if !(hi > lo) { // a constant column: any interval around it
			pad := max(1, math.Abs(lo))
			lo, hi = lo-pad, hi+pad
		}
		return Column{Name: h, Kind: KindNumeric, Min: lo, Max: hi}, nil
	}
	cats := map[string]bool{}
	for _, r := range rows {
		if r[i] != "" { // an empty field is a missing value, not a category
			cats[r[i]] = true
		}
	}
	if len(cats) == 0 {
		return Column{}, fileError(name, fmt.Errorf("column %q: %w in every row", h, ErrMissing))
	}
	return Column{Name: h, Kind: KindCategorical, Categories: sortedKeys(cats)}, nil
}

// looksNumeric reports whether v is written as a number (whatever its
// magnitude), not as a missing value.
func looksNumeric(v string) bool {
	if IsMissing(v) {
		return false
	}
	_, err := strconv.ParseFloat(v, 64)
	if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
		return true
	}
	return err == nil
}

// sortedKeys sorts numerically when every key is a number, else as strings.
func sortedKeys(set map[string]bool) []string {
	keys := make([]string, 0, len(set))
	numeric := true
	for k := range set {
		keys = append(keys, k)
		if v, err := strconv.ParseFloat(k, 64); err != nil || math.IsNaN(v) {
			numeric = false
		}
	}
	if !numeric {
		slices.Sort(keys)
		return keys
	}
	slices.SortFunc(keys, func(a, b string) int {
		x, _ := strconv.ParseFloat(a, 64)
		y, _ := strconv.ParseFloat(b, 64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return strings.Compare(a, b) // "1" and "1.0": still a total order
	})
	return keys
}

// csvReader reads records with trimmed fields and reports positions.
type csvReader struct {
	name string
	r    *csv.Reader
	last int // line of the last record read
}

func newCSVReader(r io.Reader, name string) *csvReader {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // checked here, with a clearer message
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	return &csvReader{name: name, r: cr}
}

// read returns the next record (trimmed, valid until the next call) and the
// line it starts on.
func (c *csvReader) read() ([]string, int, error) {
	rec, err := c.r.Read()
	if err == io.EOF {
		return nil, 0, io.EOF
	}
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return nil, 0, lineError(c.name, pe.Line, fmt.Errorf("%w: %v", ErrCSV, pe.Err))
		}
		// A read error (bad gzip data, I/O): encoding/csv does not say where.
		return nil, 0, fileError(c.name, fmt.Errorf("after line %d: %w", c.last, err))
	}
	c.last, _ = c.r.FieldPos(0)
	for i := range rec {
		rec[i] = strings.TrimSpace(rec[i])
	}
	return rec, c.last, nil
}

// header reads the header line: at least two distinct, non-empty names.
func (c *csvReader) header() ([]string, error) {
	rec, line, err := c.read()
	if err == io.EOF {
		return nil, lineError(c.name, 1, fmt.Errorf("%w: empty file, want a header line", ErrEmpty))
	}
	if err != nil {
		return nil, err
	}
	h := slices.Clone(rec)
	h[0] = strings.TrimSpace(strings.TrimPrefix(h[0], "\ufeff")) // a UTF-8 byte order mark
	if len(h) < 2 {
		return nil, lineError(c.name, line, fmt.Errorf("%w: the header has %d column, need features and a label", ErrSchema, len(h)))
	}
	for i, name := range h {
		if name == "" {
			return nil, lineError(c.name, line, fmt.Errorf("%w: header column %d has no name", ErrSchema, i+1))
		}
	}
	if dup := firstDuplicate(h); dup != "" {
		return nil, lineError(c.name, line, fmt.Errorf("%w: the header names column %q twice", ErrSchema, dup))
	}
	return h, nil
}

// next returns the next data record with exactly width fields.
func (c *csvReader) next(width int) ([]string, int, error) {
	rec, line, err := c.read()
	if err != nil {
		return nil, 0, err
	}
	if len(rec) != width {
		return nil, 0, lineError(c.name, line, fmt.Errorf("%w: %d fields, the header has %d", ErrFieldCount, len(rec), width))
	}
	return rec, line, nil
}

// all reads every remaining record (at least one).
func (c *csvReader) all(width int) (rows [][]string, lines []int, err error) {
	for {
		rec, line, err := c.next(width)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, slices.Clone(rec))
		lines = append(lines, line)
	}
	if len(rows) == 0 {
		return nil, nil, lineError(c.name, 1, fmt.Errorf("%w: a header but no data rows", ErrEmpty))
	}
	return rows, lines, nil
}

// openMaybeGzip opens path and returns the file (to close) and a reader of
// its content, decompressed if the name ends in .gz or the data starts with
// the gzip magic. Decompression errors surface from the reader wrapped in
// ErrGzip.
func openMaybeGzip(path string) (io.Closer, io.Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fileError(path, err)
	}
	r, err := maybeGunzip(bufio.NewReaderSize(f, 256<<10), path)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, r, nil
}

// maybeGunzip decompresses br if name ends in .gz or br starts with the gzip
// magic.
func maybeGunzip(br *bufio.Reader, name string) (io.Reader, error) {
	magic, _ := br.Peek(2)
	isGzip := len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b
	if !isGzip && !strings.HasSuffix(name, ".gz") {
		return br, nil
	}
	if !isGzip {
		return nil, offsetError(name, 0, fmt.Errorf("%w: the name ends in .gz but the data does not start with the gzip magic", ErrGzip))
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, offsetError(name, 0, fmt.Errorf("%w: %v", ErrGzip, err))
	}
	return gzipErrReader{zr}, nil
}

// gzipErrReader tags decompression errors with ErrGzip.
type gzipErrReader struct{ r io.Reader }

func (g gzipErrReader) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %v", ErrGzip, err)
	}
	return n, err
}

// labelMissing is the error for a label column the header lacks: it lists
// the header's columns and says how the label column is chosen.
func labelMissing(label string, header []string) error {
	const most = 20
	cols := header
	more := ""
	if len(cols) > most {
		cols, more = cols[:most], fmt.Sprintf(", ... (%d in all)", len(header))
	}
	return fmt.Errorf("%w: label column %q is not in the header (its columns: %s%s); name the label column with --label (or the schema's \"label\")",
		ErrSchema, label, strings.Join(cols, ", "), more)
}
