package experiment

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCoreScaleShort(t *testing.T) {
	s, ok := Lookup("core-scale")
	if !ok {
		t.Fatal("core-scale not registered")
	}
	r := &Run{Out: t.TempDir(), Seeds: []uint64{1}, Short: true}
	if err := s.Run(r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"core-scale.csv", "core-scale-wall.png", "core-scale-heap.svg"} {
		if st, err := os.Stat(filepath.Join(r.Out, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
}
