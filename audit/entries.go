package audit

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/crypto/dpnoise"
	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/ldp"
	"github.com/ppboost/ppboost/dataset"
)

// Entries builds the registry: one entry per owner release, each calling the
// production code. An error means a production constructor refused the
// audit's parameters.
func Entries() ([]Entry, error) {
	var out []Entry
	for _, build := range []func() ([]Entry, error){ldpEntries, dpnoiseEntries, distributedEntries, dpboostEntries, newtonEntries, pfdsEntries} {
		es, err := build()
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	return out, nil
}

// ---- crypto/ldp ------------------------------------------------------------

// ldpCase is one mechanism setting: d = 1 at eps = 1; d = 2..4 at eps = 1
// (PM and HM sample k = 1 attribute) and PM/HM at d = 4, eps = 5 (k = 2
// attributes, each with eps/2).
type ldpCase struct {
	kind ldp.Kind
	d    int
	eps  float64
}

func ldpEntries() ([]Entry, error) {
	var cases []ldpCase
	for _, k := range []ldp.Kind{ldp.Piecewise, ldp.Hybrid, ldp.Duchi, ldp.Laplace} {
		for d := 1; d <= 4; d++ {
			cases = append(cases, ldpCase{k, d, 1})
		}
	}
	cases = append(cases, ldpCase{ldp.Piecewise, 4, 5}, ldpCase{ldp.Hybrid, 4, 5})
	var out []Entry
	for _, c := range cases {
		rel, err := ldpSampler(c.kind, c.eps, c.d)
		if err != nil {
			return nil, err
		}
		ctl, err := ldpSampler(c.kind, 2*c.eps, c.d)
		if err != nil {
			return nil, err
		}
		out = append(out, Entry{
			Name:    fmt.Sprintf("ldp/%s/d=%d/eps=%g", c.kind, c.d, c.eps),
			Epsilon: c.eps,
			Neighbours: fmt.Sprintf("t = (-1, ..., -1) vs (1, ..., 1) (d = %d): opposite corners of [-1, 1]^d, "+
				"the largest change of every coordinate; statistic: %s", c.d, ldpStatistic(c.kind)),
			Release:  rel,
			Controls: []Control{{Name: "half noise (ldp.New with 2 eps)", Release: ctl}},
		})
	}
	return out, nil
}

func ldpStatistic(kind ldp.Kind) string {
	if kind == ldp.Laplace {
		return "the sum of the output coordinates clipped to [-1, 1] (the ideal mechanism's log-likelihood ratio, up to a factor)"
	}
	return "the sum of the output coordinates"
}

// ldpSampler perturbs the neighbour's corner with the mechanism ldp.New
// builds (whatever sampler it uses) and returns the sum of the output
// coordinates: for PM and HM the k sampled coordinates, whose sum is
// largest exactly when all of them fall in the high piece (density ratio
// e^eps there), for Duchi B times the number of +B minus -B coordinates
// (its extremes are the outputs all +B and all -B, ratio e^eps). For
// Laplace the coordinates are clipped to [-1, 1] first: sum_j clip(o_j, -1,
// 1) is, up to the factor 2/b, the log-likelihood ratio of t_j + Lap(b)
// between the corners, the most powerful statistic (Neyman–Pearson); its
// largest value (every o_j >= 1, probability 2^-d) has ratio e^eps, while
// the plain sum's tail approaches e^eps only slowly for d > 1.
func ldpSampler(kind ldp.Kind, eps float64, d int) (Sampler, error) {
	m, err := ldp.New(kind, eps, d, ldp.Reject)
	if err != nil {
		return nil, fmt.Errorf("audit: ldp %s eps %v d %d: %w", kind, eps, d, err)
	}
	var in [2][]float64
	for nb := range in {
		in[nb] = make([]float64, d)
		for j := range in[nb] {
			in[nb][j] = float64(2*nb - 1)
		}
	}
	out := make([]float64, d)
	return func(r *rand.Rand, nb int) float64 {
		if err := m.Perturb(r, in[nb], out); err != nil {
			return math.NaN()
		}
		s := 0.0
		for _, v := range out {
			if kind == ldp.Laplace {
				v = max(-1, min(1, v))
			}
			s += v
		}
		return s
	}, nil
}

// ---- crypto/dpnoise --------------------------------------------------------

func dpnoiseEntries() ([]Entry, error) {
	var out []Entry
	for _, tau := range []float64{5, 50} {
		delta := int64(tau) // Delta_int = t: eps = Delta_int/t = 1
		one := dpnoise.Params{Scale: tau, Honest: 1}
		five := dpnoise.Params{Scale: tau, Honest: 5}
		for _, p := range []dpnoise.Params{one, five} {
			if err := p.Validate(); err != nil {
				return nil, err
			}
		}
		half := func(p dpnoise.Params) dpnoise.Params { p.Scale /= 2; return p }
		out = append(out,
			Entry{
				Name:    fmt.Sprintf("dpnoise/share/h=1/t=%g", tau),
				Epsilon: one.Epsilon(float64(delta)),
				Neighbours: fmt.Sprintf("one dealer's encoded value 0 vs Delta_int = %d plus its share (Params.Noise) "+
					"sized for h = 1: the whole DLap(t) noise; statistic: the signed field value", delta),
				Release:  dpnoiseSampler(one, 1, delta),
				Controls: []Control{{Name: "half t", Release: dpnoiseSampler(half(one), 1, delta)}},
			},
			Entry{
				Name:    fmt.Sprintf("dpnoise/sum/h=5/t=%g", tau),
				Epsilon: five.Epsilon(float64(delta)),
				Neighbours: fmt.Sprintf("five dealers' encoded values summed, dealer 0's value 0 vs Delta_int = %d, "+
					"each with its own share NB(1/5) - NB(1/5) (Params.Noise); statistic: the signed total", delta),
				Release: dpnoiseSampler(five, 5, delta),
				Controls: []Control{
					{Name: "wrong h (h = 5 design, 1 honest share)", Release: dpnoiseSampler(five, 1, delta)},
					{Name: "half t", Release: dpnoiseSampler(half(five), 5, delta)},
				},
			})
	}
	return out, nil
}

// dpnoiseSampler sums `shares` dealers' encoded values, dealer 0 holding
// nb*delta and the others 0, each after its own Params.Noise hook.
func dpnoiseSampler(p dpnoise.Params, shares int, delta int64) Sampler {
	enc := make([]field.Elem, 1)
	return func(r *rand.Rand, nb int) float64 {
		sum := field.FromInt(0)
		for i := range shares {
			v := int64(0)
			if i == 0 {
				v = int64(nb) * delta
			}
			enc[0] = field.FromInt(v)
			if err := p.Noise(r)(enc); err != nil {
				return math.NaN()
			}
			sum = sum.Add(enc[0])
		}
		return float64(sum.Int())
	}
}

// ---- boost: Wang & Chang with distributed noise ---------------------------

// distributedEntries audits the share sum of a distributed stump round as
// boost.DistributedRound computes it: the production spec (boost.Config.Spec
// with privacy distributed, eps 1, three owners per round, so the dealer
// floor is 3), one split (two cells), the default clip B = 2 and fixed-point
// scale 2^24; once with colluders "all" (the default: h = 1, the target's
// own share is the only honest one) and once with one colluder (h = 2).
// It also audits the err dealing (boost/errsum.go) the same way.
func distributedEntries() ([]Entry, error) {
	var out []Entry
	for _, colluders := range []int{boost.ColludersAll, 1} {
		cfg := boost.DefaultConfig()
		cfg.Privacy = boost.PrivacyDistributed
		cfg.Epsilon = 1
		cfg.OwnersPerRound = 3
		cfg.Colluders = colluders
		spec, err := cfg.Spec(2, 1, []boost.Split{{Feature: 0, Threshold: 0}})
		if err != nil {
			return nil, fmt.Errorf("audit: distributed spec: %w", err)
		}
		np, ok, err := spec.DistributedNoise()
		if err != nil || !ok {
			return nil, fmt.Errorf("audit: distributed noise: %v (noisy %v)", err, ok)
		}
		half := np
		half.Scale /= 2
		out = append(out, Entry{
			Name:    fmt.Sprintf("boost/distributed/stump/h=%d", spec.Honest),
			Epsilon: spec.Epsilon,
			Neighbours: fmt.Sprintf("the target owner's one row, weight 5 (clipped to B = %g), x = -0.5 class 0 (cells [+B, 0]) vs "+
				"x = 0.5 class 1 (cells [0, -B]): L1 distance 2B, the sensitivity; the other two owners' shares are known to the "+
				"data user except for %d honest one(s), so exactly h = %d honest shares; statistic: the sum of the total's cells "+
				"clipped to [-1, 1] (the log-likelihood ratio of Laplace noise, up to a factor)", spec.Clip, spec.Honest-1, spec.Honest),
			Release:  distributedSampler(&spec, np),
			Controls: []Control{{Name: "half t", Release: distributedSampler(&spec, half)}},
		})
	}
	cfg := boost.DefaultConfig()
	cfg.Alpha, cfg.ErrEpsilon = boost.AlphaSecureSum, 1
	spec, err := cfg.Spec(2, 1, []boost.Split{{Feature: 0, Threshold: 0}})
	if err != nil {
		return nil, fmt.Errorf("audit: err spec: %w", err)
	}
	if _, ok, err := spec.ErrNoise(); err != nil || !ok {
		return nil, fmt.Errorf("audit: err noise: %v (noisy %v)", err, ok)
	}
	// The control: the same release with half the discrete Laplace scale,
	// which is the design for twice the err epsilon (t = Delta_int / eps).
	half := spec
	half.ErrEpsilon *= 2
	out = append(out, Entry{
		Name:    fmt.Sprintf("boost/errsum/pair/h=%d", spec.ErrHonest),
		Epsilon: spec.ErrEpsilon,
		Neighbours: fmt.Sprintf("the target owner's clipped pair (0, 0) vs (C, C) with C = %g: L1 distance 2C, the sensitivity; "+
			"every other dealing known to the data user (colluders all: h = 1); statistic: the sum of the two coordinates "+
			"clipped to [0, 2C]", spec.ErrClip),
		Release:  errSampler(spec),
		Controls: []Control{{Name: "half t", Release: errSampler(half)}},
	})
	return out, nil
}

// errSampler deals one owner's pair through boost.ErrRound, the function
// the reference trainer and the protocol's noise design share (the other
// dealings are known to the data user).
func errSampler(spec boost.Spec) Sampler {
	pairs := [2][][]float64{{{0, 0}}, {{spec.ErrClip, spec.ErrClip}}}
	return func(r *rand.Rand, nb int) float64 {
		total, err := boost.ErrRound(&spec, pairs[nb], func(int) *rand.Rand { return r })
		if err != nil {
			return math.NaN()
		}
		c := 2 * spec.ErrClip
		return max(0, min(c, total[0]+total[1]))
	}
}

func distributedSampler(spec *boost.Spec, np dpnoise.Params) Sampler {
	owner := func(x float64, y int, w float64) *boost.Owner {
		d := &dataset.Dataset{Name: "audit", X: [][]float64{{x}}, Y: []int{y}, Classes: []string{"a", "b"}, Features: []string{"x"}}
		return &boost.Owner{Data: d, W: []float64{w}}
	}
	target := [2]*boost.Owner{owner(-0.5, 0, 5), owner(0.5, 1, 5)}
	other, colluder := owner(0.5, 0, 1), owner(-0.5, 1, 1)
	return func(r *rand.Rand, nb int) float64 {
		total, err := boost.DistributedRound(spec, []*boost.Owner{target[nb], other, colluder}, func(i int) func([]field.Elem) error {
			if i == 2 || (i == 1 && spec.Honest < 2) {
				return nil // a colluder's share is known to the data user
			}
			return np.Noise(r)
		})
		if err != nil {
			return math.NaN()
		}
		s := 0.0
		for _, v := range total {
			s += max(-1, min(1, v))
		}
		return s
	}
}

// ---- boost/dpboost ---------------------------------------------------------

// dpboostConfig is the trainer's configuration the DPBoost entries use: the
// defaults with one tree of depth 1 and eps 2, so that the trainer's
// per-level split budget eps_t/(2 Depth) and leaf budget eps_t/2 are both 1
// (dpboost.Account).
func dpboostConfig(lambda float64) dpboost.Config {
	cfg := dpboost.DefaultConfig()
	cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Epsilon, cfg.Lambda = 1, 1, 1, 2, lambda
	cfg.Bins = splitBins
	return cfg
}

// Split audit sizes: n rows with gradient +g* in bin 0, the neighbour adds
// one row with -g* in bin 1; 32 bins of one feature give 31 candidates.
const (
	splitRows = 1000
	splitBins = 32
)

// OldSplitSensitivity is the DPBoost slides' bound (3 lambda + 2)/((lambda +
// 1)(lambda + 2)) g*^2, the split entries' negative control (DESIGN.md,
// Privacy: the gain's change under one added row tends to 3 g*^2).
func OldSplitSensitivity(lambda float64) float64 {
	return (3*lambda + 2) / ((lambda + 1) * (lambda + 2)) * dpboost.GStar * dpboost.GStar
}

// SplitChange is the largest change of any candidate's gain (dpboost.Gains)
// between the split entry's two histograms: the sensitivity the
// exponential mechanism needs at least.
func SplitChange(lambda float64) (float64, error) {
	b, h, err := splitHistograms()
	if err != nil {
		return 0, err
	}
	g0 := dpboost.Gains(b, h[0], lambda, nil)
	g1 := dpboost.Gains(b, h[1], lambda, nil)
	worst := 0.0
	for i := range g0 {
		worst = max(worst, math.Abs(g1[i]-g0[i]))
	}
	return worst, nil
}

func splitHistograms() (*dpboost.Binning, [2]*dpboost.Histogram, error) {
	var h [2]*dpboost.Histogram
	b, err := dpboost.NewBinning(nil, 1, splitBins)
	if err != nil {
		return nil, h, err
	}
	for nb := range h {
		h[nb] = dpboost.NewHistogram(b)
		h[nb].G[0], h[nb].N[0] = splitRows*dpboost.GStar, splitRows
	}
	h[1].G[1], h[1].N[1] = -dpboost.GStar, 1
	return b, h, nil
}

func dpboostEntries() ([]Entry, error) {
	var out []Entry
	for _, lambda := range []float64{0.1, 20} {
		cfg := dpboostConfig(lambda)
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		acc := dpboost.Account(cfg)
		// Leaf: the trainer's rule for tree t = 1 (train.go).
		leaf := dpboost.LeafRule{Lambda: cfg.Lambda, Bound: cfg.LeafBound(1), Eps: acc.Leaf[0], Sensitivity: cfg.LeafSensitivity(1)}
		halfLeaf := leaf
		halfLeaf.Eps *= 2
		out = append(out, Entry{
			Name:    fmt.Sprintf("dpboost/leaf/lambda=%g", lambda),
			Epsilon: leaf.Eps,
			Neighbours: fmt.Sprintf("an empty leaf (G = 0, n = 0: V = 0) vs one row with g = -g* (V = g*/(1+lambda) = %.4g = "+
				"LeafSensitivity(1), the largest change of V, reached at n = 0 and 1); statistic: the released leaf value", cfg.LeafSensitivity(1)),
			Release:  leafSampler(leaf),
			Controls: []Control{{Name: "half noise (2 eps)", Release: leafSampler(halfLeaf)}},
		})
		// Split: the trainer's rule for depth 1.
		split := dpboost.SplitRule{Lambda: cfg.Lambda, Eps: acc.SplitPerDepth[0], Sensitivity: cfg.SplitSensitivity()}
		old := split
		old.Sensitivity = OldSplitSensitivity(lambda)
		rel, err := splitSampler(split)
		if err != nil {
			return nil, err
		}
		ctl, err := splitSampler(old)
		if err != nil {
			return nil, err
		}
		change, err := SplitChange(lambda)
		if err != nil {
			return nil, err
		}
		out = append(out, Entry{
			Name:    fmt.Sprintf("dpboost/split/lambda=%g", lambda),
			Epsilon: split.Eps,
			Neighbours: fmt.Sprintf("a node of n = %d rows with g = +g* in bin 0 vs the same plus one row with g = -g* in bin 1 "+
				"(%d bins, %d candidates: candidate 0 gains g*^2/(1+lambda), every other loses about 3 g*^2; largest change %.4g); "+
				"statistic: the chosen bin", splitRows, splitBins, splitBins-1, change),
			Release:  rel,
			Controls: []Control{{Name: fmt.Sprintf("slides' bound %.4g", old.Sensitivity), Release: ctl}},
			Known: func() string {
				if s := cfg.SplitSensitivity(); s < change {
					return fmt.Sprintf("Config.SplitSensitivity() = %.4g is below the gain change %.4g of one added row "+
						"(n = %d, lambda = %g): the split sensitivity fix is pending", s, change, splitRows, lambda)
				}
				return ""
			},
		})
	}
	return out, nil
}

func leafSampler(rule dpboost.LeafRule) Sampler {
	return func(r *rand.Rand, nb int) float64 {
		if nb == 0 {
			return dpboost.ReleaseLeaf(0, 0, rule, r)
		}
		return dpboost.ReleaseLeaf(-dpboost.GStar, 1, rule, r)
	}
}

func splitSampler(rule dpboost.SplitRule) (Sampler, error) {
	b, h, err := splitHistograms()
	if err != nil {
		return nil, err
	}
	var scratch []float64
	return func(r *rand.Rand, nb int) float64 {
		f, k, s := dpboost.ChooseSplit(b, h[nb], rule, r, scratch)
		scratch = s
		return float64(f*splitBins + k)
	}, nil
}

// ---- boost/pfds ------------------------------------------------------------

// pfdsEntries audit MakeTree's two releases on one numeric attribute and
// two classes, neighbours by adding one row:
//   - leaf counts: HMax = 1 (the root is a leaf), counts + Lap(1/eps'),
//     eps' = Eps/(2 HMax);
//   - the split: HMax = 2, the root's split value chosen among T = 10 random
//     candidates by the exponential mechanism with the Max utility.
func pfdsEntries() ([]Entry, error) {
	dom, err := pfds.DomainOf(nil, 1, 2)
	if err != nil {
		return nil, err
	}
	counts := pfds.Params{Eps: 2, HMax: 1, T: 10, P: 2}
	split := pfds.Params{Eps: 4, HMax: 2, T: 10, P: 2}
	treeEps := func(p pfds.Params) float64 { return p.Eps / (2 * float64(p.HMax)) } // eps' (pfds.Params.treeEps)
	scaled := func(p pfds.Params, f float64) pfds.Params { p.Eps *= f; return p }
	for _, p := range []pfds.Params{counts, split} {
		if err := p.Validate(); err != nil {
			return nil, err
		}
	}
	// PFDS-cv's release: the leaf class counts at its whole Eps (its
	// VariantParams.Charge, the geometric mechanism's own epsilon).
	cv := pfds.VariantParams{Eps: 1, HMax: 1, Threshold: 12, Sample: true}
	cvScaled := func(f float64) pfds.VariantParams { c := cv; c.Eps *= f; return c }
	cvCharge, err := cv.Charge()
	if err != nil {
		return nil, err
	}
	// Leaf counts: three rows vs the same plus a class-0 row (class 0's
	// count changes by 1: the L1 sensitivity).
	cx := [][]float64{{-0.5}, {0.2}, {0.7}}
	cy := []int{1, 0, 1}
	// Split: m class-1 rows at x = -0.9 give every candidate the utility m;
	// the added class-0 row at 0.5 raises it by 1 for every candidate
	// v <= 0.5 and leaves it for v > 0.5.
	sx := [][]float64{{-0.9}, {-0.9}, {-0.9}}
	sy := []int{1, 1, 1}
	return []Entry{
		{
			Name:    "pfds/leaf-counts",
			Epsilon: treeEps(counts),
			Neighbours: "three rows vs the same plus one class-0 row (one class count changes by 1); " +
				"statistic: the root leaf's noisy class-0 count",
			Release:  pfdsCountSampler(dom, counts, cx, cy),
			Controls: []Control{{Name: "half noise (2 Eps)", Release: pfdsCountSampler(dom, scaled(counts, 2), cx, cy)}},
		},
		{
			Name:    "pfds/split",
			Epsilon: treeEps(split),
			Neighbours: "three class-1 rows at x = -0.9 vs the same plus a class-0 row at x = 0.5 (the Max utility rises by 1, " +
				"its sensitivity, for candidates v <= 0.5); statistic: the root's split value. The utility only rises " +
				"when a row is added, so the mechanism is in fact eps'/2-DP and half the noise is still eps'-DP: the " +
				"control quarters the noise",
			Release:  pfdsSplitSampler(dom, split, sx, sy),
			Controls: []Control{{Name: "quarter noise (4 Eps)", Release: pfdsSplitSampler(dom, scaled(split, 4), sx, sy)}},
		},
		{
			Name:    "pfds/cv-leaf-counts",
			Epsilon: cvCharge,
			Neighbours: "three rows vs the same plus one class-0 row (one cell of the (leaf, class) histogram changes by 1); " +
				"statistic: PFDS-cv's published root-leaf class-0 count (HMax 1, the geometric mechanism at Eps; the random " +
				"tree reads no row)",
			Release:  pfdsCVSampler(dom, cv, cx, cy),
			Controls: []Control{{Name: "half noise (2 Eps)", Release: pfdsCVSampler(dom, cvScaled(2), cx, cy)}},
		},
	}, nil
}

// pfdsCVSampler draws PFDS-cv's published leaf counts (MakeVariantTree)
// on neighbour nb: the root leaf's class-0 count.
func pfdsCVSampler(dom *pfds.Domain, v pfds.VariantParams, x [][]float64, y []int) Sampler {
	xs, ys := pfdsNeighbours(x, y, 0.1, 0)
	return func(r *rand.Rand, nb int) float64 {
		t, err := pfds.MakeVariantTree(dom, xs[nb], ys[nb], v, r)
		if err != nil {
			panic(err) // v is validated by pfdsEntries
		}
		return t.Nodes[0].Counts[0]
	}
}

// pfdsNeighbours are (x, y) and the same plus the row (addX, addY).
func pfdsNeighbours(x [][]float64, y []int, addX float64, addY int) ([2][][]float64, [2][]int) {
	x1 := append(append([][]float64{}, x...), []float64{addX})
	y1 := append(append([]int{}, y...), addY)
	return [2][][]float64{x, x1}, [2][]int{y, y1}
}

func pfdsCountSampler(dom *pfds.Domain, p pfds.Params, x [][]float64, y []int) Sampler {
	xs, ys := pfdsNeighbours(x, y, 0.1, 0)
	return func(r *rand.Rand, nb int) float64 {
		t := pfds.MakeTree(dom, xs[nb], ys[nb], p, r)
		return t.Nodes[0].Counts[0]
	}
}

func pfdsSplitSampler(dom *pfds.Domain, p pfds.Params, x [][]float64, y []int) Sampler {
	xs, ys := pfdsNeighbours(x, y, 0.5, 0)
	return func(r *rand.Rand, nb int) float64 {
		t := pfds.MakeTree(dom, xs[nb], ys[nb], p, r)
		if t.Nodes[0].Attr == pfds.Leaf {
			return math.NaN()
		}
		return t.Nodes[0].Split
	}
}
