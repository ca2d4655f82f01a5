package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
)

// rawCSV writes a K-class CSV in raw units (wine-like: features in the
// hundreds and thousands, one categorical column) with n rows, and returns
// its path.
func rawCSV(t *testing.T, dir string, k, n int) string {
	t.Helper()
	r := rng.ForName(t.Name())
	var b strings.Builder
	b.WriteString("alcohol,proline,colour,label\n")
	for i := range n {
		y := i % k
		fmt.Fprintf(&b, "%g,%d,%s,c%d\n", float64(1100+100*y+r.IntN(150))/100, 300+200*y+r.IntN(400),
			[]string{"red", "white", "rose"}[(y+r.IntN(2))%3], y)
	}
	p := filepath.Join(dir, "raw.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPartitionRawUnits: partition keeps the raw units and the original
// bounds, so a model trained on its files predicts the same on the raw file
// as on the partitioned one.
func TestPartitionRawUnits(t *testing.T) {
	dir := t.TempDir()
	raw := rawCSV(t, dir, 3, 600)
	shards := filepath.Join(dir, "shards")
	code, out, errOut := run("partition", "--data", raw, "--owners", "4", "--user-samples", "300", "--out", shards)
	if code != 0 {
		t.Fatalf("partition: %d %s", code, errOut)
	}
	if !strings.Contains(errOut, "leak") || !strings.Contains(out, `label "label", 3 classes`) {
		t.Fatalf("partition output %q, warnings %q", out, errOut)
	}
	s, err := dataset.LoadSchema(filepath.Join(shards, "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Columns[1]; c.Name != "proline" || c.Min < 300 || c.Max > 1100 || c.Max < 700 {
		t.Fatalf("schema.json is not in raw units: %+v", c)
	}
	model := filepath.Join(dir, "m.json")
	code, _, errOut = run("sim", "--data", "csv:"+filepath.Join(shards, "validation.csv"), "--owners-per-round", "3",
		"--samples-per-owner", "20", "--user-samples", "50", "--holdout", "50", "--rounds", "2", "--mechanism", "none", "--model", model)
	if code != 0 {
		t.Fatalf("sim on the validation file: %d %s", code, errOut)
	}
	if !strings.Contains(errOut, "using the public schema "+filepath.Join(shards, "schema.json")) {
		t.Fatalf("the schema beside the data was not announced: %q", errOut)
	}
	predict := func(data string) map[string]string {
		p := filepath.Join(dir, "pred.txt")
		if code, _, errOut := run("predict", "--model", model, "--data", data, "--out", p); code != 0 || strings.Contains(errOut, "clipped") {
			t.Fatalf("predict %s: %d %q", data, code, errOut)
		}
		pred, _ := os.ReadFile(p)
		rows, _ := os.ReadFile(strings.TrimPrefix(data, "csv:"))
		lines := strings.Split(strings.TrimSpace(string(rows)), "\n")[1:]
		preds := strings.Split(strings.TrimSpace(string(pred)), "\n")
		if len(lines) != len(preds) {
			t.Fatalf("%s: %d rows, %d predictions", data, len(lines), len(preds))
		}
		m := map[string]string{}
		for i, l := range lines {
			m[l[:strings.LastIndex(l, ",")]] = preds[i] // features -> prediction
		}
		return m
	}
	onRaw := predict(raw)
	onTest := predict("csv:" + filepath.Join(shards, "test.csv"))
	if len(onTest) < 100 {
		t.Fatalf("%d distinct test rows", len(onTest))
	}
	for row, p := range onTest {
		q, ok := onRaw[row]
		if !ok {
			t.Fatalf("test row %q is not a raw row written unchanged", row)
		}
		if p != q {
			t.Fatalf("row %q: %s on test.csv, %s on the raw file", row, p, q)
		}
	}
}

// TestDataErrors: bad input fails with the file, line, column and value,
// and says which flag handles it.
func TestDataErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	na := write("na.csv", "a,b,label\n1,x,p\n2,y,q\nNA,x,p\n4,y,q\n5,x,p\n6,y,q\n")
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"missing value", []string{"partition", "--data", na, "--owners", "1", "--out", filepath.Join(dir, "o")}, exitError,
			[]string{na + `:4: column "a": value "NA": missing value`, "--missing skip|zero|mean"}},
		{"missing value in sim", []string{"sim", "--data", na}, exitError, []string{na + `:4: column "a": value "NA": missing value`, "--missing skip|zero|mean"}},
		{"schema given but not found", []string{"sim", "--data", na, "--schema", filepath.Join(dir, "nope.json")}, exitUsage, []string{"--schema " + filepath.Join(dir, "nope.json")}},
		{"schema on synthetic data", []string{"sim", "--schema", na}, exitUsage, []string{"--schema applies to CSV data only"}},
		{"bad policy", []string{"partition", "--data", na, "--missing", "drop", "--out", dir}, exitUsage, []string{"--missing", `"drop"`}},
		{"mixed column", []string{"schema", "infer", "--data", write("abc.csv", "a,label\n1,p\nabc,q\n"), "--out", filepath.Join(dir, "s.json")},
			exitError, []string{`abc.csv:3: column "a": value "abc": not a number`, "--categorical"}},
		{"empty label", []string{"schema", "infer", "--data", write("el.csv", "a,label\n1,p\n2,\n"), "--out", filepath.Join(dir, "s.json")},
			exitError, []string{`el.csv:3: label column "label": empty label`}},
		{"absurd value", []string{"schema", "infer", "--data", write("big.csv", "a,label\n1,p\n1e300,q\n"), "--out", filepath.Join(dir, "s.json")},
			exitError, []string{`big.csv:3: column "a": value "1e300": magnitude too large`}},
		{"unknown data", []string{"partition", "--data", "wine", "--out", dir}, exitUsage, []string{`unknown data "wine"`}},
		{"too many owners", []string{"partition", "--data", na, "--missing", "skip", "--owners", "9", "--out", dir}, exitUsage,
			[]string{"--owners 9"}},
		{"predict samples", []string{"predict", "--model", "m.json", "--data", "synthetic", "--samples", "0"}, exitUsage, []string{"--samples must be at least 1"}},
		{"schema no subcommand", []string{"schema"}, exitUsage, []string{"infer or check"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := run(c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Fatalf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
}

func TestSchemaInferAndCheck(t *testing.T) {
	dir := t.TempDir()
	raw := rawCSV(t, dir, 10, 200)
	s := filepath.Join(dir, "schema.json")
	code, out, errOut := run("schema", "infer", "--data", raw, "--out", s)
	if code != 0 || !strings.Contains(out, "10 classes") || !strings.Contains(out, "proline") {
		t.Fatalf("infer: %d %q %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "leak") || !strings.Contains(errOut, "public bound") {
		t.Fatalf("no privacy warning: %q", errOut)
	}
	if code, _, errOut := run("schema", "infer", "--data", raw, "--out", s); code != exitUsage || !strings.Contains(errOut, "--force") {
		t.Fatalf("overwrote the schema: %d %q", code, errOut)
	}
	// Narrow the public bounds: check counts the clipped values.
	sc, err := dataset.LoadSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	sc.Columns[0].Max = 12
	if err := sc.Save(s); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run("schema", "check", "--data", "csv:"+raw, "--schema", s)
	if code != 0 || !strings.Contains(out, "fits") || !strings.Contains(errOut, `clipped`) || !strings.Contains(errOut, `"alcohol"`) {
		t.Fatalf("check: %d %q %q", code, out, errOut)
	}
}

// TestSimFlagErrors: impossible combinations exit 2 and name the flags.
func TestSimFlagErrors(t *testing.T) {
	dir := t.TempDir()
	raw := rawCSV(t, dir, 3, 300)
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"more owners per round than owners", []string{"sim", "--data", raw, "--owners-per-round", "100", "--samples-per-owner", "2", "--user-samples", "50"},
			[]string{"--owners-per-round 100", "the 95 owners", "--samples-per-owner 2", "use at most 47"}},
		{"user samples too many", []string{"sim", "--data", raw, "--user-samples", "1000"}, []string{"--user-samples 1000", "use at most 120"}},
		{"test samples too many", []string{"simulate", "--data", raw, "--holdout", "300"}, []string{"--holdout 300", "hold out at most 150"}},
		{"config field names are flags", []string{"sim", "--owners-per-round", "0"}, []string{"--owners-per-round: must be at least 1"}},
		{"rounds", []string{"sim", "--rounds", "0"}, []string{"--rounds: must be at least 1"}},
		{"owners below H", []string{"sim", "--owners", "5", "--owners-per-round", "10"}, []string{"--owners-per-round 10 is more than --owners 5"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := run(c.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want 2: %s", code, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Fatalf("stderr %q lacks %q", errOut, w)
				}
			}
			if strings.Contains(errOut, "owners_per_round") {
				t.Fatalf("stderr names a config field: %q", errOut)
			}
		})
	}
	// The privacy warning names a command and a file, not Go functions.
	_, _, errOut := run("sim", "--data", raw, "--owners-per-round", "2", "--samples-per-owner", "10", "--user-samples", "50", "--rounds", "1", "--mechanism", "none")
	if !strings.Contains(errOut, "ppboost schema infer --data "+raw) || strings.Contains(errOut, "InferSchema") || strings.Contains(errOut, "Schema.Save") {
		t.Fatalf("warning %q", errOut)
	}
}

// TestPartitionExplicitSchema: --schema gives the public bounds; partition
// copies it beside the shards and counts what it clipped.
func TestPartitionExplicitSchema(t *testing.T) {
	dir := t.TempDir()
	raw := rawCSV(t, dir, 3, 300)
	s := filepath.Join(dir, "public.json")
	if code, _, errOut := run("schema", "infer", "--data", raw, "--out", s); code != 0 {
		t.Fatal(errOut)
	}
	sc, err := dataset.LoadSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	sc.Columns[1].Min, sc.Columns[1].Max = 0, 800 // proline: public bounds narrower than the data
	if err := sc.Save(s); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "shards")
	code, _, errOut := run("partition", "--data", "csv:"+raw, "--schema", s, "--owners", "3", "--out", out)
	if code != 0 {
		t.Fatal(errOut)
	}
	if strings.Contains(errOut, "leak") || !strings.Contains(errOut, `clipped`) || !strings.Contains(errOut, `"proline" 0 below and`) {
		t.Fatalf("warnings %q", errOut)
	}
	got, err := dataset.LoadSchema(filepath.Join(out, "schema.json"))
	if err != nil || got.Digest() != sc.Digest() {
		t.Fatalf("schema.json is not the given schema: %v", err)
	}
	if code, _, errOut := run("partition", "--data", "synthetic", "--schema", s, "--out", out); code != exitUsage || !strings.Contains(errOut, "--schema") {
		t.Fatalf("--schema with synthetic data: %d %q", code, errOut)
	}
}

func TestLoadDataFile(t *testing.T) {
	dir := t.TempDir()
	shards := filepath.Join(dir, "shards")
	if code, _, errOut := run("partition", "--data", rawCSV(t, dir, 3, 200), "--owners", "2", "--out", shards); code != 0 {
		t.Fatal(errOut)
	}
	var warned []string
	opt := dataset.LoadOptions{Warn: func(w string) { warned = append(warned, w) }}
	shard := filepath.Join(shards, "owner-000.csv")
	d, err := loadDataFile(shard, "", opt)
	if err != nil || d.NumClasses() != 3 || len(warned) != 1 || !strings.Contains(warned[0], "using the public schema "+filepath.Join(shards, "schema.json")) {
		t.Fatalf("beside: %v %q", err, warned)
	}
	warned = nil
	if _, err := loadDataFile(shard, filepath.Join(shards, "schema.json"), opt); err != nil || len(warned) != 0 {
		t.Fatalf("explicit: %v %q", err, warned)
	}
	if _, err := loadDataFile(shard, filepath.Join(dir, "none.json"), opt); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Fatalf("missing schema file: %v", err)
	}
}

// TestMultiClassEndToEnd trains and predicts on CSV files with K = 2, 3 and
// 10 classes: the model knows K class names and predict prints a K x K
// confusion matrix.
func TestMultiClassEndToEnd(t *testing.T) {
	for _, k := range []int{2, 3, 10} {
		t.Run(fmt.Sprint("K=", k), func(t *testing.T) {
			dir := t.TempDir()
			raw := rawCSV(t, dir, k, 100*k)
			model := filepath.Join(dir, "m.json")
			code, _, errOut := run("sim", "--data", raw, "--user-samples", fmt.Sprint(10*k), "--holdout", fmt.Sprint(20*k),
				"--owners-per-round", "3", "--samples-per-owner", "10", "--rounds", "3", "--mechanism", "none", "--model", model)
			if code != 0 {
				t.Fatalf("sim: %d %s", code, errOut)
			}
			code, out, errOut := run("predict", "--model", model, "--data", raw)
			if code != 0 {
				t.Fatalf("predict: %d %s", code, errOut)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if !strings.HasPrefix(lines[0], fmt.Sprintf("%d samples", 100*k)) || !strings.HasPrefix(lines[1], "majority class ") ||
				len(lines) != 4+k || !strings.Contains(lines[3], fmt.Sprintf("c%d", k-1)) {
				t.Fatalf("predict output:\n%s", out)
			}
		})
	}
}
