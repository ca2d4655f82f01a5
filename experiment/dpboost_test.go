package experiment

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDPBoostShort runs every DPBoost (and dpgbdt) experiment at its short size so none
// rots; the numbers mean nothing.
func TestDPBoostShort(t *testing.T) {
	for _, name := range []string{"dpboost-fig2", "dpboost-fig3", "dpboost-time", "dpgbdt"} {
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
		})
	}
}
