package dpboost

import (
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/ppboost/ppboost/crypto/rng"
)

// slidesSplitSensitivity is the DPBoost slides' (3 lambda + 2) / ((lambda +
// 1)(lambda + 2)) g*^2, which the trainer used before issue 19. It is wrong
// for the gain Gains computes (Config.SplitSensitivity has the derivation);
// the tests below keep it as their negative control.
func slidesSplitSensitivity(lambda float64) float64 {
	return (3*lambda + 2) / ((lambda + 1) * (lambda + 2)) * GStar * GStar
}

// sensLambdas are the lambdas the sensitivity tests cover (0: an empty side
// scores 0).
var sensLambdas = []float64{0, 0.1, 1, 20}

// rowGrads are the gradients of the added or removed row: +-g* and interior
// values.
var rowGrads = []float64{-GStar, -0.5 * GStar, -0.1 * GStar, 0, 0.3 * GStar, GStar}

// sideSums are the gradient sums tried for a side of n rows: the corners
// +-n g*, the two sums next to each (a removal undoes an addition to a side
// one row short of a corner) and interior values (only those with |G| <= n g*).
func sideSums(n float64) []float64 {
	var out []float64
	for _, G := range []float64{-n, -n + 1, -n + 2, -n / 2, -1, -0.5, 0, 0.5, 1, 0.37 * n, n - 2, n - 1, n} {
		if math.Abs(G) <= n {
			out = append(out, G*GStar)
		}
	}
	return out
}

// TestSplitSensitivityBruteForce computes, with Gains itself, the change of
// the split utility between neighbouring histograms of one candidate: a
// side of n rows (n = 0..10^4) with gradient sum G (|G| <= n g*, corners and
// interior values), the other side fixed (empty, or 7 rows summing to -3),
// and a row with g in rowGrads added to it or removed from it (removal only
// where the rest is feasible, |G - g| <= (n-1) g*), on either side. The
// largest change must stay below Delta G = 3 g*^2 and come close to it: the
// worst case found analytically is D(n) = n^2/(n+lambda) - (n-1)^2/(n+1+lambda)
// > 3 - 4(1+lambda)/(n+1+lambda) (config.go), reached by adding a row to a
// side of nMax rows and by removing one from a side of nMax (D(nMax - 1)),
// so the brute force must reach 3 (1 - 4(1+lambda)/(3 (nMax - 1))): the
// bound is tight within a factor 1.0028 at nMax = 10^4, lambda = 20 (1.014
// under -short, nMax = 2,000). Negative control: the slides' bound must be
// exceeded at every lambda.
func TestSplitSensitivityBruteForce(t *testing.T) {
	nMax := 10000
	if testing.Short() {
		nMax = 2000
	}
	b, err := newBinning([]int{2}, []float64{-1}) // one candidate: bin 0 left, bin 1 right
	if err != nil {
		t.Fatal(err)
	}
	dG := DefaultConfig().SplitSensitivity()
	others := [][2]float64{{0, 0}, {7, -3 * GStar}} // (n, G) of the side that does not change
	h, h2 := NewHistogram(b), NewHistogram(b)
	set := func(h *Histogram, side int, n, G float64, o [2]float64) {
		h.G[side], h.N[side] = G, n
		h.G[1-side], h.N[1-side] = o[1], o[0]
	}
	var buf []float64
	for _, lambda := range sensLambdas {
		gain := func(h *Histogram) float64 {
			buf = Gains(b, h, lambda, buf)
			return buf[0]
		}
		// worst[op][side]: op 0 adds a row, 1 removes one.
		var worst [2][2]float64
		var where [2][2]string
		for n := 0; n <= nMax; n++ {
			N := float64(n)
			for _, G := range sideSums(N) {
				for _, o := range others {
					for side := range 2 {
						set(h, side, N, G, o)
						u := gain(h)
						for _, g := range rowGrads {
							set(h2, side, N+1, G+g, o)
							if d := math.Abs(gain(h2) - u); d > worst[0][side] {
								worst[0][side], where[0][side] = d, fmt.Sprintf("n %d, G %g, g %g", n, G, g)
							}
							if n == 0 || math.Abs(G-g) > (N-1)*GStar {
								continue
							}
							set(h2, side, N-1, G-g, o)
							if d := math.Abs(gain(h2) - u); d > worst[1][side] {
								worst[1][side], where[1][side] = d, fmt.Sprintf("n %d, G %g, g %g", n, G, g)
							}
						}
					}
				}
			}
		}
		floor := dG * (1 - 4*(1+lambda)/(3*float64(nMax-1)))
		old := slidesSplitSensitivity(lambda)
		all := 0.0
		for op, name := range []string{"add", "remove"} {
			for side := range 2 {
				w := worst[op][side]
				all = max(all, w)
				t.Logf("lambda %g, %s, side %d: max |Delta u| = %.6f at %s (Delta G/max = %.5f)", lambda, name, side, w, where[op][side], dG/w)
				if w > dG*(1+1e-12) {
					t.Errorf("lambda %g, %s, side %d: |Delta u| = %v > Delta G = %v at %s", lambda, name, side, w, dG, where[op][side])
				}
				if w < floor {
					t.Errorf("lambda %g, %s, side %d: max |Delta u| = %v < %v: the bound is not tight or the search misses the worst case", lambda, name, side, w, floor)
				}
			}
		}
		if !(all > old) {
			t.Errorf("negative control: lambda %g: the slides' bound %v was not exceeded (max %v)", lambda, old, all)
		}
		t.Logf("lambda %g: slides' bound %.4f exceeded %.2fx", lambda, old, all/old)
	}
}

// TestLeafSensitivityBruteForce does the same for a leaf value V = -G/(n +
// lambda) (ReleaseLeaf without noise): one row added to a leaf of n = 0..10^3
// rows moves V by at most Delta V = min(g*/(1+lambda), 2B) for the GLC bound
// B, and by exactly that at n = 0 or 1 (config.go: |Delta V| =
// g*(2n+lambda)/((n+lambda)(n+1+lambda)) <= g*/(1+lambda) iff n^2 >= n).
func TestLeafSensitivityBruteForce(t *testing.T) {
	for _, lambda := range sensLambdas {
		for _, bound := range []float64{math.Inf(1), 0.05} {
			rule := LeafRule{Lambda: lambda, Bound: bound}
			want := math.Min(GStar/(1+lambda), 2*bound)
			worst := 0.0
			for n := 0; n <= 1000; n++ {
				N := float64(n)
				for _, G := range sideSums(N) {
					v := ReleaseLeaf(G, N, rule, nil)
					for _, g := range rowGrads {
						worst = max(worst, math.Abs(ReleaseLeaf(G+g, N+1, rule, nil)-v))
					}
				}
			}
			if worst > want*(1+1e-12) || worst < want*(1-1e-12) {
				t.Errorf("lambda %g, bound %g: max |Delta V| = %v, want Delta V = %v", lambda, bound, worst, want)
			}
		}
	}
}

// worstSplitPair builds the histograms of one node on neighbouring datasets:
// D' has n rows with g = +g* and n with g = -g*, which all k+1 features
// (two bins each, one candidate each) separate alike (bin 0 for the +g*
// rows); D adds a row z with g = -g* that feature 0 puts with the +g* rows
// (that side's term drops by D(n) -> 3 g*^2) and features 1..k put with the
// -g* rows (their gains rise by 1 - O(1/n^2) -> g*^2). The differences u_D -
// u_D' across candidates then span almost 4 g*^2, the most they can (a rise
// is at most g*^2, a drop below 3 g*^2, config.go), and with most candidates
// rising, the normalizer moves with them and the dropping candidate's log
// ratio approaches s * 4 g*^2, s = eps/(2 Delta G).
func worstSplitPair(n, k int) (b *Binning, hD, hD1 *Histogram) {
	F := k + 1
	bins, lo := make([]int, F), make([]float64, F)
	for f := range bins {
		bins[f] = 2
	}
	b, err := newBinning(bins, lo)
	if err != nil {
		panic(err)
	}
	data := &Binned{Rows: 2*n + 1, Features: F, Idx: make([]uint8, (2*n+1)*F)}
	grad := make([]float64, 2*n+1)
	for i := range 2*n + 1 {
		row := data.Idx[i*F : (i+1)*F]
		switch {
		case i < n: // +g*, bin 0 everywhere
			grad[i] = GStar
		case i < 2*n: // -g*, bin 1 everywhere
			grad[i] = -GStar
			for f := range row {
				row[f] = 1
			}
		default: // z
			grad[i] = -GStar
			for f := 1; f < F; f++ {
				row[f] = 1
			}
		}
	}
	all := make([]int32, 2*n+1)
	for i := range all {
		all[i] = int32(i)
	}
	hD, hD1 = NewHistogram(b), NewHistogram(b)
	BuildHistogram(hD, b, data, all, grad)
	BuildHistogram(hD1, b, data, all[:2*n], grad)
	return b, hD, hD1
}

// logSumExp is log sum_i exp(s_i), shifted by the maximum.
func logSumExp(s []float64) float64 {
	m := math.Inf(-1)
	for _, v := range s {
		m = max(m, v)
	}
	z := 0.0
	for _, v := range s {
		z += math.Exp(v - m)
	}
	return m + math.Log(z)
}

// splitLoss is the exact privacy loss max_i |log P_D(i) / P_D'(i)| of
// ChooseSplit with rule on the histograms hD and hD1, from the scores s_i
// that ChooseSplit hands to ExpMech (log P(i) = s_i - log sum_j exp s_j;
// TestExpMechDistribution checks ExpMech draws with these probabilities).
func splitLoss(b *Binning, hD, hD1 *Histogram, rule SplitRule) float64 {
	s1 := rule.scores(b, hD, nil)
	s2 := rule.scores(b, hD1, nil)
	l1, l2 := logSumExp(s1), logSumExp(s2)
	loss := 0.0
	for i := range s1 {
		loss = max(loss, math.Abs((s1[i]-l1)-(s2[i]-l2)))
	}
	return loss
}

// splitTestConfig is the setting: eps_t = 1 (eps 1, one ensemble),
// depth 6, so the trainer gives every depth level eps_t/12 = 0.083.
func splitTestConfig(lambda float64) (Config, SplitRule, float64) {
	cfg := DefaultConfig()
	cfg.Lambda, cfg.Epsilon, cfg.Depth = lambda, 1, 6
	acc := Account(cfg)
	split, _ := cfg.rules(1, acc.PerTree[0])
	return cfg, split, acc.SplitPerDepth[0]
}

// TestSplitPrivacyLossExact computes the exponential mechanism's exact
// privacy loss on the worst-case neighbouring histograms (worstSplitPair,
// 101 candidates) with the split rule the trainer builds: it must stay
// within the per-level budget eps_t/(2 Depth) with Delta G = 3 g*^2, and it
// must exceed it with half the noise and with the slides' bound (negative
// controls; the issue
// measured 0.92 against 0.083 at lambda 20, n = 1,000). Tightness: the loss
// is at most s * (max_i Delta u_i - min_i Delta u_i) < s * 4 g*^2 =
// (2/3) eps, so with 3 g*^2 the worst case reaches about 2/3 of the budget
// (asserted: above 0.6 of it at n >= 1,000).
func TestSplitPrivacyLossExact(t *testing.T) {
	for _, c := range []struct {
		lambda float64
		n      int
	}{{0.1, 100}, {0.1, 1000}, {1, 1000}, {20, 100}, {20, 1000}, {20, 10000}} {
		t.Run(fmt.Sprintf("lambda%g-n%d", c.lambda, c.n), func(t *testing.T) {
			cfg, rule, budget := splitTestConfig(c.lambda)
			if rule.Eps != budget || rule.Sensitivity != 3*GStar*GStar {
				t.Fatalf("trainer's split rule %+v, want Eps = %v, Sensitivity = 3", rule, budget)
			}
			b, hD, hD1 := worstSplitPair(c.n, 100)
			loss := splitLoss(b, hD, hD1, rule)
			old := rule
			old.Sensitivity = slidesSplitSensitivity(cfg.Lambda)
			oldLoss := splitLoss(b, hD, hD1, old)
			t.Logf("budget %.4f: loss %.4f (%.3f of it) with Delta G = 3; %.4f (%.1fx) with the slides' %.4f",
				budget, loss, loss/budget, oldLoss, oldLoss/budget, old.Sensitivity)
			if loss > budget {
				t.Errorf("privacy loss %v > per-level budget %v with Delta G = %v", loss, budget, rule.Sensitivity)
			}
			if c.n >= 1000 && loss < 0.6*budget {
				t.Errorf("privacy loss %v < 0.6 budget: the pair is not the worst case", loss)
			}
			if oldLoss <= budget {
				t.Errorf("negative control: the slides' Delta G = %v gives loss %v <= %v", old.Sensitivity, oldLoss, budget)
			}
			// Half the noise (Delta G / 2, twice the scores) doubles the
			// loss, to about 4/3 of the budget: the pair is near enough to
			// the worst case to catch it.
			half := rule
			half.Sensitivity /= 2
			if l := splitLoss(b, hD, hD1, half); l <= budget {
				t.Errorf("negative control: half the noise gives loss %v <= %v", l, budget)
			}
		})
	}
}

// clopperPearson is the exact binomial interval for c successes of n:
// P(p < lo) <= alpha and P(p > hi) <= alpha.
func clopperPearson(c, n int, alpha float64) (lo, hi float64) {
	lo, hi = 0, 1
	if c > 0 {
		lo = distuv.Beta{Alpha: float64(c), Beta: float64(n - c + 1)}.Quantile(alpha)
	}
	if c < n {
		hi = distuv.Beta{Alpha: float64(c + 1), Beta: float64(n - c)}.Quantile(1 - alpha)
	}
	return lo, hi
}

// TestSplitPrivacyRatioSampled draws splits with the real ChooseSplit on
// the worst-case pair (worstSplitPair, n = 1,000, 8 candidates, lambda 20,
// the trainer's rule: budget eps_t/12 = 0.083) and bounds every candidate's
// probability ratio from below. Tolerance: for candidate i and each
// direction, Clopper-Pearson bounds P_D(i) >= lo and P_D'(i) <= hi each
// fail with probability <= alpha' = 10^-3 / (4 * 8) (Bonferroni over 8
// candidates, 2 directions, 2 bounds), so lo/hi <= P_D(i)/P_D'(i) for all
// i and both directions with probability >= 1 - 10^-3: if the mechanism
// is eps-DP, the largest lower bound exceeds e^eps with probability at most
// 10^-3. The same draws must agree with the exact probabilities (two-sided
// intervals, family-wise 10^-3): ChooseSplit draws what
// TestSplitPrivacyLossExact analyses. Negative control: with the slides'
// bound the lower bound must exceed e^eps (the issue measured 2.01 against
// 1.09; exact worst ratio here e^1.12 = 3.1).
func TestSplitPrivacyRatioSampled(t *testing.T) {
	draws := 1000000
	if testing.Short() {
		draws = 200000
	}
	const k, alphaFW = 7, 1e-3
	cfg, rule, budget := splitTestConfig(20)
	b, hD, hD1 := worstSplitPair(1000, k)
	cands := b.Candidates()
	run := func(rule SplitRule) (lower float64) {
		r := rng.ForName(t.Name())
		c1, c2 := make([]int, cands), make([]int, cands)
		var scratch []float64
		for range draws {
			f, bin, s := ChooseSplit(b, hD, rule, r, scratch)
			c1[b.cand[f]+bin]++
			f, bin, s = ChooseSplit(b, hD1, rule, r, s)
			c2[b.cand[f]+bin]++
			scratch = s
		}
		// Exact probabilities from the chooser's scores.
		s1, s2 := rule.scores(b, hD, nil), rule.scores(b, hD1, nil)
		l1, l2 := logSumExp(s1), logSumExp(s2)
		a2 := alphaFW / float64(4*cands) // two-sided: 2 tails x 2 histograms x cands
		for i := range cands {
			for _, e := range []struct {
				c int
				p float64
			}{{c1[i], math.Exp(s1[i] - l1)}, {c2[i], math.Exp(s2[i] - l2)}} {
				if lo, hi := clopperPearson(e.c, draws, a2); e.p < lo || e.p > hi {
					t.Errorf("candidate %d: exact probability %v outside [%v, %v] (%d of %d draws)", i, e.p, lo, hi, e.c, draws)
				}
			}
		}
		a1 := alphaFW / float64(4*cands)
		for i := range cands {
			lo1, hi1 := clopperPearson(c1[i], draws, a1)
			lo2, hi2 := clopperPearson(c2[i], draws, a1)
			lower = max(lower, lo1/hi2, lo2/hi1)
		}
		return lower
	}
	lower := run(rule)
	t.Logf("Delta G = 3: lower confidence bound on the largest ratio %.4f, e^eps = %.4f", lower, math.Exp(budget))
	if lower > math.Exp(budget) {
		t.Errorf("a candidate's probability ratio is above e^eps = %v with confidence 1 - %v: lower bound %v", math.Exp(budget), alphaFW, lower)
	}
	old := rule
	old.Sensitivity = slidesSplitSensitivity(cfg.Lambda)
	lowerOld := run(old)
	t.Logf("slides' Delta G = %.4f: lower confidence bound %.4f", old.Sensitivity, lowerOld)
	if lowerOld <= math.Exp(budget) {
		t.Errorf("negative control: with the slides' Delta G the lower bound %v <= e^eps = %v", lowerOld, math.Exp(budget))
	}
}
