package dataset

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return z.Bytes()
}

func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadCSV(t *testing.T) {
	// Adult-style ", " separators, quotes, CRLF, a blank line, a byte order mark.
	text := "\ufeffid, x , c,y\r\n1, 2.5, u, a\r\n\r\n2,\"10\",\"?\",b\n3,-1e1, v ,a\n"
	d, err := ReadCSV(strings.NewReader(text), "f.csv", CSVOptions{Schema: testSchema()})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{-0.5, 1, 0, 0}, {1, 0, 0, 1}, {-1, 0, 1, 0}}
	for i := range want {
		if !slices.Equal(d.X[i], want[i]) {
			t.Fatalf("row %d = %v, want %v", i, d.X[i], want[i])
		}
	}
	if !slices.Equal(d.Y, []int{0, 1, 0}) || d.Name != "f.csv" || d.Dim() != 4 || d.Schema == nil {
		t.Fatalf("labels %v, name %q, dim %d", d.Y, d.Name, d.Dim())
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if cap(d.X[0]) != 4 {
		t.Fatalf("row capacity %d reaches into the next row", cap(d.X[0]))
	}
}

func TestCSVErrors(t *testing.T) {
	s := &Schema{Version: 1, Label: "y", Classes: []string{"a", "b"}, Columns: []Column{
		{Name: "x", Kind: KindNumeric, Min: 0, Max: 10}, {Name: "c", Kind: KindCategorical, Categories: []string{"u", "v"}}}}
	cases := []struct {
		name, text string
		is         error
		want       string
	}{
		{"empty", "", ErrEmpty, "f.csv:1: no data: empty file"},
		{"blank lines only", "\n\n", ErrEmpty, "f.csv:1: no data: empty file"},
		{"header only", "x,c,y\n", ErrEmpty, "f.csv:1: no data: a header but no data rows"},
		{"one-column header", "x\n1\n", ErrSchema, "f.csv:1: invalid schema: the header has 1 column"},
		{"unnamed column", "x,,y\n1,u,a\n", ErrSchema, "f.csv:1: invalid schema: header column 2 has no name"},
		{"repeated column", "x,c,x\n1,u,a\n", ErrSchema, `f.csv:1: invalid schema: the header names column "x" twice`},
		{"too few fields", "x,c,y\n1,u,a\n2,v\n", ErrFieldCount, "f.csv:3: wrong number of fields: 2 fields, the header has 3"},
		{"too many fields", "x,c,y\n1,u,a,4\n", ErrFieldCount, "f.csv:2: wrong number of fields: 4 fields"},
		{"NaN", "x,c,y\n1,u,a\nNaN,u,b\n", ErrMissing, `f.csv:3: column "x": value "NaN": missing value`},
		{"empty", "x,c,y\n1,u,a\n,u,b\n", ErrMissing, `f.csv:3: column "x": value "": missing value`},
		{"Inf", "x,c,y\n+Inf,u,a\n", ErrNotFinite, `f.csv:2: column "x": value "+Inf": not finite`},
		{"absurd magnitude", "x,c,y\n1e300,u,a\n", ErrMagnitude, `f.csv:2: column "x": value "1e300": magnitude too large`},
		{"unparseable number", "x,c,y\n1,u,a\n1.2.3,u,a\n", ErrNotNumber, `f.csv:3: column "x": value "1.2.3": not a number`},
		{"empty label", "x,c,y\n1,u,a\n1,u,\n", ErrEmptyLabel, `f.csv:3: label column "y": empty label`},
		{"unknown label", "x,c,y\n1,u,a\n1,u,zz\n", ErrUnknownLabel, `f.csv:3: column "y": "zz": unknown label (classes: "a", "b")`},
		{"unknown category", "x,c,y\n1,w,a\n", ErrUnknownCategory, `f.csv:2: column "c": value "w": unknown category (known: "u", "v")`},
		{"missing column", "x,y\n1,a\n", ErrSchema, `f.csv:1: invalid schema: schema column "c" is not in the header`},
		{"missing label", "x,c\n1,u\n", ErrSchema, `f.csv:1: invalid schema: label column "y" is not in the header (its columns: x, c); name the label column with --label`},
		{"extra column", "x,c,y,z\n1,u,a,3\n", ErrSchema, `header column "z" is not in the schema`},
		{"bad quote", "x,c,y\n1,u,a\n1,\"u,a\n", ErrCSV, "f.csv:3: bad CSV"},
		{"bare quote", "x,c,y\n1,u\"v,a\n", ErrCSV, "f.csv:2: bad CSV"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadCSV(strings.NewReader(c.text), "f.csv", CSVOptions{Schema: s})
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a *ParseError wrapping %v containing %q", err, c.is, c.want)
			}
		})
	}

	invalid := testSchema()
	invalid.Classes = nil
	if _, err := ReadCSV(strings.NewReader("x,c,y\n1,u,a\n"), "f.csv", CSVOptions{Schema: invalid}); !errors.Is(err, ErrSchema) {
		t.Fatalf("invalid schema accepted: %v", err)
	}
	if _, err := ReadCSV(strings.NewReader("x,y\n1,a\n"), "f.csv", CSVOptions{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("neither schema nor label: %v", err)
	}
}

func TestLoadCSVFiles(t *testing.T) {
	dir := t.TempDir()
	text := []byte("x,c,y\n1,u,a\n2,v,b\n")
	s := &Schema{Version: 1, Label: "y", Classes: []string{"a", "b"}, Columns: []Column{
		{Name: "x", Kind: KindNumeric, Min: 0, Max: 10}, {Name: "c", Kind: KindCategorical, Categories: []string{"u", "v"}}}}
	for _, p := range []string{
		writeFile(t, dir, "plain.csv", text),
		writeFile(t, dir, "z.csv.gz", gzipBytes(t, text)),
		writeFile(t, dir, "z-without-suffix.csv", gzipBytes(t, text)),
	} {
		d, err := LoadCSV(p, CSVOptions{Schema: s})
		if err != nil || d.Len() != 2 || d.Name != p {
			t.Fatalf("%s: %v", p, err)
		}
	}

	gz := gzipBytes(t, append([]byte("x,c,y\n"), bytes.Repeat([]byte("1,u,a\n"), 10000)...))
	corrupt := slices.Clone(gz)
	corrupt[len(corrupt)/2] ^= 0xff
	cases := []struct {
		name, file string
		data       []byte
		is         error
	}{
		{"missing", "missing.csv", nil, os.ErrNotExist},
		{"not gzip", "bad.csv.gz", []byte("x,c,y\n1,u,a\n"), ErrGzip},
		{"bad gzip header", "bad2.csv", []byte{0x1f, 0x8b, 0, 0}, ErrGzip},
		{"truncated gzip", "trunc.csv.gz", gz[:len(gz)/2], ErrGzip},
		{"corrupt gzip", "corrupt.csv.gz", corrupt, ErrGzip},
		{"empty", "empty.csv", []byte{}, ErrEmpty},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.file)
			if c.data != nil {
				writeFile(t, dir, c.file, c.data)
			}
			_, err := LoadCSV(p, CSVOptions{Schema: s})
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != p || !errors.Is(err, c.is) || !strings.HasPrefix(err.Error(), p) {
				t.Fatalf("err = %v, want a *ParseError for %s wrapping %v", err, p, c.is)
			}
		})
	}
}

func TestInferSchema(t *testing.T) {
	var warned []string
	text := "a,b,label,k\n1,x,10,5\n3,y,9,5\n2,?,10,5\n"
	d, err := ReadCSV(strings.NewReader(text), "priv.csv", CSVOptions{Label: "label", Warn: func(s string) { warned = append(warned, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "leak") || !strings.Contains(warned[0], "priv.csv") {
		t.Fatalf("privacy warning %q", warned)
	}
	// Classes sort numerically: "9" before "10".
	if !slices.Equal(d.Classes, []string{"9", "10"}) || !slices.Equal(d.Y, []int{1, 0, 1}) {
		t.Fatalf("classes %q labels %v", d.Classes, d.Y)
	}
	if want := []string{"a", "b=?", "b=x", "b=y", "k"}; !slices.Equal(d.Features, want) {
		t.Fatalf("features %q, want %q", d.Features, want)
	}
	// a spans its observed [1, 3]; the constant k sits in the middle of its interval.
	if d.X[0][0] != -1 || d.X[1][0] != 1 || d.X[2][0] != 0 || d.X[0][4] != 0 {
		t.Fatalf("inferred encoding %v", d.X)
	}

	p := writeFile(t, t.TempDir(), "d.csv.gz", gzipBytes(t, []byte(text)))
	s, err := InferSchema(p, "label")
	if err != nil {
		t.Fatal(err)
	}
	if s.Digest() != d.Schema.Digest() {
		t.Fatal("InferSchema on the file differs from ReadCSV's inferred schema")
	}

	for _, c := range []struct {
		name, text, label string
		is                error
	}{
		{"no label column", "a,b\n1,2\n", "label", ErrSchema},
		{"one class", "a,label\n1,p\n2,p\n", "label", ErrSchema},
		{"NaN", "a,label\n1,p\nnan,q\n", "label", ErrMissing},
		{"inf", "a,label\n1,p\ninf,q\n", "label", ErrNotFinite},
		{"absurd", "a,label\n1,p\n1e300,q\n", "label", ErrMagnitude},
		{"mixed", "a,label\n1,p\nabc,q\n", "label", ErrNotNumber},
		{"empty label", "a,label\n1,p\n2,\n", "label", ErrEmptyLabel},
		{"all missing", "a,b,label\n1,,p\n2,,q\n", "label", ErrMissing},
		{"overflow", "a,label\n1,p\n1e999,q\n", "label", ErrNotFinite},
		{"header only", "a,label\n", "label", ErrEmpty},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadCSV(strings.NewReader(c.text), "f.csv", CSVOptions{Label: c.label})
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, c.is) {
				t.Fatalf("err = %v, want a *ParseError wrapping %v", err, c.is)
			}
		})
	}
	if _, err := InferSchema(filepath.Join(t.TempDir(), "none.csv"), "label"); !isNotExist(err) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestSortedKeys(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"10", "9", "-1", "1.5"}, []string{"-1", "1.5", "9", "10"}},
		{[]string{"1.0", "1", "0"}, []string{"0", "1", "1.0"}},
		{[]string{"b", "10", "9"}, []string{"10", "9", "b"}},
	} {
		set := map[string]bool{}
		for _, k := range c.in {
			set[k] = true
		}
		if got := sortedKeys(set); !slices.Equal(got, c.want) {
			t.Errorf("sortedKeys(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestSchemaInferKeepsBoundsAndFlagsCodes: an inferred numeric column whose
// minimum is 0 keeps "min": 0 in the saved file, and numbers written with
// leading zeros (zip codes) are flagged as probable codes; plain numbers,
// 0 and 0.5 are not.
func TestSchemaInferKeepsBoundsAndFlagsCodes(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.csv")
	if err := os.WriteFile(p, []byte("count,zip,frac,label\n0,02139,0.5,a\n3,10001,0,b\n5,00501,1,a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := InferSchema(p, "label")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "f.schema.json")
	if err := s.Save(out); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	if n := strings.Count(string(b), `"min": 0`); n != 2 {
		t.Fatalf("%d columns saved with min 0, want 2 (count and frac):\n%s", n, b)
	}
	back, err := ParseSchema(b, out)
	if err != nil || back.Digest() != s.Digest() {
		t.Fatalf("the saved schema reads back differently: %v", err)
	}
	codes, err := CodeColumns(p, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(codes) != 1 || !strings.Contains(codes[0], `"zip"`) || !strings.Contains(codes[0], "--categorical zip") {
		t.Fatalf("code columns %q, want zip alone", codes)
	}
	if SchemaPathFor("dir/x.csv") != "dir/x.schema.json" || SchemaPathFor("dir/x.tsv") != "dir/x.tsv.schema.json" {
		t.Fatalf("schema paths %q %q", SchemaPathFor("dir/x.csv"), SchemaPathFor("dir/x.tsv"))
	}
}
