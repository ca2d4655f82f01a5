package cli

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/ppboost/ppboost/experiment"
)

// The federated Newton trainer on K classes (issue 33 item 4): `ppboost
// fed --method newton` with 20 owners under the owners' default trust
// (colluders all: every share is the whole noise) and under colluders 1
// (shares sized for all but one of the dealers), beside the one-process
// Newton trainer (`ppboost dpboost`) at the same eps and the majority
// class, on the 3-class and 10-class example CSVs, over eps and the seeds.
// It runs the commands as a user does (plans included), from the
// repository root.
func init() {
	experiment.Register(experiment.Spec{
		Name:    "fed-kclass",
		Paper:   "ppboost issue 33 item 4 (federated trainers on K classes)",
		Summary: "federated Newton (20 owners, colluders all and 1) vs the one-process Newton trainer on the 3- and 10-class example CSVs: test error vs eps",
		Run:     runKClassExperiment,
	})
}

var fedTestErr = regexp.MustCompile(`(?m)^test error ([0-9.]+) \(`)

func runKClassExperiment(r *experiment.Run) error {
	files := []string{"trees.csv", "activity.csv"}
	eps := []float64{0.5, 1, 2}
	type trainer struct {
		name string
		args func(path string, eps float64, seed uint64) []string
		re   *regexp.Regexp
	}
	fed := func(colluders string) func(string, float64, uint64) []string {
		return func(p string, e float64, s uint64) []string {
			return []string{"fed", "--method", "newton", "--owners", "20", "--data", p, "--eps", fmt.Sprint(e), "--seed", fmt.Sprint(s), "--colluders", colluders}
		}
	}
	trainers := []trainer{
		{"federated, colluders all (default)", fed("all"), fedTestErr},
		{"federated, colluders 1", fed("1"), fedTestErr},
		{"one process", func(p string, e float64, s uint64) []string {
			return []string{"dpboost", "--data", p, "--eps", fmt.Sprint(e), "--seed", fmt.Sprint(s), "--noise-seed", fmt.Sprint(s), "--quiet"}
		}, dpTestErr},
	}
	if r.Short {
		files, eps = files[:1], eps[1:2]
	}
	header := []string{"file", "trainer", "eps", "test_error_mean", "test_error_std", "majority_error_mean", "runs"}
	var rows [][]string
	if r.Progress != nil {
		r.Progress.Start("fed-kclass", len(files)*len(eps)*len(trainers)*len(r.Seeds))
	}
	for _, f := range files {
		path := filepath.Join(exampleDir, f)
		fig := experiment.Figure{Title: fmt.Sprintf("Federated Newton on %s: 20 owners", f), X: "epsilon", Y: "test error",
			ErrBars: fmt.Sprintf("±1 sd over %d seeds", len(r.Seeds))}
		var majority experiment.Series
		for ti, tr := range trainers {
			s := experiment.Series{Name: tr.name}
			for _, e := range eps {
				var errs, majs []float64
				for _, seed := range r.Seeds {
					var out, errOut bytes.Buffer
					// --force: the experiment measures every cell, including
					// plans the best-case check would refuse (eps 0.5 on the
					// smaller file).
					args := append(tr.args(path, e, seed), "--force")
					if r.Short && tr.name != "one process" {
						args = append(args, "--trees", "40")
					}
					if code := Main(args, &out, &errOut); code != exitOK {
						return fmt.Errorf("%s on %s, eps %g, seed %d: exit %d: %s", tr.name, f, e, seed, code, errOut.String())
					}
					te, m := tr.re.FindSubmatch(out.Bytes()), dpMajority.FindSubmatch(out.Bytes())
					if te == nil || m == nil {
						return fmt.Errorf("%s on %s, eps %g, seed %d: no test error or majority line in %q", tr.name, f, e, seed, out.String())
					}
					v, _ := strconv.ParseFloat(string(te[1]), 64)
					mv, _ := strconv.ParseFloat(string(m[1]), 64)
					errs, majs = append(errs, v), append(majs, mv)
					if r.Progress != nil {
						r.Progress.Step()
					}
				}
				em, es := experiment.MeanStd(errs)
				mm, _ := experiment.MeanStd(majs)
				r.Logf("%-12s %-35s eps %-4g test error %.4f ± %.4f, majority %.4f", f, tr.name, e, em, es, mm)
				rows = append(rows, []string{f, tr.name, experiment.F(e), experiment.F(em), experiment.F(es), experiment.F(mm), strconv.Itoa(len(errs))})
				s.X, s.Y, s.Err = append(s.X, e), append(s.Y, em), append(s.Err, es)
				if ti == 0 {
					majority.X, majority.Y = append(majority.X, e), append(majority.Y, mm)
				}
			}
			fig.Series = append(fig.Series, s)
		}
		majority.Name, majority.Dashed = "majority class", true
		fig.Series = append(fig.Series, majority)
		if err := r.Plot("fed-kclass-"+f[:len(f)-len(".csv")], fig); err != nil {
			return err
		}
	}
	return r.Table("fed-kclass", header, rows)
}
