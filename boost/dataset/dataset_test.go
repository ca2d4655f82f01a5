package dataset

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAdultEmbedded(t *testing.T) {
	d, err := Adult()
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 32561 || d.Dim() != 108 || d.NumClasses() != 2 {
		t.Fatalf("adult: %d rows, %d features, %d classes", d.Len(), d.Dim(), d.NumClasses())
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	pos := 0
	for _, y := range d.Y {
		pos += y
	}
	// UCI documents 7,841 of 32,561 (24.08%) with >50K.
	if pos != 7841 {
		t.Fatalf("%d positive rows, want 7841", pos)
	}
}

func TestFashionEmbedded(t *testing.T) {
	train, test, err := Fashion()
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 12000 || test.Len() != 2000 || train.Dim() != 49 || train.NumClasses() != 2 {
		t.Fatalf("fashion: %d/%d rows, %d features, %d classes", train.Len(), test.Len(), train.Dim(), train.NumClasses())
	}
	if train.Classes[0] != "0" || train.Classes[1] != "6" {
		t.Fatalf("classes %v", train.Classes)
	}
	for _, d := range []*Dataset{train, test} {
		if err := d.Validate(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSyntheticReproducibleWithSignal(t *testing.T) {
	a, err := Synthetic(DefaultSynthetic(20000, 3))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Synthetic(DefaultSynthetic(20000, 3))
	for i := range a.X {
		for j := range a.X[i] {
			if a.X[i][j] != b.X[i][j] || a.Y[i] != b.Y[i] {
				t.Fatal("same seed, different data")
			}
		}
	}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	// Nearest centroid (fit on the first half, tested on the second) must
	// beat chance clearly: 50% +- 0.5% (1 sd on 10,000 samples).
	train, test := a.Split(10000)
	var mu [2][20]float64
	var n [2]float64
	for i, x := range train.X {
		for j, v := range x {
			mu[train.Y[i]][j] += v
		}
		n[train.Y[i]]++
	}
	ok := 0
	for i, x := range test.X {
		best, bd := 0, math.Inf(1)
		for k := 0; k < 2; k++ {
			dd := 0.0
			for j, v := range x {
				t := v - mu[k][j]/n[k]
				dd += t * t
			}
			if dd < bd {
				best, bd = k, dd
			}
		}
		if best == test.Y[i] {
			ok++
		}
	}
	if acc := float64(ok) / float64(test.Len()); acc < 0.7 {
		t.Fatalf("nearest centroid accuracy %.3f on synthetic data", acc)
	}
}

func TestPartition(t *testing.T) {
	d, _ := Synthetic(DefaultSynthetic(1003, 1))
	shards, err := d.Partition(10, nil, 9)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := d.Partition(10, nil, 9)
	seen := map[*float64]bool{}
	for i, s := range shards {
		if s.Len() != 100 {
			t.Fatalf("shard %d has %d rows", i, s.Len())
		}
		for k := range s.X {
			if &s.X[k][0] != &again[i].X[k][0] {
				t.Fatal("partition not reproducible")
			}
			if seen[&s.X[k][0]] {
				t.Fatal("a row is in two shards")
			}
			seen[&s.X[k][0]] = true
		}
	}
	if _, err := d.Partition(3, []int{500, 500, 10}, 1); err == nil {
		t.Fatal("sizes beyond the data accepted")
	}
	if _, err := d.Partition(2, []int{1}, 1); err == nil {
		t.Fatal("wrong number of sizes accepted")
	}
	if _, err := d.Partition(0, nil, 1); err == nil {
		t.Fatal("zero owners accepted")
	}
}

func TestCSVRoundTripWithIdentitySchema(t *testing.T) {
	d, _ := Synthetic(DefaultSynthetic(50, 2))
	var buf bytes.Buffer
	if err := d.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadCSV(&buf, "shard.csv", CSVOptions{Schema: d.IdentitySchema()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range d.X {
		for j := range d.X[i] {
			if math.Abs(back.X[i][j]-d.X[i][j]) > 1e-15 || back.Y[i] != d.Y[i] {
				t.Fatalf("row %d differs after the CSV round trip", i)
			}
		}
	}
	if back.Schema.Digest() != d.IdentitySchema().Digest() {
		t.Fatal("schema digest changed")
	}
}

func TestCSVErrorsNameFileAndLine(t *testing.T) {
	schema := &Schema{Version: 1, Label: "y", Classes: []string{"a", "b"}, Columns: []Column{
		{Name: "x", Kind: KindNumeric, Min: 0, Max: 10}, {Name: "c", Kind: KindCategorical, Categories: []string{"u", "v"}}}}
	cases := map[string]struct{ text, want string }{
		"empty":        {"", "empty file"},
		"header only":  {"x,c,y\n", "no data rows"},
		"columns":      {"x,c,y\n1,u,a\n2,v\n", "f.csv:3: 2 fields, header has 3"},
		"nan":          {"x,c,y\n1,u,a\nNaN,u,b\n", "f.csv:3: column \"x\": NaN is not finite"},
		"inf":          {"x,c,y\n+Inf,u,a\n", "f.csv:2: column \"x\""},
		"number":       {"x,c,y\n1,u,a\nabc,u,a\n", "f.csv:3: column \"x\": \"abc\" is not a number"},
		"label":        {"x,c,y\n1,u,a\n1,u,zz\n", "f.csv:3: unknown label \"zz\""},
		"category":     {"x,c,y\n1,w,a\n", "f.csv:2: column \"c\": unknown category \"w\""},
		"missing col":  {"x,y\n1,a\n", "column \"c\" not in header"},
		"extra column": {"x,c,y,z\n1,u,a,3\n", "column \"z\" is not in the schema"},
	}
	for name, c := range cases {
		_, err := ReadCSV(strings.NewReader(c.text), "f.csv", CSVOptions{Schema: schema})
		var pe *ParseError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "f.csv") {
			t.Errorf("%s: err = %v, want *ParseError containing %q", name, err, c.want)
		}
	}
	if _, err := LoadCSV(filepath.Join(t.TempDir(), "missing.csv"), CSVOptions{Schema: schema}); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.csv.gz")
	os.WriteFile(bad, []byte("not gzip"), 0o644)
	if _, err := LoadCSV(bad, CSVOptions{Schema: schema}); err == nil || !strings.Contains(err.Error(), "bad.csv.gz") {
		t.Errorf("bad gzip: %v", err)
	}
}

func TestInferSchemaWarns(t *testing.T) {
	warned := ""
	d, err := ReadCSV(strings.NewReader("a,b,label\n1,x,p\n3,y,q\n2,x,p\n"), "priv.csv", CSVOptions{Label: "label", Warn: func(s string) { warned = s }})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(warned, "leak") {
		t.Fatalf("no privacy warning: %q", warned)
	}
	if d.Dim() != 3 || d.X[1][0] != 1 || d.X[0][0] != -1 {
		t.Fatalf("inferred encoding %v %v", d.Features, d.X)
	}
}

func idxBytes(magic uint32, dims []uint32, data []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, magic)
	binary.Write(&b, binary.BigEndian, dims)
	b.Write(data)
	return b.Bytes()
}

func TestIDXErrors(t *testing.T) {
	img := idxBytes(idxImages, []uint32{2, 28, 28}, make([]byte, 2*784))
	lab := idxBytes(idxLabels, []uint32{2}, []byte{0, 6})
	d, err := ReadIDX(bytes.NewReader(img), bytes.NewReader(lab), "i", "l")
	if err != nil || d.Len() != 2 || d.Dim() != 49 || d.X[0][0] != -1 {
		t.Fatalf("valid IDX: %v", err)
	}
	cases := map[string]struct {
		img, lab []byte
		want     string
	}{
		"magic":     {idxBytes(0x0903, []uint32{2, 28, 28}, nil), lab, "magic"},
		"truncated": {idxBytes(idxImages, []uint32{3, 28, 28}, make([]byte, 2*784)), idxBytes(idxLabels, []uint32{3}, []byte{0, 6, 0}), "header promises 3 images"},
		"count":     {img, idxBytes(idxLabels, []uint32{3}, []byte{0, 6, 0}), "3 labels for 2 images"},
		"dims":      {idxBytes(idxImages, []uint32{2, 27, 28}, make([]byte, 2*27*28)), lab, "cannot be pooled"},
		"short hdr": {[]byte{0, 0, 8}, lab, "IDX header"},
	}
	for name, c := range cases {
		_, err := ReadIDX(bytes.NewReader(c.img), bytes.NewReader(c.lab), "img.idx", "lab.idx")
		var pe *ParseError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want *ParseError with %q", name, err, c.want)
		}
	}
}

func TestSchemaValidation(t *testing.T) {
	for name, js := range map[string]string{
		"version":  `{"version":2,"label":"y","classes":["a","b"],"columns":[{"name":"x","kind":"numeric","min":0,"max":1}]}`,
		"bounds":   `{"version":1,"label":"y","classes":["a","b"],"columns":[{"name":"x","kind":"numeric","min":1,"max":1}]}`,
		"kind":     `{"version":1,"label":"y","classes":["a","b"],"columns":[{"name":"x","kind":"text"}]}`,
		"classes":  `{"version":1,"label":"y","classes":["a"],"columns":[{"name":"x","kind":"numeric","min":0,"max":1}]}`,
		"unknown":  `{"version":1,"label":"y","classes":["a","b"],"columns":[],"extra":1}`,
		"no cols":  `{"version":1,"label":"y","classes":["a","b"],"columns":[]}`,
		"dup cats": `{"version":1,"label":"y","classes":["a","b"],"columns":[{"name":"c","kind":"categorical","categories":["u","u"]}]}`,
	} {
		if _, err := ParseSchema([]byte(js), "s.json"); err == nil || !strings.Contains(err.Error(), "s.json") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func FuzzReadCSV(f *testing.F) {
	f.Add("x,c,y\n1,u,a\n2,v,b\n")
	f.Add("x,c,y\n\"1\",u,a\n")
	f.Add("x,y\n")
	f.Add("")
	schema := &Schema{Version: 1, Label: "y", Classes: []string{"a", "b"}, Columns: []Column{
		{Name: "x", Kind: KindNumeric, Min: 0, Max: 10}, {Name: "c", Kind: KindCategorical, Categories: []string{"u", "v"}}}}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ReadCSV(strings.NewReader(s), "fuzz.csv", CSVOptions{Schema: schema})
		if err == nil {
			if verr := d.Validate(); verr != nil {
				t.Fatalf("accepted invalid data: %v", verr)
			}
		}
		ReadCSV(strings.NewReader(s), "fuzz.csv", CSVOptions{Label: "y"})
	})
}

func FuzzReadIDX(f *testing.F) {
	f.Add(idxBytes(idxImages, []uint32{1, 4, 4}, make([]byte, 16)), idxBytes(idxLabels, []uint32{1}, []byte{3}))
	f.Add([]byte{0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff}, []byte{0, 0, 8, 1})
	f.Fuzz(func(t *testing.T, img, lab []byte) {
		ReadIDX(bytes.NewReader(img), bytes.NewReader(lab), "i", "l")
	})
}

func FuzzSchema(f *testing.F) {
	b, _ := os.ReadFile("testdata/adult.schema.json")
	f.Add(b)
	f.Add([]byte(`{"version":1,"label":"y","classes":["a","b"],"columns":[{"name":"x","kind":"numeric","min":0,"max":1}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := ParseSchema(b, "fuzz.json"); err == nil {
			_ = s.Features()
			_ = s.Digest()
		}
	})
}

func TestGzipDetection(t *testing.T) {
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write([]byte("x,label\n0.5,a\n-0.5,b\n"))
	w.Close()
	p := filepath.Join(t.TempDir(), "d.csv")
	os.WriteFile(p, z.Bytes(), 0o644)
	d, err := LoadCSV(p, CSVOptions{Label: "label"})
	if err != nil || d.Len() != 2 {
		t.Fatalf("gzip without .gz suffix: %v", err)
	}
}

func BenchmarkSynthetic1e6(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := Synthetic(DefaultSynthetic(1000000, 1)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAdult(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := Adult(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFashion(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, _, err := Fashion(); err != nil {
			b.Fatal(err)
		}
	}
}
