package experiment

import (
	"bytes"
	"fmt"

	"os"

	"github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
)

func init() {
	Register(Spec{
		Name:    "pfds-kclass",
		Paper:   "Fioretto & Van Hentenryck 2019 (K-class final learners; not in the paper, whose tasks are binary)",
		Summary: "PFDS and PFDS-cv with K-class final learners (softmax LogReg, one-vs-rest SVM) on 3- and 10-class Gaussian blobs: 20 non-IID agents, eps 1",
		Run:     runPFDSKClass,
	})
}

// BlobsCSV is a K-class problem as a raw CSV (header x1..x4,label; labels
// c0..cK-1): rows spread evenly over the classes (row i has class i mod K),
// each row its class's centre plus N(0, 1) noise per feature, values with
// three decimals. The centres are drawn uniformly in [-4, 4]^4 from a
// stream of seed and classes, the noise from another: the same arguments
// give the same bytes. Neighbouring centres may be close, so the classes
// are separable only in part.
func BlobsCSV(classes, rows int, seed uint64) []byte {
	c := blobCentres(classes, seed)
	r := rng.Derive(seed, 0x424c4f42, uint64(classes), 2) // "BLOB", rows
	var b bytes.Buffer
	b.WriteString("x1,x2,x3,x4,label\n")
	for i := range rows {
		k := i % classes
		for j := range 4 {
			fmt.Fprintf(&b, "%.3f,", c[k][j]+r.NormFloat64())
		}
		fmt.Fprintf(&b, "c%d\n", k)
	}
	return b.Bytes()
}

func blobCentres(classes int, seed uint64) [][4]float64 {
	r := rng.Derive(seed, 0x424c4f42, uint64(classes), 1) // "BLOB", centres
	c := make([][4]float64, classes)
	for k := range c {
		for j := range 4 {
			c[k][j] = 8*r.Float64() - 4
		}
	}
	return c
}

// pfdsBlobs are the experiment's two problems: K = 3 and 10, 4,000 rows
// each, generated with seed 1 (the seeds of the runs vary the split and the
// noise, not the problem).
var pfdsBlobs = []struct {
	classes, rows int
}{{3, 4000}, {10, 4000}}

// runPFDSKClass writes each problem's CSV (pfds/blobs-kK.csv, the file
// `ppboost pfds sim --data` reads) and, per seed, holds out a stratified
// fifth as the test rows, splits the rest among 20 agents non-IID on x1 and
// runs Majority, NP-Agt, DP-Pred, PFDS and PFDS-cv (DefaultVariant) with
// LogReg and SVM at eps 1, evaluating all 20 agents.
func runPFDSKClass(r *Run) error {
	out := r.sub("pfds")
	seeds := pfdsSeeds(r)
	cfg := pfds.DefaultEval()
	cfg.Agents, cfg.EvalAgents, cfg.Epsilons = 20, 20, []float64{1}
	cfg.Modes = []pfds.Mode{pfds.Full, pfds.Variant}
	problems := append(pfdsBlobs[:0:0], pfdsBlobs...)
	if r.Short {
		cfg.Agents, cfg.EvalAgents = 4, 2
		cfg.Params.HMax, cfg.Params.MaxLeaves = 4, 64
		problems = problems[:1]
		problems[0].rows = 600
	}
	var rows [][]string
	r.Progress.Start("pfds-kclass", len(seeds)*len(problems))
	for _, pb := range problems {
		raw := BlobsCSV(pb.classes, pb.rows, 1)
		name := fmt.Sprintf("blobs-k%d", pb.classes)
		if p, err := out.path(name + ".csv"); err != nil {
			return err
		} else if err := os.WriteFile(p, raw, 0o644); err != nil {
			return err
		}
		d, err := dataset.ReadCSV(bytes.NewReader(raw), name+".csv", dataset.CSVOptions{Label: "label"})
		if err != nil {
			return err
		}
		dom, err := pfds.NewDomain(d)
		if err != nil {
			return err
		}
		type key struct {
			method string
			l      pfds.Learner
		}
		errs := map[key][]float64{}
		var order []key
		for _, seed := range seeds {
			train, test := split(d, pfds.StratifiedFolds(d.Y, 5, seed)[0])
			res, err := pfds.EvalFold(dom, train, test, cfg, seed, nil)
			if err != nil {
				return fmt.Errorf("%s seed %d: %w", name, seed, err)
			}
			for _, x := range res {
				switch x.Method {
				case pfds.MethodTreeVote, pfds.MethodVoteRelabel, pfds.MethodOracleLabel:
					continue
				}
				k := key{x.Method, x.Learner}
				if x.Method == pfds.MethodMajority {
					k.l = -1
				}
				if _, ok := errs[k]; !ok {
					order = append(order, k)
				}
				errs[k] = append(errs[k], x.Err)
			}
			r.Progress.Step()
		}
		for _, k := range order {
			m, s := MeanStd(errs[k])
			l := ""
			if k.l >= 0 {
				l = k.l.String()
			}
			rows = append(rows, []string{fmt.Sprint(pb.classes), k.method, l, fmt.Sprintf("%.4f", m), fmt.Sprintf("%.4f", s)})
			r.Logf("K %-2d %-8s %-6s error %.4f ± %.4f over %d seeds", pb.classes, k.method, l, m, s, len(errs[k]))
		}
	}
	return out.Table("pfds-kclass", []string{"classes", "method", "learner", "error", "std"}, rows)
}
