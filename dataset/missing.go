package dataset

import (
	"fmt"
	"sort"
	"strings"
)

// MissingPolicy says what loading does with a missing value (see IsMissing).
// The zero value refuses them: nothing is filled in unless asked for.
type MissingPolicy int

const (
	// MissingError makes a missing value an error naming file, line, column
	// and value (the default).
	MissingError MissingPolicy = iota
	// MissingSkip drops every row with a missing value.
	MissingSkip
	// MissingZero fills a numeric column with 0 (clipped to its bounds) and a
	// categorical column with its most frequent category: the model's
	// training one when CSVOptions.Fill holds it, else the file's.
	MissingZero
	// MissingMean fills a numeric column with the mean of its values and a
	// categorical column with its most frequent category: the model's
	// training values when CSVOptions.Fill holds them (prediction), else
	// the same file's (after clipping).
	MissingMean
)

var missingNames = []string{"error", "skip", "zero", "mean"}

func (p MissingPolicy) String() string {
	if p < 0 || int(p) >= len(missingNames) {
		return fmt.Sprintf("MissingPolicy(%d)", int(p))
	}
	return missingNames[p]
}

// ParseMissingPolicy parses "error" (or ""), "skip", "zero" or "mean".
func ParseMissingPolicy(s string) (MissingPolicy, error) {
	if s == "" {
		return MissingError, nil
	}
	for i, n := range missingNames {
		if s == n {
			return MissingPolicy(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown missing-value policy %q (want error, skip, zero or mean)", ErrConfig, s)
}

// CSVReport counts what loading a CSV file changed: rows dropped, missing
// values filled, values clipped to the schema's bounds. Maps are keyed by
// column name and hold only non-zero counts.
type CSVReport struct {
	Rows      int            // rows kept
	Skipped   int            // rows dropped (MissingSkip)
	Filled    map[string]int // missing values filled (MissingZero, MissingMean)
	ClipBelow map[string]int // values below the column's min, clipped to it
	ClipAbove map[string]int // values above the column's max, clipped to it
}

func (r *CSVReport) add(s *Schema, st *encodeState) {
	r.Filled, r.ClipBelow, r.ClipAbove = map[string]int{}, map[string]int{}, map[string]int{}
	for i, c := range s.Columns {
		if n := st.missing[i]; n > 0 {
			r.Filled[c.Name] = n
		}
		if n := st.clipLo[i]; n > 0 {
			r.ClipBelow[c.Name] = n
		}
		if n := st.clipHi[i]; n > 0 {
			r.ClipAbove[c.Name] = n
		}
	}
}

// Clipped is the number of values clipped in all columns.
func (r *CSVReport) Clipped() int {
	n := 0
	for _, v := range r.ClipBelow {
		n += v
	}
	for _, v := range r.ClipAbove {
		n += v
	}
	return n
}

// warnings turns the report into warning lines for file name.
// stored says the filled values came from a model (CSVOptions.Fill).
func (r *CSVReport) warnings(name string, s *Schema, p MissingPolicy, stored bool) []string {
	var w []string
	if r.Skipped > 0 {
		w = append(w, fmt.Sprintf("%s: dropped %d rows with a missing value (missing-value policy skip), kept %d", name, r.Skipped, r.Rows))
	}
	if len(r.Filled) > 0 {
		from := ""
		if stored {
			from = ", with the model's training values"
		}
		w = append(w, fmt.Sprintf("%s: filled %d missing values (missing-value policy %s%s): %s", name, sum(r.Filled), p, from, perColumn(r.Filled, nil, nil)))
	}
	if n := r.Clipped(); n > 0 {
		bounds := func(col string) string {
			for _, c := range s.Columns {
				if c.Name == col {
					return fmt.Sprintf("[%g, %g]", c.Min, c.Max)
				}
			}
			return ""
		}
		w = append(w, fmt.Sprintf("%s: clipped %d values to the schema's bounds: %s", name, n, perColumn(r.ClipBelow, r.ClipAbove, bounds)))
	}
	return w
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// perColumn lists counts per column, sorted by name: `"a" 3, "b" 1`; with a
// second map, `"a" 3 below and 1 above [lo, hi]` (bounds gives the interval).
func perColumn(a, b map[string]int, bounds func(string) string) string {
	names := map[string]bool{}
	for k := range a {
		names[k] = true
	}
	for k := range b {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	parts := make([]string, len(sorted))
	for i, k := range sorted {
		if b == nil {
			parts[i] = fmt.Sprintf("%q %d", k, a[k])
			continue
		}
		parts[i] = fmt.Sprintf("%q %d below and %d above %s", k, a[k], b[k], bounds(k))
	}
	return strings.Join(parts, ", ")
}
