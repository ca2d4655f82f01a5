package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repeatCommands are the one-process trainers with --repeat, each sized to
// train on loans.csv in a fraction of a second.
var repeatCommands = []struct {
	name string
	args []string
}{
	// --force: these tests are about --repeat, not the check before
	// spending, which refuses some of these small plans on loans.csv (sim:
	// seed 2's plan forecasts a mean error of 0.381 against the majority
	// class's 0.380; pfds sim: 16 agents of 50 rows; fed: 4 trees).
	{"sim", []string{"sim", "--force"}},
	{"dpboost", []string{"dpboost", "--quiet", "--noise-seed", "5", "--force"}},
	{"fed", []string{"fed", "--trees", "4", "--force"}},
	{"pfds sim", []string{"pfds", "sim", "--force"}},
}

const loansCSV = "../../../dataset/testdata/loans.csv"

// TestRepeat runs every trainer with --repeat 3 on loans.csv: three run
// lines with seeds 1, 2, 3, then a mean ± sd line whose numbers are those
// of the run lines, and the majority-class baseline.
func TestRepeat(t *testing.T) {
	runRE := regexp.MustCompile(`(?m)^run (\d)/3 \(seed (\d+)\): test error ([0-9.]+) \(\d+ rows\), majority class [0-9.]+$`)
	sumRE := regexp.MustCompile(`(?m)^test error: ([0-9.]+) ± ([0-9.]+) over 3 runs \(min ([0-9.]+), max ([0-9.]+)\)$`)
	for _, tc := range repeatCommands {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(append(tc.args, "--data", loansCSV, "--repeat", "3")...)
			if code != 0 {
				t.Fatalf("exit %d:\n%s%s", code, out, errOut)
			}
			runs := runRE.FindAllStringSubmatch(out, -1)
			if len(runs) != 3 {
				t.Fatalf("want 3 run lines, got %d:\n%s", len(runs), out)
			}
			var errs []float64
			for i, r := range runs {
				if r[1] != string(rune('1'+i)) || r[2] != string(rune('1'+i)) {
					t.Errorf("run line %d: %q, want run %d of seed %d", i, r[0], i+1, i+1)
				}
				errs = append(errs, atof(t, r[3]))
			}
			sum := sumRE.FindStringSubmatch(out)
			if sum == nil {
				t.Fatalf("no mean ± sd line:\n%s", out)
			}
			// The summary is computed from the unrounded errors; the run
			// lines print 4 decimals, so the two agree within 1e-4.
			s := summarize([]runResult{{TestError: errs[0]}, {TestError: errs[1]}, {TestError: errs[2]}})
			for _, c := range []struct {
				name      string
				got, want float64
			}{{"mean", atof(t, sum[1]), s.Mean}, {"sd", atof(t, sum[2]), s.SD}, {"min", atof(t, sum[3]), s.Min}, {"max", atof(t, sum[4]), s.Max}} {
				if math.Abs(c.got-c.want) > 1e-4 {
					t.Errorf("%s %v, want %v from the run lines", c.name, c.got, c.want)
				}
			}
			if !strings.Contains(out, "majority-class baseline: test error ") {
				t.Errorf("no baseline line:\n%s", out)
			}
			if strings.Contains(errOut, "hint:") {
				t.Errorf("a series printed the single-run hint:\n%s", errOut)
			}
		})
	}
}

// TestRepeatRefused: --repeat below 1 is a usage error naming the flag, on
// every trainer, before any data is read.
func TestRepeatRefused(t *testing.T) {
	for _, tc := range repeatCommands {
		for _, n := range []string{"0", "-2"} {
			t.Run(tc.name+" "+n, func(t *testing.T) {
				code, _, errOut := run(append(tc.args, "--data", "csv:/nonexistent.csv", "--repeat", n)...)
				if code != exitUsage || !strings.Contains(errOut, "--repeat: must be at least 1") {
					t.Fatalf("exit %d, want %d and a --repeat message: %s", code, exitUsage, errOut)
				}
			})
		}
	}
}

// TestSingleRunHint: the hint follows the rule in --repeat's help: a
// single run whose test error has binomial sd sqrt(p(1-p)/n) above 0.03.
func TestSingleRunHint(t *testing.T) {
	for _, tc := range []struct {
		p    float64
		n    int
		hint bool
	}{{0.3, 200, true}, {0.1, 200, false}, {0.5, 277, true}, {0.5, 278, false}, {0.2, 50000, false}, {0, 10, false}} {
		var b strings.Builder
		singleRunHint(&b, tc.p, tc.n)
		if got := strings.Contains(b.String(), "use --repeat 5"); got != tc.hint {
			t.Errorf("p %v n %d: hint %v, want %v (sd %.4f)", tc.p, tc.n, got, tc.hint, math.Sqrt(tc.p*(1-tc.p)/float64(tc.n)))
		}
	}
	code, _, errOut := run("pfds", "sim", "--variant", "pfds", "--data", loansCSV, "--force")
	if code != 0 || !strings.Contains(errOut, "hint: on 200 test rows") {
		t.Fatalf("pfds sim --variant pfds on loans.csv (200 test rows, error near 0.4): exit %d, no hint:\n%s", code, errOut)
	}
}

// TestRepeatJSONAndModel: sim --json --repeat gives the runs and the
// summary as JSON, and --model holds the first run's model.
func TestRepeatJSONAndModel(t *testing.T) {
	model := filepath.Join(t.TempDir(), "m.json")
	code, out, errOut := run("sim", "--force", "--data", loansCSV, "--repeat", "2", "--json", "--model", model)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var s repeatSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(s.Runs) != 2 || s.Runs[0].Seed != 1 || s.Runs[1].Seed != 2 || s.Majority == 0 {
		t.Fatalf("JSON %+v", s)
	}
	if _, err := os.Stat(model); err != nil || !strings.Contains(errOut, "model of run 1 (seed 1) written to "+model) {
		t.Fatalf("model: %v; stderr:\n%s", err, errOut)
	}
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	var v float64
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}
