package dataset

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestAdult(t *testing.T) {
	d, err := Adult()
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 32561 || d.Dim() != 108 || d.NumClasses() != 2 || d.Name != "adult" {
		t.Fatalf("adult: %d rows, %d features, %d classes", d.Len(), d.Dim(), d.NumClasses())
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if d.Schema.Digest() != AdultSchema().Digest() {
		t.Fatal("Adult does not carry AdultSchema")
	}
	pos := 0
	for _, y := range d.Y {
		pos += y
	}
	// UCI documents 7,841 of 32,561 (24.08%) with >50K.
	if pos != 7841 {
		t.Fatalf("%d rows >50K (%.2f%%), want 7841 (24.08%%)", pos, 100*float64(pos)/float64(d.Len()))
	}
	// Row 0: 39, State-gov, 77516, Bachelors, 13, Never-married, ... 2174, 0, 40, United-States, <=50K.
	f := slices.Index(d.Features, "workclass=State-gov")
	if got, want := d.X[0][0], (39.0-53.5)/36.5; d.X[0][f] != 1 || got != want || d.Y[0] != 0 {
		t.Fatalf("row 0: age %v (want %v), workclass=State-gov %v, label %d", got, want, d.X[0][f], d.Y[0])
	}
}

// TestAdultSchemaMatchesFile checks the public schema against the embedded
// file: every category in the file is in the schema and every schema
// category occurs in the file, and the observed numeric values lie within
// the public bounds (so nothing is clipped).
func TestAdultSchemaMatchesFile(t *testing.T) {
	observed, err := InferSchema("data/adult.csv.gz", "Salary")
	if err != nil {
		t.Fatal(err)
	}
	public := AdultSchema()
	if !slices.Equal(observed.Classes, public.Classes) {
		t.Fatalf("classes in the file %q, schema %q", observed.Classes, public.Classes)
	}
	if len(observed.Columns) != len(public.Columns) {
		t.Fatalf("%d columns in the file, %d in the schema", len(observed.Columns), len(public.Columns))
	}
	for i, o := range observed.Columns {
		p := public.Columns[i]
		if o.Name != p.Name || o.Kind != p.Kind {
			t.Fatalf("column %d: file %s (%s), schema %s (%s)", i, o.Name, o.Kind, p.Name, p.Kind)
		}
		switch p.Kind {
		case KindNumeric:
			if o.Min < p.Min || o.Max > p.Max {
				t.Errorf("%s: observed [%v, %v] outside the public [%v, %v]", p.Name, o.Min, o.Max, p.Min, p.Max)
			}
		case KindCategorical:
			want := slices.Sorted(slices.Values(p.Categories))
			if !slices.Equal(o.Categories, want) {
				t.Errorf("%s: file categories %q, schema %q", p.Name, o.Categories, want)
			}
		}
	}
	if public.Dim() != 108 {
		t.Fatalf("AdultSchema has %d features, want 108", public.Dim())
	}
}

func TestFashion(t *testing.T) {
	train, test, err := Fashion()
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 12000 || test.Len() != 2000 || train.Dim() != 49 || test.Dim() != 49 || train.NumClasses() != 2 {
		t.Fatalf("fashion: %d/%d rows, %d features, %d classes", train.Len(), test.Len(), train.Dim(), train.NumClasses())
	}
	if !slices.Equal(train.Classes, []string{"0", "6"}) || !slices.Equal(test.Classes, train.Classes) {
		t.Fatalf("classes %q / %q", train.Classes, test.Classes)
	}
	if test.Schema.Digest() != train.Schema.Digest() {
		t.Fatal("train and test schemas differ")
	}
	for _, d := range []*Dataset{train, test} {
		if err := d.Validate(); err != nil { // includes every value in [-1, 1]
			t.Fatal(err)
		}
		// Fashion-MNIST is balanced: 6,000 / 1,000 images of each class.
		shirts := 0
		for _, y := range d.Y {
			shirts += y
		}
		if shirts*2 != d.Len() {
			t.Fatalf("%s: %d shirts of %d", d.Name, shirts, d.Len())
		}
	}
	// The images are not blank: the central blocks are mostly bright.
	sum := 0.0
	for _, x := range train.X {
		sum += x[3*7+3]
	}
	if mean := sum / float64(train.Len()); mean < -0.5 {
		t.Fatalf("central block mean %.3f: images look empty", mean)
	}
}

func TestNamed(t *testing.T) {
	dir := t.TempDir()
	syn, err := Synthetic(DefaultSynthetic(50, 8))
	if err != nil {
		t.Fatal(err)
	}
	var csvText bytes.Buffer
	if err := syn.WriteCSV(&csvText); err != nil {
		t.Fatal(err)
	}
	withOwn := writeFile(t, dir, "own.csv", csvText.Bytes())
	if err := syn.IdentitySchema().Save(withOwn + ".schema.json"); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "shards")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	withDir := writeFile(t, sub, "owner-000.csv", csvText.Bytes())
	if err := syn.IdentitySchema().Save(filepath.Join(sub, "schema.json")); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(t.TempDir(), "bare.csv")
	writeFile(t, filepath.Dir(bare), "bare.csv", []byte("a,label\n1,x\n2,y\n"))
	badSchema := writeFile(t, t.TempDir(), "b.csv", csvText.Bytes())
	writeFile(t, filepath.Dir(badSchema), "b.csv.schema.json", []byte("{"))
	img := writeFile(t, dir, "img", idxImages(2, func(s, r, c int) byte { return byte(s) }))
	lab := writeFile(t, dir, "lab", idxLabels(1, 2))

	cases := []struct {
		spec       string
		rows, test int
		warned     bool
	}{
		{"synthetic", 50, -1, false},
		{"adult", 32561, -1, false},
		{"fashion", 12000, 2000, false},
		{"csv:" + withOwn, 50, -1, true}, // the schema found beside the file is announced
		{"csv:" + withDir, 50, -1, true},
		{withDir, 50, -1, true}, // a plain .csv path
		{"csv:" + bare, 2, -1, true},
		{"idx:" + img + "," + lab, 2, -1, false},
	}
	for _, c := range cases {
		t.Run(strings.SplitN(c.spec, ":", 2)[0]+"/"+filepath.Base(c.spec), func(t *testing.T) {
			warned := false
			train, test, err := Named(c.spec, 50, 8, func(string) { warned = true })
			if err != nil {
				t.Fatal(err)
			}
			if train.Len() != c.rows || (c.test < 0) != (test == nil) || (test != nil && test.Len() != c.test) || warned != c.warned {
				t.Fatalf("%d rows, test %v, warned %v", train.Len(), test, warned)
			}
			if err := train.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
	same, _, err := Named("csv:"+withOwn, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sameData(same, syn) || same.Schema.Digest() != syn.Schema.Digest() {
		t.Fatal("csv: spec did not reproduce the written data and schema")
	}

	for _, c := range []struct {
		spec string
		is   error
	}{
		{"synthetic", ErrConfig}, // samples 0 below
		{"mnist", ErrConfig},
		{"csv:", ErrConfig},
		{"idx:only-one", ErrConfig},
		{"idx:a,b,c", ErrConfig},
		{"csv:" + filepath.Join(dir, "missing.csv"), os.ErrNotExist},
		{"csv:" + badSchema, ErrSchema},
		{"idx:" + img + "," + filepath.Join(dir, "nolab"), os.ErrNotExist},
	} {
		t.Run("error/"+filepath.Base(c.spec), func(t *testing.T) {
			_, _, err := Named(c.spec, 0, 1, nil)
			if !errors.Is(err, c.is) {
				t.Fatalf("Named(%q) err = %v, want %v", c.spec, err, c.is)
			}
		})
	}
}

// SchemaBeside finds X.csv.schema.json, then X.schema.json (what `ppboost
// schema infer --out X.schema.json` writes), then schema.json, in that
// order; a file without any returns none.
func TestSchemaBesideOrder(t *testing.T) {
	dir := t.TempDir()
	data := writeFile(t, dir, "wine.csv", []byte("a,label\n1,x\n"))
	one := &Schema{Version: SchemaVersion, Label: "label", Classes: []string{"x", "y"}, Columns: []Column{{Name: "a", Kind: KindNumeric, Min: 0, Max: 1}}}
	if s, from, err := SchemaBeside(data); s != nil || from != "" || err != nil {
		t.Fatalf("no schema yet: %v %q %v", s, from, err)
	}
	for _, name := range []string{"schema.json", "wine.schema.json", "wine.csv.schema.json"} {
		if err := one.Save(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		_, from, err := SchemaBeside(data)
		if err != nil || filepath.Base(from) != name {
			t.Fatalf("after writing %s: found %q, %v", name, from, err)
		}
	}
}
