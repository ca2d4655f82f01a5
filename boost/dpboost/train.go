package dpboost

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// TreeInfo reports one trained tree to a progress callback.
type TreeInfo struct {
	Class    int           // one-vs-rest model (0 for binary and regression)
	Tree     int           // 1..T
	Trees    int           // T
	Subset   int           // rows drawn for the tree
	Filtered int           // rows of the subset left out by GDF
	Eps      float64       // the tree's budget eps_t (0 for NP and Newton)
	Rho      float64       // Newton: the tree's share of its round's zCDP
	Elapsed  time.Duration // time to grow the tree
}

// subsetBounds returns the cut points of the disjoint blocks of one
// ensemble of m trees over n rows: geometric for DPBoost (block j has about
// n eta (1-eta)^j / (1 - (1-eta)^m) rows, j from 0), equal for PARA. Cuts are
// rounded cumulative sums, so the blocks add up to n exactly.
func subsetBounds(method Method, eta float64, n, m int) []int {
	cut := make([]int, m+1)
	for j := 1; j < m; j++ {
		var frac float64
		if method == DPBoost {
			frac = -math.Expm1(float64(j)*math.Log1p(-eta)) / -math.Expm1(float64(m)*math.Log1p(-eta))
		} else {
			frac = float64(j) / float64(m)
		}
		cut[j] = int(math.Round(frac * float64(n)))
	}
	cut[m] = n
	return cut
}

// Train fits one square-loss booster (Alg. 2) to targets y in [-1, 1] (+-1
// for a binary classifier) on the binned rows, with the budget cfg.Epsilon,
// drawing all randomness (subsets, splits, noise) from r.
func Train(cfg Config, b *Binning, data *Binned, y []float64, r *rand.Rand, progress func(TreeInfo)) ([]Tree, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Method == Newton {
		return nil, fmt.Errorf("%w: Train is the DPBoost trainer; Newton trains through TrainClassifier or TrainRegressor", ErrConfig)
	}
	if data.Features != b.Features() {
		return nil, fmt.Errorf("%w: %d features, binning has %d", ErrData, data.Features, b.Features())
	}
	n := data.Rows
	if len(y) != n || n == 0 {
		return nil, fmt.Errorf("%w: %d rows and %d targets", ErrData, n, len(y))
	}
	for i, v := range y {
		if !(v >= -1 && v <= 1) {
			return nil, fmt.Errorf("%w: target %d is %v, outside [-1, 1]", ErrData, i, v)
		}
	}
	acc := Account(cfg)
	F := make([]float64, n)    // current predictions
	grad := make([]float64, n) // g = F - y
	all := make([]int32, n)
	for i := range all {
		all[i] = int32(i)
	}
	var perm []int32
	var cut []int
	rows := make([]int32, 0, n)
	gr := newGrower(b, data, cfg.Depth)
	te := cfg.ensembleSize()
	trees := make([]Tree, 0, cfg.Trees)
	for t := 1; t <= cfg.Trees; t++ {
		for i := range grad {
			grad[i] = F[i] - y[i]
			if cfg.ClipGradients && cfg.private() {
				grad[i] = max(-GStar, min(GStar, grad[i]))
			}
		}
		// The tree's rows.
		var subset []int32
		switch cfg.Method {
		case DPBoost, PARA:
			j := (t - 1) % te
			if j == 0 {
				m := min(te, cfg.Trees-t+1) // trees in this ensemble
				perm = perm[:0]
				for _, i := range r.Perm(n) {
					perm = append(perm, int32(i))
				}
				cut = subsetBounds(cfg.Method, cfg.LearningRate, n, m)
			}
			subset = perm[cut[j]:cut[j+1]]
		default:
			subset = all
		}
		// Gradient-based data filtering (private methods only).
		rows = rows[:0]
		for _, i := range subset {
			if !cfg.private() || math.Abs(grad[i]) <= GStar {
				rows = append(rows, i)
			}
		}
		eps := acc.PerTree[t-1]
		p := treeParams{depth: cfg.Depth, eta: cfg.LearningRate, random: r}
		p.split, p.leaf = cfg.rules(t, eps)
		start := time.Now()
		tree := gr.grow(rows, grad, p)
		el := time.Since(start)
		Fd := data.Features
		for i := range n {
			F[i] += tree.Leaf[tree.leafOf(data.Idx[i*Fd:(i+1)*Fd])]
		}
		trees = append(trees, tree)
		if progress != nil {
			progress(TreeInfo{Tree: t, Trees: cfg.Trees, Subset: len(subset), Filtered: len(subset) - len(rows), Eps: eps, Elapsed: el})
		}
	}
	return trees, nil
}

// rules are the split and leaf rules of the t-th tree (t from 1) with
// budget epsT: eps_t/(2 Depth) per depth level with Delta G for the splits,
// eps_t/2 with Delta V and the GLC bound for the leaves; for NP, the best
// split and exact, unclipped leaves.
func (c Config) rules(t int, epsT float64) (SplitRule, LeafRule) {
	split, leaf := SplitRule{Lambda: c.Lambda}, LeafRule{Lambda: c.Lambda, Bound: math.Inf(1)}
	if c.private() {
		split.Eps, split.Sensitivity = epsT/(2*float64(c.Depth)), c.SplitSensitivity()
		leaf.Eps, leaf.Sensitivity, leaf.Bound = epsT/2, c.LeafSensitivity(t), c.LeafBound(t)
	}
	return split, leaf
}

// Accounting is the privacy budget of a configuration, per class model.
type Accounting struct {
	Method    Method    `json:"method"`
	Private   bool      `json:"private"`   // false for NP: no guarantee, every eps below is 0
	Classes   int       `json:"classes"`   // one-vs-rest models sharing the data (1: binary or regression)
	Ensembles int       `json:"ensembles"` // groups of trees on disjoint data
	PerTree   []float64 `json:"per_tree"`  // eps_t of tree t (index t-1) of one class model
	// SplitPerDepth and Leaf are eps_t/(2 Depth) and eps_t/2 of each tree:
	// the nodes of one depth (and the leaves) are disjoint, so they compose
	// in parallel; the Depth levels and the leaves compose sequentially.
	SplitPerDepth []float64 `json:"split_per_depth"`
	Leaf          []float64 `json:"leaf"`
	// Sequential is sum_t eps_t over all trees of all classes: the bound by
	// sequential composition alone, as if every tree saw every row.
	Sequential float64 `json:"sequential"`
	// Total is the guarantee: within an ensemble the trees see disjoint rows
	// (parallel composition: the max), ensembles and classes add up. For
	// Newton it is the eps of (eps, Newton.Delta)-DP.
	Total float64 `json:"total"`
	// Newton is the Newton trainer's zCDP account (nil for the others,
	// whose guarantee is pure eps-DP).
	Newton *NewtonAccount `json:"newton,omitempty"`
}

// Account computes the privacy accounting of cfg for classes one-vs-rest
// models (classes < 1 counts as 1). For NP, Private is false and every
// budget is 0 (there is no guarantee; JSON cannot hold +Inf).
func Account(cfg Config) Accounting { return AccountClasses(cfg, 1) }

// AccountClasses is Account for a one-vs-rest model of the given number of
// binary models, each getting cfg.Epsilon / classes.
//
// For Newton, classes is the number of boosters as for the others (1 for a
// binary classifier or a regressor), the budget is joint (no eps/K split)
// and the account is the zCDP plan; a plan that cannot be built (see
// PlanNewton) leaves Total 0 and Newton nil.
func AccountClasses(cfg Config, classes int) Accounting {
	classes = max(classes, 1)
	if cfg.Method == Newton {
		a, _ := newtonAccounting(cfg, classes)
		return a
	}
	a := Accounting{Method: cfg.Method, Classes: classes, Ensembles: cfg.Ensembles()}
	a.PerTree = make([]float64, cfg.Trees)
	a.SplitPerDepth = make([]float64, cfg.Trees)
	a.Leaf = make([]float64, cfg.Trees)
	if !cfg.private() {
		return a
	}
	a.Private = true
	eps := cfg.Epsilon / float64(classes)
	var each float64
	switch cfg.Method {
	case DPBoost:
		each = eps / float64(a.Ensembles)
	case PARA:
		each = eps
	case SEQ:
		each = eps / float64(cfg.Trees)
	}
	te := cfg.ensembleSize()
	groupMax := 0.0
	for t := range a.PerTree {
		a.PerTree[t] = each
		a.SplitPerDepth[t] = each / (2 * float64(cfg.Depth))
		a.Leaf[t] = each / 2
		a.Sequential += each * float64(classes)
		groupMax = max(groupMax, each)
		if (t+1)%te == 0 || t == cfg.Trees-1 {
			a.Total += groupMax * float64(classes)
			groupMax = 0
		}
	}
	return a
}

// newtonAccounting is AccountClasses for Newton, with the plan's error.
func newtonAccounting(cfg Config, boosters int) (Accounting, error) {
	a := Accounting{Method: Newton, Private: true, Classes: boosters, Ensembles: cfg.Trees,
		PerTree: make([]float64, cfg.Trees), SplitPerDepth: make([]float64, cfg.Trees), Leaf: make([]float64, cfg.Trees)}
	classes := boosters
	if boosters == 1 && cfg.Task == Classification {
		classes = 2
	}
	_, na, err := newtonPlan(cfg, classes)
	if err != nil {
		return a, err
	}
	a.Newton = &na
	a.Total, a.Sequential = na.Epsilon, na.Epsilon
	return a, nil
}

// PlanNewton is the Newton trainer's account for cfg and a model of the
// given number of classes (0 for regression), or why it cannot be built.
func PlanNewton(cfg Config, classes int) (Accounting, error) {
	if err := cfg.Validate(); err != nil {
		return Accounting{}, err
	}
	boosters := 1
	if classes > 2 {
		boosters = classes
	}
	return newtonAccounting(cfg, boosters)
}
