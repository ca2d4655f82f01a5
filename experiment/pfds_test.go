package experiment

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPFDSExperimentsShort(t *testing.T) {
	for _, name := range []string{"pfds-table2", "pfds-fidelity", "pfds-agents"} {
		s, ok := Lookup(name)
		if !ok {
			t.Fatalf("%s not registered", name)
		}
		r := &Run{Out: t.TempDir(), Seeds: []uint64{1}, Short: true}
		if err := s.Run(r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(r.Out, "pfds", name+".csv")); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
