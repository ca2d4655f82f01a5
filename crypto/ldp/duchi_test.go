package ldp

import (
	"fmt"
	"math"
	"math/big"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

// Exact enumeration of multi-dimensional Duchi. A sign vector in {-1,1}^d
// is a bit mask (bit j set: coordinate j is +1); outputs are B times one.

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// maskDot is a.b for the sign vectors with masks a and b.
func maskDot(d, a, b int) int { return d - 2*popcount(a^b) }

// duchiLaw adds P(output = B o | v) for every output mask o, given the
// mask v of the randomized-response step, by calling add(o, q).
type duchiLaw func(d, v int, add func(o int, q float64))

// samplerLaw is the law of duchiMulti.Perturb given v, read from the
// sampler's own decision function keep: s is uniform over the 2^d masks,
// the output is s with probability keep(s.v) and -s otherwise.
func samplerLaw(m *duchiMulti) duchiLaw {
	return func(d, v int, add func(int, float64)) {
		n := float64(int(1) << d)
		all := 1<<d - 1
		for s := range 1 << d {
			k := m.keep(maskDot(d, s, v))
			add(s, k/n)
			add(s^all, (1-k)/n)
		}
	}
}

// setLaw is the published form: uniform from T+ with probability
// E/(E+1), else uniform from T-, where ties (s.v = 0) belong to T+ when
// tiesPos and to T- when tiesNeg. tiesPos && tiesNeg is the ties-in-both
// rule (unbiased, not eps-LDP); !tiesPos && tiesNeg the original rule
// (biased); for odd d every variant is the correct mechanism.
func setLaw(eps float64, tiesPos, tiesNeg bool) duchiLaw {
	p := math.Exp(eps) / (math.Exp(eps) + 1)
	return func(d, v int, add func(int, float64)) {
		var pos, neg []int
		for s := range 1 << d {
			dot := maskDot(d, s, v)
			if dot > 0 || (dot == 0 && tiesPos) {
				pos = append(pos, s)
			}
			if dot < 0 || (dot == 0 && tiesNeg) {
				neg = append(neg, s)
			}
		}
		for _, s := range pos {
			add(s, p/float64(len(pos)))
		}
		for _, s := range neg {
			add(s, (1-p)/float64(len(neg)))
		}
	}
}

// exactDist is P(output mask | t): the sum over v of
// P(v | t) = prod_j (1/2 + t_j v_j/2) times the law given v.
func exactDist(t []float64, law duchiLaw) []float64 {
	d := len(t)
	dist := make([]float64, 1<<d)
	for v := range 1 << d {
		pv := 1.0
		for j, x := range t {
			if v>>j&1 == 1 {
				pv *= 0.5 + 0.5*x
			} else {
				pv *= 0.5 - 0.5*x
			}
		}
		if pv == 0 {
			continue
		}
		law(d, v, func(o int, q float64) { dist[o] += pv * q })
	}
	return dist
}

// vertex is the corner of [-1, 1]^d with mask v.
func vertex(d, v int) []float64 {
	t := make([]float64, d)
	for j := range t {
		t[j] = -1
		if v>>j&1 == 1 {
			t[j] = 1
		}
	}
	return t
}

// interiorInputs are a few points inside the cube, and its center.
func interiorInputs(d int) [][]float64 {
	sin, half, alt := make([]float64, d), make([]float64, d), make([]float64, d)
	for j := range d {
		sin[j] = math.Sin(float64(3*j + 1))
		half[j] = 0.5
		alt[j] = 0.3 * float64(1-2*(j%2))
	}
	return [][]float64{sin, half, alt, make([]float64, d)}
}

// maxRatio is max over outputs o and input pairs (t, t') of
// P(o | t)/P(o | t').
func maxRatio(dists [][]float64) float64 {
	worst := 1.0
	for o := range dists[0] {
		lo, hi := math.Inf(1), 0.0
		for _, p := range dists {
			lo, hi = math.Min(lo, p[o]), math.Max(hi, p[o])
		}
		worst = math.Max(worst, hi/lo)
	}
	return worst
}

// meanError is max_j |E[output_j | t] - t_j| for outputs b*o.
func meanError(t, dist []float64, b float64) float64 {
	worst := 0.0
	for j, x := range t {
		mean := 0.0
		for o, q := range dist {
			if o>>j&1 == 1 {
				mean += q * b
			} else {
				mean -= q * b
			}
		}
		worst = math.Max(worst, math.Abs(mean-x))
	}
	return worst
}

// vertexDists is the exact output distribution at all 2^d vertices.
func vertexDists(d int, law duchiLaw) [][]float64 {
	dists := make([][]float64, 1<<d)
	for v := range dists {
		dists[v] = exactDist(vertex(d, v), law)
	}
	return dists
}

// TestDuchiMultiExact proves, by exact enumeration of v and s for d = 1..8,
// that the sampler's rule (read from keep, the function Perturb uses) is
// eps-LDP with worst-case ratio exactly e^eps and unbiased. The output law
// is affine in t (P(v | t) is multi-affine), so a ratio bound at the
// vertices holds on the whole cube; the interior inputs are checked too.
func TestDuchiMultiExact(t *testing.T) {
	for d := 1; d <= 8; d++ {
		for _, eps := range []float64{0.5, 1, 3} {
			m := newDuchiMulti(base{kind: Duchi, eps: eps, d: d, policy: Reject})
			if d > 1 {
				got, _ := New(Duchi, eps, d, Reject)
				if dm, ok := got.(*duchiMulti); !ok || *dm != *m {
					t.Fatalf("d=%d eps=%g: New gives %#v, want %#v", d, eps, got, m)
				}
			}
			law := samplerLaw(m)
			e := math.Exp(eps)
			dists := vertexDists(d, law)
			for v, p := range dists {
				sum := 0.0
				for _, q := range p {
					sum += q
				}
				if math.Abs(sum-1) > 1e-12 {
					t.Errorf("d=%d eps=%g vertex %b: probabilities sum to %v", d, eps, v, sum)
				}
				if err := meanError(vertex(d, v), p, m.Bound()); err > 1e-12 {
					t.Errorf("d=%d eps=%g vertex %b: mean off by %.3g", d, eps, v, err)
				}
			}
			ratio := maxRatio(dists)
			if math.Abs(ratio/e-1) > 1e-12 {
				t.Errorf("d=%d eps=%g: max ratio %.15g, want e^eps = %.15g exactly", d, eps, ratio, e)
			}
			all := dists
			worstMean := 0.0
			for v := range dists {
				worstMean = math.Max(worstMean, meanError(vertex(d, v), dists[v], m.Bound()))
			}
			for _, in := range interiorInputs(d) {
				p := exactDist(in, law)
				err := meanError(in, p, m.Bound())
				if err > 1e-12 {
					t.Errorf("d=%d eps=%g t=%.3f: mean off by %.3g", d, eps, in, err)
				}
				worstMean = math.Max(worstMean, err)
				all = append(all, p)
			}
			t.Logf("d=%d eps=%g: B=%.6g, max ratio/e^eps - 1 = %.2e, max |mean - t| = %.2e", d, eps, m.Bound(), ratio/e-1, worstMean)
			if r := maxRatio(all); r > e*(1+1e-12) {
				t.Errorf("d=%d eps=%g: max ratio with interior inputs %.15g > e^eps = %.15g", d, eps, r, e)
			}
			if d == 1 { // the same law as the one-value Duchi New uses for d = 1
				o := newOneDim(Duchi, eps)
				for _, x := range []float64{-1, -0.3, 0, 0.5, 1} {
					if p := exactDist([]float64{x}, law); math.Abs(p[1]-(o.slope*x+0.5)) > 1e-15 || m.Bound() != o.dd {
						t.Errorf("eps=%g t=%g: P(+B) %v, bound %v; one-value Duchi %v, %v", eps, x, p[1], m.Bound(), o.slope*x+0.5, o.dd)
					}
				}
			}
		}
	}
}

// tiesBothCd is the C_d that makes the ties-in-both rule unbiased:
// (2^{d-1} + binom(d, d/2)/2)/binom(d-1, d/2) for even d.
func tiesBothCd(d int) float64 {
	num := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), uint(d-1)))
	num.Add(num, new(big.Rat).SetFrac(new(big.Int).Binomial(int64(d), int64(d/2)), big.NewInt(2)))
	c, _ := num.Quo(num, new(big.Rat).SetInt(new(big.Int).Binomial(int64(d-1), int64(d/2)))).Float64()
	return c
}

// tiesInTMinusFactor is E[o_j | t]/t_j for the original rule (ties only in
// T-) with output magnitude b, for even d. Given v, with
// n = binom(d, d/2) ties, |T+| = (2^d - n)/2 and |T- U ties| = (2^d + n)/2;
// the sum of s over T+ is binom(d-1, d/2) v (sum_s sign(s.v) s_j =
// 2 binom(d-1, d/2) v_j, and the ties sum to 0), and over T- U ties it is
// the negative of that. So E[o | v] = b binom(d-1, d/2)
// (p/|T+| - (1-p)/|T- U ties|) v, linear in v and so in t.
func tiesInTMinusFactor(d int, eps, b float64) float64 {
	p := math.Exp(eps) / (math.Exp(eps) + 1)
	n, _ := new(big.Float).SetInt(new(big.Int).Binomial(int64(d), int64(d/2))).Float64()
	c, _ := new(big.Float).SetInt(new(big.Int).Binomial(int64(d-1), int64(d/2))).Float64()
	all := math.Ldexp(1, d)
	return b * c * (p/((all-n)/2) - (1-p)/((all+n)/2))
}

// TestDuchiMultiExactNegativeControls enumerates the published tie rules
// the same way: ties in both sets is unbiased but its worst ratio is
// exactly e^eps + 1 at every even d (d = 2: inputs (1, 1) and (-1, 1),
// output (B, -B)); ties only in T- (the original rule) is biased. For odd d
// both coincide with the sampler's law. If these did not fail, the
// enumeration of TestDuchiMultiExact could not catch the bug.
func TestDuchiMultiExactNegativeControls(t *testing.T) {
	for d := 1; d <= 8; d++ {
		for _, eps := range []float64{0.5, 1, 3} {
			e := math.Exp(eps)
			dd := 1 + 2/math.Expm1(eps)
			both := vertexDists(d, setLaw(eps, true, true))
			ratio := maxRatio(both)
			want := e
			if d%2 == 0 {
				want = e + 1
			}
			t.Logf("d=%d eps=%g: ties in both: max ratio %.12g (e^eps = %.12g)", d, eps, ratio, e)
			if math.Abs(ratio/want-1) > 1e-12 {
				t.Errorf("ties in both, d=%d eps=%g: max ratio %.15g, want %.15g", d, eps, ratio, want)
			}
			cd := duchiCd(d)
			if d%2 == 0 {
				cd = tiesBothCd(d)
			}
			orig := setLaw(eps, false, true)
			worstBoth, worstOrig := 0.0, 0.0
			for _, in := range interiorInputs(d) {
				worstBoth = math.Max(worstBoth, meanError(in, exactDist(in, setLaw(eps, true, true)), dd*cd))
				worstOrig = math.Max(worstOrig, meanError(in, exactDist(in, orig), dd*duchiCd(d)))
			}
			if worstBoth > 1e-12 {
				t.Errorf("ties in both, d=%d eps=%g: mean off by %.3g, want unbiased", d, eps, worstBoth)
			}
			if d%2 == 0 {
				t.Logf("d=%d eps=%g: ties in T- only: max |mean - t| = %.4f", d, eps, worstOrig)
				f := tiesInTMinusFactor(d, eps, dd*duchiCd(d))
				for _, in := range interiorInputs(d) {
					scaled := make([]float64, d)
					for j, x := range in {
						scaled[j] = f * x
					}
					if err := meanError(scaled, exactDist(in, orig), dd*duchiCd(d)); err > 1e-12 {
						t.Errorf("ties in T- only, d=%d eps=%g: mean is not %.6g t (off by %.3g)", d, eps, f, err)
					}
				}
			}
			if d%2 == 0 && worstOrig < 0.1 {
				t.Errorf("ties in T- only, d=%d eps=%g: mean off by only %.3g; the enumeration cannot see bias", d, eps, worstOrig)
			}
			if d%2 == 1 && worstOrig > 1e-12 {
				t.Errorf("odd d=%d eps=%g: the set form is off by %.3g", d, eps, worstOrig)
			}
		}
	}
	// The witness.
	eps := 1.0
	law := setLaw(eps, true, true)
	a, b := exactDist([]float64{1, 1}, law), exactDist([]float64{-1, 1}, law)
	o := 0b01 // (B, -B): bit 0 is coordinate 0
	if r := a[o] / b[o]; math.Abs(r/(math.E+1)-1) > 1e-12 {
		t.Errorf("ties in both, d=2: P((B,-B) | (1,1))/P((B,-B) | (-1,1)) = %v, want e+1", r)
	}
	m := newDuchiMulti(base{kind: Duchi, eps: eps, d: 2})
	a, b = exactDist([]float64{1, 1}, samplerLaw(m)), exactDist([]float64{-1, 1}, samplerLaw(m))
	// A tie (1/4 given v) against T- (2(1-p)/4): (e+1)/2 < e.
	if r := a[o] / b[o]; math.Abs(r/((math.E+1)/2)-1) > 1e-12 {
		t.Errorf("sampler, d=2: the same ratio is %v, want (e+1)/2", r)
	}
}

// chi2Survival is P(X > x) for X chi-square with k degrees of freedom, in
// closed form: Q(k/2, x/2) = e^{-x/2} sum_{i<k/2} (x/2)^i/i! for even k,
// erfc(sqrt(x/2)) + e^{-x/2} sum_{i=1}^{(k-1)/2} (x/2)^{i-1/2}/Gamma(i+1/2)
// for odd k.
func chi2Survival(k int, x float64) float64 {
	h := x / 2
	if k%2 == 0 {
		term, sum := 1.0, 1.0
		for i := 1; i < k/2; i++ {
			term *= h / float64(i)
			sum += term
		}
		return math.Exp(-h) * sum
	}
	sum := 0.0
	term := math.Sqrt(h) / (math.Sqrt(math.Pi) / 2) // (x/2)^{1/2}/Gamma(3/2)
	for i := 1; i <= (k-1)/2; i++ {
		sum += term
		term *= h / (float64(i) + 0.5)
	}
	return math.Erfc(math.Sqrt(h)) + math.Exp(-h)*sum
}

// chi2Critical is the x with chi2Survival(k, x) = alpha, by bisection
// (the survival function decreases in x).
func chi2Critical(k int, alpha float64) float64 {
	lo, hi := 0.0, float64(k)+100+20*math.Sqrt(float64(k))
	for range 200 {
		mid := (lo + hi) / 2
		if chi2Survival(k, mid) > alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

func TestChi2Critical(t *testing.T) {
	// Tabulated 95% quantiles (R's qchisq(0.95, k)).
	for k, want := range map[int]float64{1: 3.841458820694124, 2: 5.991464547107979, 3: 7.814727903251178, 15: 24.99579013972863} {
		if got := chi2Critical(k, 0.05); math.Abs(got-want) > 1e-9*want {
			t.Errorf("chi-square(%d) 95%% quantile %v, want %v", k, got, want)
		}
	}
}

// TestDuchiMultiSamplerMatchesExact checks that Perturb's empirical output
// frequencies match the enumerated law (so the enumeration above is of the
// sampler, not only of its decision function): Pearson's chi-square over
// the 2^d outputs, against the chi-square(2^d - 1) quantile at
// alpha = 1e-6 (16 tests: family-wise false alarm below 1.6e-5; the seeds
// are fixed, so the outcome is deterministic). The test asserts every
// expected count is at least 5; the smallest, 2n/((E+1) 2^d) at a vertex
// with d = 6, eps = 3, is about 89 under -short. Every output coordinate
// must be exactly +-Bound.
func TestDuchiMultiSamplerMatchesExact(t *testing.T) {
	n := samples(400000, 60000)
	for _, d := range []int{2, 3, 4, 6} {
		for _, eps := range []float64{0.5, 3} {
			for ci, in := range [][]float64{vertex(d, 0b01), interiorInputs(d)[0], make([]float64, d)} {
				if eps == 3 && ci > 0 {
					continue
				}
				t.Run(fmt.Sprintf("d=%d/eps=%g/t=%.2f", d, eps, in), func(t *testing.T) {
					mech, _ := New(Duchi, eps, d, Reject)
					m := mech.(*duchiMulti)
					want := exactDist(in, samplerLaw(m))
					counts := make([]float64, 1<<d)
					r := rng.ForName(t.Name())
					out := make([]float64, d)
					for range n {
						if err := m.Perturb(r, in, out); err != nil {
							t.Fatal(err)
						}
						o := 0
						for j, x := range out {
							switch x {
							case m.b:
								o |= 1 << j
							case -m.b:
							default:
								t.Fatalf("output %v, want coordinates ±%v", out, m.b)
							}
						}
						counts[o]++
					}
					stat, minExp := 0.0, math.Inf(1)
					for o, c := range counts {
						exp := float64(n) * want[o]
						minExp = math.Min(minExp, exp)
						stat += (c - exp) * (c - exp) / exp
					}
					if minExp < 5 {
						t.Fatalf("smallest expected count %.1f < 5: chi-square approximation invalid", minExp)
					}
					k := 1<<d - 1
					t.Logf("chi-square %.2f, df %d, critical %.2f", stat, k, chi2Critical(k, 1e-6))
					if crit := chi2Critical(k, 1e-6); stat > crit {
						t.Errorf("chi-square %.1f > %.1f (df %d, alpha 1e-6)", stat, crit, k)
					}
				})
			}
		}
	}
}

// TestDuchiMultiSamplerDetectsWrongLaw: the chi-square check rejects the
// sampler against the ties-in-both law (d = 2, eps = 0.5, t = (1, -1)), so
// it can fail.
func TestDuchiMultiSamplerDetectsWrongLaw(t *testing.T) {
	n := samples(400000, 60000)
	d, eps := 2, 0.5
	in := vertex(d, 0b01)
	mech, _ := New(Duchi, eps, d, Reject)
	want := exactDist(in, setLaw(eps, true, true))
	counts := make([]float64, 1<<d)
	r := rng.ForName(t.Name())
	out := make([]float64, d)
	for range n {
		if err := mech.Perturb(r, in, out); err != nil {
			t.Fatal(err)
		}
		o := 0
		for j, x := range out {
			if x > 0 {
				o |= 1 << j
			}
		}
		counts[o]++
	}
	stat := 0.0
	for o, c := range counts {
		exp := float64(n) * want[o]
		stat += (c - exp) * (c - exp) / exp
	}
	t.Logf("chi-square against the ties-in-both law: %.1f", stat)
	if crit := chi2Critical(1<<d-1, 1e-6); stat <= crit {
		t.Errorf("chi-square %.1f <= %.1f: the goodness-of-fit test cannot tell the rules apart", stat, crit)
	}
}
