package pfds

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ppboost/ppboost/dataset"
)

// TestAdultTable2Probe is a manual probe (PFDS_PROBE=1): one fold of Table 2.
func TestAdultTable2Probe(t *testing.T) {
	if os.Getenv("PFDS_PROBE") == "" {
		t.Skip("set PFDS_PROBE=1")
	}
	d, err := dataset.Adult()
	if err != nil {
		t.Fatal(err)
	}
	dom, _ := NewDomain(d)
	folds := StratifiedFolds(d.Y, 5, 1)
	test := map[int]bool{}
	for _, i := range folds[0] {
		test[i] = true
	}
	var tr, te Local
	for i := range d.X {
		if test[i] {
			te.X, te.Y = append(te.X, d.X[i]), append(te.Y, d.Y[i])
		} else {
			tr.X, tr.Y = append(tr.X, d.X[i]), append(tr.Y, d.Y[i])
		}
	}
	cfg := DefaultEval()
	cfg.EvalAgents = 10
	if v := os.Getenv("PFDS_LEAVES"); v != "" {
		cfg.Params.MaxLeaves, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("PFDS_HMAX"); v != "" {
		cfg.Params.HMax, _ = strconv.Atoi(v)
	}
	if os.Getenv("PFDS_FAST") != "" {
		cfg.Epsilons = []float64{1}
		cfg.Learners = []Learner{LogReg}
		cfg.Modes = []Mode{Full}
	}
	start := time.Now()
	res, err := EvalFold(dom, tr, te, cfg, 7, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		t.Logf("%-8s %-6s eps %-4g err %.4f synth %d", r.Method, r.Learner, r.Eps, r.Err, r.Synth)
	}
	t.Logf("took %v", time.Since(start))
}
