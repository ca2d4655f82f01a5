// Package dataset holds ppboost's datasets: the Dataset type (features
// scaled to [-1, 1] with public bounds, integer labels), public feature
// schemas, loaders for CSV and IDX (MNIST format), a seeded synthetic
// generator shaped like scikit-learn's make_classification, a reproducible
// partitioner into owner shards, and the embedded real data (UCI Adult,
// Fashion-MNIST T-shirt/Shirt).
//
// It must not learn anything: no weights, no models, no privacy noise.
// Feature bounds must be public: bounds computed from private data leak it,
// and the loaders warn when they do so.
package dataset

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/ppboost/ppboost/crypto/rng"
)

// Dataset is a labelled dataset whose features are scaled to [-1, 1].
type Dataset struct {
	Name     string
	X        [][]float64 // n rows x d features, each in [-1, 1]
	Y        []int       // labels in 0..K-1
	Classes  []string    // class names, len K
	Features []string    // feature names, len d
	Schema   *Schema     // maps raw records to features
}

// ErrInvalid marks a dataset that breaks its invariants.
var ErrInvalid = errors.New("invalid dataset")

func (d *Dataset) Len() int        { return len(d.X) }
func (d *Dataset) NumClasses() int { return len(d.Classes) }

// Dim is the number of features.
func (d *Dataset) Dim() int { return len(d.Features) }

// Validate checks shapes, label range and feature range.
func (d *Dataset) Validate() error {
	if len(d.X) != len(d.Y) {
		return fmt.Errorf("%w %q: %d rows and %d labels", ErrInvalid, d.Name, len(d.X), len(d.Y))
	}
	if len(d.Classes) < 2 {
		return fmt.Errorf("%w %q: %d classes, need at least 2", ErrInvalid, d.Name, len(d.Classes))
	}
	for i, x := range d.X {
		if len(x) != len(d.Features) {
			return fmt.Errorf("%w %q: row %d has %d features, want %d", ErrInvalid, d.Name, i, len(x), len(d.Features))
		}
		for j, v := range x {
			if math.IsNaN(v) || v < -1 || v > 1 {
				return fmt.Errorf("%w %q: row %d feature %d is %v, outside [-1, 1]", ErrInvalid, d.Name, i, j, v)
			}
		}
		if y := d.Y[i]; y < 0 || y >= len(d.Classes) {
			return fmt.Errorf("%w %q: row %d label %d outside [0, %d)", ErrInvalid, d.Name, i, y, len(d.Classes))
		}
	}
	return nil
}

// Subset returns the rows idx (sharing the row slices).
func (d *Dataset) Subset(idx []int) *Dataset {
	s := &Dataset{Name: d.Name, X: make([][]float64, len(idx)), Y: make([]int, len(idx)),
		Classes: d.Classes, Features: d.Features, Schema: d.Schema}
	for k, i := range idx {
		s.X[k], s.Y[k] = d.X[i], d.Y[i]
	}
	return s
}

// Shuffle returns a copy with the rows permuted reproducibly from seed.
func (d *Dataset) Shuffle(seed uint64) *Dataset {
	perm := rng.Derive(seed, 0x5348).Perm(d.Len())
	return d.Subset(perm)
}

// Split returns the first `first` rows and the rest.
func (d *Dataset) Split(first int) (a, b *Dataset) {
	first = max(0, min(first, d.Len()))
	a = &Dataset{Name: d.Name, X: d.X[:first:first], Y: d.Y[:first:first], Classes: d.Classes, Features: d.Features, Schema: d.Schema}
	b = &Dataset{Name: d.Name, X: d.X[first:], Y: d.Y[first:], Classes: d.Classes, Features: d.Features, Schema: d.Schema}
	return a, b
}

// Partition shuffles the rows with seed and cuts them into owner shards.
// With sizes nil the shards get floor(n/owners) rows each and the remainder
// is left out; otherwise len(sizes) must be owners and sum(sizes) <= n.
func (d *Dataset) Partition(owners int, sizes []int, seed uint64) ([]*Dataset, error) {
	if owners < 1 {
		return nil, fmt.Errorf("partition %q: owners must be at least 1, got %d", d.Name, owners)
	}
	n := d.Len()
	if sizes == nil {
		if n < owners {
			return nil, fmt.Errorf("partition %q: %d rows cannot fill %d owners", d.Name, n, owners)
		}
		sizes = make([]int, owners)
		for i := range sizes {
			sizes[i] = n / owners
		}
	}
	if len(sizes) != owners {
		return nil, fmt.Errorf("partition %q: %d sizes for %d owners", d.Name, len(sizes), owners)
	}
	total := 0
	for i, s := range sizes {
		if s < 1 {
			return nil, fmt.Errorf("partition %q: owner %d size %d, must be at least 1", d.Name, i, s)
		}
		total += s
	}
	if total > n {
		return nil, fmt.Errorf("partition %q: sizes sum to %d, only %d rows", d.Name, total, n)
	}
	perm := rng.Derive(seed, 0x5041).Perm(n)
	out := make([]*Dataset, owners)
	at := 0
	for i, s := range sizes {
		out[i] = d.Subset(perm[at : at+s])
		out[i].Name = fmt.Sprintf("%s/owner-%d", d.Name, i)
		at += s
	}
	return out, nil
}

// WriteCSV writes the scaled features and the class name of each row:
// header "<features>...,label". IdentitySchema describes the result.
func (d *Dataset) WriteCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, f := range d.Features {
		bw.WriteString(csvField(f))
		bw.WriteByte(',')
	}
	bw.WriteString("label\n")
	buf := make([]byte, 0, 32)
	for i, x := range d.X {
		for _, v := range x {
			buf = strconv.AppendFloat(buf[:0], v, 'g', -1, 64)
			bw.Write(buf)
			bw.WriteByte(',')
		}
		bw.WriteString(csvField(d.Classes[d.Y[i]]))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

func csvField(s string) string {
	for _, c := range s {
		if c == ',' || c == '"' || c == '\n' {
			return strconv.Quote(s)
		}
	}
	return s
}

// IdentitySchema describes data already scaled to [-1, 1]: every feature is
// numeric with bounds [-1, 1], the label column is "label".
func (d *Dataset) IdentitySchema() *Schema {
	s := &Schema{Version: 1, Label: "label", Classes: append([]string(nil), d.Classes...)}
	for _, f := range d.Features {
		s.Columns = append(s.Columns, Column{Name: f, Kind: KindNumeric, Min: -1, Max: 1})
	}
	return s
}
