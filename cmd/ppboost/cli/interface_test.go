package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

// The one data interface (dataflags.go): every command that reads data
// names it the same way. interfaceCommands lists, per command, the flags of
// the interface it takes; the help of the flags in sameHelp must read the
// same on every command that takes them.
var interfaceCommands = []struct {
	args  []string
	flags []string
}{
	{[]string{"sim"}, []string{"data", "test", "holdout", "schema", "label", "categorical", "missing", "seed", "model", "eps", "repeat"}},
	{[]string{"simulate"}, []string{"data", "test", "holdout", "schema", "label", "categorical", "missing", "seed", "model", "eps"}},
	{[]string{"dpboost"}, []string{"data", "test", "holdout", "schema", "label", "categorical", "missing", "seed", "model", "eps", "repeat"}},
	{[]string{"fed"}, []string{"data", "test", "holdout", "schema", "label", "categorical", "missing", "seed", "model", "eps", "repeat"}},
	{[]string{"pfds", "sim"}, []string{"data", "test", "holdout", "schema", "label", "categorical", "missing", "seed", "model", "eps", "repeat"}},
	{[]string{"pfds", "testnet"}, []string{"data", "test", "holdout", "schema", "label", "categorical", "missing", "seed", "model", "eps"}},
	{[]string{"testnet"}, []string{"data", "test", "holdout", "schema", "label", "categorical", "missing", "seed", "model", "eps"}},
	{[]string{"partition"}, []string{"data", "test", "holdout", "schema", "label", "categorical", "missing", "seed"}},
	// The data user's nodes: --data is the user's own rows (no holdout:
	// they are its validation data); --test is scored after every round.
	{[]string{"user"}, []string{"data", "test", "schema", "label", "categorical", "missing", "seed", "model", "eps"}},
	{[]string{"fed-user"}, []string{"data", "schema", "label", "categorical", "missing", "model", "eps"}},
	// predict scores --data with the model --model names.
	{[]string{"predict"}, []string{"data", "label", "categorical", "missing", "seed", "model"}},
}

// sameHelp are the interface's flags whose help (and so meaning and
// default) is one text wherever they appear; user's --test (scored every
// round, no holdout to replace) is the one documented exception.
var sameHelp = map[string]bool{"test": true, "holdout": true, "label": true, "categorical": true, "missing": true}

// flagHelp parses a command's -h output (flag.PrintDefaults) into flag name
// -> help text.
func flagHelp(t *testing.T, args ...string) map[string]string {
	t.Helper()
	code, _, errOut := run(append(args, "-h")...)
	if code != 0 && code != exitUsage {
		t.Fatalf("%s -h: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	help := map[string]string{}
	name := ""
	head := regexp.MustCompile(`^  -([a-z0-9-]+)`)
	for _, line := range strings.Split(errOut, "\n") {
		if m := head.FindStringSubmatch(line); m != nil {
			name = m[1]
			help[name] = ""
			continue
		}
		if name != "" && strings.HasPrefix(line, "    \t") {
			help[name] += strings.TrimPrefix(line, "    \t")
		}
	}
	if len(help) == 0 {
		t.Fatalf("%s -h printed no flags: %q", strings.Join(args, " "), errOut)
	}
	return help
}

// TestDataInterfaceFlags: every command takes the interface's flags it
// should, under the same names, and the shared ones with the same help.
func TestDataInterfaceFlags(t *testing.T) {
	first := map[string]string{} // flag -> the first command's help
	firstCmd := map[string]string{}
	for _, c := range interfaceCommands {
		cmd := strings.Join(c.args, " ")
		help := flagHelp(t, c.args...)
		for _, f := range c.flags {
			h, ok := help[f]
			if !ok {
				t.Errorf("%s: no --%s (the data interface)", cmd, f)
				continue
			}
			if !sameHelp[f] || (cmd == "user" && f == "test") {
				continue
			}
			if prev, ok := first[f]; !ok {
				first[f], firstCmd[f] = h, cmd
			} else if h != prev {
				t.Errorf("--%s: %s says %q, %s says %q", f, cmd, h, firstCmd[f], prev)
			}
		}
		for _, gone := range []string{"test-samples", "validation"} {
			if _, ok := help[gone]; ok {
				t.Errorf("%s still takes --%s", cmd, gone)
			}
		}
	}
	// A script that still uses a replaced flag is told what to write.
	for _, c := range [][]string{{"sim", "--test-samples", "10"}, {"user", "--validation", "v.csv"}} {
		code, _, errOut := run(c...)
		if code != exitUsage || !strings.Contains(errOut, "--"+strings.TrimPrefix(c[1], "--")+" is gone") || !strings.Contains(errOut, "use --") {
			t.Errorf("%v: exit %d, %q", c, code, errOut)
		}
	}
	// One refusal for --holdout everywhere.
	for _, c := range [][]string{{"sim"}, {"dpboost"}, {"fed"}, {"pfds", "sim"}, {"partition", "--out", t.TempDir()}} {
		code, _, errOut := run(append(c, "--holdout", "1.5")...)
		if code != exitUsage || !strings.Contains(errOut, `--holdout: want a fraction in (0, 1) or a whole row count, got "1.5"`) {
			t.Errorf("%v --holdout 1.5: exit %d, %q", c, code, errOut)
		}
	}
}

// writeLabelledCSV writes n rows of a two-class problem (two numeric
// columns and a categorical one that all carry signal) to dir/name.
func writeLabelledCSV(t *testing.T, dir, name string, n int) string {
	t.Helper()
	r := rng.ForName(t.Name() + "/" + name)
	var b strings.Builder
	b.WriteString("dose,weight,site,outcome\n")
	for i := range n {
		y := i % 2
		fmt.Fprintf(&b, "%.2f,%d,%s,%s\n", 10+8*float64(y)+6*r.Float64(), 50+30*y+r.IntN(40),
			[]string{"north", "south", "east"}[(2*y+r.IntN(2))%3], []string{"healthy", "ill"}[y])
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEveryTrainerUsesTestFileAndWritesModel runs every trainer with the
// same data flags on a small CSV and a separate test file: each scores the
// test file (a test file without the label column fails naming --test),
// writes a model, and predict scores the test file with it; where python3
// is found, the Python reader gives the same classes.
func TestEveryTrainerUsesTestFileAndWritesModel(t *testing.T) {
	dir := t.TempDir()
	train := writeLabelledCSV(t, dir, "train.csv", 600)
	test := writeLabelledCSV(t, dir, "test.csv", 200)
	unlabelled := filepath.Join(dir, "nolabel.csv")
	if err := os.WriteFile(unlabelled, []byte("dose,weight,site\n12,60,north\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	trainers := []struct {
		name string
		args []string
	}{
		{"sim", []string{"sim", "--eps", "4"}},
		{"simulate", []string{"simulate", "--eps", "4", "--rounds", "2", "--owners-per-round", "40"}},
		{"dpboost", []string{"dpboost", "--eps", "4", "--trees", "40", "--quiet"}},
		{"fed", []string{"fed", "--eps", "4", "--owners", "10", "--trees", "20", "--min-parties", "3"}},
		{"pfds", []string{"pfds", "sim", "--eps", "4", "--agents", "4", "--split", "iid"}},
		{"testnet", []string{"testnet", "--eps", "4", "--owners", "12", "--owners-per-round", "4", "--rounds", "2", "--samples-per-owner", "30"}},
	}
	python, _ := exec.LookPath("python3")
	reader, _ := filepath.Abs("../../../python/ppboost_model.py")
	for _, tr := range trainers {
		t.Run(tr.name, func(t *testing.T) {
			model := filepath.Join(dir, tr.name+".json")
			common := []string{"--data", train, "--label", "outcome", "--seed", "2", "--model", model}
			code, out, errOut := run(append(append(tr.args, common...), "--test", test)...)
			if code != 0 && code != 3 { // 3: a partial model, written and labelled
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
			}
			if _, err := os.Stat(model); err != nil {
				t.Fatalf("no model written: %v\nstdout %s", err, out)
			}
			code, out, errOut = run("predict", "--model", model, "--data", test, "--label", "outcome", "--json")
			var ev struct {
				N        int     `json:"n"`
				Accuracy float64 `json:"accuracy"`
			}
			if code != 0 || json.Unmarshal([]byte(out), &ev) != nil || ev.N != 200 {
				t.Fatalf("predict: exit %d, %q, %s", code, out, errOut)
			}
			// Every trainer here has the signal to beat a coin (the
			// classes alternate, so the majority class scores 0.5).
			if ev.Accuracy <= 0.6 {
				t.Errorf("predict: accuracy %.3f on the test file", ev.Accuracy)
			}
			code, _, errOut = run(append(append(tr.args, common...), "--test", unlabelled)...)
			if code == 0 || !strings.Contains(errOut, "--test "+unlabelled) {
				t.Errorf("a test file without the label: exit %d, stderr %q", code, errOut)
			}
			if python == "" {
				return
			}
			code, scores, errOut := run("predict", "--model", model, "--data", test, "--label", "outcome", "--scores")
			if code != 0 {
				t.Fatalf("predict --scores: %d %s", code, errOut)
			}
			py, err := exec.Command(python, reader, model, test).Output()
			if err != nil {
				t.Fatalf("python reader: %v", err)
			}
			_, goPred, _ := readScores(t, scores)
			_, pyPred, _ := readScores(t, string(py))
			if strings.Join(goPred, ",") != strings.Join(pyPred, ",") {
				t.Errorf("the Python reader predicts other classes than predict")
			}
		})
	}
	// partition writes --test's rows as test.csv.
	out := filepath.Join(dir, "shards")
	if code, _, errOut := run("partition", "--data", train, "--test", test, "--label", "outcome", "--owners", "5", "--out", out); code != 0 {
		t.Fatalf("partition: %s", errOut)
	}
	b, err := os.ReadFile(filepath.Join(out, "test.csv"))
	if err != nil || strings.Count(string(b), "\n") != 201 {
		t.Errorf("partition --test: test.csv has %d lines, want 201 (%v)", strings.Count(string(b), "\n"), err)
	}
}
