package dpboost

import (
	"errors"
	"fmt"
	"math"
)

// Method selects the budget allocation across trees.
type Method uint8

const (
	// DPBoost: GDF, GLC, ensemble of ensembles (Alg. 2).
	DPBoost Method = iota
	// PARA (Zhao et al. 2018): every tree gets the whole budget and its own
	// disjoint, equal share |D|/T of the data (parallel composition).
	PARA
	// SEQ (Liu et al. 2018): every tree sees all the data and gets eps/T
	// (sequential composition).
	SEQ
	// NP: no privacy; the best split by gain, exact leaves, all the data.
	NP
	// Newton: random (data-independent) trees whose leaves are Newton steps
	// from gradient and hessian sums released with discrete Gaussian noise,
	// accounted in zCDP and stated as (eps, delta)-DP (doc.go, "The Newton
	// trainer").
	Newton
)

var methodNames = [...]string{"dpboost", "para", "seq", "np", "newton"}

func (m Method) String() string {
	if int(m) < len(methodNames) {
		return methodNames[m]
	}
	return fmt.Sprintf("Method(%d)", m)
}

// Methods lists DPBoost and the baselines of its paper, in display order
// (Newton, the trainer built on a different design, is not among them).
func Methods() []Method { return []Method{DPBoost, PARA, SEQ, NP} }

// ParseMethod is the inverse of String.
func ParseMethod(s string) (Method, error) {
	for i, n := range methodNames {
		if s == n {
			return Method(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown method %q (want dpboost, para, seq, np or newton)", ErrConfig, s)
}

// MarshalText and UnmarshalText make Method readable in model files.
func (m Method) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

func (m *Method) UnmarshalText(b []byte) error {
	v, err := ParseMethod(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Task is classification (labels +-1 per one-vs-rest model) or regression
// (targets in [-1, 1]).
type Task uint8

const (
	Classification Task = iota
	Regression
)

func (t Task) String() string {
	if t == Regression {
		return "regression"
	}
	return "classification"
}

func (t Task) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

func (t *Task) UnmarshalText(b []byte) error {
	switch string(b) {
	case "classification":
		*t = Classification
	case "regression":
		*t = Regression
	default:
		return fmt.Errorf("%w: unknown task %q", ErrConfig, b)
	}
	return nil
}

// Sentinel errors.
var (
	ErrConfig = errors.New("dpboost: invalid configuration")
	ErrData   = errors.New("dpboost: invalid data")
	ErrModel  = errors.New("dpboost: invalid model")
	// ErrRowBound: the data has more rows than the public row bound its
	// plan assumed (CheckRowBound).
	ErrRowBound = errors.New("dpboost: more rows than the public row bound")
)

// GStar is g*_l for the square loss on targets in [-1, 1]: the largest
// |dl/dF| at F = 0, max_y |0 - y| = 1.
const GStar = 1.0

// Config is the training configuration. Everything in it is public.
type Config struct {
	Method       Method  `json:"method"`
	Task         Task    `json:"task"`
	Epsilon      float64 `json:"epsilon"`       // total budget (ignored by NP)
	Trees        int     `json:"trees"`         // T, per class model
	EnsembleSize int     `json:"ensemble_size"` // T_e (DPBoost); N_e = ceil(T/T_e)
	Depth        int     `json:"depth"`         // Depth_max: every tree has 2^Depth leaves
	LearningRate float64 `json:"learning_rate"` // eta (shrinkage, also the GLC decay)
	Lambda       float64 `json:"lambda"`        // L2 regularization of leaves
	Bins         int     `json:"bins"`          // bins per numeric feature over [-1, 1]
	// ClipPerEnsemble restarts the GLC tree index in every ensemble (t_e
	// instead of t). Off by default: Alg. 2 uses the global t.
	ClipPerEnsemble bool `json:"clip_per_ensemble,omitempty"`
	// ClipGradients replaces gradient-based data filtering (rows with |g| >
	// g* left out of the tree) by clipping every gradient to [-g*, g*] (not
	// in the paper). Both bound |g| by g*, which is all the Delta G and Delta
	// V bounds need (hessian 1 either way). For classification with square
	// loss, GDF leaves out exactly the misclassified rows (|F - y| > 1 iff F
	// has the wrong sign), so later trees can never correct a mistake;
	// clipping keeps them, with gradient -+1.
	ClipGradients bool `json:"clip_gradients,omitempty"`
	// Newton only: Delta is the delta of the (Epsilon, Delta) guarantee,
	// HessianShare the part of each round's zCDP budget spent on the
	// hessian sums (the gradient sums get the rest), LeafMax the bound on
	// a leaf's Newton step before the learning rate (post-processing).
	Delta        float64 `json:"delta,omitempty"`
	HessianShare float64 `json:"hessian_share,omitempty"`
	LeafMax      float64 `json:"leaf_max,omitempty"`
}

// DefaultConfig is the paper's (and its public code's) setting: 50 trees of
// depth 6, eta 0.1, lambda 0.1, 255 bins, one ensemble, eps = 1.
func DefaultConfig() Config {
	return Config{Method: DPBoost, Epsilon: 1, Trees: 50, EnsembleSize: 50, Depth: 6,
		LearningRate: 0.1, Lambda: 0.1, Bins: 255}
}

// Limits keep a configuration's memory bounded.
const (
	MaxDepth = 16
	MaxBins  = 256 // bins are stored as bytes
	MaxTrees = 1 << 20
)

// Validate names the first bad field and its value.
func (c Config) Validate() error {
	for _, check := range []func() error{c.validateMethod, c.validateTrees, c.validateLeaves, c.validateNewton} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// badField is a Validate error: the field, its value and what is wanted.
func badField(field string, v any, want string) error {
	return fmt.Errorf("%w: %s = %v, %s", ErrConfig, field, v, want)
}

// validateMethod checks the method, the task and the budget.
func (c Config) validateMethod() error {
	switch {
	case c.Method > Newton:
		return badField("Method", c.Method, "want dpboost, para, seq, np or newton")
	case c.Task > Regression:
		return badField("Task", c.Task, "want classification or regression")
	case c.Method != NP && !(c.Epsilon > 0 && c.Epsilon < math.Inf(1)):
		return badField("Epsilon", c.Epsilon, "want a finite value > 0")
	}
	return nil
}

// validateTrees checks the ensemble's shape: trees, ensembles, depth.
func (c Config) validateTrees() error {
	switch {
	case c.Trees < 1 || c.Trees > MaxTrees:
		return badField("Trees", c.Trees, fmt.Sprintf("want 1 to %d", MaxTrees))
	case c.Method == DPBoost && (c.EnsembleSize < 1 || c.EnsembleSize > c.Trees):
		return badField("EnsembleSize", c.EnsembleSize, fmt.Sprintf("want 1 to Trees = %d", c.Trees))
	case c.Depth < 1 || c.Depth > MaxDepth:
		return badField("Depth", c.Depth, fmt.Sprintf("want 1 to %d", MaxDepth))
	}
	return nil
}

// validateLeaves checks the leaves' learning rate and regularization and
// the features' bins.
func (c Config) validateLeaves() error {
	switch {
	case !(c.LearningRate > 0 && c.LearningRate < 1):
		return badField("LearningRate", c.LearningRate, "want 0 < eta < 1")
	case !(c.Lambda >= 0 && c.Lambda < math.Inf(1)):
		return badField("Lambda", c.Lambda, "want a finite value >= 0")
	case c.Bins < 2 || c.Bins > MaxBins:
		return badField("Bins", c.Bins, fmt.Sprintf("want 2 to %d", MaxBins))
	}
	return nil
}

// validateNewton checks the Newton trainer's delta, hessian share and
// leaf bound.
func (c Config) validateNewton() error {
	if c.Method != Newton {
		return nil
	}
	switch {
	case !(c.Delta > 0 && c.Delta <= MaxDelta):
		return badField("Delta", c.Delta, fmt.Sprintf("want 0 < delta <= %g", MaxDelta))
	case !(c.HessianShare > 0 && c.HessianShare < 1):
		return badField("HessianShare", c.HessianShare, "want 0 < share < 1")
	case !(c.LeafMax > 0 && c.LeafMax < math.Inf(1)):
		return badField("LeafMax", c.LeafMax, "want a finite value > 0")
	}
	return nil
}

// MaxDelta is the largest delta the Newton trainer accepts: a delta near
// 1/n lets a mechanism publish a row outright with probability delta.
const MaxDelta = 1e-4

// Ensembles is N_e: ceil(T/T_e) for DPBoost, 1 for PARA (one ensemble of T
// trees on disjoint data), T for SEQ and NP (every tree on all the data).
func (c Config) Ensembles() int {
	switch c.Method {
	case DPBoost:
		return (c.Trees + c.EnsembleSize - 1) / c.EnsembleSize
	case PARA:
		return 1
	default: // SEQ, NP, Newton: every tree reads every row
		return c.Trees
	}
}

// ensembleSize is the number of trees per ensemble (the last may be shorter).
func (c Config) ensembleSize() int {
	switch c.Method {
	case DPBoost:
		return c.EnsembleSize
	case PARA:
		return c.Trees
	default:
		return 1
	}
}

// private reports whether the method adds noise.
func (c Config) private() bool { return c.Method != NP }

// SplitSensitivity is Delta G = 3 g*^2, the sensitivity of the split
// utility Gains computes, G_L^2/(n_L+lambda) + G_R^2/(n_R+lambda) (no
// parent term, hessian 1, |g| <= g*), to adding or removing one row, for
// every lambda >= 0 (the paper's Theorem for its own gain). The bound the
// slides give, (3 lambda + 2)/((lambda + 1)(lambda + 2)) g*^2 (0.996 at
// lambda 0.1, 0.134 at lambda 20), is wrong for this function and is not
// used (the tests keep it as a negative control).
//
// Derivation (g* = 1; everything scales with g*^2). A row with gradient g
// falls on one side of every candidate, so one term changes: a side with n
// rows and sum G (|G| <= n) becomes n+1 rows with sum G+g (|g| <= 1), and
// removing a row is the same change backwards. With a = n+lambda,
//
//	d(G, g) = (G+g)^2/(a+1) - G^2/a.
//
// Increase: d is concave in G (1/(a+1) < 1/a) and its unconstrained peak,
// at G = a g, is g^2, so d <= g^2 <= 1 (= 1 only at lambda = 0, G = n, g =
// 1). Decrease: -d is convex in G, so for every g it peaks at G = +-n, and
// with G = n it is largest at g = -1 (the row cancels the side):
//
//	D(n) = n^2/(n+lambda) - (n-1)^2/(n+1+lambda)
//	     = 3 + lambda^2/(n+lambda) - (2+lambda)^2/(n+1+lambda),
//
// D(1) = 1/(1+lambda) (a lone row removed), and D'(n) > 0 iff 2n + lambda >
// 0, so D rises with n to sup_n D(n) = 3 (not reached: 2.96 at n = 100,
// 3 - 4(1+lambda)/n roughly). An empty side (n = 0) gains g^2/(1+lambda) <=
// 1. So sup |d| = 3 g*^2 whatever lambda, tight as the node grows; it is not
// smaller for large lambda, which only slows the approach to 3.
// TestSplitSensitivityBruteForce checks it on every histogram with n up to
// 10^4 (and finds the slides' bound violated); TestSplitPrivacyLossExact
// computes the exponential mechanism's exact privacy loss with it.
func (c Config) SplitSensitivity() float64 {
	return 3 * GStar * GStar
}

// LeafBound is the GLC clipping bound of the t-th tree (t from 1), or +Inf
// where there is no clipping (PARA, SEQ, NP): g* (1-eta)^(t-1), t restarting
// per ensemble with ClipPerEnsemble.
func (c Config) LeafBound(t int) float64 {
	if c.Method != DPBoost {
		return math.Inf(1)
	}
	if c.ClipPerEnsemble {
		t = (t-1)%c.EnsembleSize + 1
	}
	return GStar * math.Pow(1-c.LearningRate, float64(t-1))
}

// LeafSensitivity is Delta V of the t-th tree (t from 1):
// min(g*/(1+lambda), 2 LeafBound(t)).
func (c Config) LeafSensitivity(t int) float64 {
	return math.Min(GStar/(1+c.Lambda), 2*c.LeafBound(t))
}
