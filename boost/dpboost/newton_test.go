package dpboost

import (
	"errors"
	"math"
	"testing"

	"github.com/ppboost/ppboost/crypto/rdp"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
)

func newtonConfig(t *testing.T, eps float64, n, classes, trees int) Config {
	t.Helper()
	cfg := NewtonRule(eps, n, classes)
	cfg.Trees, cfg.EnsembleSize = trees, trees
	var err error
	if cfg.Lambda, err = NewtonLambda(cfg, classes); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The plan never spends more than the budget: for the three losses and a
// range of budgets, the round's rho from the integer variances times T
// converts to at most Epsilon at Delta, and the account states that eps;
// the negative control is the unrounded budget with twice the trees, which
// must convert to more.
func TestNewtonPlanWithinBudget(t *testing.T) {
	for _, c := range []struct {
		task    Task
		classes int
	}{{Classification, 2}, {Classification, 5}, {Regression, 0}} {
		for _, eps := range []float64{0.05, 0.3, 1, 8} {
			cfg := NewtonRule(eps, 10000, max(c.classes, 2))
			cfg.Task, cfg.Lambda = c.task, 1
			acc, err := PlanNewton(cfg, c.classes)
			if err != nil {
				t.Fatal(err)
			}
			na := acc.Newton
			if na.Epsilon > eps*(1+1e-12) || acc.Total != na.Epsilon {
				t.Errorf("%v/%d eps %g: account says %g", c.task, c.classes, eps, na.Epsilon)
			}
			if got := rdp.ZCDPEpsilon(na.RhoRound*float64(cfg.Trees), cfg.Delta); math.Abs(got-na.Epsilon) > 1e-12 {
				t.Errorf("%v/%d eps %g: rho %g converts to %g, account %g", c.task, c.classes, eps, na.Rho, got, na.Epsilon)
			}
			if na.Epsilon < 0.98*eps {
				t.Errorf("%v/%d eps %g: the plan wastes budget (%g)", c.task, c.classes, eps, na.Epsilon)
			}
			if twice := rdp.ZCDPEpsilon(2*na.Rho, cfg.Delta); twice <= eps {
				t.Errorf("negative control: twice the rounds convert to %g <= %g", twice, eps)
			}
		}
	}
}

// The multi-class (softmax) and regression paths learn: 3 classes of the
// synthetic generator beat the majority class by 10 points at eps 4, and a
// noisy linear target's RMSE falls below the zero predictor's.
func TestNewtonSoftmaxAndRegression(t *testing.T) {
	sc := dataset.DefaultSynthetic(6000, rng.SeedOf(t.Name()))
	sc.Classes = 3
	d, err := dataset.Synthetic(sc)
	if err != nil {
		t.Fatal(err)
	}
	train, test := d.Split(4500)
	cfg := newtonConfig(t, 4, train.Len(), 3, 150)
	m, err := TrainClassifier(cfg, train, rng.ForName(t.Name()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Boosters) != 3 || m.Account.Newton == nil {
		t.Fatalf("%d boosters, account %+v", len(m.Boosters), m.Account)
	}
	if e, maj := m.Error(test), majorityError(test); e > maj-0.10 {
		t.Errorf("softmax: test error %.3f, majority %.3f", e, maj)
	}

	r := rng.ForName(t.Name() + "/reg")
	X, _ := synth(r, 4000, 3)
	y := make([]float64, len(X))
	for i, x := range X {
		y[i] = max(-1, min(1, 0.6*x[0]-0.3*x[1]+0.1*r.NormFloat64()))
	}
	rcfg := newtonConfig(t, 4, len(X), 0, 100)
	rcfg.Task = Regression
	if rcfg.Lambda, err = NewtonLambda(rcfg, 0); err != nil {
		t.Fatal(err)
	}
	rm, err := TrainRegressor(rcfg, X, y, []string{"a", "b", "c"}, nil, rng.ForName(t.Name()), nil)
	if err != nil {
		t.Fatal(err)
	}
	zero := 0.0
	for _, v := range y {
		zero += v * v
	}
	zero = math.Sqrt(zero / float64(len(y)))
	if got := rm.RMSE(X, y); got > 0.8*zero {
		t.Errorf("regression RMSE %.3f, zero predictor %.3f", got, zero)
	}
}

// Random trees do not read the data: the same generator state gives the
// same tree whatever the rows, and every split is a valid (feature, bin).
func TestRandomTreeIgnoresData(t *testing.T) {
	b, err := NewBinning(nil, 4, 16)
	if err != nil {
		t.Fatal(err)
	}
	a := RandomTree(nil, b, 4, rng.Seeded(9))
	c := RandomTree(nil, b, 4, rng.Seeded(9))
	for i := range a.Feature {
		if a.Feature[i] != c.Feature[i] || a.Bin[i] != c.Bin[i] {
			t.Fatal("same seed, different trees")
		}
		if a.Feature[i] < 0 || a.Feature[i] >= 4 || a.Bin[i] < 0 || a.Bin[i] >= 15 {
			t.Fatalf("node %d: feature %d bin %d", i, a.Feature[i], a.Bin[i])
		}
	}
}

// The rule's delta reads the declared row bound, never the rows: it is 1e-6
// at the default bound, at most 0.1/rows for every dataset within the bound
// (so the guarantee means something for each), and data past the bound is
// refused with ErrRowBound.
func TestNewtonDeltaFromBound(t *testing.T) {
	if d := NewtonDelta(DefaultRowBound); d != 1e-6 {
		t.Fatalf("default bound's delta %g, want 1e-6", d)
	}
	for _, bound := range []int{1, 1000, DefaultRowBound, 120_000, 10_000_000} {
		d := NewtonDelta(bound)
		for _, rows := range []int{1, bound / 2, bound} {
			if rows >= 1 && d > 0.1/float64(rows) {
				t.Errorf("bound %d: delta %g > 0.1/%d rows", bound, d, rows)
			}
		}
		if err := CheckRowBound(bound, bound); err != nil {
			t.Errorf("bound %d rows refused at its bound: %v", bound, err)
		}
		if err := CheckRowBound(bound+1, bound); !errors.Is(err, ErrRowBound) {
			t.Errorf("bound %d: %d rows gave %v, want ErrRowBound", bound, bound+1, err)
		}
	}
}
