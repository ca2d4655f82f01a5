package experiment

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPFDSExperimentsShort(t *testing.T) {
	for _, name := range []string{"pfds-table2", "pfds-fidelity", "pfds-agents", "pfds-ablation"} {
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

// TestPFDSTable2ProtocolEqualsReference: the short Table 2 gives the same
// numbers with the shares produced by the distributed session.
func TestPFDSTable2ProtocolEqualsReference(t *testing.T) {
	s, _ := Lookup("pfds-table2")
	read := func(protocol bool) string {
		r := &Run{Out: t.TempDir(), Seeds: []uint64{1}, Short: true, Protocol: protocol}
		if err := s.Run(r); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(r.Out, "pfds", "pfds-table2.csv"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if ref, proto := read(false), read(true); ref != proto {
		t.Errorf("protocol run differs:\n%s\nvs reference\n%s", proto, ref)
	}
}
