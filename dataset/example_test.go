package dataset

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

var update = flag.Bool("update", false, "rewrite testdata/fruit.csv")

// fruitCSV is testdata/fruit.csv, the small 3-class example the README's
// data walkthrough uses: made-up fruit measured in raw units (grams,
// millimetres), a categorical colour, and a class name as the label.
func fruitCSV() string {
	r := rng.Derive(3, 0x46525554) // "FRUT"
	type fruit struct {
		name           string
		weight, spread float64 // grams
		diam           float64 // millimetres
		colours        []string
	}
	fruits := []fruit{
		{"apple", 170, 40, 75, []string{"red", "green", "yellow"}},
		{"lemon", 110, 25, 60, []string{"yellow", "green"}},
		{"plum", 65, 20, 50, []string{"purple", "red"}},
	}
	var b strings.Builder
	b.WriteString("weight_g,diameter_mm,colour,label\n")
	for i := range 300 {
		f := fruits[i%3]
		w := max(20, f.weight+f.spread*r.NormFloat64())
		d := f.diam * (w / f.weight) * (0.9 + 0.2*r.Float64())
		fmt.Fprintf(&b, "%.0f,%.1f,%s,%s\n", w, d, f.colours[r.IntN(len(f.colours))], f.name)
	}
	return b.String()
}

func TestFruitCSVFile(t *testing.T) {
	p := filepath.Join("testdata", "fruit.csv")
	if *update {
		if err := os.WriteFile(p, []byte(fruitCSV()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != fruitCSV() {
		t.Fatal("testdata/fruit.csv differs from fruitCSV(); run go test ./dataset -run TestFruitCSVFile -update")
	}
	d, err := LoadCSV(p, CSVOptions{Label: "label"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Classes, []string{"apple", "lemon", "plum"}) || d.Dim() != 2+4 || d.Len() != 300 {
		t.Fatalf("classes %q, features %q, %d rows", d.Classes, d.Features, d.Len())
	}
}
