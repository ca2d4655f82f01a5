package dpboost

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

// ksLaplace is the Kolmogorov-Smirnov distance between sorted draws and the
// CDF of Lap(0, b).
func ksLaplace(x []float64, b float64) float64 {
	slices.Sort(x)
	n := float64(len(x))
	d := 0.0
	for i, v := range x {
		var F float64
		if v < 0 {
			F = 0.5 * math.Exp(v/b)
		} else {
			F = 1 - 0.5*math.Exp(-v/b)
		}
		d = max(d, math.Abs(F-float64(i)/n), math.Abs(F-float64(i+1)/n))
	}
	return d
}

// TestLaplaceDistribution: the grid release at v = 0 is Lap(0, b) for
// practical purposes (its scale is within 2^-19 of b and its grid 2^-21 b
// fine, both far below what n = 200,000 draws resolve).
func TestLaplaceDistribution(t *testing.T) {
	const n, sens, eps = 200000, 3.0, 2.0
	const b = sens / eps
	r := rng.ForName(t.Name())
	x := make([]float64, n)
	mean, sq := 0.0, 0.0
	for i := range x {
		x[i] = Laplace(r, 0, sens, eps)
		mean += x[i]
		sq += x[i] * x[i]
	}
	mean /= n
	sq /= n
	// Mean 0, sd sqrt(2) b: |mean| < 5 sd/sqrt(n) = 5*2.12/447 = 0.024.
	if tol := 5 * math.Sqrt2 * b / math.Sqrt(n); math.Abs(mean) > tol {
		t.Errorf("mean %v, want |mean| < %v", mean, tol)
	}
	// E x^2 = 2 b^2 = 4.5; Var(x^2) = E x^4 - (E x^2)^2 = 24 b^4 - 4 b^4 = 20 b^4,
	// so 5 standard errors are 5 sqrt(20/n) b^2 = 0.113.
	if tol := 5 * math.Sqrt(20/float64(n)) * b * b; math.Abs(sq-2*b*b) > tol {
		t.Errorf("E x^2 = %v, want %v +- %v", sq, 2*b*b, tol)
	}
	// Kolmogorov-Smirnov: P(sqrt(n) D > 1.949) = 0.001, so the critical
	// distance at level 0.001 is 1.949/sqrt(n) = 0.00436.
	crit := 1.949 / math.Sqrt(n)
	if d := ksLaplace(x, b); d > crit {
		t.Errorf("KS distance %v > %v: not Lap(0, %v)", d, crit, b)
	}
	// Negative control: the same test rejects a sampler whose scale is 10%
	// off (KS distance ~0.5 * (1 - e^-1 ...) ~ 0.03 >> 0.0044) and a Gaussian
	// of the same variance.
	r = rng.ForName(t.Name())
	for i := range x {
		x[i] = Laplace(r, 0, sens, eps/1.1)
	}
	if d := ksLaplace(x, b); d <= crit {
		t.Errorf("negative control: scale 1.1 b passed (KS %v <= %v)", d, crit)
	}
	for i := range x {
		x[i] = math.Sqrt2 * b * r.NormFloat64()
	}
	if d := ksLaplace(x, b); d <= crit {
		t.Errorf("negative control: Gaussian passed (KS %v <= %v)", d, crit)
	}
}

// Every leaf release is a multiple of its mechanism's grid, at the two ends
// of the sensitivity range alike (the same set of possible outputs: nothing
// for Mironov's low-bit attack to read), its eps is within the budget, and
// the mean is the input (randomized rounding: unbiased; 5 sd of the mean).
func TestLaplaceGridRelease(t *testing.T) {
	const n, sens, eps = 100000, 0.25, 0.5
	m, err := LeafMech(sens, eps)
	if err != nil {
		t.Fatal(err)
	}
	if e := m.Epsilon(); e > eps || e < eps*(1-0x1p-19) {
		t.Fatalf("leaf eps %v for budget %v", e, eps)
	}
	g := m.Grid()
	r := rng.ForName(t.Name())
	for _, v := range []float64{-sens / 2, sens / 2, 0.1} {
		sum := 0.0
		for range n {
			x := Laplace(r, v, sens, eps)
			if q := x / g; q != math.Trunc(q) || math.IsInf(x, 0) {
				t.Fatalf("v %v: release %v is not a multiple of the grid %v", v, x, g)
			}
			sum += x
		}
		if sd := math.Sqrt(m.Variance(v) / n); math.Abs(sum/n-v) > 5*sd {
			t.Errorf("v %v: mean %v, 5 sd = %v", v, sum/n, 5*sd)
		}
	}
	if Laplace(r, 7, 1, 0) != 0 || Laplace(r, 7, math.Inf(1), 1) != 0 {
		t.Error("an unbuildable mechanism must release the data-independent 0")
	}
}

// chiSquare of observed counts against probabilities p.
func chiSquare(counts []int, p []float64, n int) float64 {
	c := 0.0
	for i, o := range counts {
		e := p[i] * float64(n)
		c += (float64(o) - e) * (float64(o) - e) / e
	}
	return c
}

// expMechProbs is exp(s_i)/sum exp(s_j), computed directly.
func expMechProbs(s []float64) []float64 {
	p := make([]float64, len(s))
	z := 0.0
	for i, v := range s {
		p[i] = math.Exp(v)
		z += p[i]
	}
	for i := range p {
		p[i] /= z
	}
	return p
}

func TestExpMechDistribution(t *testing.T) {
	const n = 200000
	// Scores eps G / (2 Delta G) for six candidates, including equal ones
	// and one far below (probability ~e^-6).
	scores := []float64{0, 1, 2.5, 2.5, -1, -3}
	p := expMechProbs(scores)
	sample := func(r *rand.Rand, f func(r *rand.Rand, s []float64) int) []int {
		counts := make([]int, len(scores))
		buf := make([]float64, len(scores))
		for range n {
			copy(buf, scores)
			counts[f(r, buf)]++
		}
		return counts
	}
	// 5 degrees of freedom: P(chi2 > 20.52) = 0.001.
	const crit = 20.52
	counts := sample(rng.ForName(t.Name()), ExpMech)
	if c := chiSquare(counts, p, n); c > crit {
		t.Errorf("chi2 = %.2f > %v: counts %v, probabilities %v", c, crit, counts, p)
	}
	// Negative control: the classic mistake exp(eps u / Delta u) (no factor
	// 1/2) doubles every score; the test must reject it.
	broken := func(r *rand.Rand, s []float64) int {
		for i := range s {
			s[i] *= 2
		}
		return ExpMech(r, s)
	}
	if c := chiSquare(sample(rng.ForName(t.Name()), broken), p, n); c <= crit {
		t.Errorf("negative control: doubled scores passed (chi2 %.2f <= %v)", c, crit)
	}
	// Extreme scores must not overflow: only the top one can be chosen.
	if i := ExpMech(rng.ForName(t.Name()), []float64{1e300, -1e300, 5}); i != 0 {
		t.Errorf("ExpMech with huge scores chose %d", i)
	}
}

// TestChooseSplitDistribution runs the whole split step on a histogram: the
// candidates (every feature, every bin boundary) must be drawn with
// probability proportional to exp(eps G_i / (2 Delta G)).
func TestChooseSplitDistribution(t *testing.T) {
	b, err := newBinning([]int{3, 2}, []float64{-1, 0})
	if err != nil {
		t.Fatal(err)
	}
	// Feature 0: bins with (sum g, count) (-3, 4), (1, 2), (2, 3);
	// feature 1 (one-hot): (-2, 6), (2, 3). Node totals: g = 0, n = 9.
	h := &Histogram{G: []float64{-3, 1, 2, -2, 2}, N: []float64{4, 2, 3, 6, 3}}
	const lambda, eps, dg = 0.1, 0.8, 0.99
	gain := func(gl, nl, gr, nr float64) float64 { return gl*gl/(nl+lambda) + gr*gr/(nr+lambda) }
	G := []float64{gain(-3, 4, 3, 5), gain(-2, 6, 2, 3), gain(-2, 6, 2, 3)}
	if got := Gains(b, h, lambda, nil); !slices.EqualFunc(got, G, func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }) {
		t.Fatalf("gains %v, want %v", got, G)
	}
	s := make([]float64, len(G))
	for i := range G {
		s[i] = eps * G[i] / (2 * dg)
	}
	p := expMechProbs(s)
	const n = 100000
	counts := make([]int, 3)
	r := rng.ForName(t.Name())
	var scratch []float64
	for range n {
		f, k, sc := ChooseSplit(b, h, SplitRule{Lambda: lambda, Eps: eps, Sensitivity: dg}, r, scratch)
		scratch = sc
		counts[b.cand[f]+k]++
	}
	// 2 degrees of freedom: P(chi2 > 13.82) = 0.001.
	if c := chiSquare(counts, p, n); c > 13.82 {
		t.Errorf("chi2 = %.2f > 13.82: counts %v, probabilities %v", c, counts, p)
	}
	// NP takes the best gain.
	if f, k, _ := ChooseSplit(b, h, SplitRule{Lambda: lambda}, r, nil); f != 0 || k != 0 {
		t.Errorf("NP split (%d, %d), want (0, 0): gains %v", f, k, G)
	}
}

// TestLeafPrivacyRatio releases one leaf on two neighbouring datasets at
// the worst case of Delta V: D has one row with g = -1 in the leaf (V =
// 1/(1+lambda) = Delta V), D' does not (V = 0). For eps-DP every output bin
// must satisfy P_D / P_D' <= e^eps; in the tails beyond both means the
// Laplace densities have ratio exactly e^eps, so the bound is also reached.
func TestLeafPrivacyRatio(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical: 2 x 400,000 leaf releases")
	}
	const n, eps, lambda = 400000, 1.0, 0.1
	dv := GStar / (1 + lambda)
	rule := LeafRule{Lambda: lambda, Bound: math.Inf(1), Eps: eps, Sensitivity: dv}
	check := func(rule LeafRule) (maxExcess, tailMin float64) {
		r := rng.ForName(t.Name())
		const lo, hi, bins = -4.0, 5.0, 36 // width 0.25
		h1, h2 := make([]int, bins), make([]int, bins)
		put := func(h []int, v float64) {
			if k := int(math.Floor((v - lo) / (hi - lo) * bins)); k >= 0 && k < bins {
				h[k]++
			}
		}
		for range n {
			put(h1, ReleaseLeaf(-1, 1, rule, r))
			put(h2, ReleaseLeaf(0, 0, rule, r))
		}
		maxExcess, tailMin = math.Inf(-1), math.Inf(1)
		for k := range bins {
			c1, c2 := float64(h1[k]), float64(h2[k])
			if c1 < 1000 || c2 < 1000 {
				continue // too few to estimate a ratio
			}
			// se of log(c1/c2) ~ sqrt(1/c1 + 1/c2) <= 0.045; 4 se
			// (per bin, ~30 bins: family-wise error ~0.2%).
			tol := 4 * math.Sqrt(1/c1+1/c2)
			lr := math.Abs(math.Log(c1 / c2))
			maxExcess = max(maxExcess, lr-eps-tol)
			if edge := lo + (hi-lo)*float64(k)/bins; edge >= dv || edge+(hi-lo)/bins <= 0 {
				tailMin = min(tailMin, lr-eps+tol) // tails: ratio e^eps
			}
		}
		return maxExcess, tailMin
	}
	excess, tail := check(rule)
	if excess > 0 {
		t.Errorf("some output bin has |log P_D/P_D'| above eps = %v by %v (beyond 4 se)", eps, excess)
	}
	if tail < 0 {
		t.Errorf("tail bins' log ratio below eps by %v: the bound is not tight, the test would not catch a leak", -tail)
	}
	// Negative control: half the noise (sensitivity Delta V/2, a 2 eps
	// release) must fail.
	broken := rule
	broken.Sensitivity = dv / 2
	if excess, _ := check(broken); excess <= 0 {
		t.Errorf("negative control: half-noise release passed the e^eps bound")
	}
}

func TestReleaseLeafClips(t *testing.T) {
	r := rng.ForName(t.Name())
	// V = -(-30)/(10+0.1) = 2.97, clipped to 0.5; no noise with Eps = 0.
	if v := ReleaseLeaf(-30, 10, LeafRule{Lambda: 0.1, Bound: 0.5}, r); v != 0.5 {
		t.Errorf("clipped leaf %v, want 0.5", v)
	}
	if v := ReleaseLeaf(0, 0, LeafRule{Lambda: 0, Bound: math.Inf(1)}, r); v != 0 {
		t.Errorf("empty leaf with lambda 0 = %v, want 0", v)
	}
}
