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
// trained on the cleanest problems of the data's shape: the data's own
// feature rows (resampled), the same class proportions, and a label that is
// a threshold of one score of the row (bestCaseScores: the features' summed
// standard scores, where every feature carries the signal, as trainers that
// split on features drawn at random need; or one feature alone, as a
// greedy tree finds it). If no such problem gives a model that beats its
// majority class, the noise this eps needs swamps this many rows, and the
// plan is refused before anything is spent (the dry run runs in the
// trainer's process on rows it holds; nothing is released or charged). It
// is a one-sided check: a plan that passes may still not beat the majority
// class on the real labels, whose signal is weaker, and the trainers still
// warn after training.

// smallerTrees is the tree trainers' smaller-model advice.
const smallerTrees = "a smaller model (fewer --trees or a lower --depth: the same eps buys less noise per tree)"

// bestCaseTestRows is the size of the best case's test set: its majority
// error m is known to sqrt(m(1-m)/rows), about 0.011 at m = 0.5.
const bestCaseTestRows = 2000

// bestCaseScore is one way of labelling a best case: a row's score, whose
// intervals are the classes.
type bestCaseScore struct {
	name  string
	score func(x []float64) float64
}

// bestCaseScores are the best cases' labellings of d's rows: the summed
// standard scores of every feature, and the feature with the most distinct
// values (among the first rows) alone.
func bestCaseScores(d *dataset.Dataset) []bestCaseScore {
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
	sum := func(x []float64) float64 {
		s := 0.0
		for j, v := range x {
			if sd[j] > 0 {
				s += (v - mean[j]) / sd[j]
			}
		}
		return s
	}
	best, most := 0, 0
	for j := range d.Dim() {
		seen := map[float64]bool{}
		for _, x := range d.X[:min(d.Len(), 2000)] {
			seen[x[j]] = true
		}
		if len(seen) > most {
			best, most = j, len(seen)
		}
	}
	name := fmt.Sprintf("feature %d", best)
	if best < len(d.Features) {
		name = d.Features[best]
	}
	return []bestCaseScore{
		{"the features' summed standard scores", sum},
		{name + " alone", func(x []float64) float64 { return x[best] }},
	}
}

// bestCase is a cleanest problem of n rows shaped like d: rows of d's
// features drawn with replacement (seed), class k on the k-th interval of
// sc's scores, each interval holding its class's share of d's rows.
func bestCase(d *dataset.Dataset, sc bestCaseScore, n int, seed uint64) *dataset.Dataset {
	k := max(2, d.NumClasses())
	scores := make([]float64, d.Len())
	count := make([]int, k)
	for i, x := range d.X {
		scores[i] = sc.score(x)
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
		y, sx := 0, sc.score(x)
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
	label                 string
	err, majority, margin float64
}

// hopeless: not better than the majority class by three standard errors
// of the majority's error on the test rows, counted at the size of the pool
// they are drawn from (a model that only guesses, as a swamped one does,
// passes with probability about 0.001).
func (b bestCaseResult) hopeless() bool { return b.err >= b.majority-b.margin }

// runBestCase trains on each best case of train's shape with n rows (seed)
// and scores its test rows, stopping at the first that is not hopeless;
// fit returns the model's prediction function. It returns the results.
func runBestCase(train *dataset.Dataset, n int, seed uint64, fit func(*dataset.Dataset) (func([]float64) int, error)) ([]bestCaseResult, error) {
	var out []bestCaseResult
	for _, sc := range bestCaseScores(train) {
		bt, bs := bestCase(train, sc, n, seed), bestCase(train, sc, bestCaseTestRows, seed+1)
		predict, err := fit(bt)
		if err != nil {
			return nil, fmt.Errorf("best-case dry run: %w", err)
		}
		wrong := 0
		for i, x := range bs.X {
			if predict(x) != bs.Y[i] {
				wrong++
			}
		}
		// The baseline is the best constant on the test rows themselves (a
		// model that always says one class must not pass because the
		// training rows' majority class is the test rows' minority).
		counts := map[int]int{}
		top := 0
		for _, y := range bs.Y {
			counts[y]++
			top = max(top, counts[y])
		}
		m := 1 - float64(top)/float64(bs.Len())
		// The test rows are drawn from the same pool of train's rows as the
		// training rows, so they are worth at most as many as the pool holds:
		// the margin is three standard errors at that size.
		eff := min(bs.Len(), train.Len())
		r := bestCaseResult{label: sc.name, err: float64(wrong) / float64(bs.Len()), majority: m, margin: 3 * math.Sqrt(m*(1-m)/float64(eff))}
		out = append(out, r)
		if !r.hopeless() {
			break
		}
	}
	return out, nil
}

// allHopeless says whether every best case run was hopeless.
func allHopeless(rs []bestCaseResult) bool {
	for _, r := range rs {
		if !r.hopeless() {
			return false
		}
	}
	return true
}

// refuseBestCase refuses a plan whose best cases (n training rows shaped
// like train) are all hopeless, naming what they gave, and whether 4x the
// eps, tried the same way, passes. what names
// the trainer and plan; fitEps fits a best case with the plan at another
// eps.
func refuseBestCase(force bool, what, smaller string, eps float64, train *dataset.Dataset, n int, seed uint64, fitEps func(eps float64, d *dataset.Dataset) (func([]float64) int, error)) error {
	if force {
		return nil
	}
	fit := func(e float64) func(*dataset.Dataset) (func([]float64) int, error) {
		return func(d *dataset.Dataset) (func([]float64) int, error) { return fitEps(e, d) }
	}
	res, err := runBestCase(train, n, seed, fit(eps))
	if err != nil || !allHopeless(res) {
		return err
	}
	// One larger eps is tried (each dry run costs as much as the training).
	var fixes []string
	if rs, err := runBestCase(train, n, seed, fit(4*eps)); err == nil && !allHopeless(rs) {
		r := rs[len(rs)-1]
		fixes = append(fixes, fmt.Sprintf("--eps %g (its best case, labelled by %s: error %.3f)", 4*eps, r.label, r.err))
	} else {
		fixes = append(fixes, fmt.Sprintf("(not --eps %g alone: its best cases are hopeless too)", 4*eps))
	}
	fixes = append(fixes, "more rows", smaller)
	var found []string
	for _, r := range res {
		found = append(found, fmt.Sprintf("labelled by %s, a test error of %.3f against its majority class's %.3f", r.label, r.err, r.majority))
	}
	return usageError{fmt.Errorf("%w: %s at eps %g, on the cleanest problems of this data's shape (%d of its rows with %d features, its class proportions, the label a threshold of one score; "+
		"a dry run in this process, nothing is released), gives: %s. The noise this eps needs swamps %d rows, so on the real data it will probably not beat the majority class either. What would work: %s. Use --force to run anyway",
		errHopeless, what, eps, n, train.Dim(), strings.Join(found, "; "), n, strings.Join(fixes, "; or "))}
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

// pfdsFit runs the setup's PFDS algorithm at eps on the best case cut among
// agents as the real rows are (iid), and returns the first agent's final
// predictor.
func pfdsFit(s *pfdsSetup, lambda float64, agents int, seed uint64) func(eps float64, d *dataset.Dataset) (func([]float64) int, error) {
	return func(eps float64, d *dataset.Dataset) (func([]float64) int, error) {
		dom, err := bp.NewDomain(d)
		if err != nil {
			return nil, err
		}
		locals := make([]bp.Local, agents)
		for i, idx := range bp.IID(d.Len(), agents, seed) {
			for _, k := range idx {
				locals[i].X, locals[i].Y = append(locals[i].X, d.X[k]), append(locals[i].Y, d.Y[k])
			}
		}
		b := *s
		b.dom = dom
		shared, err := b.simulate(locals, eps, seed)
		if err != nil {
			return nil, err
		}
		for _, l := range locals {
			if len(l.X) == 0 {
				continue
			}
			u := bp.Union(l, shared)
			m, err := bp.FitClasses(s.learner, u.X, u.Y, dom.Classes, lambda)
			if err != nil {
				return nil, err
			}
			return m.Class, nil
		}
		return nil, fmt.Errorf("no agent holds rows")
	}
}
