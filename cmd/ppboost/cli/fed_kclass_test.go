package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
)

// TestFedKClasses: fed takes a three-class CSV end to end with the Newton
// trainer (K boosters, softmax): the session completes, the model beats the
// majority class, and ppboost predict reads the model it wrote (three
// boosters, softmax); --method dpboost on the same file is refused naming the
// trainers that take K classes (ppboost dpboost, fed --method newton).
func TestFedKClasses(t *testing.T) {
	dir := t.TempDir()
	raw := rawCSV(t, dir, 3, 1200)
	code, _, errOut := run("fed", "--data", raw, "--method", "dpboost")
	if code != exitUsage || !strings.Contains(errOut, "3 classes") || !strings.Contains(errOut, "ppboost dpboost") ||
		!strings.Contains(errOut, "fed --method newton") {
		t.Fatalf("fed --method dpboost on 3 classes: exit %d, %s", code, errOut)
	}
	model := filepath.Join(dir, "k3.json")
	code, out, errOut := run("fed", "--data", raw, "--holdout", "0.25", "--owners", "20", "--eps", "1", "--colluders", "1",
		"--trees", "200", "--model", model)
	if code != 0 {
		t.Fatalf("fed: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "outcome: complete: 200 of 200 trees (the data user and all 20 owners)") {
		t.Fatalf("stderr:\n%s", errOut)
	}
	testErr := number(t, out, `test error`)
	maj := number(t, out, `majority-class baseline: test error`)
	if ok, margin := beatsMajority(testErr, maj, 300); !ok {
		t.Fatalf("test error %.4f does not beat the majority class %.4f by %.4f", testErr, maj, margin)
	}
	code, pout, perr := run("predict", "--model", model, "--data", raw)
	if code != 0 {
		t.Fatalf("predict: exit %d\n%s\n%s", code, pout, perr)
	}
	acc, base := number(t, pout, `samples, accuracy`), number(t, pout, `for every row: accuracy`)
	if !strings.Contains(pout, "c2") || acc < base+0.1 {
		t.Fatalf("predict on the training file: accuracy %.4f, majority %.4f\n%s", acc, base, pout)
	}
}

// TestFedUserKClasses: fed-user's announced configuration for K-class
// data: the Newton trainer's validates (K boosters, a design of K), and
// federated DPBoost's is refused naming --method newton and ppboost
// dpboost.
func TestFedUserKClasses(t *testing.T) {
	dir := t.TempDir()
	d, err := loadDataFile(rawCSV(t, dir, 3, 300), "", dataset.LoadOptions{Warn: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	var roster []protocol.PeerID
	for i := range 10 {
		roster = append(roster, protocol.PeerID(fmt.Sprintf("owner-%02d", i)))
	}
	for _, m := range []dpboost.Method{dpboost.Newton, dpboost.DPBoost} {
		cfg := dpboost.NewtonRule(1, 10*100, 3)
		if m == dpboost.DPBoost {
			cfg = dpboost.DefaultConfig()
			cfg.Trees, cfg.EnsembleSize, cfg.Depth = 4, 2, 3
		}
		cfg.Lambda = 1
		s := &fedUserSetup{data: "raw.csv", session: "s", boost: cfg, roster: roster, maxRows: 100, minParties: 5,
			colluders: -1, split: 0.8, drop: 0.1, stepTimeout: time.Minute, lambdaRule: m == dpboost.Newton}
		pub, err := s.public(d)
		switch {
		case m == dpboost.Newton && err != nil:
			t.Fatalf("newton on 3 classes: %v", err)
		case m == dpboost.Newton && pub.Boosters() != 3:
			t.Fatalf("newton on 3 classes: %d boosters", pub.Boosters())
		case m == dpboost.DPBoost && (err == nil || !strings.Contains(err.Error(), "--method newton") || !strings.Contains(err.Error(), "ppboost dpboost")):
			t.Fatalf("dpboost on 3 classes: %v", err)
		}
	}
}
