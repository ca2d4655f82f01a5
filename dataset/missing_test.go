package dataset

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestMissingPolicies(t *testing.T) {
	s := &Schema{Version: 1, Label: "y", Classes: []string{"a", "b"}, Columns: []Column{
		{Name: "x", Kind: KindNumeric, Min: 0, Max: 10}, {Name: "c", Kind: KindCategorical, Categories: []string{"u", "v"}}}}
	text := "x,c,y\n2,u,a\nNA,v,b\n6,,a\n?,v,b\n8,v,a\n"
	cases := []struct {
		policy MissingPolicy
		rows   [][]float64
		filled map[string]int
		warn   string
	}{
		{MissingSkip, [][]float64{{-0.6, 1, 0}, {0.6, 0, 1}}, map[string]int{}, "f.csv: dropped 3 rows with a missing value (missing-value policy skip), kept 2"},
		// zero: x=0 is the min, -1; the missing category is the most frequent, v.
		{MissingZero, [][]float64{{-0.6, 1, 0}, {-1, 0, 1}, {0.2, 0, 1}, {-1, 0, 1}, {0.6, 0, 1}}, map[string]int{"x": 2, "c": 1},
			`f.csv: filled 3 missing values (missing-value policy zero): "c" 1, "x" 2`},
		// mean of -0.6, 0.2, 0.6 = 0.0666...
		{MissingMean, [][]float64{{-0.6, 1, 0}, {(-0.6 + 0.2 + 0.6) / 3, 0, 1}, {0.2, 0, 1}, {(-0.6 + 0.2 + 0.6) / 3, 0, 1}, {0.6, 0, 1}},
			map[string]int{"x": 2, "c": 1}, `f.csv: filled 3 missing values (missing-value policy mean)`},
	}
	for _, c := range cases {
		t.Run(c.policy.String(), func(t *testing.T) {
			var rep CSVReport
			var warned []string
			d, err := ReadCSV(strings.NewReader(text), "f.csv", CSVOptions{Schema: s, Missing: c.policy, Report: &rep,
				Warn: func(w string) { warned = append(warned, w) }})
			if err != nil {
				t.Fatal(err)
			}
			if len(d.X) != len(c.rows) {
				t.Fatalf("%d rows, want %d", len(d.X), len(c.rows))
			}
			for i := range c.rows {
				for j := range c.rows[i] {
					if diff := d.X[i][j] - c.rows[i][j]; diff > 1e-15 || diff < -1e-15 {
						t.Fatalf("row %d = %v, want %v", i, d.X[i], c.rows[i])
					}
				}
			}
			if !maps.Equal(rep.Filled, c.filled) || rep.Rows != len(c.rows) {
				t.Fatalf("report %+v", rep)
			}
			if len(warned) != 1 || !strings.Contains(warned[0], c.warn) {
				t.Fatalf("warnings %q, want one containing %q", warned, c.warn)
			}
			if err := d.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
	// Without a policy the first missing value is an error naming file, line, column, value.
	_, err := ReadCSV(strings.NewReader(text), "f.csv", CSVOptions{Schema: s})
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), `f.csv:3: column "x": value "NA": missing value`) {
		t.Fatalf("strict: %v", err)
	}
	// Every row missing: nothing left, or nothing to take a mean from.
	_, err = ReadCSV(strings.NewReader("x,c,y\n,u,a\n"), "f.csv", CSVOptions{Schema: s, Missing: MissingSkip})
	if !errors.Is(err, ErrEmpty) {
		t.Fatalf("skip everything: %v", err)
	}
	_, err = ReadCSV(strings.NewReader("x,c,y\n,u,a\nNA,v,b\n"), "f.csv", CSVOptions{Schema: s, Missing: MissingMean})
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), `column "x"`) {
		t.Fatalf("mean of nothing: %v", err)
	}
	// An empty label is an error whatever the policy.
	_, err = ReadCSV(strings.NewReader("x,c,y\n1,u,\n"), "f.csv", CSVOptions{Schema: s, Missing: MissingSkip})
	if !errors.Is(err, ErrEmptyLabel) || !strings.Contains(err.Error(), "f.csv:2:") {
		t.Fatalf("empty label: %v", err)
	}

	for _, c := range []struct {
		in   string
		want MissingPolicy
	}{{"", MissingError}, {"error", MissingError}, {"skip", MissingSkip}, {"zero", MissingZero}, {"mean", MissingMean}} {
		if p, err := ParseMissingPolicy(c.in); err != nil || p != c.want || (c.in != "" && p.String() != c.in) {
			t.Errorf("ParseMissingPolicy(%q) = %v, %v", c.in, p, err)
		}
	}
	if _, err := ParseMissingPolicy("drop"); !errors.Is(err, ErrConfig) {
		t.Errorf("unknown policy accepted: %v", err)
	}
}

// TestInferNeverGuesses: a numeric column with one bad cell is an error, not
// a categorical column; a column is categorical only when none of its values
// is a number, or when the caller says so.
func TestInferNeverGuesses(t *testing.T) {
	for _, c := range []struct {
		name, text string
		is         error
		want       string
	}{
		{"empty cell", "a,b,label\n1,x,p\n,y,q\n3,x,p\n", ErrMissing, `f.csv:3: column "a": value "": missing value`},
		{"NA", "a,b,label\n1,x,p\n2,y,q\nNA,x,p\n", ErrMissing, `f.csv:4: column "a": value "NA"`},
		{"abc", "a,b,label\n1,x,p\nabc,y,q\n", ErrNotNumber, `f.csv:3: column "a": value "abc": not a number (the column is numeric because line 2 holds "1"`},
		{"1e300", "a,b,label\n1,x,p\n1e300,y,q\n", ErrMagnitude, `f.csv:3: column "a": value "1e300"`},
		{"empty label", "a,b,label\n1,x,p\n2,y,\n", ErrEmptyLabel, `f.csv:3: label column "label": empty label`},
		{"empty category", "a,b,label\n1,x,p\n2,,q\n", ErrMissing, `f.csv:3: column "b": value "": missing value`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadCSV(strings.NewReader(c.text), "f.csv", CSVOptions{Label: "label"})
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %v containing %q", err, c.is, c.want)
			}
		})
	}
	// With a policy the column stays numeric: 2 features, not one-hot codes.
	d, err := ReadCSV(strings.NewReader("a,b,label\n1,x,p\n,y,q\n3,x,p\n"), "f.csv", CSVOptions{Label: "label", Missing: MissingMean})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b=x", "b=y"}; !slices.Equal(d.Features, want) || d.X[1][0] != 0 {
		t.Fatalf("features %q, rows %v", d.Features, d.X)
	}
	// Numeric-looking codes become categories only when asked.
	d, err = ReadCSV(strings.NewReader("zip,label\n10115,p\n20095,q\n"), "f.csv", CSVOptions{Label: "label", Categorical: []string{"zip"}})
	if err != nil || !slices.Equal(d.Features, []string{"zip=10115", "zip=20095"}) {
		t.Fatalf("categorical zip: %v %v", d, err)
	}
	if _, err := ReadCSV(strings.NewReader("zip,label\n1,p\n"), "f.csv", CSVOptions{Label: "label", Categorical: []string{"nope"}}); !errors.Is(err, ErrSchema) {
		t.Fatalf("unknown categorical column: %v", err)
	}
}

func TestClipCounted(t *testing.T) {
	s := &Schema{Version: 1, Label: "y", Classes: []string{"a", "b"}, Columns: []Column{
		{Name: "x", Kind: KindNumeric, Min: 0, Max: 10}, {Name: "z", Kind: KindNumeric, Min: -1, Max: 1}}}
	var rep CSVReport
	var warned []string
	_, err := ReadCSV(strings.NewReader("x,z,y\n-5,0,a\n11,0,b\n12,3,a\n5,0,b\n"), "f.csv",
		CSVOptions{Schema: s, Report: &rep, Warn: func(w string) { warned = append(warned, w) }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Clipped() != 4 || rep.ClipBelow["x"] != 1 || rep.ClipAbove["x"] != 2 || rep.ClipAbove["z"] != 1 {
		t.Fatalf("report %+v", rep)
	}
	want := `f.csv: clipped 4 values to the schema's bounds: "x" 1 below and 2 above [0, 10], "z" 0 below and 1 above [-1, 1]`
	if len(warned) != 1 || warned[0] != want {
		t.Fatalf("warnings %q, want %q", warned, want)
	}
}

// TestMultiClass loads CSVs with K = 2, 3 and 10 classes, with and without
// a schema: class names in sorted (numeric) order, labels mapped to them.
func TestMultiClass(t *testing.T) {
	for _, k := range []int{2, 3, 10} {
		t.Run(fmt.Sprint("K=", k), func(t *testing.T) {
			text := multiClassCSV(k, 5)
			d, err := ReadCSV(strings.NewReader(text), "k.csv", CSVOptions{Label: "label"})
			if err != nil {
				t.Fatal(err)
			}
			if d.NumClasses() != k || d.Len() != 5*k {
				t.Fatalf("%d classes, %d rows", d.NumClasses(), d.Len())
			}
			for i, y := range d.Y {
				if d.Classes[y] != fmt.Sprint(i%k) {
					t.Fatalf("row %d label %q", i, d.Classes[y])
				}
			}
			again, err := ReadCSV(strings.NewReader(text), "k.csv", CSVOptions{Schema: d.Schema})
			if err != nil || !sameData(again, d) {
				t.Fatalf("with the inferred schema: %v", err)
			}
		})
	}
}

// multiClassCSV has n rows per class 0..k-1: a numeric feature near the
// class index, a categorical one, and the label.
func multiClassCSV(k, n int) string {
	var b strings.Builder
	b.WriteString("x,colour,label\n")
	for i := range k * n {
		fmt.Fprintf(&b, "%g,%s,%d\n", float64(i%k)+0.1*float64(i/k), []string{"red", "green", "blue"}[i%3], i%k)
	}
	return b.String()
}
