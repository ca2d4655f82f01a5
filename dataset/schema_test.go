package dataset

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testSchema has a numeric, a categorical and an ignored column.
func testSchema() *Schema {
	return &Schema{Version: 1, Label: "y", Classes: []string{"a", "b"}, Columns: []Column{
		{Name: "x", Kind: KindNumeric, Min: 0, Max: 10},
		{Name: "c", Kind: KindCategorical, Categories: []string{"u", "v", "?"}},
		{Name: "id", Kind: KindIgnore},
	}}
}

func TestSchemaValidate(t *testing.T) {
	if err := testSchema().Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mutate func(s *Schema)
		want   string
	}{
		{"version", func(s *Schema) { s.Version = 2 }, "version 2"},
		{"no label", func(s *Schema) { s.Label = "" }, "no label column name"},
		{"one class", func(s *Schema) { s.Classes = []string{"a"} }, "1 classes"},
		{"duplicate class", func(s *Schema) { s.Classes = []string{"a", "a"} }, `class "a" listed twice`},
		{"unnamed column", func(s *Schema) { s.Columns[0].Name = "" }, "column 0 has no name"},
		{"label as column", func(s *Schema) { s.Columns[0].Name = "y" }, `label column "y"`},
		{"repeated column", func(s *Schema) { s.Columns[2].Name = "x" }, `column "x" listed twice`},
		{"empty bounds", func(s *Schema) { s.Columns[0].Min = 10 }, "bounds [10, 10]"},
		{"reversed bounds", func(s *Schema) { s.Columns[0].Min = 11 }, "bounds [11, 10]"},
		{"NaN bound", func(s *Schema) { s.Columns[0].Max = math.NaN() }, "bounds [0, NaN]"},
		{"Inf bound", func(s *Schema) { s.Columns[0].Min = math.Inf(-1) }, "bounds [-Inf, 10]"},
		{"underflowing width", func(s *Schema) { s.Columns[0].Min, s.Columns[0].Max = 0, 5e-324 }, "bounds [0, 5e-324]"},
		{"numeric with categories", func(s *Schema) { s.Columns[0].Categories = []string{"u"} }, `numeric column "x" has categories`},
		{"no categories", func(s *Schema) { s.Columns[1].Categories = nil }, `column "c" has no categories`},
		{"repeated category", func(s *Schema) { s.Columns[1].Categories = []string{"u", "u"} }, `category "u" listed twice`},
		{"categorical with bounds", func(s *Schema) { s.Columns[1].Max = 3 }, `categorical column "c" has numeric bounds`},
		{"kind", func(s *Schema) { s.Columns[1].Kind = "text" }, `unknown kind "text"`},
		{"no features", func(s *Schema) { s.Columns = s.Columns[2:] }, "no feature columns"},
		{"feature name clash", func(s *Schema) {
			s.Columns[2] = Column{Name: "c=u", Kind: KindNumeric, Min: 0, Max: 1}
		}, `feature name "c=u"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := testSchema()
			c.mutate(s)
			err := s.Validate()
			if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrSchema containing %q", err, c.want)
			}
		})
	}
}

func TestSchemaFeaturesAndDigest(t *testing.T) {
	s := testSchema()
	if got, want := s.Features(), []string{"x", "c=u", "c=v", "c=?"}; !slices.Equal(got, want) || s.Dim() != 4 {
		t.Fatalf("features %q (dim %d), want %q", got, s.Dim(), want)
	}
	d := s.Digest()
	if len(d) != 64 || d != testSchema().Digest() {
		t.Fatalf("digest %q is not a stable hex SHA-256", d)
	}
	for name, mutate := range map[string]func(*Schema){
		"bound":          func(s *Schema) { s.Columns[0].Max = 11 },
		"category order": func(s *Schema) { s.Columns[1].Categories[0], s.Columns[1].Categories[1] = "v", "u" },
		"class order":    func(s *Schema) { s.Classes[0], s.Classes[1] = "b", "a" },
		"label":          func(s *Schema) { s.Label = "z" },
	} {
		s := testSchema()
		mutate(s)
		if s.Digest() == d {
			t.Errorf("changing the %s kept the digest", name)
		}
	}
	nan := testSchema()
	nan.Columns[0].Min = math.NaN()
	if nd := nan.Digest(); len(nd) != 64 || nd == d {
		t.Fatalf("digest of an unencodable schema: %q", nd)
	}
}

func TestSchemaSaveLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	s := AdultSchema()
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := LoadSchema(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Digest() != s.Digest() {
		t.Fatal("digest changed by Save and LoadSchema")
	}
	if err := s.Save(filepath.Join(dir, "missing", "s.json")); err == nil {
		t.Fatal("Save into a missing directory succeeded")
	}

	cases := []struct {
		name, text, want string
	}{
		{"empty", "", "s.json:1: invalid schema: empty schema file"},
		{"syntax", "{\n\"version\": 1,\n\"label\": }", "s.json:3: invalid schema"},
		{"type", "{\n\"version\": \"one\"}", "s.json:2: invalid schema"},
		{"unknown field", `{"version":1,"lable":"y"}`, `unknown field "lable"`},
		{"trailing data", `{"version":1,"label":"y","classes":["a","b"],"columns":[{"name":"x","kind":"numeric","min":0,"max":1}]} {}`, "data after the schema object"},
		{"invalid", `{"version":1,"label":"y","classes":["a","b"],"columns":[]}`, "s.json: invalid schema: no feature columns"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "s.json")
			if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadSchema(p)
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), p) {
				t.Fatalf("err = %v, want a *ParseError for %s containing %q", err, p, c.want)
			}
		})
	}
	_, err = LoadSchema(filepath.Join(dir, "nope.json"))
	if !isNotExist(err) || !strings.Contains(err.Error(), "nope.json") {
		t.Fatalf("missing file: %v", err)
	}
}

// TestAdultSchemaFile keeps testdata/adult.schema.json (a fuzz seed and an
// example of the format) equal to AdultSchema.
func TestAdultSchemaFile(t *testing.T) {
	s, err := LoadSchema("testdata/adult.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if s.Digest() != AdultSchema().Digest() {
		t.Fatal("testdata/adult.schema.json differs from AdultSchema(); regenerate it with AdultSchema().Save")
	}
}

func TestEncodeRecord(t *testing.T) {
	s := testSchema()
	header := []string{"id", "c", "y", "x"}
	cases := []struct {
		fields []string
		want   []float64
	}{
		{[]string{"7", "u", "a", "0"}, []float64{-1, 1, 0, 0}},
		{[]string{"7", " v ", "b", " 10 "}, []float64{1, 0, 1, 0}},
		{[]string{"", "?", "a", "2.5"}, []float64{-0.5, 0, 0, 1}},
		{[]string{"", "?", "zzz", "5"}, []float64{0, 0, 0, 1}},     // the label is not looked at
		{[]string{"", "u", "a", "-3"}, []float64{-1, 1, 0, 0}},     // clipped
		{[]string{"", "u", "a", "1e15"}, []float64{1, 1, 0, 0}},    // clipped; 1e15 is MaxMagnitude
		{[]string{"", "u", "a", "1e-400"}, []float64{-1, 1, 0, 0}}, // underflow is 0, the min
	}
	out := make([]float64, 4)
	for _, c := range cases {
		if err := s.EncodeRecord(header, c.fields, out); err != nil {
			t.Fatalf("%q: %v", c.fields, err)
		}
		if !slices.Equal(out, c.want) {
			t.Fatalf("%q encoded as %v, want %v", c.fields, out, c.want)
		}
	}
	// Without the label and the ignored column.
	if err := s.EncodeRecord([]string{"x", "c"}, []string{"5", "v"}, out); err != nil || !slices.Equal(out, []float64{0, 0, 1, 0}) {
		t.Fatalf("label-less record: %v %v", out, err)
	}
	// Identity bounds are exact, even for values a naive 2*(v+1)/2-1 rounds.
	id := (&Dataset{Classes: []string{"a", "b"}, Features: []string{"f"}}).IdentitySchema()
	one := make([]float64, 1)
	for _, v := range []float64{1e-300, -0.1, 0.3, math.Nextafter(1, 0), -1} {
		if err := id.EncodeRecord([]string{"f"}, []string{fmtFloat(v)}, one); err != nil || one[0] != v {
			t.Fatalf("identity encoding of %v gave %v (%v)", v, one[0], err)
		}
	}

	bad := []struct {
		name           string
		header, fields []string
		out            int
		is             error
		want           string
	}{
		{"unknown category", header, []string{"", "w", "a", "1"}, 4, ErrUnknownCategory, `column "c": value "w": unknown category`},
		{"empty category", header, []string{"", "", "a", "1"}, 4, ErrMissing, `column "c": value "": missing value`},
		{"not a number", header, []string{"", "u", "a", "abc"}, 4, ErrNotNumber, `column "x": value "abc"`},
		{"empty number", header, []string{"", "u", "a", ""}, 4, ErrMissing, `column "x": value "": missing value`},
		{"NA", header, []string{"", "u", "a", "NA"}, 4, ErrMissing, `column "x": value "NA": missing value`},
		{"NaN", header, []string{"", "u", "a", "NaN"}, 4, ErrMissing, `column "x": value "NaN"`},
		{"Inf", header, []string{"", "u", "a", "-inf"}, 4, ErrNotFinite, `column "x": value "-inf"`},
		{"overflow", header, []string{"", "u", "a", "1e400"}, 4, ErrNotFinite, `column "x": value "1e400"`},
		{"magnitude", header, []string{"", "u", "a", "-1.5e15"}, 4, ErrMagnitude, `column "x": value "-1.5e15": magnitude too large`},
		{"field count", header, []string{"", "u", "a"}, 4, ErrFieldCount, "3 fields, the header has 4"},
		{"output size", header, []string{"", "u", "a", "1"}, 3, ErrSchema, "room for 3 features"},
		{"missing column", []string{"c", "y"}, []string{"u", "a"}, 4, ErrSchema, `schema column "x" is not in the header`},
		{"extra column", []string{"x", "c", "y", "z"}, []string{"1", "u", "a", "1"}, 4, ErrSchema, `header column "z" is not in the schema`},
		{"repeated column", []string{"x", "c", "x"}, []string{"1", "u", "1"}, 4, ErrSchema, `names column "x" twice`},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			err := s.EncodeRecord(c.header, c.fields, make([]float64, c.out))
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %v containing %q", err, c.is, c.want)
			}
		})
	}
	invalid := testSchema()
	invalid.Version = 0
	if err := invalid.EncodeRecord(header, cases[0].fields, out); !errors.Is(err, ErrSchema) {
		t.Fatalf("an invalid schema encoded a record: %v", err)
	}
}

func TestEncoderLabel(t *testing.T) {
	s := testSchema()
	e, err := s.NewEncoder([]string{"x", "y", "c"})
	if err != nil {
		t.Fatal(err)
	}
	if y, err := e.Label([]string{"1", " b ", "u"}); err != nil || y != 1 {
		t.Fatalf("label %d, %v", y, err)
	}
	if _, err := e.Label([]string{"1", "c", "u"}); !errors.Is(err, ErrUnknownLabel) || !strings.Contains(err.Error(), `"c"`) {
		t.Fatalf("unknown label: %v", err)
	}
	noLabel, err := s.NewEncoder([]string{"x", "c"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noLabel.Label([]string{"1", "u"}); !errors.Is(err, ErrSchema) {
		t.Fatalf("label from a label-less header: %v", err)
	}
}

func TestAbbreviate(t *testing.T) {
	v := strings.Split("a b c d e f g h i j k l", " ")
	if got := abbreviate(v); !strings.HasSuffix(got, `"j", ... 2 more`) {
		t.Fatalf("abbreviate: %s", got)
	}
}
