package dataset

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestFill: FillOf takes a numeric column's mean (raw units) and a
// categorical column's most frequent category from encoded rows; ReadCSV
// with those values fills a one-row file (which has nothing of its own to
// fill from) exactly as the same row among others; Check refuses values
// that do not fit the schema.
func TestFill(t *testing.T) {
	s := &Schema{Version: 1, Label: "y", Classes: []string{"a", "b"}, Columns: []Column{
		{Name: "x", Kind: KindNumeric, Min: 0, Max: 10}, {Name: "c", Kind: KindCategorical, Categories: []string{"u", "v"}},
		{Name: "z", Kind: KindIgnore}}}
	train, err := ReadCSV(strings.NewReader("x,c,y\n2,u,a\n4,v,b\n9,v,a\n"), "train.csv", CSVOptions{Schema: s})
	if err != nil {
		t.Fatal(err)
	}
	f := FillOf(train)
	// mean 5: scaled (-0.6 - 0.2 + 0.8)/3 = 0 up to rounding, back to raw 5 ± a few ulps.
	if m := f.Mean["x"]; m < 5-1e-12 || m > 5+1e-12 || f.Mode["c"] != "v" || f.Rows != 3 || len(f.Mean) != 1 || len(f.Mode) != 1 {
		t.Fatalf("fill %+v, want mean x 5, mode c v, 3 rows", f)
	}
	if err := f.Check(s); err != nil {
		t.Fatal(err)
	}
	gap := "NA,,a\n"
	for _, p := range []MissingPolicy{MissingMean, MissingZero} {
		alone, err := ReadCSV(strings.NewReader("x,c,y\n"+gap), "one.csv", CSVOptions{Schema: s, Missing: p, Fill: f})
		if err != nil {
			t.Fatalf("%s: a one-row file with gaps: %v", p, err)
		}
		among, err := ReadCSV(strings.NewReader("x,c,y\n10,u,b\n"+gap+"10,u,a\n"), "many.csv", CSVOptions{Schema: s, Missing: p, Fill: f})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := alone.X[0], among.X[1]; !slices.Equal(got, want) {
			t.Fatalf("%s: the row encodes to %v alone, %v among others", p, got, want)
		}
		if p == MissingMean && alone.X[0][0] != clip((f.Mean["x"]-5)/5) {
			t.Fatalf("mean: x filled with %v, want the stored mean scaled", alone.X[0][0])
		}
		if alone.X[0][2] != 1 {
			t.Fatalf("%s: c filled with %v, want the stored mode v", p, alone.X[0][1:])
		}
	}
	// Negative control: without Fill the one-row file has nothing to fill from.
	if _, err := ReadCSV(strings.NewReader("x,c,y\n"+gap), "one.csv", CSVOptions{Schema: s, Missing: MissingMean}); !errors.Is(err, ErrMissing) {
		t.Fatalf("a one-row file with gaps and no fill values: %v", err)
	}
	for name, bad := range map[string]*Fill{
		"no rows":         {Rows: 0, Mean: map[string]float64{"x": 5}, Mode: map[string]string{"c": "u"}},
		"no mean":         {Rows: 1, Mode: map[string]string{"c": "u"}},
		"mean off bounds": {Rows: 1, Mean: map[string]float64{"x": 11}, Mode: map[string]string{"c": "u"}},
		"unknown mode":    {Rows: 1, Mean: map[string]float64{"x": 5}, Mode: map[string]string{"c": "w"}},
		"extra column":    {Rows: 1, Mean: map[string]float64{"x": 5, "z": 1}, Mode: map[string]string{"c": "u"}},
		"mode of numeric": {Rows: 1, Mean: map[string]float64{"x": 5}, Mode: map[string]string{"c": "u", "x": "u"}},
	} {
		if err := bad.Check(s); !errors.Is(err, ErrSchema) {
			t.Errorf("%s: Check gave %v, want ErrSchema", name, err)
		}
	}
}
