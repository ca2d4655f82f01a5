package dataset

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func FuzzReadCSV(f *testing.F) {
	for _, s := range []string{
		"x,c,y\n1,u,a\n2,v,b\n",
		"x, c, y\n 1, u, a\n2.5e0, v ,b\n",
		"x,c,y\r\n\"1\",\"u\",a\r\n",
		"\ufeffx,c,y\n10,u,b\n\n-3,v,a\n",
		"x,c,y\n1,u\"v,a\n",
		"x,c,y\nNaN,u,a\n",
		"x,c,y\n1e400,u,a\n",
		"x,y\n",
		"x,c,y,z\n1,u,a,3\n",
		"",
		"x,c,y\nNA,u,a\n3,,b\n?,v,a\n7,u,b\n",
		"x,c,y\n1,u,a\nabc,v,b\n",
		"x,c,y\n1e300,u,a\n2,v,\n",
		"x,c,y\n12,u,a\n-4,v,b\n",
	} {
		f.Add(s)
	}
	schema := &Schema{Version: 1, Label: "y", Classes: []string{"a", "b"}, Columns: []Column{
		{Name: "x", Kind: KindNumeric, Min: 0, Max: 10}, {Name: "c", Kind: KindCategorical, Categories: []string{"u", "v"}}}}
	f.Fuzz(func(t *testing.T, s string) {
		for _, opt := range []CSVOptions{{Schema: schema}, {Label: "y"}, {Schema: schema, Missing: MissingMean},
			{Label: "y", Missing: MissingSkip}, {Label: "y", Missing: MissingZero}} {
			d, err := ReadCSV(strings.NewReader(s), "fuzz.csv", opt)
			if err != nil {
				var pe *ParseError
				if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "fuzz.csv") {
					t.Fatalf("error is not a *ParseError naming the input: %v", err)
				}
				continue
			}
			if verr := d.Validate(); verr != nil {
				t.Fatalf("accepted invalid data: %v", verr)
			}
			// Written in raw units and read back with its schema, the data is
			// the same (a filled mean may move by a rounding step).
			var raw bytes.Buffer
			if err := d.WriteRawCSV(&raw); err != nil {
				t.Fatalf("writing accepted data in raw units: %v", err)
			}
			if back, err := ReadCSV(&raw, "raw.csv", CSVOptions{Schema: d.Schema}); err != nil {
				if !errors.Is(err, ErrUnknownLabel) && !errors.Is(err, ErrUnknownCategory) && !errors.Is(err, ErrSchema) {
					t.Fatalf("re-reading raw data: %v", err)
				}
			} else if opt.Missing != MissingMean && !sameData(back, d) {
				t.Fatal("the raw round trip changed the data")
			}
			if opt.Schema == nil && strings.ContainsAny(strings.Join(d.Features, ""), "\"\r\n") {
				continue // names with quotes or line breaks are fine, but the identity round trip below needs plain names
			}
			// What was accepted survives the identity round trip exactly.
			var buf bytes.Buffer
			if err := d.WriteCSV(&buf); err != nil {
				if errors.Is(err, ErrInvalid) { // a column named "label"
					continue
				}
				t.Fatal(err)
			}
			back, err := ReadCSV(&buf, "back.csv", CSVOptions{Schema: d.IdentitySchema()})
			if err != nil {
				if errors.Is(err, ErrUnknownLabel) || errors.Is(err, ErrSchema) { // classes or names with surrounding space
					continue
				}
				t.Fatalf("re-reading written data: %v\n%s", err, buf.String())
			}
			if !sameData(back, d) {
				t.Fatal("the identity round trip changed the data")
			}
		}
	})
}

func FuzzLoadIDX(f *testing.F) {
	img := idxImages(2, func(s, r, c int) byte { return byte(s*7 + r + c) })
	f.Add(img, idxLabels(0, 6))
	f.Add(idxBytes(idxImagesMagic, []uint32{3, 4, 8}, make([]byte, 3*32)), idxLabels(1, 2, 1))
	f.Add(idxBytes(idxImagesMagic, []uint32{1 << 30, 28, 28}, nil), idxBytes(idxLabelsMagic, []uint32{1 << 30}, nil))
	f.Add([]byte{0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff}, []byte{0, 0, 8, 1})
	f.Add(gzipBytes(f, img), gzipBytes(f, idxLabels(0, 6)))
	f.Add(img[:500], idxLabels(0, 6))
	f.Fuzz(func(t *testing.T, img, lab []byte) {
		d, err := ReadIDX(bytes.NewReader(img), bytes.NewReader(lab), "i", "l")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || (pe.File != "i" && pe.File != "l") {
				t.Fatalf("error is not a *ParseError naming a file: %v", err)
			}
			return
		}
		if verr := d.Validate(); verr != nil {
			t.Fatalf("accepted invalid data: %v", verr)
		}
	})
}

func FuzzSchema(f *testing.F) {
	adult, err := os.ReadFile(filepath.Join("testdata", "adult.schema.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(adult)
	f.Add([]byte(`{"version":1,"label":"y","classes":["a","b"],"columns":[{"name":"x","kind":"numeric","min":0,"max":1}]}`))
	f.Add([]byte(`{"version":1,"label":"y","classes":["a","b"],"columns":[{"name":"c","kind":"categorical","categories":["u","?"]},{"name":"i","kind":"ignore"}]}`))
	f.Add([]byte(`{"version":1,"label":"y","classes":["a","b"],"columns":[{"name":"x","kind":"numeric","min":1e308,"max":-1e308}]}`))
	f.Add([]byte(`{"version":1} {}`))
	f.Add([]byte(`{"version":"1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSchema(b, "fuzz.json")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "fuzz.json") {
				t.Fatalf("error is not a *ParseError naming the input: %v", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("accepted an invalid schema: %v", err)
		}
		if len(s.Features()) != s.Dim() {
			t.Fatalf("%d feature names, Dim %d", len(s.Features()), s.Dim())
		}
		// Save and load keep the digest.
		p := filepath.Join(t.TempDir(), "s.json")
		if err := s.Save(p); err != nil {
			t.Fatal(err)
		}
		back, err := LoadSchema(p)
		if err != nil {
			t.Fatalf("a saved schema does not load: %v", err)
		}
		if back.Digest() != s.Digest() {
			t.Fatal("Save and LoadSchema changed the digest")
		}
		// Encoding a record of the header's own names never panics.
		header := []string{s.Label}
		fields := []string{s.Classes[0]}
		for _, c := range s.Columns {
			header = append(header, c.Name)
			switch c.Kind {
			case KindNumeric:
				fields = append(fields, "0")
			case KindCategorical:
				fields = append(fields, c.Categories[0])
			default:
				fields = append(fields, "")
			}
		}
		out := make([]float64, s.Dim())
		if err := s.EncodeRecord(header, fields, out); err != nil && !errors.Is(err, ErrSchema) {
			// Values with surrounding space are trimmed and may then miss.
			if !errors.Is(err, ErrUnknownCategory) {
				t.Fatalf("encoding a record of the schema's own values: %v", err)
			}
		}
	})
}
