package boost

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/crypto/ldp"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
)

// tiny is a hand-checkable 2-feature, 2-class dataset: feature 0 separates
// the classes at 0, feature 1 is noise.
func tiny() *dataset.Dataset {
	return &dataset.Dataset{
		Name:     "tiny",
		X:        [][]float64{{-0.8, 0.3}, {-0.5, -0.2}, {-0.1, 0.9}, {0.2, -0.7}, {0.6, 0.1}, {0.9, -0.4}},
		Y:        []int{0, 0, 0, 1, 1, 1},
		Classes:  []string{"a", "b"},
		Features: []string{"f0", "f1"},
	}
}

func TestStumpStatisticByHand(t *testing.T) {
	d := tiny()
	o, err := NewOwner(d)
	if err != nil {
		t.Fatal(err)
	}
	s := Spec{Learner: Stump, Mechanism: ldp.None, Classes: 2, Features: 2, Splits: PerFeature([]float64{0, 0})}
	v := stumpStatistic(&s, d.X, d.Y, o.W)
	w := 1.0 / 6
	// Feature 0: left (x<0) holds the three class-0 samples, right the three class-1.
	// Feature 1: left holds samples 1,3,5 (classes 0,1,1), right 0,2,4 (classes 0,0,1).
	// Compact layout: the left branches' differences, then the total (0).
	want := []float64{3 * w, -w, 0}
	for i := range want {
		if math.Abs(v[i]-want[i]) > 1e-12 {
			t.Fatalf("statistic[%d] = %v, want %v (all %v)", i, v[i], want[i], v)
		}
	}
	b, err := Aggregate(&s, []Share{{Values: v}})
	if err != nil {
		t.Fatal(err)
	}
	if got := *b.Stump; got != (StumpModel{Feature: 0, Threshold: 0, Left: 0, Right: 1}) {
		t.Fatalf("stump %+v", got)
	}
}

func TestStumpMultiClassMatchesBinaryChoice(t *testing.T) {
	d := tiny()
	d.Y = []int{0, 0, 2, 1, 1, 1}
	d.Classes = []string{"a", "b", "c"}
	o, _ := NewOwner(d)
	s := Spec{Learner: Stump, Mechanism: ldp.None, Classes: 3, Features: 2, Splits: PerFeature([]float64{0, 0})}
	sh, err := o.LocalShare(&s, rng.ForName(t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	if len(sh.Values) != 12 {
		t.Fatalf("share has %d values, want 2*d*K = 12", len(sh.Values))
	}
	b, err := Aggregate(&s, []Share{sh})
	if err != nil {
		t.Fatal(err)
	}
	if b.Stump.Feature != 0 || b.Stump.Left != 0 || b.Stump.Right != 1 {
		t.Fatalf("stump %+v", *b.Stump)
	}
}

// TestStumpShareUnbiased checks that the perturbed share is an unbiased
// estimate of the weighted statistic: the mean of n independent PM
// releases is within 5 standard errors of the statistic in every coordinate.
func TestStumpShareUnbiased(t *testing.T) {
	d := tiny()
	o, _ := NewOwner(d)
	s := Spec{Learner: Stump, Mechanism: ldp.Piecewise, Epsilon: 2, Classes: 2, Features: 2, Splits: PerFeature([]float64{0, 0})}
	exact := stumpStatistic(&s, d.X, d.Y, o.W)
	m, err := ldp.New(ldp.Piecewise, 2, len(exact), ldp.Clip)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	r := rng.ForName(t.Name())
	sum := make([]float64, len(exact))
	for i := 0; i < n; i++ {
		sh, err := o.LocalShare(&s, r)
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range sh.Values {
			sum[j] += v
		}
	}
	for j := range sum {
		mean := sum[j] / n
		se := math.Sqrt(m.Variance(exact, j) / n)
		if math.Abs(mean-exact[j]) > 5*se { // 5 standard errors: false alarm < 1e-6
			t.Errorf("coordinate %d: mean %.4f, statistic %.4f, 5se %.4f", j, mean, exact[j], 5*se)
		}
	}
}

func TestNCCNoneIsWeightedCentroid(t *testing.T) {
	d := tiny()
	o, _ := NewOwner(d)
	s := Spec{Learner: NCC, Mechanism: ldp.None, Classes: 2, Features: 2}
	sh, err := o.LocalShare(&s, rng.ForName(t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Aggregate(&s, []Share{sh})
	if err != nil {
		t.Fatal(err)
	}
	// Equal weights: the centroids are plain class means.
	want := [][]float64{{(-0.8 - 0.5 - 0.1) / 3, (0.3 - 0.2 + 0.9) / 3}, {(0.2 + 0.6 + 0.9) / 3, (-0.7 + 0.1 - 0.4) / 3}}
	for k := range want {
		for j := range want[k] {
			if math.Abs(b.NCC.Centroids[k][j]-want[k][j]) > 1e-12 {
				t.Fatalf("centroid %d = %v, want %v", k, b.NCC.Centroids[k], want[k])
			}
		}
	}
}

func TestLogRegSeparates(t *testing.T) {
	d := tiny()
	o, _ := NewOwner(d)
	s := Spec{Learner: LogReg, Mechanism: ldp.None, Classes: 2, Features: 2, LogRegIterations: 20, LogRegL2: 1e-2}
	sh, err := o.LocalShare(&s, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range sh.Values {
		if v < -1 || v > 1 {
			t.Fatalf("parameters not clipped: %v", sh.Values)
		}
	}
	b, err := Aggregate(&s, []Share{sh})
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := Evaluate(d.X, d.Y, 2, b.Predict)
	if ev.Accuracy != 1 {
		t.Fatalf("logreg accuracy on separable data %v, params %v", ev.Accuracy, sh.Values)
	}
	if sh.Values[0] <= 0 {
		t.Fatalf("weight of the separating feature %v, want positive", sh.Values[0])
	}
}

func TestOwnerUpdateAndRenormalize(t *testing.T) {
	d := tiny()
	o, _ := NewOwner(d)
	b := &Base{Stump: &StumpModel{Feature: 1, Threshold: 0, Left: 1, Right: 0}}
	werr, wsum := o.Evaluate(b)
	// Stump on f1: x1<0 -> class 1. Mistakes: sample 1 (class 0, left) and 4 (class 1, right).
	if math.Abs(werr-2.0/6) > 1e-12 || math.Abs(wsum-1) > 1e-12 {
		t.Fatalf("werr %v wsum %v", werr, wsum)
	}
	if _, err := o.Update(&Base{}, 1); !errors.Is(err, ErrNotEvaluated) {
		t.Fatalf("update of another learner: %v", err)
	}
	alpha := Alpha(werr/wsum, 2)
	s, err := o.Update(b, alpha)
	if err != nil {
		t.Fatal(err)
	}
	if want := 4.0/6 + 2.0/6*math.Exp(alpha); math.Abs(s-want) > 1e-12 {
		t.Fatalf("new sum %v, want %v", s, want)
	}
	if err := o.Renormalize(s, 1); err != nil {
		t.Fatal(err)
	}
	if math.Abs(o.WeightSum()-1) > 1e-12 {
		t.Fatalf("renormalized sum %v", o.WeightSum())
	}
	if err := o.Renormalize(0, 1); err == nil {
		t.Fatal("renormalize by 0 accepted")
	}
}

func TestAlpha(t *testing.T) {
	if a := Alpha(0.5, 2); math.Abs(a) > 1e-12 {
		t.Fatalf("alpha(0.5, 2) = %v, want 0", a)
	}
	if a := Alpha(0.25, 2); math.Abs(a-math.Log(3)) > 1e-12 {
		t.Fatalf("alpha(0.25, 2) = %v", a)
	}
	// SAMME: with K classes a learner only needs to beat 1 - 1/K.
	if a := Alpha(0.6, 3); !(a > 0) {
		t.Fatalf("alpha(0.6, 3) = %v, want > 0", a)
	}
	if a := Alpha(0, 2); math.IsInf(a, 0) || a < 20 {
		t.Fatalf("alpha(0) = %v, want large and finite", a)
	}
}

func TestThresholds(t *testing.T) {
	d := tiny()
	med, err := Thresholds(ThresholdMedian, 1, d)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(med[0].Threshold-0.05) > 1e-12 || math.Abs(med[1].Threshold-(-0.2+0.1)/2) > 1e-12 || med[1].Feature != 1 {
		t.Fatalf("medians %v", med)
	}
	best, err := Thresholds(ThresholdBestSplit, 1, d)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(best[0].Threshold-0.05) > 1e-12 {
		t.Fatalf("best threshold for the separating feature %v, want 0.05", best[0])
	}
	// One-hot column: the median is 0, which sends every sample right; the
	// best split is 0.5.
	oh := &dataset.Dataset{X: [][]float64{{0}, {0}, {0}, {1}, {1}}, Y: []int{0, 0, 0, 1, 1}, Classes: []string{"a", "b"}, Features: []string{"x"}}
	best, _ = Thresholds(ThresholdBestSplit, 1, oh)
	med, _ = Thresholds(ThresholdMedian, 1, oh)
	if best[0].Threshold != 0.5 || med[0].Threshold != 0 {
		t.Fatalf("one-hot: best %v median %v", best, med)
	}
	// Boosted: the separating feature is split where it separates; every
	// feature gets at least one split.
	bo, err := Thresholds(ThresholdBoosted, 1, d)
	if err != nil || len(bo) < 2 || bo[0].Feature != 0 || math.Abs(bo[0].Threshold-0.05) > 1e-12 {
		t.Fatalf("boosted splits %v, %v", bo, err)
	}
	// Three splits per feature: the best one plus the 1/3 and 2/3 quantiles.
	multi, _ := Thresholds(ThresholdBestSplit, 3, d)
	if len(multi) != 6 || multi[0].Feature != 0 || multi[3].Feature != 1 {
		t.Fatalf("3 splits per feature: %v", multi)
	}
}

func smallData(t *testing.T, owners, per int) Data {
	t.Helper()
	syn, err := dataset.Synthetic(dataset.DefaultSynthetic(owners*per+4000, 7))
	if err != nil {
		t.Fatal(err)
	}
	test, rest := syn.Split(2000)
	user, rest := rest.Split(2000)
	shards, err := rest.Partition(owners, nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	return Data{Owners: shards, User: user, Test: test}
}

func TestTrainReproducibleAndLearns(t *testing.T) {
	// 10 rounds' worth of owners for 5 rounds: room for the retries of
	// learners that fail the significance test.
	data := smallData(t, 200, 40)
	for _, l := range []Learner{Stump, NCC, LogReg} {
		t.Run(string(l), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Learner, cfg.Mechanism, cfg.OwnersPerRound, cfg.Rounds = l, "none", 20, 5
			m1, err := Train(cfg, data, nil)
			if err != nil {
				t.Fatal(err)
			}
			m2, err := Train(cfg, data, nil)
			if err != nil {
				t.Fatal(err)
			}
			var b1, b2 bytes.Buffer
			m1.Write(&b1)
			m2.Write(&b2)
			if b1.String() != b2.String() {
				t.Fatal("same seed, different models")
			}
			ev, _ := Evaluate(data.Test.X, data.Test.Y, 2, m1.Predict)
			// Pinned just below what this seed reaches (stump 0.820, ncc
			// 0.835, logreg 0.8605 on 2000 test samples), so a learner that
			// loses signal (one branch of every stump, a centroid at the
			// origin) fails; chance is 0.5.
			floor := map[Learner]float64{Stump: 0.81, NCC: 0.825, LogReg: 0.85}[l]
			if ev.Accuracy < floor {
				t.Fatalf("%s accuracy %.4f, below %.3f", l, ev.Accuracy, floor)
			}
		})
	}
}

// A plan with no room for dropped attempts is refused before anyone
// spends (issue 19 item 7): 30 owners in attempts of 10 cannot hold 5
// rounds, nor 3 rounds and a retry; the error says what would work. The
// same owners train 2 rounds.
func TestPlanWithoutRetryRoomIsRefused(t *testing.T) {
	data := smallData(t, 30, 20)
	cfg := DefaultConfig()
	cfg.Mechanism, cfg.OwnersPerRound = "none", 10
	for _, rounds := range []int{5, 3} {
		cfg.Rounds = rounds
		m, err := Train(cfg, data, nil)
		if !errors.Is(err, ErrNoRetryRoom) || len(m.Rounds) != 0 {
			t.Fatalf("%d rounds: err = %v, %d rounds trained; want ErrNoRetryRoom before any", rounds, err, len(m.Rounds))
		}
		if !strings.Contains(err.Error(), "admit at least") || !strings.Contains(err.Error(), "train at most 2 rounds") {
			t.Fatalf("the refusal does not say what would work: %v", err)
		}
	}
	cfg.Rounds = 2
	if _, err := Train(cfg, data, nil); err != nil {
		t.Fatalf("2 rounds of 10 among 30 owners: %v", err)
	}
}

// A noisy err sum among too few owners is refused with the err_epsilon
// that would do (MaxErrSD); alpha mode validation needs no owner release.
func TestTooNoisyErrSumIsRefused(t *testing.T) {
	data := smallData(t, 60, 20)
	cfg := DefaultConfig()
	cfg.Mechanism, cfg.OwnersPerRound, cfg.Rounds, cfg.Alpha, cfg.ErrEpsilon = "pm", 10, 2, AlphaSecureSum, 0.5
	if _, err := Train(cfg, data, nil); !errors.Is(err, ErrNoRetryRoom) || !strings.Contains(err.Error(), "alpha validation") {
		t.Fatalf("err = %v, want a refusal of the err sum's noise", err)
	}
	cfg.Alpha = AlphaValidation
	if _, err := Train(cfg, data, nil); errors.Is(err, ErrNoRetryRoom) {
		t.Fatalf("validation alpha refused: %v", err)
	}
}

func TestTrainStopsWhenOwnersRunOut(t *testing.T) {
	// Room for one dropped attempt (3 rounds of 10 in 40 owners), but
	// mechanism none with a significance level no learner can pass drops
	// every attempt: the run stops with ErrOutOfOwners.
	data := smallData(t, 40, 20)
	cfg := DefaultConfig()
	cfg.Mechanism, cfg.OwnersPerRound, cfg.Rounds = "none", 10, 3
	cfg.Significance = 1e-300
	m, err := Train(cfg, data, nil)
	if !errors.Is(err, ErrOutOfOwners) {
		t.Fatalf("err = %v, want ErrOutOfOwners", err)
	}
	if len(m.Rounds) != 0 {
		t.Fatalf("%d rounds before running out, want 0", len(m.Rounds))
	}
}

func TestModelRoundTripAndErrors(t *testing.T) {
	data := smallData(t, 40, 20)
	cfg := DefaultConfig()
	cfg.Mechanism, cfg.OwnersPerRound, cfg.Rounds = "none", 10, 3
	m, err := Train(cfg, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := m.Write(&buf); err != nil {
		t.Fatal(err)
	}
	m2, err := ReadModel(bytes.NewReader(buf.Bytes()), "model.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range data.Test.X[:200] {
		if m.Predict(x) != m2.Predict(x) {
			t.Fatal("loaded model predicts differently")
		}
	}
	good := buf.String()
	for name, bad := range map[string]string{
		"format":   strings.Replace(good, ModelFormat, "other", 1),
		"version":  strings.Replace(good, `"version": 1`, `"version": 9`, 1),
		"unknown":  strings.Replace(good, `"format"`, `"surprise": 1, "format"`, 1),
		"label":    strings.Replace(good, `"left": `, `"left": 7`, 1),
		"truncate": good[:len(good)/2],
		"empty":    "",
	} {
		_, err := ReadModel(strings.NewReader(bad), "bad.json")
		if !errors.Is(err, ErrModelFile) || !strings.Contains(err.Error(), "bad.json") {
			t.Errorf("%s: err = %v, want ErrModelFile naming the file", name, err)
		}
	}
}

func TestConfigValidateNamesField(t *testing.T) {
	c := DefaultConfig()
	c.Epsilon, c.Rounds, c.Learner = -1, 0, "tree"
	err := c.Validate()
	for _, want := range []string{"epsilon", "rounds", "learner"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

func BenchmarkTrainStump1000x80(b *testing.B) {
	syn, err := dataset.Synthetic(dataset.DefaultSynthetic(12000*80+5000, 1))
	if err != nil {
		b.Fatal(err)
	}
	user, rest := syn.Split(5000)
	shards, err := rest.Partition(12000, nil, 1)
	if err != nil {
		b.Fatal(err)
	}
	data := Data{Owners: shards, User: user}
	cfg := DefaultConfig()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Train(cfg, data, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzReadModel(f *testing.F) {
	f.Add(`{"format":"ppboost-model","version":1,"classes":2,"class_names":["a","b"],"features":["x"],"rounds":[{"alpha":1,"err":0.2,"base":{"stump":{"feature":0,"threshold":0,"left":0,"right":1}}}]}`)
	f.Add(`{"format":"ppboost-model","version":1,"classes":2,"class_names":["a","b"],"features":["x"],"rounds":[{"alpha":1,"base":{"ncc":{"centroids":[[1],[2]]}}}]}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ReadModel(strings.NewReader(s), "fuzz.json")
		if err != nil {
			return
		}
		// A model that loads must predict without panicking.
		x := make([]float64, len(m.Features))
		_ = m.Predict(x)
	})
}
