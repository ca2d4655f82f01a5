package dataset

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// small is a 6-row, 2-feature, 3-class dataset whose rows are recognisable
// by their first value (row i has X[i][0] == i/10).
func small() *Dataset {
	d := &Dataset{Name: "small", Classes: []string{"a", "b", "c"}, Features: []string{"f0", "f1"}}
	for i := range 6 {
		d.X = append(d.X, []float64{float64(i) / 10, -float64(i) / 10})
		d.Y = append(d.Y, i%3)
	}
	d.Schema = d.IdentitySchema()
	return d
}

// rowIDs lists the first value of each row as an integer id.
func rowIDs(d *Dataset) []int {
	ids := make([]int, d.Len())
	for i, x := range d.X {
		ids[i] = int(math.Round(x[0] * 10))
	}
	return ids
}

// sameData reports whether a and b hold bit-identical rows and labels.
func sameData(a, b *Dataset) bool {
	if a.Len() != b.Len() || !slices.Equal(a.Y, b.Y) {
		return false
	}
	for i := range a.X {
		if len(a.X[i]) != len(b.X[i]) {
			return false
		}
		for j := range a.X[i] {
			if math.Float64bits(a.X[i][j]) != math.Float64bits(b.X[i][j]) {
				return false
			}
		}
	}
	return true
}

func TestValidate(t *testing.T) {
	if err := small().Validate(); err != nil {
		t.Fatalf("valid dataset rejected: %v", err)
	}
	cases := []struct {
		name   string
		mutate func(d *Dataset)
		want   string
	}{
		{"fewer labels", func(d *Dataset) { d.Y = d.Y[:5] }, "6 rows and 5 labels"},
		{"one class", func(d *Dataset) { d.Classes = d.Classes[:1] }, "1 classes"},
		{"duplicate class", func(d *Dataset) { d.Classes[2] = "a" }, `class "a" listed twice`},
		{"no features", func(d *Dataset) { d.Features = nil; d.Schema = nil }, "no features"},
		{"schema dim", func(d *Dataset) { d.Schema.Columns = d.Schema.Columns[:1] }, "schema has 1 features"},
		{"short row", func(d *Dataset) { d.X[3] = d.X[3][:1] }, "row 3 has 1 features"},
		{"above 1", func(d *Dataset) { d.X[2][1] = 1.0000001 }, "row 2 feature 1"},
		{"below -1", func(d *Dataset) { d.X[2][0] = -2 }, "row 2 feature 0"},
		{"NaN", func(d *Dataset) { d.X[4][0] = math.NaN() }, "is NaN"},
		{"+Inf", func(d *Dataset) { d.X[4][0] = math.Inf(1) }, "is +Inf"},
		{"label", func(d *Dataset) { d.Y[1] = 3 }, "row 1 label 3"},
		{"negative label", func(d *Dataset) { d.Y[1] = -1 }, "row 1 label -1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := small()
			c.mutate(d)
			err := d.Validate()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrInvalid containing %q", err, c.want)
			}
		})
	}
}

func TestSubsetShuffleSplit(t *testing.T) {
	d := small()
	s := d.Subset([]int{4, 1, 1})
	if got := rowIDs(s); !slices.Equal(got, []int{4, 1, 1}) || !slices.Equal(s.Y, []int{1, 1, 1}) {
		t.Fatalf("Subset rows %v labels %v", got, s.Y)
	}
	if &s.X[0][0] != &d.X[4][0] {
		t.Fatal("Subset copied a row instead of sharing it")
	}
	s.Y[0] = 2
	if d.Y[4] != 1 {
		t.Fatal("Subset shares the label slice")
	}

	a, b := d.Shuffle(7), d.Shuffle(7)
	if !sameData(a, b) {
		t.Fatal("Shuffle with the same seed differs")
	}
	ids := rowIDs(a)
	if slices.Sort(ids); !slices.Equal(ids, []int{0, 1, 2, 3, 4, 5}) {
		t.Fatalf("Shuffle is not a permutation: %v", ids)
	}
	// Six rows have 720 orders; 20 seeds all giving the identity would mean
	// no shuffling at all (probability 720^-20 otherwise).
	moved := false
	for seed := range uint64(20) {
		moved = moved || !slices.Equal(rowIDs(d.Shuffle(seed)), []int{0, 1, 2, 3, 4, 5})
	}
	if !moved {
		t.Fatal("Shuffle never moved a row")
	}

	for _, c := range []struct{ first, na, nb int }{{2, 2, 4}, {0, 0, 6}, {6, 6, 0}, {-3, 0, 6}, {9, 6, 0}} {
		a, b := d.Split(c.first)
		if a.Len() != c.na || b.Len() != c.nb || len(a.Y) != c.na || len(b.Y) != c.nb {
			t.Fatalf("Split(%d): %d + %d rows, want %d + %d", c.first, a.Len(), b.Len(), c.na, c.nb)
		}
	}
	a, b = d.Split(2)
	if got := append(rowIDs(a), rowIDs(b)...); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5}) {
		t.Fatalf("Split reordered rows: %v", got)
	}
	a.X = append(a.X, []float64{0.9, 0.9})
	a.Y = append(a.Y, 0)
	if rowIDs(b)[0] != 2 || b.Y[0] != 2 {
		t.Fatal("appending to the first half overwrote the second")
	}
}

func TestPartition(t *testing.T) {
	d, err := Synthetic(DefaultSynthetic(1003, 1))
	if err != nil {
		t.Fatal(err)
	}
	shards, err := d.Partition(10, nil, 9)
	if err != nil {
		t.Fatal(err)
	}
	again, err := d.Partition(10, nil, 9)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[*float64]bool{}
	for i, s := range shards {
		if s.Len() != 100 { // floor(1003/10); 3 rows left out
			t.Fatalf("shard %d has %d rows, want 100", i, s.Len())
		}
		if want := "synthetic/owner-" + strconv.Itoa(i); s.Name != want {
			t.Fatalf("shard %d named %q, want %q", i, s.Name, want)
		}
		if !sameData(s, again[i]) {
			t.Fatalf("shard %d differs between two calls with the same seed", i)
		}
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		for _, x := range s.X {
			if seen[&x[0]] {
				t.Fatal("a row is in two shards")
			}
			seen[&x[0]] = true
		}
	}
	other, err := d.Partition(10, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if sameData(other[0], shards[0]) {
		t.Fatal("different seeds gave the same first shard")
	}

	sized, err := d.Partition(3, []int{1, 2, 1000}, 4)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 2, 1000} {
		if sized[i].Len() != want {
			t.Fatalf("sized shard %d has %d rows, want %d", i, sized[i].Len(), want)
		}
	}

	bad := []struct {
		name   string
		owners int
		sizes  []int
		want   string
	}{
		{"zero owners", 0, nil, "owners must be at least 1"},
		{"more owners than rows", 1004, nil, "1003 rows cannot give 1004 owners"},
		{"sizes count", 2, []int{1}, "1 sizes for 2 owners"},
		{"too many rows", 3, []int{500, 500, 10}, "sum to 1010, more than the 1003 rows"},
		{"zero size", 2, []int{5, 0}, "owner 1 has size 0"},
		{"negative size", 2, []int{-5, 10}, "owner 0 has size -5"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := d.Partition(c.owners, c.sizes, 1)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrConfig containing %q", err, c.want)
			}
		})
	}
}

func TestWriteCSVRoundTrip(t *testing.T) {
	d, err := Synthetic(DefaultSynthetic(300, 2))
	if err != nil {
		t.Fatal(err)
	}
	// Values that a naive rescaling would not reproduce exactly.
	d.X[0][0], d.X[0][1], d.X[0][2] = 1e-300, -0.1, math.Nextafter(1, 0)
	// Names that need quoting.
	d.Features[3], d.Features[4] = `a,b`, `say "hi"`
	d.Classes = []string{`<="50K"`, "x,y"}
	d.Schema = d.IdentitySchema()
	var buf bytes.Buffer
	if err := d.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadCSV(&buf, "shard.csv", CSVOptions{Schema: d.IdentitySchema()})
	if err != nil {
		t.Fatal(err)
	}
	if !sameData(back, d) {
		t.Fatal("the CSV round trip changed the data")
	}
	if back.Schema.Digest() != d.Schema.Digest() || !slices.Equal(back.Features, d.Features) {
		t.Fatalf("features %q after the round trip, want %q", back.Features, d.Features)
	}
}

func TestWriteCSVErrors(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(d *Dataset)
		want   string
	}{
		{"feature named label", func(d *Dataset) { d.Features[1] = "label" }, `a feature is named "label"`},
		{"short row", func(d *Dataset) { d.X[2] = d.X[2][:1] }, "row 2 has 1 features"},
		{"bad label", func(d *Dataset) { d.Y[5] = 7 }, "row 5 has no label"},
		{"missing label", func(d *Dataset) { d.Y = d.Y[:4] }, "row 4 has no label"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := small()
			c.mutate(d)
			err := d.WriteCSV(&bytes.Buffer{})
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrInvalid containing %q", err, c.want)
			}
		})
	}
	if err := small().WriteCSV(failingWriter{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("write error not reported: %v", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestIdentitySchema(t *testing.T) {
	d := small()
	s := d.IdentitySchema()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.Label != "label" || !slices.Equal(s.Classes, d.Classes) || !slices.Equal(s.Features(), d.Features) {
		t.Fatalf("identity schema %+v", s)
	}
	s.Classes[0] = "changed"
	if d.Classes[0] != "a" {
		t.Fatal("IdentitySchema shares the class slice")
	}
}
