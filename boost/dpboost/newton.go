package dpboost

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/ppboost/ppboost/crypto/dlap"
	"github.com/ppboost/ppboost/crypto/rdp"
	"github.com/ppboost/ppboost/dataset"
)

// The Newton trainer (Method Newton): random trees, noisy Newton leaves,
// zCDP accounting. Its design, departures and privacy argument are in
// doc.go, "The Newton trainer".

// Loss of a Newton booster set: logistic for two classes, softmax for more,
// square for regression.
type newtonLoss uint8

const (
	lossLogistic newtonLoss = iota
	lossSoftmax
	lossSquare
)

// NewtonGrid is the fixed-point design of one run: gradients and hessians
// are multiplied by Unit (a power of two) and rounded at random to integers
// (Encode), summed per leaf and released with discrete Gaussian noise of
// integer variances SG and SH in units squared (Release). DeltaG and DeltaH
// are the L2 sensitivities of one round's vector of leaf sums (over the
// boosters' trees) in units: what one row can change.
type NewtonGrid = newtonGrid

type newtonGrid struct {
	Unit           float64
	SG, SH         uint64
	DeltaG, DeltaH float64
}

// Encode is a row's value x (a gradient or hessian) in units, rounded at
// random (unbiased).
func (g newtonGrid) Encode(x float64, r *rand.Rand) int64 { return roundRand(x*g.Unit, r) }

// Release is a leaf's released sums from its integer sums: each plus exact
// discrete Gaussian noise, decoded to gradient units.
func (g newtonGrid) Release(G, H int64, r *rand.Rand) (gs, hs float64) {
	return float64(G+dlap.SampleGauss(r, g.SG)) / g.Unit, float64(H+dlap.SampleGauss(r, g.SH)) / g.Unit
}

// Rho is the zCDP of one round.
func (g newtonGrid) Rho() float64 { return g.rho() }

// PlanGrid is the grid the trainer uses for cfg and classes classes.
func PlanGrid(cfg Config, classes int) (NewtonGrid, error) {
	if err := cfg.Validate(); err != nil {
		return NewtonGrid{}, err
	}
	g, _, err := newtonPlan(cfg, classes)
	return g, err
}

// rho is the zCDP of one round: DeltaG^2/(2 SG) + DeltaH^2/(2 SH) (CKS 2020:
// the discrete Gaussian with integer shift Delta is Delta^2/(2 s)-zCDP, and
// independent coordinates add).
func (g newtonGrid) rho() float64 {
	return g.DeltaG*g.DeltaG/(2*float64(g.SG)) + g.DeltaH*g.DeltaH/(2*float64(g.SH))
}

// sensitivities are the L2 bounds, in units u, of one row's rounded
// contribution to the leaf sums of one round (one leaf in each of the
// boosters' trees). Randomized rounding moves each coordinate by less than
// one unit toward an integer no farther from 0 than ceil(|x|):
//   - logistic: g = p - y in (-1, 1), h = p(1-p) in [0, 1/4]; u and u/4 are
//     integers, so the rounded values stay within [-u, u] and [0, u/4].
//   - softmax over K classes: ||p - e_y||_2^2 = (1-p_y)^2 + sum_{k!=y} p_k^2
//     <= 2 (1-p_y)^2 <= 2, and sum_k (p_k(1-p_k))^2 <= max_k p_k(1-p_k)
//     sum_k p_k <= 1/4; rounding adds at most 1 per coordinate, sqrt(K) in
//     L2.
//   - square: g = F - y clipped to [-1, 1], h = 1 (the row count times u).
func (l newtonLoss) sensitivities(u float64, k int) (dg, dh float64) {
	switch l {
	case lossSoftmax:
		return math.Sqrt2*u + math.Sqrt(float64(k)), u/2 + math.Sqrt(float64(k))
	case lossSquare:
		return u, u
	}
	return u, u / 4
}

// newtonDesign picks the grid for a per-round budget rhoRound: the
// hessian sums get the share hs of it, the gradient sums the rest. The
// unit is the power of two (at least 4, so u/4 is an integer) that puts
// the gradient noise near 2^10 units: fine enough that rounding adds under
// 0.1 % to the noise variance per 1,000 rows of a leaf, coarse enough that
// the variances stay within dlap.MaxGaussVariance. Rounding the variances up
// to integers only lowers the round's rho.
func newtonDesign(loss newtonLoss, k int, rhoRound, hs float64) (newtonGrid, error) {
	if !(rhoRound > 0) || math.IsInf(rhoRound, 1) {
		return newtonGrid{}, fmt.Errorf("%w: per-tree zCDP budget %v", ErrConfig, rhoRound)
	}
	dg1, _ := loss.sensitivities(1, 0)
	sigma1 := dg1 / math.Sqrt(2*(1-hs)*rhoRound) // gradient noise sd in gradient units
	e := max(2, int(math.Ceil(math.Log2(1024/sigma1))))
	e = min(e, 40)
	u := math.Ldexp(1, e)
	dg, dh := loss.sensitivities(u, k)
	sg := math.Ceil(dg * dg / (2 * (1 - hs) * rhoRound))
	sh := math.Ceil(dh * dh / (2 * hs * rhoRound))
	if sg > dlap.MaxGaussVariance || sh > dlap.MaxGaussVariance {
		return newtonGrid{}, fmt.Errorf("%w: the noise this budget needs (sd %.3g gradient units per leaf) is beyond the sampler's range: raise --eps or lower --trees", ErrConfig, sigma1)
	}
	return newtonGrid{Unit: u, SG: uint64(sg), SH: uint64(sh), DeltaG: dg, DeltaH: dh}, nil
}

// NewtonAccount is the Newton trainer's guarantee: rho-zCDP in all, which
// is (Epsilon, Delta)-DP by ZCDPEpsilon.
type NewtonAccount struct {
	Rho      float64 `json:"rho"`       // total zCDP, all trees and classes
	RhoRound float64 `json:"rho_round"` // zCDP of one round (one tree per booster)
	Epsilon  float64 `json:"epsilon"`   // ZCDPEpsilon(Rho, Delta) <= Config.Epsilon
	Delta    float64 `json:"delta"`
	Unit     float64 `json:"unit"`    // fixed-point unit of gradients and hessians
	NoiseG   float64 `json:"noise_g"` // noise sd of a leaf's gradient sum, gradient units
	NoiseH   float64 `json:"noise_h"` // the same for the hessian sum
}

func (c Config) newtonLossFor(classes int) newtonLoss {
	switch {
	case c.Task == Regression:
		return lossSquare
	case classes > 2:
		return lossSoftmax
	}
	return lossLogistic
}

// newtonPlan is the grid and the account of cfg for classes classes.
func newtonPlan(cfg Config, classes int) (newtonGrid, NewtonAccount, error) {
	loss := cfg.newtonLossFor(classes)
	k := 1
	if loss == lossSoftmax {
		k = classes
	}
	total := rdp.ZCDPRho(cfg.Epsilon, cfg.Delta)
	grid, err := newtonDesign(loss, k, total/float64(cfg.Trees), cfg.HessianShare)
	if err != nil {
		return grid, NewtonAccount{}, err
	}
	rr := grid.rho()
	rho := rr * float64(cfg.Trees)
	return grid, NewtonAccount{Rho: rho, RhoRound: rr, Epsilon: rdp.ZCDPEpsilon(rho, cfg.Delta), Delta: cfg.Delta,
		Unit: grid.Unit, NoiseG: math.Sqrt(float64(grid.SG)) / grid.Unit, NoiseH: math.Sqrt(float64(grid.SH)) / grid.Unit}, nil
}

// splitGroups lists, per input column, the binned features a random split
// chooses among: one numeric feature, or the one-hot features of a
// categorical column. Without a schema every feature is its own column.
func splitGroups(schema *dataset.Schema, b *Binning) [][]int {
	var groups [][]int
	if schema == nil {
		for f := range b.Features() {
			groups = append(groups, []int{f})
		}
		return groups
	}
	f := 0
	for _, c := range schema.Columns {
		switch c.Kind {
		case dataset.KindNumeric:
			groups = append(groups, []int{f})
			f++
		case dataset.KindCategorical:
			g := make([]int, len(c.Categories))
			for i := range g {
				g[i] = f + i
			}
			groups = append(groups, g)
			f += len(g)
		}
	}
	return groups
}

// randomTree draws a complete tree of depth d whose splits do not look at
// the data: at every node a column uniformly, then one of its features
// uniformly (a category of a categorical column) and a bin edge uniformly.
func randomTree(b *Binning, groups [][]int, depth int, r *rand.Rand) Tree {
	internal := 1<<depth - 1
	t := Tree{Feature: make([]int, internal), Bin: make([]int, internal), Leaf: make([]float64, internal+1)}
	for i := range internal {
		g := groups[r.IntN(len(groups))]
		f := g[r.IntN(len(g))]
		t.Feature[i], t.Bin[i] = f, r.IntN(b.Bins[f]-1)
	}
	return t
}

// NewtonLeaf is a leaf's value from its released (noisy) gradient and
// hessian sums: the Newton step -G/(max(H, 0) + lambda), clipped to
// +-LeafMax, times the learning rate. Post-processing of the releases; the
// federated trainer calls it too.
func (c Config) NewtonLeaf(g, h float64) float64 {
	v := -g / (max(h, 0) + c.Lambda)
	return c.LearningRate * max(-c.LeafMax, min(c.LeafMax, v))
}

// LogisticGH is the logistic loss's gradient p - y and hessian p(1-p) at
// score f, p = 1/(1+e^-f), for label y (true: class 1): |g| < 1, 0 <= h <=
// 1/4, the bounds the sensitivities rest on.
func LogisticGH(f float64, y bool) (g, h float64) {
	p := 1 / (1 + math.Exp(-f))
	g = p
	if y {
		g = p - 1
	}
	return g, p * (1 - p)
}

// Softmax sets out[k] = exp(f[k] - max f) / sum_j exp(f[j] - max f), the
// class probabilities of softmax scores (the trainer's and
// Model.ClassScores's, computed the same way).
func Softmax(f, out []float64) {
	m := math.Inf(-1)
	for _, v := range f {
		m = max(m, v)
	}
	z := 0.0
	for k, v := range f {
		out[k] = math.Exp(v - m)
		z += out[k]
	}
	for k := range out {
		out[k] /= z
	}
}

// Sigmoid is the logistic function 1/(1+e^-z), computed without overflow.
func Sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// RandomTree is randomTree over SplitGroups(schema, b), for the federated
// trainer, which draws every tree from the session beacon.
func RandomTree(schema *dataset.Schema, b *Binning, depth int, r *rand.Rand) Tree {
	return randomTree(b, splitGroups(schema, b), depth, r)
}

// roundRand rounds x to floor(x) or floor(x)+1 at random, up with
// probability x - floor(x) (unbiased).
func roundRand(x float64, r *rand.Rand) int64 {
	f := math.Floor(x)
	if r.Float64() < x-f {
		f++
	}
	return int64(f)
}

// trainNewton fits the boosters: one (logistic) for two classes or a
// regression, K (softmax) for K > 2 classes. labels are class indices
// (classification) and y targets in [-1, 1] (regression); the other is nil.
func trainNewton(cfg Config, b *Binning, groups [][]int, data *Binned, labels []int, classes int, y []float64, r *rand.Rand, progress func(TreeInfo)) ([][]Tree, NewtonAccount, error) {
	loss := cfg.newtonLossFor(classes)
	boosters := 1
	if loss == lossSoftmax {
		boosters = classes
	}
	grid, acc, err := newtonPlan(cfg, classes)
	if err != nil {
		return nil, acc, err
	}
	n, Fd := data.Rows, data.Features
	F := make([]float64, n*boosters) // scores, row-major
	g := make([]float64, n*boosters)
	h := make([]float64, n*boosters)
	leaf := make([]int32, n)
	leaves := 1 << cfg.Depth
	G := make([]int64, leaves)
	H := make([]int64, leaves)
	out := make([][]Tree, boosters)
	p := make([]float64, boosters)
	for t := 1; t <= cfg.Trees; t++ {
		start := time.Now()
		for i := range n {
			fi, gi, hi := F[i*boosters:(i+1)*boosters], g[i*boosters:(i+1)*boosters], h[i*boosters:(i+1)*boosters]
			switch loss {
			case lossLogistic:
				gi[0], hi[0] = LogisticGH(fi[0], labels[i] == 1)
			case lossSoftmax:
				Softmax(fi, p)
				for k, q := range p {
					gi[k] = q
					if labels[i] == k {
						gi[k] = q - 1
					}
					hi[k] = q * (1 - q)
				}
			case lossSquare:
				gi[0] = max(-1, min(1, fi[0]-y[i]))
				hi[0] = 1
			}
		}
		for k := range boosters {
			tree := randomTree(b, groups, cfg.Depth, r)
			clear(G)
			clear(H)
			for i := range n {
				l := int32(tree.leafOf(data.Idx[i*Fd : (i+1)*Fd]))
				leaf[i] = l
				G[l] += grid.Encode(g[i*boosters+k], r)
				H[l] += grid.Encode(h[i*boosters+k], r)
			}
			for l := range leaves {
				tree.Leaf[l] = cfg.NewtonLeaf(grid.Release(G[l], H[l], r))
			}
			for i := range n {
				F[i*boosters+k] += tree.Leaf[leaf[i]]
			}
			out[k] = append(out[k], tree)
			if progress != nil {
				progress(TreeInfo{Class: k, Tree: t, Trees: cfg.Trees, Subset: n, Rho: acc.RhoRound / float64(boosters), Elapsed: time.Since(start)})
			}
		}
	}
	return out, acc, nil
}

// DefaultRowBound is the public row bound a Newton plan assumes when its
// caller declares none: 100,000 rows, the most for which the rule's delta
// of 1e-6 is still at most 0.1/rows. Data with more rows is refused
// (CheckRowBound) unless the caller declares a larger bound.
const DefaultRowBound = 100_000

// NewtonDelta is the rule's delta for data of at most bound rows:
// min(1e-6, 0.1/bound). bound is a PUBLIC row bound the caller declares
// (DefaultRowBound, a --max-rows flag, a roster times its per-owner cap),
// never the true row count: delta and lambda (which follows from it) go
// into the model and onto the wire, and a delta computed from the count
// publishes the count (above 100,000 rows, two neighbouring datasets would
// get different deltas, so the stated add/remove-one eps would not hold).
// For every dataset within the bound delta <= 0.1/rows, far below 1/rows
// (a delta near 1/rows would allow publishing a row outright).
func NewtonDelta(bound int) float64 { return min(1e-6, 0.1/float64(max(bound, 1))) }

// CheckRowBound refuses data of more rows than the public bound its plan
// assumed (delta = NewtonDelta(bound) is meaningful only within it); the
// error wraps ErrRowBound. Callers check before training, so no noise is
// drawn for data the plan does not cover.
func CheckRowBound(rows, bound int) error {
	if rows > bound {
		return fmt.Errorf("%w: %d rows, the plan's public row bound is %d (delta = min(1e-6, 0.1/bound) covers data of at most bound rows)", ErrRowBound, rows, bound)
	}
	return nil
}

// NewtonRule is the Newton trainer's default configuration for a budget
// eps, a public row bound (see NewtonDelta: a declared bound, never the
// row count) and the given number of classes (Lambda is left 0:
// NewtonLambda sets it from the plan). It reads only public quantities
// (eps, the bound and the number of classes), never the data; its
// constants were fitted on a validation split carved out of Adult's
// training rows (RESULTS.md, "DP-GBDT at small eps"), never on a test set.
// The rule: depth 3; NewtonRuleTrees trees of learning rate 0.1; delta
// NewtonDelta(bound); lambda twice the noise sd of a leaf's hessian sum
// (NewtonLambda: a leaf whose hessian is no larger than its noise takes a
// step shrunk at least threefold, so many small, heavily regularized steps
// average the noise out); a tenth of each round's zCDP on the hessian
// sums; Newton steps clipped to +-2.
func NewtonRule(eps float64, bound, classes int) Config {
	c := Config{Method: Newton, Task: Classification, Epsilon: eps, Trees: NewtonRuleTrees, Depth: 3,
		LearningRate: 0.1, Bins: 32, Delta: NewtonDelta(bound), HessianShare: 0.1, LeafMax: 2}
	c.EnsembleSize = c.Trees
	return c
}

// NewtonWhy says which plan a Newton run chose for the public row bound
// bound (the one its NewtonRule was given; it never names the row count).
func NewtonWhy(c Config, bound int) string {
	delta := fmt.Sprintf("rule: min(1e-6, 0.1/%d), %d the public row bound, not the row count", bound, bound)
	if c.Delta != NewtonDelta(bound) {
		delta = "given"
	}
	return fmt.Sprintf("newton trainer, depth %d, %d trees, learning rate %g, delta %.3g (%s), lambda %.4g (rule: twice the noise sd of a leaf's hessian sum); dpboost.NewtonRule, override with --trees, --depth, --lr, --lambda, --delta, --max-rows",
		c.Depth, c.Trees, c.LearningRate, c.Delta, delta, c.Lambda)
}

// NewtonRuleTrees is the rule's number of trees, at every eps from 0.05 to
// 10: many small, heavily regularized steps (RESULTS.md).
const NewtonRuleTrees = 800

// NewtonLambda is the rule's lambda for cfg: twice the noise sd of a
// leaf's hessian sum (from the plan), at least 1.
func NewtonLambda(cfg Config, classes int) (float64, error) {
	c := cfg
	c.Lambda = 1 // any valid value: the plan does not depend on it
	acc, err := PlanNewton(c, classes)
	if err != nil {
		return 0, err
	}
	return max(1, 2*acc.Newton.NoiseH), nil
}
