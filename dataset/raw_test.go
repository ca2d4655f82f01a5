package dataset

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

// TestWriteRawCSVRoundTrip: written in raw units and read back with the same
// schema, every dataset gives exactly the same features and labels.
func TestWriteRawCSVRoundTrip(t *testing.T) {
	r := rng.ForName(t.Name())
	var raw strings.Builder
	raw.WriteString("size,colour,weight,label\n")
	for i := range 300 {
		fmt.Fprintf(&raw, "%g,%s,%.4g,%d\n", float64(r.IntN(1000000)-200000)/1000, []string{"red", "green", "?"}[i%3], r.NormFloat64()*1e-4, i%3)
	}
	inferred, err := ReadCSV(strings.NewReader(raw.String()), "raw.csv", CSVOptions{Label: "label"})
	if err != nil {
		t.Fatal(err)
	}
	// Public bounds narrower than the data: clipped values come back as the bounds.
	narrow := &Schema{Version: 1, Label: "label", Classes: []string{"0", "1", "2"}, Columns: []Column{
		{Name: "size", Kind: KindNumeric, Min: 0, Max: 500}, {Name: "colour", Kind: KindCategorical, Categories: []string{"?", "green", "red"}},
		{Name: "weight", Kind: KindNumeric, Min: -1.3e-4, Max: 0.7e-4}}}
	clipped, err := ReadCSV(strings.NewReader(raw.String()), "raw.csv", CSVOptions{Schema: narrow})
	if err != nil {
		t.Fatal(err)
	}
	// Odd bounds, where mid + x*half is rarely the exact pre-image.
	odd := &Schema{Version: 1, Label: "label", Classes: []string{"0", "1", "2"}, Columns: []Column{
		{Name: "size", Kind: KindNumeric, Min: -1e6 + 0.3, Max: 7e-3}, {Name: "colour", Kind: KindIgnore},
		{Name: "weight", Kind: KindNumeric, Min: -0.1, Max: 3}}}
	oddD, err := ReadCSV(strings.NewReader(raw.String()), "raw.csv", CSVOptions{Schema: odd})
	if err != nil {
		t.Fatal(err)
	}
	syn, err := Synthetic(DefaultSynthetic(200, 3))
	if err != nil {
		t.Fatal(err)
	}
	adult, err := Adult()
	if err != nil {
		t.Fatal(err)
	}
	adult, _ = adult.Split(3000)
	for _, d := range []*Dataset{inferred, clipped, oddD, syn, adult} {
		t.Run(d.Name+"/"+fmt.Sprint(d.Dim()), func(t *testing.T) {
			var b bytes.Buffer
			if err := d.WriteRawCSV(&b); err != nil {
				t.Fatal(err)
			}
			back, err := ReadCSV(bytes.NewReader(b.Bytes()), "back.csv", CSVOptions{Schema: d.Schema})
			if err != nil {
				t.Fatal(err)
			}
			if !sameData(back, d) {
				for i := range d.X {
					for j := range d.X[i] {
						if d.X[i][j] != back.X[i][j] {
							t.Fatalf("row %d feature %s: %v written, %v read back", i, d.Features[j], d.X[i][j], back.X[i][j])
						}
					}
				}
				t.Fatal("labels differ")
			}
		})
	}
	// Raw values keep their text where it was the shortest form.
	var b bytes.Buffer
	if err := inferred.WriteRawCSV(&b); err != nil {
		t.Fatal(err)
	}
	if b.String() != raw.String() {
		got, want := strings.Split(b.String(), "\n"), strings.Split(raw.String(), "\n")
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("raw text changed: line %d %q, was %q", i+1, got[i], want[i])
			}
		}
	}
	// Synthetic data has identity bounds: raw is the scaled form.
	var w1, w2 bytes.Buffer
	if err := syn.WriteRawCSV(&w1); err != nil {
		t.Fatal(err)
	}
	if err := syn.WriteCSV(&w2); err != nil {
		t.Fatal(err)
	}
	if w1.String() != w2.String() {
		t.Fatal("identity schema: WriteRawCSV differs from WriteCSV")
	}
}

func TestDecodeNumericNearest(t *testing.T) {
	c := &Column{Name: "x", Kind: KindNumeric, Min: 3, Max: 11}
	for _, x := range []float64{-1, 1, 0, 1.0 / 3, -0.123456789, math.Nextafter(1, 0)} {
		s, err := decodeNumeric(x, c)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := parseValue(s)
		if got := clip((v - 7) / 4); math.Abs(got-x) > 1e-15 {
			t.Errorf("decode(%v) = %s, encodes to %v", x, s, got)
		}
	}
}
