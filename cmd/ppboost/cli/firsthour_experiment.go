package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/ppboost/ppboost/experiment"
)

// The example CSVs with default flags (issue 21's first hour): sim (LDP
// at eps 5, the plan sized from the data), sim without noise (the ceiling
// of the same plan), simulate (the protocol over the in-memory network) and
// dpboost (the Newton trainer at eps 1), each beside the majority class,
// over the seeds. It lives in the CLI because it measures the commands as
// a user runs them (plan included). Run it from the repository root.
func init() {
	experiment.Register(experiment.Spec{
		Name:    "firsthour-csv",
		Paper:   "issue 21 (defaults on small CSVs)",
		Summary: "sim, simulate and dpboost with default flags on the 2-, 3- and 10-class example CSVs vs the majority class",
		Run:     runFirstHourExperiment,
	})
}

// exampleDir is where the example CSVs live, from the repository root.
var exampleDir = filepath.Join("dataset", "testdata")

func runFirstHourExperiment(r *experiment.Run) error {
	files := []string{"loans.csv", "trees.csv", "activity.csv"}
	type trainer struct {
		name string
		args func(path string, seed uint64) []string
		json bool
	}
	trainers := []trainer{
		{"sim", func(p string, s uint64) []string {
			return []string{"sim", "--data", p, "--seed", fmt.Sprint(s), "--json"}
		}, true},
		{"sim, no noise", func(p string, s uint64) []string {
			return []string{"sim", "--data", p, "--seed", fmt.Sprint(s), "--mechanism", "none", "--json"}
		}, true},
		{"simulate", func(p string, s uint64) []string {
			return []string{"simulate", "--data", p, "--seed", fmt.Sprint(s), "--json"}
		}, true},
		{"dpboost", func(p string, s uint64) []string {
			return []string{"dpboost", "--data", p, "--seed", fmt.Sprint(s), "--noise-seed", fmt.Sprint(s), "--quiet"}
		}, false},
	}
	if r.Short {
		files, trainers = files[1:2], trainers[:1]
	}
	header := []string{"file", "trainer", "test_error_mean", "test_error_std", "majority_error_mean", "beats_majority_runs", "runs"}
	var rows [][]string
	if r.Progress != nil {
		r.Progress.Start("firsthour-csv", len(files)*len(trainers)*len(r.Seeds))
	}
	for _, f := range files {
		path := filepath.Join(exampleDir, f)
		for _, tr := range trainers {
			var errs, majs []float64
			beat := 0
			for _, seed := range r.Seeds {
				var out, errOut bytes.Buffer
				if code := Main(tr.args(path, seed), &out, &errOut); code != exitOK {
					return fmt.Errorf("%s on %s, seed %d: exit %d: %s", tr.name, f, seed, code, errOut.String())
				}
				e, m, err := firstHourResult(out.Bytes(), tr.json)
				if err != nil {
					return fmt.Errorf("%s on %s, seed %d: %w", tr.name, f, seed, err)
				}
				errs, majs = append(errs, e), append(majs, m)
				if e < m {
					beat++
				}
				if r.Progress != nil {
					r.Progress.Step()
				}
			}
			em, es := experiment.MeanStd(errs)
			mm, _ := experiment.MeanStd(majs)
			r.Logf("%-13s %-14s test error %.4f ± %.4f, majority %.4f, beats it in %d of %d runs", f, tr.name, em, es, mm, beat, len(errs))
			rows = append(rows, []string{f, tr.name, experiment.F(em), experiment.F(es), experiment.F(mm), strconv.Itoa(beat), strconv.Itoa(len(errs))})
		}
	}
	return r.Table("firsthour-csv", header, rows)
}

var (
	dpTestErr  = regexp.MustCompile(`: test error ([0-9.]+)`)
	dpMajority = regexp.MustCompile(`majority-class baseline: test error ([0-9.]+)`)
)

// firstHourResult reads a run's test error and the majority class's: from
// sim's or simulate's --json report, or dpboost's text.
func firstHourResult(out []byte, isJSON bool) (testErr, majority float64, err error) {
	if isJSON {
		var rep struct {
			Final *struct {
				Accuracy float64 `json:"accuracy"`
			} `json:"final"`
			Majority *float64 `json:"majority_error"`
		}
		if err := json.NewDecoder(bytes.NewReader(out)).Decode(&rep); err != nil && err != io.EOF {
			return 0, 0, err
		}
		if rep.Final == nil || rep.Majority == nil {
			return 0, 0, fmt.Errorf("no final accuracy or majority error in the report")
		}
		return 1 - rep.Final.Accuracy, *rep.Majority, nil
	}
	e, m := dpTestErr.FindSubmatch(out), dpMajority.FindSubmatch(out)
	if e == nil || m == nil {
		return 0, 0, fmt.Errorf("no test error or majority line in %q", out)
	}
	te, _ := strconv.ParseFloat(string(e[1]), 64)
	me, _ := strconv.ParseFloat(string(m[1]), 64)
	return te, me, nil
}
