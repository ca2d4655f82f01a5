package dataset

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// CSVOptions configures LoadCSV.
type CSVOptions struct {
	Label  string           // label column; required when Schema is nil
	Schema *Schema          // public bounds; nil infers them from the data (and warns)
	Warn   func(msg string) // receives warnings, e.g. bounds taken from private data
}

// ErrEmpty marks a file without data rows.
var ErrEmpty = errors.New("no data rows")

// LoadCSV reads a CSV file (gzip-compressed if its name ends in .gz or it
// starts with the gzip magic) with a header line.
func LoadCSV(path string, opt CSVOptions) (*Dataset, error) {
	b, err := readMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	return ReadCSV(bytes.NewReader(b), path, opt)
}

func readMaybeGzip(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &ParseError{File: path, Err: err}
	}
	return gunzipIf(b, path)
}

func gunzipIf(b []byte, name string) ([]byte, error) {
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		if strings.HasSuffix(name, ".gz") {
			return nil, &ParseError{File: name, Err: errors.New("not gzip data")}
		}
		return b, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, &ParseError{File: name, Err: fmt.Errorf("gzip: %w", err)}
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return nil, &ParseError{File: name, Err: fmt.Errorf("gzip: %w", err)}
	}
	return out, nil
}

// readRecords parses CSV text: header plus rows, blank lines skipped,
// fields trimmed, every row as long as the header.
func readRecords(r io.Reader, name string) (header []string, rows [][]string, lines []int, err error) {
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = false
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, nil, nil, &ParseError{File: name, Line: pe.Line, Err: pe.Err}
			}
			return nil, nil, nil, &ParseError{File: name, Err: err}
		}
		line, _ := cr.FieldPos(0)
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
		if header == nil {
			header = rec
			continue
		}
		if len(rec) == 1 && rec[0] == "" {
			continue
		}
		if len(rec) != len(header) {
			return nil, nil, nil, &ParseError{File: name, Line: line, Err: fmt.Errorf("%d fields, header has %d", len(rec), len(header))}
		}
		rows = append(rows, rec)
		lines = append(lines, line)
	}
	if header == nil {
		return nil, nil, nil, &ParseError{File: name, Err: errors.New("empty file")}
	}
	if len(rows) == 0 {
		return nil, nil, nil, &ParseError{File: name, Line: 1, Err: ErrEmpty}
	}
	return header, rows, lines, nil
}

// ReadCSV is LoadCSV on a reader; name is used in errors.
func ReadCSV(r io.Reader, name string, opt CSVOptions) (*Dataset, error) {
	header, rows, lines, err := readRecords(r, name)
	if err != nil {
		return nil, err
	}
	s := opt.Schema
	if s == nil {
		if opt.Label == "" {
			return nil, &ParseError{File: name, Err: errors.New("no schema and no label column given")}
		}
		if s, err = inferSchema(header, rows, lines, opt.Label, name); err != nil {
			return nil, err
		}
		if opt.Warn != nil {
			opt.Warn(fmt.Sprintf("%s: feature bounds and categories were computed from the data itself; "+
				"bounds taken from private data leak privacy — give a public schema file instead", name))
		}
	} else if err := s.Validate(); err != nil {
		return nil, &ParseError{File: name, Err: err}
	}
	enc, err := s.encoder(header)
	if err != nil {
		return nil, &ParseError{File: name, Line: 1, Err: err}
	}
	d := &Dataset{Name: name, X: make([][]float64, len(rows)), Y: make([]int, len(rows)),
		Classes: s.Classes, Features: s.Features(), Schema: s}
	back := make([]float64, len(rows)*enc.dim)
	for i, rec := range rows {
		d.X[i] = back[i*enc.dim : (i+1)*enc.dim : (i+1)*enc.dim]
		if d.Y[i], err = enc.record(rec, d.X[i]); err != nil {
			return nil, &ParseError{File: name, Line: lines[i], Err: err}
		}
	}
	return d, nil
}

// InferSchema derives a schema from a CSV file's own data: numeric columns
// get their observed min and max, others their observed categories.
// Bounds taken from private data leak it; prefer a public schema.
func InferSchema(path string, label string) (*Schema, error) {
	b, err := readMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	header, rows, lines, err := readRecords(bytes.NewReader(b), path)
	if err != nil {
		return nil, err
	}
	return inferSchema(header, rows, lines, label, path)
}

func inferSchema(header []string, rows [][]string, lines []int, label, name string) (*Schema, error) {
	s := &Schema{Version: 1, Label: label}
	li := -1
	for i, h := range header {
		if h == label {
			li = i
		}
	}
	if li < 0 {
		return nil, &ParseError{File: name, Line: 1, Err: fmt.Errorf("label column %q not in header", label)}
	}
	classes := map[string]bool{}
	for _, r := range rows {
		classes[r[li]] = true
	}
	for c := range classes {
		s.Classes = append(s.Classes, c)
	}
	sort.Strings(s.Classes)
	for i, h := range header {
		if i == li {
			continue
		}
		numeric := true
		lo, hi := math.Inf(1), math.Inf(-1)
		cats := map[string]bool{}
		for k, r := range rows {
			cats[r[i]] = true
			if !numeric {
				continue
			}
			v, err := strconv.ParseFloat(r[i], 64)
			if err != nil {
				numeric = false
				continue
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, &ParseError{File: name, Line: lines[k], Err: fmt.Errorf("column %q: %v is not finite", h, v)}
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		if numeric {
			if hi <= lo {
				hi = lo + 1 // constant column: any interval containing it
			}
			s.Columns = append(s.Columns, Column{Name: h, Kind: KindNumeric, Min: lo, Max: hi})
			continue
		}
		c := Column{Name: h, Kind: KindCategorical}
		for v := range cats {
			c.Categories = append(c.Categories, v)
		}
		sort.Strings(c.Categories)
		s.Columns = append(s.Columns, c)
	}
	if err := s.Validate(); err != nil {
		return nil, &ParseError{File: name, Err: err}
	}
	return s, nil
}
