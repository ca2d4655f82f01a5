package pfds

import (
	"math"
	"testing"
)

// TestRegressionPipeline: continuous targets bucketed into 10, shared as
// PFDS data, and a linear regression on own data plus shares. With a large
// budget the shared data carries the signal (MSE well below the target's
// variance); the targets drawn in a bucket stay inside it.
func TestRegressionPipeline(t *testing.T) {
	dom := &Domain{Dim: 2, Classes: 10, Attrs: []Attribute{{Name: "x0", Offset: 0}, {Name: "x1", Offset: 1}}}
	b := Buckets{Lo: -2, Hi: 2, B: 10}
	var agents []Local
	for i := 0; i < 5; i++ {
		l := linearData(400, 2, 0, t.Name())
		for k := range l.X {
			l.X[k] = l.X[k][:2]
			l.Target[k] = 1.5 * l.X[k][0]
		}
		l.Y = b.Labels(l.Target)
		agents = append(agents, l)
	}
	test := agents[0]
	p := DefaultParams()
	p.HMax, p.Eps, p.MaxLeaves = 6, 1e4, 0
	shares, err := Simulate(dom, agents, p, Full, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shares {
		for k, v := range b.Targets(s.Data.Labels, s.Data.Seed) {
			if b.Of(v) != s.Data.Labels[k] {
				t.Fatalf("target %v outside bucket %d", v, s.Data.Labels[k])
			}
		}
	}
	evalMSE := func(shares []Shared) (mse, variance float64) {
		u := RegressionUnion(Local{}, shares, b) // shared data only
		m, err := Fit(LinReg, u.X, nil, u.Target, 1e-4)
		if err != nil {
			t.Fatal(err)
		}
		for k, x := range test.X {
			d := m.Score(x) - test.Target[k]
			mse += d * d
			variance += test.Target[k] * test.Target[k]
		}
		return mse / float64(len(test.X)), variance / float64(len(test.X))
	}
	mse, variance := evalMSE(shares)
	// Bucket width 0.4 alone gives MSE ~ 0.4^2/12 = 0.013; variance is 0.75.
	if mse > 0.1*variance || math.IsNaN(mse) {
		t.Errorf("MSE %.4f vs target variance %.4f", mse, variance)
	}
	// Negative control: at eps 0.01 the labels are noise and the fit is
	// far worse.
	p.Eps = 0.01
	noisy, err := Simulate(dom, agents, p, Full, 1)
	if err != nil {
		t.Fatal(err)
	}
	if bad, _ := evalMSE(noisy); bad < 3*mse {
		t.Errorf("eps 0.01 MSE %.4f not far above eps 1e4's %.4f", bad, mse)
	}
}
