package ldp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

// Statistical tests. Every run uses a seed derived from the test name, so
// results are reproducible; tolerances are derived from the sampling
// distribution and written beside each assertion. Five standard errors
// (two-sided normal tail 5.7e-7) over the roughly 3000 assertions of the
// suite give a family-wise false-alarm probability below 2e-3 for a fresh
// seed; with the fixed seeds the outcome is deterministic.

var (
	privateKinds = []Kind{Piecewise, Hybrid, Duchi, Laplace}
	epsilons     = []float64{0.5, 1, 2, 5}
	inputs       = []float64{-1, -0.3, 0, 0.5, 1}
)

// samples returns big normally and small under -short.
func samples(big, small int) int {
	if testing.Short() {
		return small
	}
	return big
}

// moments accumulates powers of x - t, where t is the input: the true
// mean of an unbiased mechanism.
type moments struct {
	n, t       float64
	s1, s2, s4 float64
	bound      float64
	outside    []float64 // outputs beyond Bound
}

func (a *moments) add(x float64) {
	y := x - a.t
	a.n++
	a.s1 += y
	a.s2 += y * y
	a.s4 += y * y * y * y
	if math.Abs(x) > a.bound && len(a.outside) < 3 {
		a.outside = append(a.outside, x)
	}
}

// check compares the moments with the closed forms and returns the
// failures (empty when consistent).
func (a *moments) check(wantVar float64) []string {
	var fails []string
	// Mean: 5 standard errors, sqrt(Var/n) with the closed-form variance.
	if mean, se := a.t+a.s1/a.n, math.Sqrt(wantVar/a.n); math.Abs(mean-a.t) > 5*se {
		fails = append(fails, fmt.Sprintf("mean %.5f, want %.5f (5 se = %.5f)", mean, a.t, 5*se))
	}
	// Variance: V = mean of (x - t)^2 is unbiased for Var when E x = t (the
	// check above), with standard error sqrt((mu4 - V^2)/n), mu4 = E(x - t)^4
	// estimated by the sample mean: 5 of those, plus 1e-9 V for the
	// floating-point sums (n u < 1e-10). Around the true mean, a two-point
	// output such as Duchi's at t = 0 gives V exactly, as it should.
	v, mu4 := a.s2/a.n, a.s4/a.n
	if se := math.Sqrt(math.Max(0, mu4-v*v) / a.n); math.Abs(v-wantVar) > 5*se+1e-9*wantVar {
		fails = append(fails, fmt.Sprintf("variance %.5f, closed form %.5f (5 se = %.5f)", v, wantVar, 5*se))
	}
	if len(a.outside) > 0 {
		fails = append(fails, fmt.Sprintf("outputs %v outside [-Bound, Bound] = ±%v", a.outside, a.bound))
	}
	return fails
}

// run perturbs in n times with sample and accumulates every coordinate.
func run(t *testing.T, sample func(r *rand.Rand, in, out []float64) error, r *rand.Rand, in []float64, bound float64, n int) []moments {
	t.Helper()
	acc := make([]moments, len(in))
	for j := range acc {
		acc[j] = moments{t: in[j], bound: bound}
	}
	out := make([]float64, len(in))
	for range n {
		if err := sample(r, in, out); err != nil {
			t.Fatal(err)
		}
		for j, x := range out {
			acc[j].add(x)
		}
	}
	return acc
}

func TestOneDimUnbiasedAndVariance(t *testing.T) {
	n := samples(400000, 60000)
	for _, k := range privateKinds {
		for _, eps := range epsilons {
			for _, x := range inputs {
				t.Run(fmt.Sprintf("%s/eps=%g/t=%g", k, eps, x), func(t *testing.T) {
					m, err := New(k, eps, 1, Reject)
					if err != nil {
						t.Fatal(err)
					}
					in := []float64{x}
					acc := run(t, m.Perturb, rng.ForName(t.Name()), in, m.Bound(), n)
					for _, f := range acc[0].check(m.Variance(in, 0)) {
						t.Error(f)
					}
				})
			}
		}
	}
}

// multiInput is a vector of d values cycling through inputs.
func multiInput(d int) []float64 {
	in := make([]float64, d)
	for j := range in {
		in[j] = inputs[j%len(inputs)]
	}
	return in
}

// TestMultiDim checks every coordinate's mean and variance against the
// closed forms: PM/HM (d/k)(Var_M(t_j, eps/k) + t_j^2) - t_j^2, Duchi
// B^2 - t_j^2, Laplace 8d^2/eps^2, None 0. eps = 82.5 at d = 34 (k = 33)
// and eps = 100 at d = 50 (k = 40) exercise selection sampling.
func TestMultiDim(t *testing.T) {
	n := samples(200000, 30000)
	type tc struct {
		kind Kind
		d    int
		eps  float64
	}
	var cases []tc
	for _, k := range append([]Kind{None}, privateKinds...) {
		for _, d := range []int{1, 4, 5, 20} {
			for _, eps := range []float64{1, 5, 10} {
				cases = append(cases, tc{k, d, eps})
			}
		}
	}
	cases = append(cases, tc{Piecewise, 34, 82.5}, tc{Hybrid, 50, 100})
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/d=%d/eps=%g", c.kind, c.d, c.eps), func(t *testing.T) {
			m, err := New(c.kind, c.eps, c.d, Reject)
			if err != nil {
				t.Fatal(err)
			}
			in := multiInput(c.d)
			acc := run(t, m.Perturb, rng.ForName(t.Name()), in, m.Bound(), n)
			for j := range in {
				for _, f := range acc[j].check(m.Variance(in, j)) {
					t.Errorf("coordinate %d (t=%g): %s", j, in[j], f)
				}
			}
		})
	}
}

// TestMultiDimFormulas pins the variance closed forms of the brief.
func TestMultiDimFormulas(t *testing.T) {
	in := multiInput(20)
	for _, eps := range []float64{1, 5, 10} {
		k := max(1, int(eps/2.5))
		for _, kind := range []Kind{Piecewise, Hybrid} {
			m, _ := New(kind, eps, 20, Reject)
			one, _ := New(kind, eps/float64(k), 1, Reject)
			for j, x := range in {
				want := 20/float64(k)*(one.Variance([]float64{x}, 0)+x*x) - x*x
				if got := m.Variance(in, j); math.Abs(got-want) > 1e-12*want {
					t.Errorf("%s eps=%g j=%d: variance %v, want %v", kind, eps, j, got, want)
				}
			}
			if got, want := m.Bound(), 20/float64(k)*one.Bound(); got != want {
				t.Errorf("%s eps=%g: bound %v, want %v", kind, eps, got, want)
			}
		}
		l, _ := New(Laplace, eps, 20, Reject)
		// Discrete Laplace on a grid: within 2^-18 of 8d^2/eps^2 (dlap's
		// scale is within 2^-19 of 2d/eps; rounding adds <= g^2/4).
		if got, want := l.Variance(in, 3), 8*400/(eps*eps); math.Abs(got-want) > 0x1p-18*want {
			t.Errorf("laplace eps=%g: variance %v, want 8d^2/eps^2 = %v", eps, got, want)
		}
	}
}

// TestSubsetUniform checks that the k sampled attributes form a uniform
// k-subset, for Floyd's algorithm (d = 5, k = 2: 10 pairs) and for
// selection sampling (d = 34, k = 33: 34 subsets, named by the attribute
// left out).
func TestSubsetUniform(t *testing.T) {
	n := samples(200000, 40000)
	for _, c := range []struct {
		d    int
		eps  float64
		sets int
	}{{5, 5, 10}, {34, 82.5, 34}} {
		t.Run(fmt.Sprintf("d=%d/eps=%g", c.d, c.eps), func(t *testing.T) {
			m, _ := New(Piecewise, c.eps, c.d, Reject)
			k := m.(*sampled).k
			r := rng.ForName(t.Name())
			in := make([]float64, c.d)
			out := make([]float64, c.d)
			counts := map[uint64]int{}
			for range n {
				if err := m.Perturb(r, in, out); err != nil {
					t.Fatal(err)
				}
				var mask uint64
				nz := 0
				for j, x := range out {
					if x != 0 {
						mask |= 1 << j
						nz++
					}
				}
				if nz != k { // a PM output is 0 with probability 0 (2^-53 grid)
					t.Fatalf("%d nonzero coordinates, want k = %d: %v", nz, k, out)
				}
				counts[mask]++
			}
			if len(counts) != c.sets {
				t.Fatalf("%d distinct subsets, want %d", len(counts), c.sets)
			}
			p := 1 / float64(c.sets)
			for mask, got := range counts {
				// Binomial(n, 1/sets): 5 standard deviations.
				want, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
				if math.Abs(float64(got)-want) > 5*sd {
					t.Errorf("subset %b drawn %d times, want %.0f ± %.0f (5 sd)", mask, got, want, 5*sd)
				}
			}
		})
	}
}

// brokenDuchi is Duchi's multi-dimensional mechanism in its published set
// form with a wrong tie rule for even d, a negative control: uniform from
// T+ with probability pPos, else from T-, where ties (s.v = 0) are only in
// T- (tiesBoth false: the original rule, biased) or in both sets (tiesBoth
// true: unbiased with its own C_d, but not eps-LDP).
func brokenDuchi(b, pPos float64, tiesBoth bool) func(r *rand.Rand, in, out []float64) error {
	return func(r *rand.Rand, in, out []float64) error {
		d := len(in)
		v := make([]float64, d)
		for j, x := range in {
			v[j] = -1
			if r.Float64() < 0.5+0.5*x {
				v[j] = 1
			}
		}
		pos := r.Float64() < pPos
		for {
			dot := 0.0
			for j := range out {
				out[j] = -1
				if r.IntN(2) == 1 {
					out[j] = 1
				}
				dot += out[j] * v[j]
			}
			if (pos && (dot > 0 || (tiesBoth && dot == 0))) || (!pos && dot <= 0) {
				break
			}
		}
		for j := range out {
			out[j] *= b
		}
		return nil
	}
}

// TestDuchiEvenDimensionTieRule runs the same mean/variance check on the
// real mechanism and on the original tie rule (ties only in T-) at even d:
// the real one must pass, the original one must fail (so the check can
// fail). The exact counterpart is TestDuchiMultiExactNegativeControls.
//
// Power: the original rule's mean is f t_j (tiesInTMinusFactor, checked
// against enumeration), so its bias is |f - 1| t_j. The broken run uses
// enough samples that the bias is at least 8 standard errors
// (sqrt(B^2/n) bounds the se, Var <= B^2): then the mean check (5 se)
// misses a coordinate with probability below P(Z > 3) = 1.4e-3. At d = 20,
// eps = 1, t = 0.5 the bias is 0.213, so about 213000 samples.
func TestDuchiEvenDimensionTieRule(t *testing.T) {
	n := samples(200000, 40000)
	for _, d := range []int{2, 4, 20} {
		t.Run(fmt.Sprintf("d=%d", d), func(t *testing.T) {
			m, _ := New(Duchi, 1, d, Reject)
			dm := m.(*duchiMulti)
			in := make([]float64, d)
			for j := range in {
				in[j] = 0.5
			}
			bias := math.Abs(tiesInTMinusFactor(d, 1, dm.b)-1) * 0.5
			nBad := max(n, int(math.Ceil(64*dm.b*dm.b/(bias*bias))))
			t.Logf("original rule: bias %.4f, %d samples", bias, nBad)
			good := run(t, m.Perturb, rng.ForName(t.Name()+"/good"), in, m.Bound(), n)
			bad := run(t, brokenDuchi(dm.b, dm.pPos, false), rng.ForName(t.Name()+"/broken"), in, m.Bound(), nBad)
			badFails := 0
			for j := range in {
				for _, f := range good[j].check(m.Variance(in, j)) {
					t.Errorf("coordinate %d: %s", j, f)
				}
				badFails += len(bad[j].check(m.Variance(in, j)))
			}
			if badFails == 0 {
				t.Error("the broken tie rule passed the unbiasedness check; the check cannot tell")
			}
		})
	}
}

// ldpCheck draws n outputs for each of inputs a and b, bins them, and
// tests every bin for P(bin | a) <= e^eps P(bin | b) and the reverse.
//
// Tolerance: given a bin's total m = c_a + c_b, c_a is (Poisson
// approximation) Binomial(m, p_a/(p_a + p_b)) with p_a/(p_a + p_b) <= q =
// e^eps/(1 + e^eps) under eps-LDP; for independent binomial counts the
// conditional law has the same mean and a smaller variance, so the test is
// conservative. A bin fails when max(c_a, c_b) > m q + 5 sqrt(m q (1-q))
// (one-sided normal tail 2.9e-7). Bins with m < 100 are skipped (normal
// approximation). testable counts the bins where a failure was possible at
// all (m q + 5 sd < m), so a vacuous check can be detected.
func ldpCheck(t *testing.T, sample func(r *rand.Rand, in, out []float64) error, r *rand.Rand,
	a, b []float64, bin func(out []float64) int, bins int, eps float64, n int) (fails []string, testable int) {
	t.Helper()
	count := func(in []float64) []float64 {
		c := make([]float64, bins)
		out := make([]float64, len(in))
		for range n {
			if err := sample(r, in, out); err != nil {
				t.Fatal(err)
			}
			c[bin(out)]++
		}
		return c
	}
	ca, cb := count(a), count(b)
	q := math.Exp(eps) / (1 + math.Exp(eps))
	for k := range ca {
		m := ca[k] + cb[k]
		if m < 100 {
			continue
		}
		limit := m*q + 5*math.Sqrt(m*q*(1-q))
		if limit < m {
			testable++
		}
		if hi := math.Max(ca[k], cb[k]); hi > limit {
			fails = append(fails, fmt.Sprintf("bin %d: counts %v vs %v, the larger above %.0f (ratio bound e^%g)", k, ca[k], cb[k], limit, eps))
		}
	}
	return fails, testable
}

// gridBins bins each coordinate of out into per equal cells over [-h, h]
// (values beyond go to the end cells: tail events obey the bound too) and
// returns the product cell's index.
func gridBins(h float64, per, d int) (func(out []float64) int, int) {
	bins := 1
	for range d {
		bins *= per
	}
	return func(out []float64) int {
		k := 0
		for _, x := range out {
			c := int((x + h) / (2 * h) * float64(per))
			k = k*per + max(0, min(per-1, c))
		}
		return k
	}, bins
}

// signBins names each output by its sign pattern (Duchi's 2^d outputs).
func signBins(d int) (func(out []float64) int, int) {
	return func(out []float64) int {
		k := 0
		for j, x := range out {
			if x > 0 {
				k |= 1 << j
			}
		}
		return k
	}, 1 << d
}

func constVec(d int, x float64) []float64 {
	v := make([]float64, d)
	for j := range v {
		v[j] = x
	}
	return v
}

// TestEmpiricalLDP bins outputs for two extreme inputs (all -1 against all
// +1, unless a and b are given) and checks the eps-LDP ratio bound in every
// bin, for the 1-D mechanisms and for multi-dimensional PM, HM (d = 2,
// k = 2), Duchi (d = 4, even: the ties; d = 2 with (1, 1) against (-1, 1),
// where the ties-in-both rule breaks the bound) and Laplace (d = 2, bins
// over [-1 - 6b, 1 + 6b]).
func TestEmpiricalLDP(t *testing.T) {
	n := samples(1000000, 150000)
	type tc struct {
		kind Kind
		d    int
		eps  float64
		a, b []float64 // nil: all -1 and all +1
	}
	var cases []tc
	for _, k := range privateKinds {
		for _, eps := range []float64{0.5, 1, 2} {
			cases = append(cases, tc{k, 1, eps, nil, nil})
		}
	}
	tie := [][]float64{{1, 1}, {-1, 1}}
	cases = append(cases, tc{Piecewise, 2, 5, nil, nil}, tc{Hybrid, 2, 5, nil, nil}, tc{Duchi, 4, 1, nil, nil},
		tc{Duchi, 4, 2, nil, nil}, tc{Duchi, 2, 0.5, tie[0], tie[1]}, tc{Duchi, 2, 1, tie[0], tie[1]}, tc{Laplace, 2, 1, nil, nil})
	for _, c := range cases {
		if c.a == nil {
			c.a, c.b = constVec(c.d, -1), constVec(c.d, 1)
		}
		t.Run(fmt.Sprintf("%s/d=%d/eps=%g/a=%g", c.kind, c.d, c.eps, c.a), func(t *testing.T) {
			m, err := New(c.kind, c.eps, c.d, Reject)
			if err != nil {
				t.Fatal(err)
			}
			var bin func([]float64) int
			var bins int
			switch {
			case c.kind == Duchi && c.d > 1:
				bin, bins = signBins(c.d)
			case c.kind == Laplace:
				per := map[int]int{1: 40, 2: 10}[c.d]
				bin, bins = gridBins(1+6*2*float64(c.d)/c.eps, per, c.d)
			case c.d == 1:
				bin, bins = gridBins(m.Bound(), 40, 1)
			default:
				bin, bins = gridBins(m.Bound(), 8, c.d)
			}
			fails, testable := ldpCheck(t, m.Perturb, rng.ForName(t.Name()), c.a, c.b, bin, bins, c.eps, n)
			for _, f := range fails {
				t.Error(f)
			}
			if testable < 2 {
				t.Errorf("only %d bins could detect a violation; the check is vacuous", testable)
			}
		})
	}
}

// TestEmpiricalLDPDetectsViolations feeds the same check mechanisms that
// are not eps-LDP; each must be flagged.
func TestEmpiricalLDPDetectsViolations(t *testing.T) {
	n := samples(1000000, 150000)
	pm2, _ := New(Piecewise, 2, 1, Reject)
	// Multi-dimensional PM giving each of k = 2 attributes the full eps = 5
	// instead of eps/k: the joint ratio is e^10 (LDP-REFERENCE.md's note).
	fullEps := &sampled{base: base{kind: Piecewise, eps: 5, d: 2}, k: 2, scale: 1, one: newOneDim(Piecewise, 5)}
	duchi4, _ := New(Duchi, 1, 4, Reject)
	dm := duchi4.(*duchiMulti)
	identity, _ := New(None, 0, 1, Reject)
	for _, c := range []struct {
		name   string
		sample func(r *rand.Rand, in, out []float64) error
		d      int
		bound  float64
		eps    float64
	}{
		{"pm-at-2eps", pm2.Perturb, 1, pm2.Bound(), 1},
		{"pm-full-eps-per-attribute", fullEps.Perturb, 2, fullEps.Bound(), 5},
		{"duchi-ties-only-in-T-", brokenDuchi(dm.b, dm.pPos, false), 4, 0, 1},
		{"duchi-ties-in-both", brokenDuchi(dm.b, dm.pPos, true), 2, 0, 1},
		{"none", identity.Perturb, 1, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin, bins := gridBins(c.bound, 40, 1)
			a, b := constVec(c.d, -1), constVec(c.d, 1)
			switch {
			case strings.HasPrefix(c.name, "duchi"):
				bin, bins = signBins(c.d)
				if c.d == 2 { // the witness: output (B, -B)
					a, b = []float64{1, 1}, []float64{-1, 1}
				}
			case c.d == 2:
				bin, bins = gridBins(c.bound, 8, 2)
			}
			fails, _ := ldpCheck(t, c.sample, rng.ForName(t.Name()), a, b, bin, bins, c.eps, n)
			if len(fails) == 0 {
				t.Errorf("the LDP check did not flag %s at eps = %g", c.name, c.eps)
			}
		})
	}
}
