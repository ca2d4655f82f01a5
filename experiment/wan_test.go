package experiment

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestExperimentWANShort runs the WAN experiment at its short size: real
// libp2p hosts behind emulated links, both transports and both methods.
// Every sum must cover every owner (nothing is lost on a 20 ms link), the
// added latency is measured against the 0 ms twin, and the outputs exist.
func TestExperimentWANShort(t *testing.T) {
	s, ok := Lookup("wan")
	if !ok {
		t.Fatal("wan not registered")
	}
	dir := t.TempDir()
	if err := s.Run(&Run{Out: dir, Seeds: []uint64{1}, Short: true, Log: testWriter{t}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"wan.csv", "wan.json", "added-tcp-shamir.png", "added-quic-ring.svg", "added-tcp-session.png", "shamir-time.png", "bytes.png"} {
		st, err := os.Stat(filepath.Join(dir, "wan", f))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "wan", "wan.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Short bool     `json:"short"`
		Rows  []wanRow `json:"rows"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !out.Short || len(out.Rows) == 0 {
		t.Fatalf("short %v, %d rows", out.Short, len(out.Rows))
	}
	for _, w := range out.Rows {
		if w.Failed > 0 || w.Excluded > 0 {
			t.Errorf("%+v: a sum failed or left owners out", w)
		}
		// Emulated delays are never early, so no sum beats its message
		// chain: bound x d is a hard lower bound on its time.
		if min := float64(w.Bound) * w.DelayMS / 1000; w.Seconds < min {
			t.Errorf("%+v: faster than its chain of %d one-way delays (%.3f s)", w, w.Bound, min)
		}
		if w.Method != wanSessionMethod && (w.WireBytes < w.ProtoB || w.ProtoB <= 0) {
			t.Errorf("%+v: wire bytes below the protocol's", w)
		}
	}
}
