package dataset

import (
	"fmt"
	"math"
	"slices"
)

// Fill holds the values the missing-value policies fill in, taken from a
// model's training rows and stored in the model file, so that prediction
// fills a gap the same way whatever other rows the predicted file holds (a
// file's own mean would make a row's score depend on its neighbours, and a
// one-row file with a gap could not be scored).
//
// The values describe the rows they come from: they are not public like the
// schema. Trainers take them from the data user's own rows only, never from
// the owners' (see the trainers in cmd/ppboost/cli).
type Fill struct {
	// Rows is the number of rows the values come from.
	Rows int `json:"rows"`
	// Mean maps every numeric column to the mean of its values in raw units,
	// after clipping to the schema's bounds (policy mean).
	Mean map[string]float64 `json:"mean,omitempty"`
	// Mode maps every categorical column to its most frequent category
	// (ties: the first in the schema's order; policies mean and zero).
	Mode map[string]string `json:"mode,omitempty"`
}

// FillOf computes the fill values of d's rows (encoded with d.Schema): a
// numeric column's mean of the scaled, clipped values, turned back into raw
// units; a categorical column's most frequent category. Rows whose own gaps
// were filled when d was loaded count with the value they were given (under
// --missing mean that leaves a column's mean unchanged). It returns nil for
// data without a schema, without rows, or whose rows do not match the schema.
func FillOf(d *Dataset) *Fill {
	if d == nil || d.Schema == nil || d.Len() == 0 || d.Schema.Dim() != d.Dim() {
		return nil
	}
	f := &Fill{Rows: d.Len(), Mean: map[string]float64{}, Mode: map[string]string{}}
	at := 0
	for _, c := range d.Schema.Columns {
		switch c.Kind {
		case KindNumeric:
			sum := 0.0
			for _, x := range d.X {
				sum += x[at]
			}
			mid, half := c.scale()
			// Kept inside the bounds, which mid+half*1 may miss by a rounding.
			f.Mean[c.Name] = min(max(mid+half*clip(sum/float64(d.Len())), c.Min), c.Max)
			at++
		case KindCategorical:
			n := make([]int, len(c.Categories))
			for _, x := range d.X {
				for k := range n {
					if x[at+k] == 1 {
						n[k]++
					}
				}
			}
			best := 0
			for k := range n {
				if n[k] > n[best] {
					best = k
				}
			}
			if n[best] == 0 {
				return nil // not one-hot: not rows encoded with d.Schema
			}
			f.Mode[c.Name] = c.Categories[best]
			at += len(c.Categories)
		}
	}
	return f
}

// Check reports whether f fits schema s: a finite mean inside the bounds for
// every numeric column, one of the categories for every categorical column,
// and nothing for a column s does not have. Errors wrap ErrSchema.
func (f *Fill) Check(s *Schema) error {
	if f.Rows < 1 {
		return fmt.Errorf("%w: fill: %d rows, want at least 1", ErrSchema, f.Rows)
	}
	kinds := map[string]*Column{}
	for i := range s.Columns {
		c := &s.Columns[i]
		kinds[c.Name] = c
		switch c.Kind {
		case KindNumeric:
			v, ok := f.Mean[c.Name]
			if !ok {
				return fmt.Errorf("%w: fill: no mean for numeric column %q", ErrSchema, c.Name)
			}
			if math.IsNaN(v) || v < c.Min || v > c.Max {
				return fmt.Errorf("%w: fill: column %q: mean %v outside the bounds [%v, %v]", ErrSchema, c.Name, v, c.Min, c.Max)
			}
		case KindCategorical:
			v, ok := f.Mode[c.Name]
			if !ok {
				return fmt.Errorf("%w: fill: no category for categorical column %q", ErrSchema, c.Name)
			}
			if !slices.Contains(c.Categories, v) {
				return fmt.Errorf("%w: fill: column %q: category %q is not one of the column's", ErrSchema, c.Name, v)
			}
		}
	}
	for name := range f.Mean {
		if c := kinds[name]; c == nil || c.Kind != KindNumeric {
			return fmt.Errorf("%w: fill: a mean for %q, not a numeric column of the schema", ErrSchema, name)
		}
	}
	for name := range f.Mode {
		if c := kinds[name]; c == nil || c.Kind != KindCategorical {
			return fmt.Errorf("%w: fill: a category for %q, not a categorical column of the schema", ErrSchema, name)
		}
	}
	return nil
}
