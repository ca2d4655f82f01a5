package cli

import (
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/crypto/rng"
)

// exampleCSVs are the generated example files (dataset/examples_test.go)
// with their class counts.
var exampleCSVs = []struct {
	file    string
	classes int
}{
	{"loans.csv", 2}, {"trees.csv", 3}, {"activity.csv", 10},
}

func examplePath(file string) string {
	return filepath.Join("..", "..", "..", "dataset", "testdata", file)
}

// number extracts the float after prefix in s (the first match), or fails.
func number(t *testing.T, s, pattern string) float64 {
	t.Helper()
	m := regexp.MustCompile(pattern + `\s*([0-9.]+)`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %q in output:\n%s", pattern, s)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// beatsMajority checks testErr against the majority class's error maj on
// n test rows with a margin of two standard errors of maj's estimate,
// 2 sqrt(maj (1 - maj) / n): a model whose true error equalled the
// majority's would pass by chance about 2.3% of the time (one-sided z).
func beatsMajority(testErr, maj float64, n int) (bool, float64) {
	margin := 2 * math.Sqrt(maj*(1-maj)/float64(n))
	return testErr <= maj-margin, margin
}

// TestSimDefaultsBeatMajority: sim with default flags (the plan sized from
// the data, the learner chosen by the forecast, LDP at eps 5) beats the
// majority class on the three example CSVs (2, 3 and 10 classes); the
// negative control, loans.csv with its labels shuffled, does not, and the
// forecast says so before anyone spends.
func TestSimDefaultsBeatMajority(t *testing.T) {
	for _, ex := range exampleCSVs {
		t.Run(ex.file, func(t *testing.T) {
			code, out, errOut := run("sim", "--data", examplePath(ex.file))
			if code != 0 {
				t.Fatalf("sim: exit %d\n%s\n%s", code, out, errOut)
			}
			if !strings.Contains(errOut, "plan: ") || !strings.Contains(errOut, "forecast (") {
				t.Fatalf("no plan or forecast line:\n%s", errOut)
			}
			acc := number(t, out, `test accuracy`)
			maj := number(t, out, `majority-class baseline: test error`)
			n := int(number(t, out, `, test`))
			ok, margin := beatsMajority(1-acc, maj, n)
			t.Logf("%s: test error %.4f, majority %.4f (margin %.4f, %d rows)\n%s", ex.file, 1-acc, maj, margin, n, errOut)
			if !ok {
				t.Fatalf("test error %.4f does not beat the majority class %.4f by %.4f", 1-acc, maj, margin)
			}
			if strings.Contains(errOut, "does not beat the majority") {
				t.Fatalf("warned although it beat the majority:\n%s", errOut)
			}
		})
	}
	t.Run("negative control: shuffled labels", func(t *testing.T) {
		b, err := os.ReadFile(examplePath("loans.csv"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		labels := make([]string, len(lines)-1)
		for i, l := range lines[1:] {
			labels[i] = l[strings.LastIndexByte(l, ',')+1:]
		}
		r := rng.ForName(t.Name())
		r.Shuffle(len(labels), func(i, j int) { labels[i], labels[j] = labels[j], labels[i] })
		for i, l := range lines[1:] {
			lines[i+1] = l[:strings.LastIndexByte(l, ',')+1] + labels[i]
		}
		p := filepath.Join(t.TempDir(), "shuffled.csv")
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := run("sim", "--data", p)
		if !strings.Contains(errOut, "unlikely to beat the majority class") {
			t.Fatalf("no forecast warning on labels without signal (exit %d):\n%s\n%s", code, out, errOut)
		}
		if code != 0 {
			return // no learner accepted: it did not beat the majority
		}
		acc := number(t, out, `test accuracy`)
		maj := number(t, out, `majority-class baseline: test error`)
		n := int(number(t, out, `, test`))
		if ok, margin := beatsMajority(1-acc, maj, n); ok {
			t.Fatalf("shuffled labels beat the majority class: %.4f vs %.4f - %.4f", 1-acc, maj, margin)
		}
	})
}

// TestDPBoostDefaultsBeatMajority: dpboost's default (Newton, eps 1) beats
// the majority class on the example CSVs, with the margin of
// beatsMajority.
func TestDPBoostDefaultsBeatMajority(t *testing.T) {
	for _, ex := range exampleCSVs {
		t.Run(ex.file, func(t *testing.T) {
			if ex.classes > 3 && testing.Short() {
				t.Skip("10 boosters x 800 trees: a few seconds")
			}
			code, out, errOut := run("dpboost", "--data", examplePath(ex.file), "--quiet", "--noise-seed", "7")
			if code != 0 {
				t.Fatalf("dpboost: exit %d\n%s\n%s", code, out, errOut)
			}
			testErr := number(t, out, `test error`)
			maj := number(t, out, `majority-class baseline: test error`)
			n := int(number(t, out, `test error [0-9.]+ \(`))
			if ok, margin := beatsMajority(testErr, maj, n); !ok {
				t.Fatalf("test error %.4f does not beat the majority class %.4f by %.4f", testErr, maj, margin)
			}
		})
	}
}

// TestFedDefaultsBeatMajority: fed reads a CSV (owners sized from its rows)
// and its default Newton model beats the majority class on the binary
// example; a multi-class file is refused by federated DPBoost, naming
// what would work (TestFedKClasses runs the Newton trainer on one).
func TestFedDefaultsBeatMajority(t *testing.T) {
	code, _, errOut := run("fed", "--data", examplePath("trees.csv"), "--method", "dpboost")
	if code != exitUsage || !strings.Contains(errOut, "3 classes") || !strings.Contains(errOut, "ppboost dpboost") {
		t.Fatalf("fed --method dpboost on 3 classes: exit %d, %s", code, errOut)
	}
	if testing.Short() {
		t.Skip("800 trees over the in-memory network: about 30 s")
	}
	code, out, errOut := run("fed", "--data", examplePath("loans.csv"))
	if code != 0 {
		t.Fatalf("fed: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "plan: 40 owners") {
		t.Fatalf("no owner plan:\n%s", errOut)
	}
	testErr := number(t, out, `test error`)
	maj := number(t, out, `majority-class baseline: test error`)
	// 1000 rows, holdout 0.2: 200 test rows.
	if ok, margin := beatsMajority(testErr, maj, 200); !ok {
		t.Fatalf("test error %.4f does not beat the majority class %.4f by %.4f", testErr, maj, margin)
	}
}

// TestConfigFile: the owner's --config precedence (flag > file > default)
// and its errors, on a flag set with every kind of flag the owner has.
func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	type vals struct {
		data      string
		eps       float64
		peers     int
		stay      bool
		colluders string
	}
	for _, c := range []struct {
		name string
		file string // JSON; "" means no file at all
		args []string
		want vals
		err  string
	}{
		{"defaults", "", nil, vals{"", 5, 256, false, "all"}, ""},
		{"file sets", `{"data": "a.csv", "eps": 2.5, "expect_peers": 10, "stay": true, "colluders": 3}`, nil, vals{"a.csv", 2.5, 10, true, "3"}, ""},
		{"dash or underscore", `{"expect-peers": 12}`, nil, vals{"", 5, 12, false, "all"}, ""},
		{"flags win", `{"data": "a.csv", "eps": 2.5, "stay": true}`, []string{"--eps", "1", "--stay=false"}, vals{"a.csv", 1, 256, false, "all"}, ""},
		{"flag equal to the default still wins", `{"eps": 2.5}`, []string{"--eps", "5"}, vals{"", 5, 256, false, "all"}, ""},
		{"unknown key", `{"epsilon": 1}`, nil, vals{}, `"epsilon" is not a flag`},
		{"config in config", `{"config": "x.json"}`, nil, vals{}, `"config" is not a flag`},
		{"same flag twice", `{"expect_peers": 1, "expect-peers": 2}`, nil, vals{}, "set the same flag"},
		{"bad number", `{"eps": "lots"}`, nil, vals{}, `"eps"`},
		{"bad colluders", `{"colluders": 0}`, nil, vals{}, `"colluders": want "all"`},
		{"not a scalar", `{"data": ["a.csv"]}`, nil, vals{}, "want a string, number or boolean"},
		{"null", `{"data": null}`, nil, vals{}, "leave the key out"},
		{"not an object", `[1]`, nil, vals{}, "not a JSON object"},
		{"trailing value", `{} {}`, nil, vals{}, "more than one JSON value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := newFlagSet("owner", "", io.Discard)
			data := fs.String("data", "", "")
			eps := fs.Float64("eps", 5, "")
			peers := fs.Int("expect-peers", 256, "")
			stay := fs.Bool("stay", false, "")
			col := colludersFlag{n: -1, min: 1}
			fs.Var(&col, "colluders", "")
			config := fs.String(configFlag, "", "")
			args := c.args
			if c.file != "" {
				p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".json")
				if err := os.WriteFile(p, []byte(c.file), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append([]string{"--config", p}, args...)
			}
			if err := parse(fs, args); err != nil {
				t.Fatal(err)
			}
			var err error
			if *config != "" {
				err = applyConfigFile(fs, *config)
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "--config "+*config) {
					t.Fatalf("error %v, want one naming the file and %q", err, c.err)
				}
				if !errors.As(err, new(usageError)) {
					t.Fatalf("error %v is not a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := vals{*data, *eps, *peers, *stay, col.String()}
			if got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
	// The owner command reads it: the file's user id is checked (a
	// usage error naming it), and a flag given overrides the file.
	p := filepath.Join(dir, "owner.json")
	if err := os.WriteFile(p, []byte(`{"data": "`+filepath.Join(dir, "none.csv")+`", "user": "not-a-peer", "state": "`+dir+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run("owner", "--config", p)
	if code != exitUsage || !strings.Contains(errOut, `--user "not-a-peer"`) {
		t.Fatalf("owner --config: exit %d, %s", code, errOut)
	}
	code, _, errOut = run("owner", "--config", p, "--user", "12D3KooWGzxzKZYveHXtpG6AsrUJBcWxHBFS2HsEoGTxrMLvKXtf")
	if code != exitError || !strings.Contains(errOut, "none.csv") {
		t.Fatalf("owner --config with --user: exit %d, %s", code, errOut)
	}
}

// TestREADMEWalkthrough runs README's walkthrough as written: its smoke
// block through Main, then its shell block (the Python reader on the
// model sim wrote, compared with predict's scores) with sh, which must
// print that they are the same. Skipped without python3.
func TestREADMEWalkthrough(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	const head = "### Walkthrough: a small CSV from schema to Python"
	i := strings.Index(readme, head)
	if i < 0 {
		t.Fatalf("README has no %q", head)
	}
	section := readme[i:]
	if j := strings.Index(section[len(head):], "\n## "); j >= 0 {
		section = section[:len(head)+j]
	}
	cmds := smokeCommands(t, section)
	var shell []string
	for _, block := range strings.Split(section, "```sh\n")[1:] {
		body, _, _ := strings.Cut(block, "```")
		for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
			shell = append(shell, l)
		}
	}
	if len(cmds) < 4 || len(shell) < 2 {
		t.Fatalf("walkthrough: %d smoke commands, %d shell lines", len(cmds), len(shell))
	}
	dir := t.TempDir()
	for _, d := range []string{"dataset", "python"} {
		if err := os.Symlink(filepath.Join(root, d), filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	for _, c := range cmds {
		code, out, errOut := run(strings.Fields(c)[1:]...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", c, code, out, errOut)
		}
	}
	var all strings.Builder
	for _, l := range shell {
		if rest, ok := strings.CutPrefix(l, "ppboost "); ok { // the CLI in-process, its comment cut
			rest, _, _ = strings.Cut(rest, " #")
			if code, out, errOut := run(strings.Fields(rest)...); code != 0 {
				t.Fatalf("%s: exit %d\n%s%s", l, code, out, errOut)
			}
			continue
		}
		out, err := exec.Command("sh", "-c", l).CombinedOutput()
		all.Write(out)
		if err != nil {
			t.Fatalf("%s: %v\n%s", l, err, out)
		}
	}
	if !strings.Contains(all.String(), "same classes and scores") {
		t.Fatalf("the Python reader's file differs from predict's:\n%s", all.String())
	}
}

// FuzzConfigFile: any file content either sets flags or is a usage error
// naming the file; it never panics.
func FuzzConfigFile(f *testing.F) {
	for _, s := range []string{`{"data": "a.csv", "eps": 2.5, "stay": true, "colluders": "all"}`, `{}`, `[]`, `{"eps": {}}`,
		`{"expect_peers": 1e3}`, `{"data": "\u0000"}`, `nul`, `{"stay": "maybe"}`} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		fs := newFlagSet("owner", "", io.Discard)
		fs.String("data", "", "")
		fs.Float64("eps", 5, "")
		fs.Int("expect-peers", 256, "")
		fs.Bool("stay", false, "")
		col := colludersFlag{n: -1, min: 1}
		fs.Var(&col, "colluders", "")
		p := filepath.Join(dir, "c.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := applyConfigFile(fs, p); err != nil && (!errors.As(err, new(usageError)) || !strings.Contains(err.Error(), p)) {
			t.Fatalf("error %v is not a usage error naming %s", err, p)
		}
	})
}

// TestUserPlan: the data user node with --expect-owners and no size flags
// plans as sim does (a plan line, H x attempts within the expected owners)
// and forecasts; with a --config file, or every planned flag given, it only
// forecasts; an impossible H is refused naming what would work.
func TestUserPlan(t *testing.T) {
	own, _, err := (&dataFlags{data: examplePath("loans.csv")}).load(io.Discard, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	own, _ = own.Split(250)
	cfg := boost.DefaultConfig()
	cfg.OwnersPerRound = 5
	var out strings.Builder
	if err := userPlan(&out, map[string]bool{}, false, &cfg, 400, own); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "plan: ") || !strings.Contains(out.String(), "forecast (") {
		t.Fatalf("no plan and forecast:\n%s", out.String())
	}
	if cfg.OwnersPerRound == 5 || cfg.OwnersPerRound*(cfg.Rounds+boost.RetryRoomFor(cfg.Rounds)) > 400 {
		t.Fatalf("planned %d rounds x %d owners for 400 expected owners", cfg.Rounds, cfg.OwnersPerRound)
	}
	for name, c := range map[string]struct {
		set      map[string]bool
		fromFile bool
	}{
		"config file": {map[string]bool{}, true},
		"all given":   {map[string]bool{"owners-per-round": true, "rounds": true, "learner": true}, false},
	} {
		cfg := boost.DefaultConfig()
		cfg.OwnersPerRound = 5
		out.Reset()
		if err := userPlan(&out, c.set, c.fromFile, &cfg, 400, own); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "plan: ") || cfg.OwnersPerRound != 5 || !strings.Contains(out.String(), "forecast (") {
			t.Fatalf("%s: planned (H %d):\n%s", name, cfg.OwnersPerRound, out.String())
		}
		// H 5 of one-row owners at eps 5 is hopeless: the warning says so.
		if !strings.Contains(out.String(), "unlikely to beat the majority class") {
			t.Fatalf("%s: no warning for 5 owners per round:\n%s", name, out.String())
		}
	}
	cfg = boost.DefaultConfig()
	cfg.OwnersPerRound = 300
	err = userPlan(io.Discard, map[string]bool{"owners-per-round": true}, false, &cfg, 400, own)
	if err == nil || !strings.Contains(err.Error(), "use at most 200") {
		t.Fatalf("H 300 of 400 owners: %v", err)
	}
}

// TestPFDSOnAnyCSV: pfds sim reads a CSV without an "age" column (the split
// attribute defaults to its first numeric column; agents sized from its
// rows) and names the attributes when --split-attr is wrong. (Files with
// more classes: TestPFDSKClasses.)
func TestPFDSOnAnyCSV(t *testing.T) {
	raw := rawCSV(t, t.TempDir(), 2, 400)
	code, out, errOut := run("pfds", "sim", "--data", raw, "--hmax", "4", "--max-leaves", "64", "--eval", "2")
	if code != 0 {
		t.Fatalf("pfds sim on a CSV: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "split on alcohol") || !strings.Contains(errOut, "plan: 6 agents") || !strings.Contains(out, "majority class") {
		t.Fatalf("pfds sim on a CSV:\n%s%s", out, errOut)
	}
	code, _, errOut = run("pfds", "sim", "--data", raw, "--split-attr", "age")
	if code != exitUsage || !strings.Contains(errOut, `"age": not an attribute of the data (it has alcohol, proline, colour)`) {
		t.Fatalf("--split-attr age: exit %d, %s", code, errOut)
	}
}
