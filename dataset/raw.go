package dataset

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
)

// WriteRawCSV writes the rows in the raw units of d.Schema, the inverse of
// ReadCSV with that schema: a header of the schema's numeric and
// categorical columns (ignored columns are left out) and its label column,
// then one record per row. Reading the file back with d.Schema gives
// exactly d's features: a numeric value is written as the shortest decimal
// that encodes to the very same float, a categorical one as its category.
// So data partitioned into files keeps its public raw-unit schema, and a
// model trained on the files predicts the same on the original raw file.
//
// Values that were clipped come back as the bound they were clipped to;
// values filled for a missing one (MissingMean) as the nearest raw value.
func (d *Dataset) WriteRawCSV(w io.Writer) error {
	s := d.Schema
	if s == nil {
		return fmt.Errorf("%w %q: no schema to write raw values with", ErrInvalid, d.Name)
	}
	if s.Dim() != d.Dim() {
		return fmt.Errorf("%w %q: schema has %d features, dataset %d", ErrInvalid, d.Name, s.Dim(), d.Dim())
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, c := range s.Columns {
		if c.Kind != KindIgnore {
			bw.WriteString(csvQuote(c.Name))
			bw.WriteByte(',')
		}
	}
	bw.WriteString(csvQuote(s.Label) + "\n")
	classes := make([]string, len(s.Classes))
	for k, c := range s.Classes {
		classes[k] = csvQuote(c)
	}
	for i, x := range d.X {
		if len(x) != s.Dim() {
			return fmt.Errorf("%w %q: row %d has %d features, want %d", ErrInvalid, d.Name, i, len(x), s.Dim())
		}
		if i >= len(d.Y) || d.Y[i] < 0 || d.Y[i] >= len(classes) {
			return fmt.Errorf("%w %q: row %d has no label in [0, %d)", ErrInvalid, d.Name, i, len(classes))
		}
		at := 0
		for _, c := range s.Columns {
			switch c.Kind {
			case KindNumeric:
				v, err := decodeNumeric(x[at], &c)
				if err != nil {
					return fmt.Errorf("%w %q: row %d: %v", ErrInvalid, d.Name, i, err)
				}
				bw.WriteString(v)
				bw.WriteByte(',')
				at++
			case KindCategorical:
				k := -1
				for j, v := range x[at : at+len(c.Categories)] {
					switch {
					case v == 1 && k < 0:
						k = j
					case v != 0:
						k = -2
					}
				}
				if k < 0 {
					return fmt.Errorf("%w %q: row %d: column %q is not one-hot: %v", ErrInvalid, d.Name, i, c.Name, x[at:at+len(c.Categories)])
				}
				bw.WriteString(csvQuote(c.Categories[k]))
				bw.WriteByte(',')
				at += len(c.Categories)
			}
		}
		bw.WriteString(classes[d.Y[i]])
		if err := bw.WriteByte('\n'); err != nil {
			return fmt.Errorf("write %q: %w", d.Name, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %q: %w", d.Name, err)
	}
	return nil
}

// decodeNumeric returns the shortest decimal v that column c encodes to
// exactly x (clip((v-mid)/half) == x, as Encoder computes it), or the one
// encoding nearest to x when no float encodes to x exactly (a filled mean).
func decodeNumeric(x float64, c *Column) (string, error) {
	mid, half := c.scale()
	if mid == 0 && half == 1 { // identity bounds [-1, 1]: exact both ways
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	}
	enc := func(v float64) float64 { return clip((v - mid) / half) }
	v := mid + x*half
	v = max(c.Min, min(c.Max, v))
	// enc is monotone: step one float at a time towards x, and stop at an
	// exact pre-image or where the step would cross x.
	for range 1 << 12 {
		e := enc(v)
		if e == x {
			break
		}
		dir := math.Inf(1)
		if e > x {
			dir = math.Inf(-1)
		}
		w := math.Nextafter(v, dir)
		if f := enc(w); (e < x) != (f < x) || f == x { // crossed or hit
			if math.Abs(f-x) <= math.Abs(e-x) {
				v = w
			}
			break
		}
		v = w
	}
	target := enc(v)
	inside := func(p float64) bool { return p >= c.Min && p <= c.Max }
	if !inside(v) { // a bound that does not encode to exactly ±1
		inside = func(float64) bool { return true }
	}
	// The shortest decimal within the bounds: a clipped value is written
	// as its bound, not as a shorter number beyond it.
	for prec := 1; prec < 17; prec++ {
		s := strconv.FormatFloat(v, 'g', prec, 64)
		if p, err := strconv.ParseFloat(s, 64); err == nil && enc(p) == target && inside(p) && math.Abs(p) <= MaxMagnitude {
			return strconv.FormatFloat(p, 'g', -1, 64), nil // 580, not 5.8e+02
		}
	}
	if math.Abs(v) > MaxMagnitude {
		return "", fmt.Errorf("column %q: raw value %g exceeds the largest allowed magnitude %g", c.Name, v, float64(MaxMagnitude))
	}
	return strconv.FormatFloat(v, 'g', -1, 64), nil
}
