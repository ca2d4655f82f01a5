package boost

import (
	"math"
	"testing"

	"github.com/ppboost/ppboost/crypto/ldp"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
)

// TestSignificantNullRate is the negative control: a learner whose
// predictions are independent of the labels passes at about the level.
// Over 2000 independent trials at level 0.05 the pass count is Binomial(2000,
// 0.05): mean 100, sd 9.7; we accept 60..140 (about 4 sd), which a test
// with the wrong variance (e.g. ignoring the weights) would miss.
func TestSignificantNullRate(t *testing.T) {
	r := rng.ForName(t.Name())
	const n, trials = 500, 2000
	X := make([][]float64, n)
	for i := range X {
		X[i] = []float64{0}
	}
	y := make([]int, n)
	w := make([]float64, n)
	b := &Base{Stump: &StumpModel{Feature: 0, Threshold: 0.5, Left: 0, Right: 1}}
	pass := 0
	for tr := 0; tr < trials; tr++ {
		for i := range X {
			X[i][0] = float64(r.IntN(2)) // the prediction: random
			y[i] = 0
			if r.Float64() < 0.3 { // unbalanced labels, independent of X
				y[i] = 1
			}
			w[i] = 0.2 + r.ExpFloat64() // uneven weights, as after boosting
		}
		if _, ok := Significant(b, X, y, w, 2, 0.05); ok {
			pass++
		}
	}
	t.Logf("null learner passed %d of %d", pass, trials)
	if pass < 60 || pass > 140 {
		t.Fatalf("null learner passed %d of %d trials, want about 100 (60..140)", pass, trials)
	}
}

// TestSignificantConstantNeverPasses: a constant classifier's error equals
// its chance error however unbalanced the weights, so it never passes, while
// it would have alpha > 0.
func TestSignificantConstantNeverPasses(t *testing.T) {
	r := rng.ForName(t.Name())
	const n = 1000
	X := make([][]float64, n)
	y := make([]int, n)
	w := make([]float64, n)
	for i := range X {
		X[i] = []float64{r.Float64()}
		if r.Float64() < 0.4 {
			y[i] = 1
		}
		w[i] = 1
	}
	constant := &Base{Stump: &StumpModel{Feature: 0, Threshold: 2, Left: 0, Right: 0}}
	z, ok := Significant(constant, X, y, w, 2, 0.05)
	errM := 0.0
	for i := range y {
		if y[i] != 0 {
			errM++
		}
	}
	errM /= n
	if ok || math.Abs(z) > 1e-9 {
		t.Fatalf("constant classifier: z %v, passed %v", z, ok)
	}
	if Alpha(errM, 2) <= 0 {
		t.Fatalf("setup: alpha %v should be positive (err %v)", Alpha(errM, 2), errM)
	}
}

// TestSignificantPower: a learner with 60% accuracy on 1,000 balanced
// samples has z about (0.5-0.4)/(0.5/sqrt(1000)) = 6.3 and passes.
func TestSignificantPower(t *testing.T) {
	r := rng.ForName(t.Name())
	const n = 1000
	X := make([][]float64, n)
	y := make([]int, n)
	w := make([]float64, n)
	for i := range X {
		y[i] = i % 2
		p := y[i]
		if r.Float64() < 0.4 {
			p = 1 - p
		}
		X[i] = []float64{float64(p)}
		w[i] = 1
	}
	b := &Base{Stump: &StumpModel{Feature: 0, Threshold: 0.5, Left: 0, Right: 1}}
	z, ok := Significant(b, X, y, w, 2, 0.05)
	if !ok || z < 4 || z > 9 {
		t.Fatalf("60%% learner: z %v, passed %v; want z about 6.3 and a pass", z, ok)
	}
}

// TestNCCShareErrorMatchesVariance: the first-round PM-NCC centroid error
// matches the mechanism's variance. With u_i = x_i (equal weights) the
// class-k centroid's squared error has expectation
// sum_{i in k} sum_j Var_j(x_i) / n_k^2; averaged over 30 noise draws the
// measured squared error (relative sd about sqrt(2/d)/sqrt(30) = 6% for
// d = 20) must be within 25% of it. A share that halves the signal (the old
// (v x, v) share with v = 1/2) has 4 times the error and fails.
func TestNCCShareErrorMatchesVariance(t *testing.T) {
	syn, err := dataset.Synthetic(dataset.DefaultSynthetic(2000, 11))
	if err != nil {
		t.Fatal(err)
	}
	shards, err := syn.Partition(500, nil, 11)
	if err != nil {
		t.Fatal(err)
	}
	const eps, reps = 5.0, 30
	s := Spec{Learner: NCC, Mechanism: ldp.Piecewise, Epsilon: eps, Classes: 2, Features: syn.Dim()}
	m, err := ldp.New(ldp.Piecewise, eps/4, syn.Dim(), ldp.Clip)
	if err != nil {
		t.Fatal(err)
	}
	owners := make([]*Owner, len(shards))
	for i, d := range shards {
		owners[i], _ = NewOwner(d)
	}
	want := make([]float64, 2)
	nk := make([]float64, 2)
	for _, o := range owners {
		for i, x := range o.Data.X {
			y := o.Data.Y[i]
			nk[y]++
			for j := range x {
				want[y] += m.Variance(x, j)
			}
		}
	}
	exact, err := Aggregate(&Spec{Learner: NCC, Mechanism: ldp.None, Classes: 2, Features: syn.Dim()}, nccShares(t, owners, &Spec{Learner: NCC, Mechanism: ldp.None, Classes: 2, Features: syn.Dim()}, 0))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float64, 2)
	for rep := 0; rep < reps; rep++ {
		b, err := Aggregate(&s, nccShares(t, owners, &s, uint64(rep+1)))
		if err != nil {
			t.Fatal(err)
		}
		for k := range got {
			for j, v := range b.NCC.Centroids[k] {
				d := v - exact.NCC.Centroids[k][j]
				got[k] += d * d / reps
			}
		}
	}
	for k := range got {
		w := want[k] / (nk[k] * nk[k])
		t.Logf("class %d: squared error %.4f, from the variance %.4f", k, got[k], w)
		if math.Abs(got[k]/w-1) > 0.25 {
			t.Errorf("class %d: mean squared centroid error %.4f, the mechanism's variance gives %.4f", k, got[k], w)
		}
	}
}

func nccShares(t *testing.T, owners []*Owner, s *Spec, seed uint64) []Share {
	t.Helper()
	out := make([]Share, len(owners))
	for i, o := range owners {
		sh, err := o.LocalShare(s, rng.Derive(seed, uint64(i)))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = sh
	}
	return out
}

// TestNCCClassWeightDividesCentroid: the user's class-weight estimate
// rescales the sum of released weighted samples into a weighted mean.
func TestNCCClassWeightDividesCentroid(t *testing.T) {
	d := tiny()
	o, _ := NewOwner(d)
	// Class-0 samples weigh twice as much as class-1 samples on average:
	// N w_i = 4/3 for class 0 and 2/3 for class 1 (average 1).
	for i, y := range d.Y {
		o.W[i] = (4.0 / 3) / 6
		if y == 1 {
			o.W[i] = (2.0 / 3) / 6
		}
	}
	s := Spec{Learner: NCC, Mechanism: ldp.None, Classes: 2, Features: 2, ClassWeight: []float64{4.0 / 3, 2.0 / 3}}
	sh, err := o.LocalShare(&s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sh.Values) != 6*2 {
		t.Fatalf("share has %d values, want N*d = 12", len(sh.Values))
	}
	b, err := Aggregate(&s, []Share{sh})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{(-0.8 - 0.5 - 0.1) / 3, (0.3 - 0.2 + 0.9) / 3}, {(0.2 + 0.6 + 0.9) / 3, (-0.7 + 0.1 - 0.4) / 3}}
	for k := range want {
		for j := range want[k] {
			if math.Abs(b.NCC.Centroids[k][j]-want[k][j]) > 1e-12 {
				t.Fatalf("centroid %d = %v, want %v", k, b.NCC.Centroids[k], want[k])
			}
		}
	}
}
