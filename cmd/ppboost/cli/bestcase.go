package cli

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ppboost/ppboost/boost/dpboost"
	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
)

// The refusal of the trainers without a forecast (dpboost, fed, pfds): a
// best-case dry run. The plan (its eps, trees, depth, bins, agents) is
// trained on the cleanest problem of the data's shape: the data's own
// feature rows (resampled), the same class proportions, and a label that is
// a threshold of the rows' summed standard scores (bestCase). If
// even that model does not beat its majority class, the noise this eps
// needs swamps this many rows, and the plan is refused before anything is
// spent (the dry run runs in the trainer's process on rows it holds;
// nothing is released or charged). It is a one-sided check: a plan that
// passes may still not beat the majority class on the real labels, whose
// signal is weaker, and the trainers still warn after training.

// smallerTrees is the tree trainers' smaller-model advice.
const smallerTrees = "a smaller model (fewer --trees or a lower --depth: the same eps buys less noise per tree)"

// bestCaseTestRows is the size of the best case's test set: its majority
// error m is known to sqrt(m(1-m)/rows), about 0.011 at m = 0.5.
const bestCaseTestRows = 2000

// bestCase is the cleanest problem of n rows shaped like d: rows of d's
// features drawn with replacement (seed), labelled by their score, the sum
// of every feature's standard score: class k on the k-th interval of the
// scores, each holding its class's share of d's rows. Every feature carries
// the signal, so a trainer that splits on features it draws at random (the
// Newton trainer) finds it as readily as a greedy one, and a linear learner
// (PFDS's final ERM) fits it exactly.
func bestCase(d *dataset.Dataset, n int, seed uint64) *dataset.Dataset {
	k := max(2, d.NumClasses())
	mean, sd := make([]float64, d.Dim()), make([]float64, d.Dim())
	for _, x := range d.X {
		for j, v := range x {
			mean[j] += v
			sd[j] += v * v
		}
	}
	for j := range mean {
		mean[j] /= float64(d.Len())
		sd[j] = math.Sqrt(max(0, sd[j]/float64(d.Len())-mean[j]*mean[j]))
	}
	score := func(x []float64) float64 {
		s := 0.0
		for j, v := range x {
			if sd[j] > 0 {
				s += (v - mean[j]) / sd[j]
			}
		}
		return s
	}
	scores := make([]float64, d.Len())
	count := make([]int, k)
	for i, x := range d.X {
		scores[i] = score(x)
		count[d.Y[i]]++
	}
	sort.Float64s(scores)
	cut := make([]float64, k) // cut[c]: the largest score of class c
	acc := 0
	for c := range cut {
		acc += count[c]
		cut[c] = scores[min(len(scores)-1, max(0, acc-1))]
	}
	r := rng.Seeded(seed)
	out := &dataset.Dataset{Name: "best case of " + d.Name, Classes: d.Classes, Features: d.Features, Schema: d.Schema}
	for range n {
		x := d.X[r.IntN(d.Len())]
		y, sx := 0, score(x)
		for y < k-1 && sx > cut[y] {
			y++
		}
		out.X, out.Y = append(out.X, x), append(out.Y, y)
	}
	return out
}

// bestCaseResult is a dry run's outcome: the best case's test error and
// its majority class's, and the margin the model must beat it by.
type bestCaseResult struct {
	err, majority, margin float64
}

// hopeless: not better than the majority class by three standard errors
// of the majority's error on the test rows (a model that only guesses the
// majority class, as a swamped one does, fails this with probability
// about 0.001).
func (b bestCaseResult) hopeless() bool { return b.err >= b.majority-b.margin }

// runBestCase trains on the best case of train's shape with n rows (seed)
// and scores its test rows; fit returns the model's prediction function.
func runBestCase(train *dataset.Dataset, n int, seed uint64, fit func(*dataset.Dataset) (func([]float64) int, error)) (bestCaseResult, error) {
	bt, bs := bestCase(train, n, seed), bestCase(train, bestCaseTestRows, seed+1)
	predict, err := fit(bt)
	if err != nil {
		return bestCaseResult{}, fmt.Errorf("best-case dry run: %w", err)
	}
	wrong := 0
	for i, x := range bs.X {
		if predict(x) != bs.Y[i] {
			wrong++
		}
	}
	m := majorityBaseline(bt, bs).Error
	return bestCaseResult{err: float64(wrong) / float64(bs.Len()), majority: m, margin: 3 * math.Sqrt(m*(1-m)/float64(bs.Len()))}, nil
}

// refuseBestCase refuses a plan whose best case (n training rows shaped
// like train) is hopeless, naming what it found, and the larger eps (of 2x,
// 4x, 8x, tried the same way) that passes, if one does. what names the
// trainer and plan; fitEps fits the best case with the plan at another eps.
func refuseBestCase(force bool, what, smaller string, eps float64, train *dataset.Dataset, n int, seed uint64, fitEps func(eps float64, d *dataset.Dataset) (func([]float64) int, error)) error {
	if force {
		return nil
	}
	fit := func(e float64) func(*dataset.Dataset) (func([]float64) int, error) {
		return func(d *dataset.Dataset) (func([]float64) int, error) { return fitEps(e, d) }
	}
	res, err := runBestCase(train, n, seed, fit(eps))
	if err != nil || !res.hopeless() {
		return err
	}
	var fixes []string
	for _, k := range []float64{2, 4, 8} {
		if r, err := runBestCase(train, n, seed, fit(eps*k)); err == nil && !r.hopeless() {
			fixes = append(fixes, fmt.Sprintf("--eps %g (its best case: error %.3f)", eps*k, r.err))
			break
		}
	}
	fixes = append(fixes, "more rows", smaller)
	return usageError{fmt.Errorf("%w: %s at eps %g, on the cleanest problem of this data's shape (%d of its rows with %d features, its class proportions, the label a threshold of the features' summed standard scores; "+
		"a dry run in this process, nothing is released), gives a test error of %.3f against its majority class's %.3f: "+
		"the noise this eps needs swamps %d rows, so on the real data it will probably not beat the majority class either. What would work: %s. Use --force to run anyway",
		errHopeless, what, eps, n, train.Dim(), res.err, res.majority, n, strings.Join(fixes, "; or "))}
}

// dpboostFit fits the one-process DP-GBDT trainer with cfg at eps.
func dpboostFit(cfg dpboost.Config, seed uint64) func(eps float64, d *dataset.Dataset) (func([]float64) int, error) {
	return func(eps float64, d *dataset.Dataset) (func([]float64) int, error) {
		c := cfg
		c.Epsilon = eps
		m, err := dpboost.TrainClassifier(c, d, rng.Seeded(seed), nil)
		if err != nil {
			return nil, err
		}
		return m.Predict, nil
	}
}

// pfdsFit runs the PFDS reference with p at eps on the best case cut among
// agents as the real rows are (iid), and returns the first agent's final
// predictor.
func pfdsFit(p bp.Params, mode bp.Mode, learner bp.Learner, lambda float64, agents int, seed uint64) func(eps float64, d *dataset.Dataset) (func([]float64) int, error) {
	return func(eps float64, d *dataset.Dataset) (func([]float64) int, error) {
		dom, err := bp.NewDomain(d)
		if err != nil {
			return nil, err
		}
		q := p
		q.Eps = eps
		locals := make([]bp.Local, agents)
		for i, idx := range bp.IID(d.Len(), agents, seed) {
			for _, k := range idx {
				locals[i].X, locals[i].Y = append(locals[i].X, d.X[k]), append(locals[i].Y, d.Y[k])
			}
		}
		shared, err := bp.Simulate(dom, locals, q, mode, seed)
		if err != nil {
			return nil, err
		}
		for _, l := range locals {
			if len(l.X) == 0 {
				continue
			}
			u := bp.Union(l, shared)
			m, err := bp.Fit(learner, u.X, u.Y, nil, lambda)
			if err != nil {
				return nil, err
			}
			return m.Class, nil
		}
		return nil, fmt.Errorf("no agent holds rows")
	}
}
