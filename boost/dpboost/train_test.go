package dpboost

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
)

func synthDataset(t *testing.T, n int) (train, test *dataset.Dataset) {
	t.Helper()
	d, err := dataset.Synthetic(dataset.DefaultSynthetic(n, rng.SeedOf(t.Name())))
	if err != nil {
		t.Fatal(err)
	}
	return d.Split(n * 3 / 4)
}

func majorityError(d *dataset.Dataset) float64 {
	c := make([]int, d.NumClasses())
	for _, y := range d.Y {
		c[y]++
	}
	m := 0
	for _, v := range c {
		m = max(m, v)
	}
	return 1 - float64(m)/float64(d.Len())
}

// TestMethodsLearn: on synthetic data (make_classification-like, 20
// features), NP and every private method with a generous budget beat the
// majority class; the same seed gives the same model.
func TestMethodsLearn(t *testing.T) {
	train, test := synthDataset(t, 8000)
	maj := majorityError(test)
	for _, m := range append(Methods(), Newton) {
		t.Run(m.String(), func(t *testing.T) {
			cfg := DefaultConfig()
			if m == Newton {
				cfg = NewtonRule(20, DefaultRowBound, 2)
				cfg.Trees, cfg.EnsembleSize = 100, 100
				var err error
				if cfg.Lambda, err = NewtonLambda(cfg, 2); err != nil {
					t.Fatal(err)
				}
			} else {
				cfg.Method, cfg.Epsilon, cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Lambda = m, 20, 20, 20, 4, 10
			}
			a, err := TrainClassifier(cfg, train, rng.ForName(t.Name()), nil)
			if err != nil {
				t.Fatal(err)
			}
			e := a.Error(test)
			t.Logf("%v: test error %.3f, majority %.3f", m, e, maj)
			if e > maj-0.05 {
				t.Errorf("%v: test error %.3f not 5 points below the majority's %.3f", m, e, maj)
			}
			b, _ := TrainClassifier(cfg, train, rng.ForName(t.Name()), nil)
			var ba, bb bytes.Buffer
			a.Write(&ba)
			b.Write(&bb)
			if !bytes.Equal(ba.Bytes(), bb.Bytes()) {
				t.Error("same seed, different models")
			}
		})
	}
}

func TestModelRoundTrip(t *testing.T) {
	train, test := synthDataset(t, 2000)
	cfg := DefaultConfig()
	cfg.Trees, cfg.EnsembleSize, cfg.Depth = 5, 5, 3
	m, err := TrainClassifier(cfg, train, rng.ForName(t.Name()), nil)
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/m.json"
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	m2, err := LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range test.X {
		if m.Predict(x) != m2.Predict(x) || m.Value(x) != m2.Value(x) {
			t.Fatal("loaded model predicts differently")
		}
	}
	var buf bytes.Buffer
	m.Write(&buf)
	good := buf.String()
	for name, edit := range map[string]func(string) string{
		"format":  func(s string) string { return strings.Replace(s, ModelFormat, "other", 1) },
		"version": func(s string) string { return strings.Replace(s, `"version": 1`, `"version": 9`, 1) },
		"feature": func(s string) string { return strings.Replace(s, `"feature": [`, `"feature": [99999,`, 1) },
		"unknown": func(s string) string { return strings.Replace(s, `"format"`, `"extra": 1, "format"`, 1) },
		"depth":   func(s string) string { return strings.Replace(s, `"depth": 3`, `"depth": 4`, 1) },
	} {
		if _, err := ReadModel(strings.NewReader(edit(good)), name); !errors.Is(err, ErrModel) {
			t.Errorf("%s: ReadModel error %v, want ErrModel", name, err)
		}
	}
}

// TestHistogramAdds: the histogram of a union of disjoint row sets is the
// sum of their histograms (what a federated trainer sums securely), and
// the split chosen from it equals the one from the pooled rows.
func TestHistogramAdds(t *testing.T) {
	X, y := synth(rng.ForName(t.Name()), 1000, 5)
	b, _ := NewBinning(nil, 5, 32)
	data, _ := b.Quantize(X)
	rows := make([]int32, 1000)
	for i := range rows {
		rows[i] = int32(i)
	}
	whole, a, c := NewHistogram(b), NewHistogram(b), NewHistogram(b)
	BuildHistogram(whole, b, data, rows, y)
	BuildHistogram(a, b, data, rows[:300], y)
	BuildHistogram(c, b, data, rows[300:], y)
	a.Add(c)
	for i := range whole.G {
		if math.Abs(whole.G[i]-a.G[i]) > 1e-9 || whole.N[i] != a.N[i] {
			t.Fatalf("cell %d: whole (%v, %v), sum of parts (%v, %v)", i, whole.G[i], whole.N[i], a.G[i], a.N[i])
		}
	}
	gs, ns := 0.0, 0.0
	for _, v := range y {
		gs += v
		ns++
	}
	if v, want := ReleaseLeafFrom(b, a, LeafRule{Lambda: 1, Bound: math.Inf(1)}, nil), -gs/(ns+1); math.Abs(v-want) > 1e-12 {
		t.Errorf("leaf from the summed histogram %v, want %v", v, want)
	}
	f1, k1, _ := ChooseSplit(b, whole, SplitRule{Lambda: 1}, nil, nil)
	f2, k2, _ := ChooseSplit(b, a, SplitRule{Lambda: 1}, nil, nil)
	if f1 != f2 || k1 != k2 || f1 != 0 {
		t.Errorf("splits (%d,%d) and (%d,%d); want feature 0 (the label depends most on it)", f1, k1, f2, k2)
	}
}

// TestGDF: the first tree filters nothing (F = 0, |g| = |y| <= 1); later
// trees leave out exactly the rows whose |F - y| > 1; NP never filters.
func TestGDF(t *testing.T) {
	X, y := synth(rng.ForName(t.Name()), 3000, 3)
	b, _ := NewBinning(nil, 3, 16)
	data, _ := b.Quantize(X)
	for _, m := range Methods() {
		cfg := DefaultConfig()
		cfg.Method, cfg.Epsilon, cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.LearningRate = m, 0.5, 6, 6, 3, 0.5
		var filtered []int
		trees, err := Train(cfg, b, data, y, rng.ForName(t.Name()), func(ti TreeInfo) { filtered = append(filtered, ti.Filtered) })
		if err != nil {
			t.Fatal(err)
		}
		if filtered[0] != 0 {
			t.Errorf("%v: first tree filtered %d rows", m, filtered[0])
		}
		total := 0
		for _, f := range filtered {
			total += f
		}
		if m == NP && total != 0 {
			t.Errorf("NP filtered %d rows", total)
		}
		cfg.ClipGradients = true
		clipped := 0
		if _, err := Train(cfg, b, data, y, rng.ForName(t.Name()), func(ti TreeInfo) { clipped += ti.Filtered }); err != nil || clipped != 0 {
			t.Errorf("%v with clipped gradients: %d rows filtered, error %v", m, clipped, err)
		}
		if m == SEQ {
			// SEQ sees every row every tree: recount the filter independently.
			F := make([]float64, len(y))
			for k, tr := range trees {
				want := 0
				for i := range y {
					if math.Abs(F[i]-y[i]) > 1 {
						want++
					}
				}
				if filtered[k] != want {
					t.Errorf("SEQ tree %d filtered %d rows, want %d", k+1, filtered[k], want)
				}
				for i, x := range X {
					F[i] += tr.value(b, x)
				}
			}
			if total == 0 {
				t.Error("SEQ with eta 0.5 and noise filtered nothing: the check is vacuous")
			}
		}
	}
}

// TestRegression: square loss on targets in [-1, 1]; NP and DPBoost with a
// large budget reduce the RMSE of the constant 0 predictor.
func TestRegression(t *testing.T) {
	r := rng.ForName(t.Name())
	n := 6000
	X := make([][]float64, n)
	y := make([]float64, n)
	for i := range X {
		X[i] = []float64{2*r.Float64() - 1, 2*r.Float64() - 1, 2*r.Float64() - 1}
		y[i] = 0.8*math.Sin(2*X[i][0])*0.9 + 0.1*X[i][1] + 0.05*r.NormFloat64()
		y[i] = max(-1, min(1, y[i]))
	}
	base := 0.0
	for _, v := range y[4000:] {
		base += v * v
	}
	base = math.Sqrt(base / 2000)
	for _, m := range []Method{NP, DPBoost} {
		cfg := DefaultConfig()
		cfg.Task, cfg.Method, cfg.Epsilon, cfg.Depth, cfg.Lambda = Regression, m, 50, 4, 10
		mod, err := TrainRegressor(cfg, X[:4000], y[:4000], []string{"a", "b", "c"}, nil, rng.ForName(t.Name()), nil)
		if err != nil {
			t.Fatal(err)
		}
		rmse := mod.RMSE(X[4000:], y[4000:])
		t.Logf("%v: RMSE %.3f, constant 0: %.3f", m, rmse, base)
		if rmse > 0.7*base {
			t.Errorf("%v: RMSE %.3f not below 0.7 x %.3f", m, rmse, base)
		}
	}
}

func TestValidate(t *testing.T) {
	for field, edit := range map[string]func(*Config){
		"Epsilon":      func(c *Config) { c.Epsilon = 0 },
		"Trees":        func(c *Config) { c.Trees = 0 },
		"EnsembleSize": func(c *Config) { c.EnsembleSize = 51 },
		"Depth":        func(c *Config) { c.Depth = 0 },
		"LearningRate": func(c *Config) { c.LearningRate = 1 },
		"Lambda":       func(c *Config) { c.Lambda = -1 },
		"Bins":         func(c *Config) { c.Bins = 257 },
	} {
		c := DefaultConfig()
		edit(&c)
		if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %v, want ErrConfig naming the field", field, err)
		}
	}
}

// TestOneVsRest: three classes give three boosters, each with eps/3, and
// the classifier beats the majority class.
func TestOneVsRest(t *testing.T) {
	c := dataset.DefaultSynthetic(6000, rng.SeedOf(t.Name()))
	c.Classes = 3
	d, err := dataset.Synthetic(c)
	if err != nil {
		t.Fatal(err)
	}
	train, test := d.Split(4500)
	cfg := DefaultConfig()
	cfg.Epsilon, cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Lambda = 30, 20, 20, 4, 10
	m, err := TrainClassifier(cfg, train, rng.ForName(t.Name()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Boosters) != 3 || m.Account.Classes != 3 || m.Account.PerTree[0] != 10 || m.Account.Total != 30 {
		t.Fatalf("%d boosters, accounting %+v; want 3 boosters of eps 10 each, total 30", len(m.Boosters), m.Account)
	}
	e, maj := m.Error(test), majorityError(test)
	t.Logf("3 classes: test error %.3f, majority %.3f", e, maj)
	if e > maj-0.1 {
		t.Errorf("test error %.3f not 10 points below the majority's %.3f", e, maj)
	}
	var buf bytes.Buffer
	m.Write(&buf)
	if _, err := ReadModel(&buf, "3class"); err != nil {
		t.Fatal(err)
	}
}
