package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/rng"
)

// readScores parses predict --scores output: header, predicted class names
// and the per-class values.
func readScores(t *testing.T, text string) (head, pred []string, vals [][]float64) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("scores CSV: %v\n%s", err, text)
	}
	for _, r := range recs[1:] {
		pred = append(pred, r[0])
		v := make([]float64, len(r)-1)
		for k, s := range r[1:] {
			if v[k], err = strconv.ParseFloat(s, 64); err != nil {
				t.Fatalf("scores CSV: %v", err)
			}
		}
		vals = append(vals, v)
	}
	return recs[0], pred, vals
}

// TestPredictScores: --scores prints the predicted class and one value per
// class for every row, headed prob:NAME for a Newton model (probabilities
// summing to 1) and score:NAME otherwise (SAMME: the summed alpha of the
// voting rounds; square-loss DPBoost: -F and F for two classes); the
// predicted class is the one --out writes and the argmax of the values;
// --scores --out writes the same CSV to a file; --json names the classes.
func TestPredictScores(t *testing.T) {
	dir := t.TempDir()
	raw3, raw2 := rawCSV(t, t.TempDir(), 3, 300), rawCSV(t, t.TempDir(), 2, 300)
	sim := []string{"sim", "--user-samples", "30", "--holdout", "60", "--owners-per-round", "3", "--samples-per-owner", "10",
		"--rounds", "3", "--mechanism", "none"}
	cases := []struct {
		name, data, kind string
		train            []string
		sum              func(m map[string]any) float64 // every row's values sum to this (NaN: no check)
	}{
		{"samme stump", raw3, "score", sim, sumAlpha},
		{"samme logreg two classes", raw2, "score", append(slices.Clone(sim), "--learner", "logreg"), sumAlpha},
		{"newton three classes", raw3, "prob", []string{"dpboost", "--eps", "5", "--trees", "20", "--noise-seed", "1", "--quiet"}, one},
		{"newton two classes", raw2, "prob", []string{"dpboost", "--eps", "5", "--trees", "20", "--noise-seed", "1", "--quiet"}, one},
		{"dpboost two classes", raw2, "score", []string{"dpboost", "--method", "dpboost", "--eps", "20", "--trees", "5", "--depth", "2", "--noise-seed", "1", "--quiet"}, zero},
		{"dpboost three classes", raw3, "score", []string{"dpboost", "--method", "np", "--trees", "5", "--depth", "2", "--quiet"}, nil},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			model := filepath.Join(dir, fmt.Sprintf("m%d.json", i))
			if code, _, errOut := run(append(c.train, "--data", c.data, "--model", model)...); code != 0 {
				t.Fatalf("train: %d %s", code, errOut)
			}
			var m map[string]any
			b, err := os.ReadFile(model)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			names := m["class_names"].([]any)
			code, out, errOut := run("predict", "--model", model, "--data", c.data, "--scores")
			if code != 0 {
				t.Fatalf("predict --scores: %d %s", code, errOut)
			}
			head, pred, vals := readScores(t, out)
			want := []string{"predicted"}
			for _, n := range names {
				want = append(want, c.kind+":"+n.(string))
			}
			if !slices.Equal(head, want) || len(pred) != 300 {
				t.Fatalf("header %q and %d rows, want %q and 300", head, len(pred), want)
			}
			labels := filepath.Join(dir, "labels.txt")
			if code, _, errOut := run("predict", "--model", model, "--data", c.data, "--out", labels); code != 0 {
				t.Fatalf("predict --out: %s", errOut)
			}
			lb, _ := os.ReadFile(labels)
			if got := strings.Fields(string(lb)); !slices.Equal(got, pred) {
				t.Fatalf("--scores predicts %v..., --out %v...", pred[:5], got[:5])
			}
			for r, v := range vals {
				best := 0
				for k := range v {
					if v[k] > v[best] {
						best = k
					}
				}
				// Ties can only come from equal scores; then Predict takes the smaller index too,
				// except a two-class model whose F rounds to probability 1/2 (not in this data).
				if names[best].(string) != pred[r] {
					t.Fatalf("row %d: predicted %s, values %v", r, pred[r], v)
				}
				if c.sum != nil {
					s := 0.0
					for _, x := range v {
						s += x
					}
					if want := c.sum(m); math.Abs(s-want) > 1e-12*max(1, math.Abs(want)) {
						t.Fatalf("row %d: values %v sum to %v, want %v", r, v, s, want)
					}
				}
			}
			// The same CSV through --out.
			file := filepath.Join(dir, "scores.csv")
			code, out2, errOut := run("predict", "--model", model, "--data", c.data, "--scores", "--out", file)
			if fb, _ := os.ReadFile(file); code != 0 || out2 != "" || string(fb) != out {
				t.Fatalf("--scores --out: exit %d, stdout %q, %s", code, out2, errOut)
			}
		})
	}
	code, out, errOut := run("predict", "--model", filepath.Join(dir, "m0.json"), "--data", raw3, "--json")
	var ev struct {
		Accuracy   float64  `json:"accuracy"`
		Confusion  [][]int  `json:"confusion"`
		ClassNames []string `json:"class_names"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &ev) != nil || !slices.Equal(ev.ClassNames, []string{"c0", "c1", "c2"}) || len(ev.Confusion) != 3 {
		t.Fatalf("predict --json: %d %q %s", code, out, errOut)
	}
}

// sumAlpha is a SAMME model's total alpha: every row's votes sum to it.
func sumAlpha(m map[string]any) float64 {
	s := 0.0
	for _, r := range m["rounds"].([]any) {
		s += r.(map[string]any)["alpha"].(float64)
	}
	return s
}

func one(map[string]any) float64  { return 1 }
func zero(map[string]any) float64 { return 0 }

// TestPythonReaderRegression: the Python reader predicts a DPBoost
// regression model (which no command writes and predict refuses) exactly as
// Model.Value does, on rows given already scaled. The CLI-written kinds are
// checked by python/test_reader.py in .ci/run. Skipped without python3.
func TestPythonReaderRegression(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	r := rng.ForName(t.Name())
	const n, d = 300, 3
	X := make([][]float64, n)
	y := make([]float64, n)
	for i := range X {
		X[i] = []float64{2*r.Float64() - 1, 2*r.Float64() - 1, float64(r.IntN(2)*2 - 1)}
		if i%50 == 0 {
			X[i][0] = -1 + 2*float64(i/50)/16 // bin edges of 16 bins
		}
		y[i] = max(-1, min(1, 0.6*X[i][0]-0.3*X[i][1]*X[i][2]+0.1*r.NormFloat64()))
	}
	for _, method := range []dpboost.Method{dpboost.Newton, dpboost.DPBoost} {
		cfg := dpboost.DefaultConfig()
		cfg.Method, cfg.Task, cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Bins, cfg.Epsilon = method, dpboost.Regression, 10, 5, 3, 16, 50
		if method == dpboost.Newton {
			cfg.Delta, cfg.HessianShare, cfg.LeafMax, cfg.Lambda = 1e-6, 0.1, 2, 1
		}
		features := []string{"a", "b", "c"}
		m, err := dpboost.TrainRegressor(cfg, X, y, features, nil, r, nil)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		dir := t.TempDir()
		model, data := filepath.Join(dir, "reg.json"), filepath.Join(dir, "rows.csv")
		if err := m.Save(model); err != nil {
			t.Fatal(err)
		}
		var rows, want strings.Builder
		rows.WriteString("a,b,c\n")
		want.WriteString("value\n")
		for _, x := range X {
			fmt.Fprintf(&rows, "%s,%s,%s\n", strconv.FormatFloat(x[0], 'g', -1, 64), strconv.FormatFloat(x[1], 'g', -1, 64), strconv.FormatFloat(x[2], 'g', -1, 64))
			fmt.Fprintf(&want, "%s\n", strconv.FormatFloat(m.Value(x), 'g', -1, 64))
		}
		if err := os.WriteFile(data, []byte(rows.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(py, filepath.Join("..", "..", "..", "python", "ppboost_model.py"), model, data, "--scaled").CombinedOutput()
		if err != nil || string(out) != want.String() {
			t.Fatalf("%s: python reader: %v\n%.300s\nwant\n%.300s", method, err, out, want.String())
		}
	}
}

// TestPredictMissingUsesModelFill: predict --missing mean|zero fills a gap
// with the model's stored training values (issue 32, item 4), so a row with
// gaps scores the same alone (a one-row file, where the file has no value
// to fill from) as among rows that would move the file's own mean, and the
// same as the row with the stored mean written in. A model written before
// models stored fill values still loads, and predict says it fills from the
// file.
func TestPredictMissingUsesModelFill(t *testing.T) {
	dir := t.TempDir()
	raw := rawCSV(t, dir, 2, 300)
	const header = "alcohol,proline,colour,label\n"
	gap := "?,650,,c1\n" // numeric and categorical gaps
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	alone := write("alone.csv", header+gap)
	crowd := gap
	for i := range 20 {
		crowd += fmt.Sprintf("%g,%d,white,c%d\n", 14.2+float64(i%3)/10, 1000+i, i%2) // a file mean far from the training one
	}
	among := write("among.csv", header+crowd)
	// dpboost stores no fill values (exact means of the rows its eps
	// protects would not be covered by it): its model behaves as an old one.
	t.Run("newton stores none", func(t *testing.T) {
		model := filepath.Join(dir, "newton.json")
		if code, _, errOut := run("dpboost", "--eps", "5", "--trees", "20", "--noise-seed", "1", "--quiet", "--data", raw, "--model", model); code != 0 {
			t.Fatalf("train: %d %s", code, errOut)
		}
		b, err := os.ReadFile(model)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"fill"`) {
			t.Fatalf("a dpboost model stores fill values: %.300s", b)
		}
		if code, _, errOut := run("predict", "--model", model, "--data", among, "--scores", "--missing", "mean"); code != 0 || !strings.Contains(errOut, "stores no training fill values") {
			t.Errorf("predict --missing mean with a dpboost model: exit %d, %s", code, errOut)
		}
	})
	trainers := []struct {
		name    string
		control bool // the old model's scores must move with the file's mean (probabilities do; SAMME's votes may not)
		train   []string
	}{
		{"samme logreg", false, []string{"sim", "--user-samples", "100", "--holdout", "60", "--owners-per-round", "3",
			"--samples-per-owner", "10", "--rounds", "3", "--mechanism", "none", "--learner", "logreg"}},
	}
	for i, tr := range trainers {
		t.Run(tr.name, func(t *testing.T) {
			model := filepath.Join(dir, fmt.Sprintf("m%d.json", i))
			if code, _, errOut := run(append(tr.train, "--data", raw, "--model", model)...); code != 0 {
				t.Fatalf("train: %d %s", code, errOut)
			}
			b, err := os.ReadFile(model)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			fill, _ := m["fill"].(map[string]any)
			if fill == nil {
				t.Fatalf("the model stores no fill values: %.300s", b)
			}
			mean := fill["mean"].(map[string]any)["alcohol"].(float64)
			mode := fill["mode"].(map[string]any)["colour"].(string)
			filledIn := write(fmt.Sprintf("filled%d.csv", i), header+strconv.FormatFloat(mean, 'g', -1, 64)+",650,"+mode+",c1\n")
			scores := func(model, data, policy string) (string, string) {
				t.Helper()
				code, out, errOut := run("predict", "--model", model, "--data", data, "--scores", "--missing", policy)
				if code != 0 {
					t.Fatalf("predict %s --missing %s: %d %s", filepath.Base(data), policy, code, errOut)
				}
				return strings.SplitN(out, "\n", 3)[1], errOut // the first row's line
			}
			want, _ := scores(model, filledIn, "error")
			for _, policy := range []string{"mean", "zero"} {
				one, errOut := scores(model, alone, policy)
				if !strings.Contains(errOut, "with the model's training values") {
					t.Errorf("--missing %s: the warning does not say where the values came from: %s", policy, errOut)
				}
				many, _ := scores(model, among, policy)
				if one != many {
					t.Errorf("--missing %s: the row scores %s alone and %s among other rows", policy, one, many)
				}
				if policy == "mean" && one != want {
					t.Errorf("--missing mean: the row scores %s, with the stored mean %v and category %q written in %s", one, mean, mode, want)
				}
			}
			// A model from before fill values: it loads, and predict warns.
			delete(m, "fill")
			old, _ := json.Marshal(m)
			oldModel := write(fmt.Sprintf("old%d.json", i), string(old))
			got, errOut := scores(oldModel, among, "mean")
			if !strings.Contains(errOut, "stores no training fill values") {
				t.Errorf("an old model with --missing mean: no warning: %s", errOut)
			}
			if tr.control && got == want { // negative control: the file's own mean moves the score
				t.Errorf("an old model fills from the file, yet scores %s as with the training values", got)
			}
			if code, _, errOut := run("predict", "--model", oldModel, "--data", alone, "--missing", "mean"); code == 0 || !strings.Contains(errOut, "missing value in every row") {
				t.Errorf("an old model on a one-row file with gaps: exit %d, %s", code, errOut)
			}
		})
	}
}
