package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPFDSExperimentsShort(t *testing.T) {
	for _, name := range []string{"pfds-table2", "pfds-fidelity", "pfds-agents", "pfds-ablation", "pfds-variant", "pfds-eps1", "pfds-cv", "pfds-kclass"} {
		s, ok := Lookup(name)
		if !ok {
			t.Fatalf("%s not registered", name)
		}
		r := &Run{Out: t.TempDir(), Seeds: []uint64{1}, Short: true}
		if err := s.Run(r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := os.ReadFile(filepath.Join(r.Out, "pfds", name+".csv"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		// Table 2 carries the stated departure's column beside the paper's.
		if name == "pfds-table2" && !strings.Contains(string(b), "\nPFDS-cv,logreg,1,") {
			t.Errorf("pfds-table2 has no PFDS-cv row:\n%s", b)
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
