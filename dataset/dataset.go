package dataset

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/ppboost/ppboost/crypto/rng"
)

// Dataset is a labelled dataset whose features are scaled to [-1, 1] with
// public bounds.
//
// Rows are shared between a Dataset and the Subset, Shuffle, Split and
// Partition results made from it: treat X as read-only once shared. Classes,
// Features and Schema are shared too.
type Dataset struct {
	Name     string
	X        [][]float64 // n rows x d features, every value in [-1, 1] (public-bound scaling)
	Y        []int       // labels in 0..K-1
	Classes  []string    // class names, len K (index = label)
	Features []string    // feature names, len d
	Schema   *Schema     // maps raw records to features; for synthetic/IDX data an identity schema
}

// Stream labels for rng.Derive, so that shuffling and partitioning with the
// same seed draw independent permutations.
const (
	streamShuffle       = 0x5348 // "SH"
	streamPartition     = 0x5041 // "PA"
	streamSynthetic     = 0x53594e
	streamSyntheticDraw = 0x4452 // "DR", then the draw number
)

// Len is the number of rows.
func (d *Dataset) Len() int { return len(d.X) }

// Dim is the number of features.
func (d *Dataset) Dim() int { return len(d.Features) }

// NumClasses is the number of classes K.
func (d *Dataset) NumClasses() int { return len(d.Classes) }

// Validate checks the invariants: as many labels as rows, at least two
// distinct classes, every row with Dim values, finite and in [-1, 1], every
// label in 0..K-1, and a schema (if any) with Dim features.
func (d *Dataset) Validate() error {
	if len(d.X) != len(d.Y) {
		return fmt.Errorf("%w %q: %d rows and %d labels", ErrInvalid, d.Name, len(d.X), len(d.Y))
	}
	if len(d.Classes) < 2 {
		return fmt.Errorf("%w %q: %d classes, need at least 2", ErrInvalid, d.Name, len(d.Classes))
	}
	if dup := firstDuplicate(d.Classes); dup != "" {
		return fmt.Errorf("%w %q: class %q listed twice", ErrInvalid, d.Name, dup)
	}
	if len(d.Features) == 0 {
		return fmt.Errorf("%w %q: no features", ErrInvalid, d.Name)
	}
	if d.Schema != nil && d.Schema.Dim() != len(d.Features) {
		return fmt.Errorf("%w %q: schema has %d features, dataset %d", ErrInvalid, d.Name, d.Schema.Dim(), len(d.Features))
	}
	for i, x := range d.X {
		if len(x) != len(d.Features) {
			return fmt.Errorf("%w %q: row %d has %d features, want %d", ErrInvalid, d.Name, i, len(x), len(d.Features))
		}
		for j, v := range x {
			// NaN fails both comparisons, so test it explicitly; ±Inf fail the range.
			if math.IsNaN(v) || v < -1 || v > 1 {
				return fmt.Errorf("%w %q: row %d feature %d (%s) is %v, outside [-1, 1]", ErrInvalid, d.Name, i, j, d.Features[j], v)
			}
		}
		if y := d.Y[i]; y < 0 || y >= len(d.Classes) {
			return fmt.Errorf("%w %q: row %d label %d outside [0, %d)", ErrInvalid, d.Name, i, y, len(d.Classes))
		}
	}
	return nil
}

// header returns a Dataset with d's name, classes, features and schema and
// room for n rows.
func (d *Dataset) header(n int) *Dataset {
	return &Dataset{Name: d.Name, X: make([][]float64, n), Y: make([]int, n),
		Classes: d.Classes, Features: d.Features, Schema: d.Schema}
}

// Subset returns the rows idx, in that order, sharing the row slices (only the
// slices of row headers and labels are new). Every index must be in
// [0, Len()); like slice indexing, an index out of range panics.
func (d *Dataset) Subset(idx []int) *Dataset {
	s := d.header(len(idx))
	for k, i := range idx {
		s.X[k], s.Y[k] = d.X[i], d.Y[i]
	}
	return s
}

// Shuffle returns a copy with the rows permuted reproducibly from seed (the
// rows themselves are shared).
func (d *Dataset) Shuffle(seed uint64) *Dataset {
	return d.Subset(rng.Derive(seed, streamShuffle).Perm(d.Len()))
}

// Split returns the first `first` rows and the rest, without shuffling.
// first is clamped to [0, Len()]. The two halves share d's backing arrays
// with capacities cut so that appending to one never overwrites the other.
func (d *Dataset) Split(first int) (a, b *Dataset) {
	first = max(0, min(first, d.Len()))
	a, b = d.header(0), d.header(0)
	a.X, a.Y = d.X[:first:first], d.Y[:first:first]
	b.X, b.Y = d.X[first:], d.Y[first:]
	return a, b
}

// Partition splits the rows into `owners` shards reproducibly from seed: it
// shuffles the rows, then cuts consecutive runs. With sizes == nil every
// shard gets floor(n/owners) rows and the n mod owners remaining rows are left
// out (in no shard). Otherwise len(sizes) must equal owners, every size must
// be at least 1 and sum(sizes) <= n; the rows beyond the sum are left out.
// Shard i is named "<name>/owner-<i>" and shares the rows with d.
func (d *Dataset) Partition(owners int, sizes []int, seed uint64) ([]*Dataset, error) {
	if owners < 1 {
		return nil, fmt.Errorf("%w: partition %q: owners must be at least 1, got %d", ErrConfig, d.Name, owners)
	}
	n := d.Len()
	if sizes == nil {
		if n < owners {
			return nil, fmt.Errorf("%w: partition %q: %d rows cannot give %d owners one row each", ErrConfig, d.Name, n, owners)
		}
		sizes = make([]int, owners)
		for i := range sizes {
			sizes[i] = n / owners
		}
	}
	if len(sizes) != owners {
		return nil, fmt.Errorf("%w: partition %q: %d sizes for %d owners", ErrConfig, d.Name, len(sizes), owners)
	}
	total := 0
	for i, s := range sizes {
		if s < 1 {
			return nil, fmt.Errorf("%w: partition %q: owner %d has size %d, must be at least 1", ErrConfig, d.Name, i, s)
		}
		if total += s; total > n {
			return nil, fmt.Errorf("%w: partition %q: the sizes of owners 0..%d already sum to %d, more than the %d rows", ErrConfig, d.Name, i, total, n)
		}
	}
	perm := rng.Derive(seed, streamPartition).Perm(n)
	out := make([]*Dataset, owners)
	at := 0
	for i, s := range sizes {
		out[i] = d.Subset(perm[at : at+s : at+s])
		out[i].Name = d.Name + "/owner-" + strconv.Itoa(i)
		at += s
	}
	return out, nil
}

// LabelColumn is the label column's name in the CSV files WriteCSV writes
// and in IdentitySchema.
const LabelColumn = "label"

// WriteCSV writes the scaled features and the class name of every row under
// the header "<feature names>...,label". Floats are written in their
// shortest representation that parses back to the same value, so ReadCSV
// with IdentitySchema() reproduces d exactly. Names and classes containing a
// comma, quote or line break are quoted (RFC 4180); surrounding space does
// not survive the round trip, because ReadCSV trims every field.
func (d *Dataset) WriteCSV(w io.Writer) error {
	for _, f := range d.Features {
		if f == LabelColumn {
			return fmt.Errorf("%w %q: a feature is named %q like the label column", ErrInvalid, d.Name, LabelColumn)
		}
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, f := range d.Features {
		bw.WriteString(csvQuote(f))
		bw.WriteByte(',')
	}
	bw.WriteString(LabelColumn + "\n")
	classes := make([]string, len(d.Classes))
	for k, c := range d.Classes {
		classes[k] = csvQuote(c)
	}
	buf := make([]byte, 0, 32)
	for i, x := range d.X {
		if len(x) != len(d.Features) {
			return fmt.Errorf("%w %q: row %d has %d features, want %d", ErrInvalid, d.Name, i, len(x), len(d.Features))
		}
		if i >= len(d.Y) || d.Y[i] < 0 || d.Y[i] >= len(classes) {
			return fmt.Errorf("%w %q: row %d has no label in [0, %d)", ErrInvalid, d.Name, i, len(classes))
		}
		for _, v := range x {
			buf = strconv.AppendFloat(buf[:0], v, 'g', -1, 64)
			bw.Write(buf)
			bw.WriteByte(',')
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

// csvQuote quotes s for a CSV field when it must be (RFC 4180 doubling of
// quotes). Empty strings and surrounding space are quoted too, to be explicit.
func csvQuote(s string) string {
	if s == "" || strings.ContainsAny(s, ",\"\r\n") || strings.TrimSpace(s) != s {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// IdentitySchema describes data already scaled to [-1, 1] as WriteCSV writes
// it: every feature a numeric column with bounds [-1, 1] (encoded exactly,
// without rounding), label column "label", classes d.Classes.
func (d *Dataset) IdentitySchema() *Schema {
	s := &Schema{Version: 1, Label: LabelColumn, Classes: append([]string(nil), d.Classes...),
		Columns: make([]Column, len(d.Features))}
	for j, f := range d.Features {
		s.Columns[j] = Column{Name: f, Kind: KindNumeric, Min: -1, Max: 1}
	}
	return s
}

// rowArena hands out rows of dim values carved from chunks, for loaders
// that do not know the row count in advance: chunks double from 16 rows up to
// about arenaChunk values, so the allocation is the data's size plus at most
// one chunk, in a few allocations, where growing one slice would copy it
// again and again (and a lying header costs nothing until data arrives).
type rowArena struct {
	dim   int
	buf   []float64
	chunk int // rows in the next chunk
}

const arenaChunk = 1 << 16

func (a *rowArena) next() []float64 {
	if len(a.buf) < a.dim {
		a.chunk = max(16, min(2*a.chunk, arenaChunk/max(a.dim, 1)))
		a.buf = make([]float64, a.chunk*a.dim)
	}
	r := a.buf[:a.dim:a.dim]
	a.buf = a.buf[a.dim:]
	return r
}
