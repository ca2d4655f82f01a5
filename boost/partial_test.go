package boost

import (
	"bytes"
	"strings"
	"testing"
)

// A partial model keeps its label through a file; a label that does not
// match the rounds the file holds is refused.
func TestPartialLabel(t *testing.T) {
	data := smallData(t, 40, 20)
	cfg := DefaultConfig()
	cfg.Mechanism, cfg.OwnersPerRound, cfg.Rounds = "none", 10, 2
	m, err := Train(cfg, data, nil)
	if err != nil || len(m.Rounds) != 2 {
		t.Fatalf("train: %v", err)
	}
	m.Rounds = m.Rounds[:1]
	m.Partial = &Partial{Rounds: 1, Planned: 2, Reason: "round 2: no learner accepted"}
	var buf bytes.Buffer
	if err := m.Write(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := ReadModel(bytes.NewReader(buf.Bytes()), "partial.json")
	if err != nil || got.Partial == nil || *got.Partial != *m.Partial {
		t.Fatalf("read back %+v, err %v", got, err)
	}
	if s := got.Partial.String(); s != "partial model: 1 of 2 planned rounds (round 2: no learner accepted)" {
		t.Fatalf("%q", s)
	}
	for name, p := range map[string]*Partial{
		"rounds not the model's":    {Rounds: 2, Planned: 3},
		"as many rounds as planned": {Rounds: 1, Planned: 1},
	} {
		m.Partial = p
		buf.Reset()
		if err := m.Write(&buf); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadModel(bytes.NewReader(buf.Bytes()), "bad.json"); err == nil || !strings.Contains(err.Error(), "labelled partial") {
			t.Errorf("%s: err %v", name, err)
		}
	}
}
