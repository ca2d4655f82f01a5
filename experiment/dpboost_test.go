package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDPBoostShort runs every DPBoost (and dpgbdt) experiment at its short size so none
// rots; the numbers mean nothing.
func TestDPBoostShort(t *testing.T) {
	for _, name := range []string{"dpboost-fig2", "dpboost-fig3", "dpboost-time", "dpgbdt", "dpgbdt-fed"} {
		t.Run(name, func(t *testing.T) {
			s, ok := Lookup(name)
			if !ok {
				t.Fatalf("%s not registered", name)
			}
			r := &Run{Out: t.TempDir(), Seeds: []uint64{1}, Short: true}
			if err := s.Run(r); err != nil {
				t.Fatal(err)
			}
			files, _ := filepath.Glob(filepath.Join(r.Out, "*"))
			var csv, png int
			for _, f := range files {
				if st, err := os.Stat(f); err == nil && st.Size() > 0 {
					switch filepath.Ext(f) {
					case ".csv":
						csv++
					case ".png":
						png++
					}
				}
			}
			if csv == 0 || png == 0 {
				t.Errorf("%s wrote %d CSV and %d PNG files: %v", name, csv, png, files)
			}
			if name == "dpgbdt" || name == "dpgbdt-fed" {
				// Every federated figure names its trust: both colluder
				// bounds, each as its own series.
				b, err := os.ReadFile(filepath.Join(r.Out, name+".csv"))
				if err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{"(20 owners, colluders 1)", "(20 owners, colluders all)"} {
					if !strings.Contains(string(b), want) {
						t.Errorf("%s.csv has no %q series:\n%s", name, want, b)
					}
				}
			}
		})
	}
}
