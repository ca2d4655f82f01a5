package experiment

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFedShort runs fed-dpboost at its short size (40 owners, 4 trees) so
// it does not rot; the numbers mean nothing.
func TestFedShort(t *testing.T) {
	for _, name := range []string{"fed-dpboost", "fed-dpboost-ne1"} {
		t.Run(name, func(t *testing.T) {
			s, ok := Lookup(name)
			if !ok {
				t.Fatalf("%s not registered", name)
			}
			r := &Run{Out: t.TempDir(), Seeds: []uint64{1}, Short: true, Log: testWriter{t}}
			if err := s.Run(r); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{name + ".csv", name + ".png"} {
				if st, err := os.Stat(filepath.Join(r.Out, f)); err != nil || st.Size() == 0 {
					t.Fatalf("%s not written: %v", f, err)
				}
			}
		})
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
