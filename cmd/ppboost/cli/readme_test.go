package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// smokeSizes shrinks the README's sizes so the smoke test runs in seconds:
// the flag of a command is replaced only when it has exactly the README's
// value, and every row must be used, so a README edit that changes a size
// fails here until the table follows.
var smokeSizes = []struct{ cmd, flag, readme, small string }{
	{"sim", "--owners-per-round", "1000", "20"},
	{"sim", "--samples-per-owner", "80", "20"},
	{"sim", "--rounds", "10", "3"},
	{"simulate", "--owners", "12000", "60"},
	{"simulate", "--owners-per-round", "1000", "10"},
	{"simulate", "--samples-per-owner", "80", "20"},
	{"simulate", "--rounds", "10", "2"},
	{"predict", "--samples", "10000", "1000"},
	{"partition", "--owners", "20", "4"},
	{"partition", "--samples-per-owner", "80", "20"},
}

// smokeExtra adds flags to synthetic runs that would otherwise generate
// 50,000 test samples (added only when the README does not set them).
var smokeExtra = map[string][]string{
	"sim":       {"--user-samples", "500", "--holdout", "1000"},
	"simulate":  {"--user-samples", "500", "--holdout", "500"},
	"partition": {"--user-samples", "100", "--holdout", "200"},
}

// smokeCommands returns the commands of the README's ```sh smoke blocks,
// continuation lines joined and comments removed.
func smokeCommands(t *testing.T, readme string) []string {
	var cmds []string
	in := false
	cur := ""
	for _, line := range strings.Split(readme, "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```sh smoke":
			in = true
			continue
		case in && strings.TrimSpace(line) == "```":
			in = false
			if cur != "" {
				t.Fatalf("README: a smoke block ends in a continuation line: %q", cur)
			}
			continue
		case !in:
			continue
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if more, ok := strings.CutSuffix(line, "\\"); ok {
			cur += more + " "
			continue
		}
		if line = strings.TrimSpace(cur + line); line != "" {
			cmds = append(cmds, line)
		}
		cur = ""
	}
	if in {
		t.Fatal("README: an unterminated smoke block")
	}
	return cmds
}

// TestREADMESmoke runs the README's smoke blocks (everything but the
// commands that start long-running network nodes) through Main in a
// temporary directory, with smaller sizes, and fails if any exits non-zero.
func TestREADMESmoke(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds := smokeCommands(t, string(readme))
	if len(cmds) < 10 {
		t.Fatalf("found %d smoke commands in README.md, want the sim, predict, partition, keygen and data blocks: %q", len(cmds), cmds)
	}
	dir := t.TempDir()
	// The walkthrough names files of the repository by their path from the root.
	if err := os.Symlink(filepath.Join(root, "dataset"), filepath.Join(dir, "dataset")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	used := make([]bool, len(smokeSizes))
	for _, line := range cmds {
		if strings.ContainsAny(line, "\"'$|<>;&`") {
			t.Fatalf("README smoke command %q uses shell syntax; keep smoke blocks to plain ppboost commands", line)
		}
		args := strings.Fields(line)
		if args[0] != "ppboost" || len(args) < 2 {
			t.Fatalf("README smoke command %q does not call ppboost", line)
		}
		args = args[1:]
		for i := 1; i+1 < len(args); i++ {
			for k, o := range smokeSizes {
				if o.cmd == args[0] && o.flag == args[i] && o.readme == args[i+1] {
					args[i+1] = o.small
					used[k] = true
				}
			}
		}
		synthetic := slices.Contains(args, "synthetic") || !slices.Contains(args, "--data")
		if extra, ok := smokeExtra[args[0]]; ok && synthetic {
			for i := 0; i < len(extra); i += 2 {
				if !slices.Contains(args, extra[i]) {
					args = append(args, extra[i], extra[i+1])
				}
			}
		}
		t.Logf("ppboost %s", strings.Join(args, " "))
		code, out, errOut := run(args...)
		if code != 0 {
			t.Fatalf("README command %q (run as %q) exited %d:\n%s%s", line, args, code, out, errOut)
		}
		t.Logf("%s%s", out, errOut)
	}
	for k, u := range used {
		if !u {
			o := smokeSizes[k]
			t.Errorf("smokeSizes row %+v matches no README smoke command: update the table to the README", o)
		}
	}
	for _, f := range []string{"model.json", "predictions.txt", "shards/schema.json", "user.key", "trees.schema.json", "trees-shards/test.csv", "trees-model.json", "go.csv"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("after the README commands: %v", err)
		}
	}
}

// TestREADMEPredictAccuracy runs the README's sim and predict commands at
// their full sizes and checks the accuracy the README quotes (slow: skipped
// under -short).
func TestREADMEPredictAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on 1,000 owners x 80 samples")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds := smokeCommands(t, string(readme))
	t.Chdir(t.TempDir())
	var sim, predict []string
	for _, c := range cmds {
		args := strings.Fields(c)[1:]
		switch {
		case args[0] == "sim" && sim == nil:
			sim = args
		case args[0] == "predict" && predict == nil:
			predict = args
		}
	}
	if code, _, errOut := run(sim...); code != 0 {
		t.Fatalf("%q: %s", sim, errOut)
	}
	code, out, errOut := run(predict...)
	if code != 0 {
		t.Fatalf("%q: %s", predict, errOut)
	}
	acc := strings.Fields(strings.SplitN(out, "accuracy ", 2)[1])[0]
	if !strings.Contains(string(readme), "--samples 10000                           # accuracy "+acc) {
		t.Fatalf("predict prints accuracy %s; the README quotes another", acc)
	}
}
