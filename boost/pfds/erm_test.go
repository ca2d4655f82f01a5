package pfds

import (
	"math"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

// linearData: d features uniform in [-1, 1], class 1 iff w*.x + 0.1 > 0
// (flipped with probability flip); target = w*.x + 0.1.
func linearData(n, d int, flip float64, seed string) Local {
	r := rng.ForName(seed)
	w := make([]float64, d)
	for j := range w {
		w[j] = 2*r.Float64() - 1
	}
	var l Local
	for i := 0; i < n; i++ {
		x := make([]float64, d)
		s := 0.1
		for j := range x {
			x[j] = 2*r.Float64() - 1
			s += w[j] * x[j]
		}
		y := 0
		if s > 0 {
			y = 1
		}
		if r.Float64() < flip {
			y = 1 - y
		}
		l.X, l.Y, l.Target = append(l.X, x), append(l.Y, y), append(l.Target, s)
	}
	return l
}

func classError(l Local, m interface{ Class([]float64) int }) float64 {
	return errorOf(l, m.Class)
}

// TestFitOptimality: the Newton solution is the minimum of the regularized
// objective: moving any coordinate by +-1e-3 does not decrease it. For SVM
// that is the raw machine (newton), before FitClasses' Platt calibration
// (TestPlattCalibration).
func TestFitOptimality(t *testing.T) {
	data := linearData(400, 5, 0.1, t.Name())
	for _, l := range []Learner{LogReg, SVM, LinReg} {
		lambda := 1e-2
		m, err := Fit(l, data.X, data.Y, data.Target, lambda)
		if err != nil {
			t.Fatal(err)
		}
		rows := toSparse(data.X, 1, 1)
		y := data.Target
		if l != LinReg {
			y = signs(data.Y)
		}
		if l == SVM {
			w, err := newton(SVM, rows, y, len(data.X[0]), fitOpts{lambda: lambda})
			if err != nil {
				t.Fatal(err)
			}
			m = &Model{Learner: SVM, W: w}
		}
		obj := func(w []float64) float64 {
			s := 0.0
			for i, r := range rows {
				f, _, _ := l.loss(dot(w, r), y[i])
				s += f
			}
			s /= float64(len(rows))
			for j, v := range w {
				reg := lambda
				if j == len(w)-1 {
					reg = 1e-9
				}
				s += reg / 2 * v * v
			}
			return s
		}
		base := obj(m.W)
		for j := range m.W {
			for _, h := range []float64{-1e-3, 1e-3} {
				w := append([]float64(nil), m.W...)
				w[j] += h
				if obj(w) < base-1e-12 {
					t.Errorf("%s: moving w[%d] by %g lowers the objective", l, j, h)
				}
			}
		}
		// Negative control: a visibly different model is worse.
		w := append([]float64(nil), m.W...)
		w[0] += 0.5
		if obj(w) <= base {
			t.Errorf("%s: perturbed model not worse", l)
		}
	}
}

func TestFitAccuracy(t *testing.T) {
	train := linearData(2000, 6, 0, t.Name()+"train")
	test := linearData(2000, 6, 0, t.Name()+"train") // same weights (same seed), same rows
	for _, l := range []Learner{LogReg, SVM} {
		m, err := Fit(l, train.X, train.Y, nil, 1e-4)
		if err != nil {
			t.Fatal(err)
		}
		if e := classError(test, m); e > 0.03 {
			t.Errorf("%s: training error %.3f on separable data", l, e)
		}
	}
	m, err := Fit(LinReg, train.X, nil, train.Target, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if d := math.Abs(m.Score(train.X[i]) - train.Target[i]); d > 1e-3 {
			t.Errorf("linreg residual %v on noiseless data", d)
		}
	}
}

// TestFitDP: with a huge budget the private predictors are close to the
// non-private ones; with a tiny one they are near chance (negative control
// that the noise is really there).
func TestFitDP(t *testing.T) {
	train := linearData(3000, 4, 0, t.Name())
	r := rng.ForName(t.Name())
	for _, l := range []Learner{LogReg, SVM} {
		m, err := FitDP(l, train.X, train.Y, nil, 4, 1e4, 1e-3, r)
		if err != nil {
			t.Fatal(err)
		}
		if e := classError(train, m); e > 0.06 {
			t.Errorf("%s eps 1e4: error %.3f", l, e)
		}
		var worst float64
		for k := 0; k < 5; k++ {
			m, _ = FitDP(l, train.X, train.Y, nil, 4, 1e-3, 1e-3, r)
			worst = math.Max(worst, classError(train, m))
		}
		if worst < 0.2 {
			t.Errorf("%s eps 1e-3: worst error %.3f of 5, want near chance", l, worst)
		}
	}
	// Functional mechanism: targets in [-1, 1].
	for i := range train.Target {
		train.Target[i] = math.Max(-1, math.Min(1, train.Target[i]/3))
	}
	mse := func(m *Model) float64 {
		s := 0.0
		for i, x := range train.X {
			d := m.Score(x) - train.Target[i]
			s += d * d
		}
		return s / float64(len(train.X))
	}
	m, err := FitDP(LinReg, train.X, nil, train.Target, 4, 1e5, 1e-6, r)
	if err != nil {
		t.Fatal(err)
	}
	if e := mse(m); e > 0.01 {
		t.Errorf("functional mechanism eps 1e5: mse %.4f", e)
	}
	m, _ = FitDP(LinReg, train.X, nil, train.Target, 4, 1e-2, 1e-6, r)
	if e := mse(m); e < 0.05 {
		t.Errorf("functional mechanism eps 0.01: mse %.4f, want large", e)
	}
}

func TestNonIID(t *testing.T) {
	dom := mixedDomain()
	data := mixedData(6000, t.Name())
	parts, err := NonIID(dom, data.X, 10, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, len(data.X))
	spread := func(parts [][]int) float64 {
		var means []float64
		for _, p := range parts {
			if len(p) == 0 {
				continue
			}
			s := 0.0
			for _, k := range p {
				s += data.X[k][0]
			}
			means = append(means, s/float64(len(p)))
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, m := range means {
			lo, hi = math.Min(lo, m), math.Max(hi, m)
		}
		return hi - lo
	}
	for _, p := range parts {
		for _, k := range p {
			if seen[k] {
				t.Fatalf("record %d in two agents", k)
			}
			seen[k] = true
		}
	}
	for k, s := range seen {
		if !s {
			t.Fatalf("record %d in no agent", k)
		}
	}
	// Non-IID: the agents' mean x0 spreads widely; IID (negative control)
	// means are within a few standard errors (sd of a mean of 600 uniform
	// values is 0.024).
	if s := spread(parts); s < 0.5 {
		t.Errorf("non-IID agent means of x0 spread %.3f", s)
	}
	if s := spread(IID(len(data.X), 10, 1)); s > 0.2 {
		t.Errorf("IID agent means spread %.3f", s)
	}
	folds := StratifiedFolds(data.Y, 5, 1)
	total := 0
	for _, f := range folds {
		total += len(f)
		ones := 0
		for _, k := range f {
			ones += data.Y[k]
		}
		all := 0
		for _, y := range data.Y {
			all += y
		}
		if d := math.Abs(float64(ones)/float64(len(f)) - float64(all)/float64(len(data.Y))); d > 0.002 {
			t.Errorf("fold class share off by %.4f", d)
		}
	}
	if total != len(data.Y) {
		t.Errorf("folds cover %d of %d", total, len(data.Y))
	}
}
