package ldp

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

var (
	allKinds = []Kind{Piecewise, Hybrid, Duchi, Laplace}
	epsilons = []float64{0.5, 1, 2, 5}
	inputs   = []float64{-1, -0.3, 0, 0.5, 1}
)

func samples(t *testing.T, big, small int) int {
	if testing.Short() {
		return small
	}
	return big
}

// moments returns the sample mean and variance of coordinate j and an
// estimate of the fourth central moment (for the variance's standard error).
func moments(xs []float64) (mean, variance, m4 float64) {
	n := float64(len(xs))
	for _, x := range xs {
		mean += x
	}
	mean /= n
	for _, x := range xs {
		d := (x - mean) * (x - mean)
		variance += d
		m4 += d * d
	}
	return mean, variance / (n - 1), m4 / n
}

func TestOneDimUnbiasedAndVariance(t *testing.T) {
	n := samples(t, 400000, 60000)
	for _, k := range allKinds {
		for _, eps := range epsilons {
			for _, x := range inputs {
				name := fmt.Sprintf("%s/eps=%g/t=%g", k, eps, x)
				t.Run(name, func(t *testing.T) {
					m, err := New(k, eps, 1, Reject)
					if err != nil {
						t.Fatal(err)
					}
					r := rng.ForName(t.Name())
					xs := make([]float64, n)
					in, out := []float64{x}, []float64{0}
					for i := range xs {
						if err := m.Perturb(r, in, out); err != nil {
							t.Fatal(err)
						}
						xs[i] = out[0]
					}
					mean, v, m4 := moments(xs)
					want := m.Variance(in, 0)
					// Mean: 5 standard errors sqrt(Var/n), false alarm ~6e-7 per check.
					if se := math.Sqrt(want / float64(n)); math.Abs(mean-x) > 5*se {
						t.Errorf("mean %.5f, want %.5f (5se %.5f)", mean, x, 5*se)
					}
					// Variance: 5 standard errors of the sample variance,
					// sqrt((mu4 - sigma^4)/n) with the moments estimated.
					if se := math.Sqrt((m4 - v*v) / float64(n)); math.Abs(v-want) > 5*se+1e-12 {
						t.Errorf("variance %.5f, closed form %.5f (5se %.5f)", v, want, 5*se)
					}
				})
			}
		}
	}
}

func TestPMVarianceClosedForm(t *testing.T) {
	// Worst case |t| = 1 of PM: 4z/(3(z-1)^2).
	for _, eps := range epsilons {
		m, _ := New(Piecewise, eps, 1, Reject)
		z := math.Exp(eps / 2)
		if got, want := m.Variance([]float64{1}, 0), 4*z/(3*(z-1)*(z-1)); math.Abs(got-want) > 1e-12*want {
			t.Errorf("eps %g: worst-case variance %v, want %v", eps, got, want)
		}
	}
	// HM above eps*: variance independent of t.
	m, _ := New(Hybrid, 2, 1, Reject)
	z, e := math.Exp(1.0), math.Exp(2.0)
	want := (z+3)/(3*z*(z-1)) + (e+1)*(e+1)/(z*(e-1)*(e-1))
	for _, x := range inputs {
		if got := m.Variance([]float64{x}, 0); math.Abs(got-want) > 1e-9 {
			t.Errorf("HM variance at t=%g: %v, want %v", x, got, want)
		}
	}
}

func TestMultiDim(t *testing.T) {
	n := samples(t, 200000, 40000)
	for _, k := range allKinds {
		for _, d := range []int{1, 4, 5, 20} {
			for _, eps := range []float64{1, 5, 10} {
				t.Run(fmt.Sprintf("%s/d=%d/eps=%g", k, d, eps), func(t *testing.T) {
					m, err := New(k, eps, d, Reject)
					if err != nil {
						t.Fatal(err)
					}
					r := rng.ForName(t.Name())
					in := make([]float64, d)
					for j := range in {
						in[j] = inputs[j%len(inputs)]
					}
					out := make([]float64, d)
					sum, sq := make([]float64, d), make([]float64, d)
					bound := m.Bound()
					for i := 0; i < n; i++ {
						if err := m.Perturb(r, in, out); err != nil {
							t.Fatal(err)
						}
						for j, v := range out {
							if math.Abs(v) > bound*(1+1e-12) {
								t.Fatalf("output %v outside [-%v, %v]", v, bound, bound)
							}
							sum[j] += v
							sq[j] += v * v
						}
					}
					for j := range in {
						mean := sum[j] / float64(n)
						v := sq[j]/float64(n) - mean*mean
						want := m.Variance(in, j)
						// 5 standard errors; a Bonferroni factor for d
						// coordinates keeps the family-wise false alarm ~1e-5.
						if se := math.Sqrt(want / float64(n)); math.Abs(mean-in[j]) > 5*se {
							t.Errorf("coordinate %d: mean %.4f, want %.4f (5se %.4f)", j, mean, in[j], 5*se)
						}
						// Variance check with a conservative standard error:
						// outputs are bounded by B (or Laplace with
						// kurtosis 6), so mu4 <= max(B^2, 6 Var) * Var.
						mu4 := want * math.Max(bound*bound, 6*want)
						if math.IsInf(bound, 1) {
							mu4 = 6 * want * want
						}
						if se := math.Sqrt(mu4 / float64(n)); math.Abs(v-want) > 5*se {
							t.Errorf("coordinate %d: variance %.4f, want %.4f (5se %.4f)", j, v, want, 5*se)
						}
					}
				})
			}
		}
	}
}

// TestDuchiEvenDimensionNeedsTies shows the tie rule matters: with ties
// excluded from T+ the mean at d = 4, eps = 1 is far from t.
func TestDuchiEvenDimensionNeedsTies(t *testing.T) {
	m, _ := New(Duchi, 1, 4, Reject)
	dm := m.(*duchiMulti)
	in := []float64{0.5, 0.5, 0.5, 0.5}
	r := rng.ForName(t.Name())
	n := samples(t, 200000, 50000)
	out := make([]float64, 4)
	mean := 0.0
	for i := 0; i < n; i++ {
		if err := dm.Perturb(r, in, out); err != nil {
			t.Fatal(err)
		}
		mean += out[0]
	}
	mean /= float64(n)
	se := math.Sqrt(dm.Variance(in, 0) / float64(n))
	if math.Abs(mean-0.5) > 5*se {
		t.Fatalf("mean %.4f, want 0.5 (5se %.4f)", mean, 5*se)
	}
	// The broken rule (T+ = {s.v > 0}) computed exactly for d = 4: enumerate.
	broken := brokenDuchiMean(in, 1, dm.b)
	if math.Abs(broken-0.5) < 10*se {
		t.Fatalf("broken tie rule mean %.4f is not distinguishable from 0.5; the test could not fail", broken)
	}
}

// brokenDuchiMean is E[s_0] when ties go to T- only, by enumeration.
func brokenDuchiMean(tv []float64, eps, b float64) float64 {
	d := len(tv)
	e := math.Exp(eps)
	mean := 0.0
	for vm := 0; vm < 1<<d; vm++ {
		pv := 1.0
		for j := 0; j < d; j++ {
			if vm>>j&1 == 1 {
				pv *= 0.5 + 0.5*tv[j]
			} else {
				pv *= 0.5 - 0.5*tv[j]
			}
		}
		var pos, neg []int
		for sm := 0; sm < 1<<d; sm++ {
			dot := 0
			for j := 0; j < d; j++ {
				if (sm>>j&1 == 1) == (vm>>j&1 == 1) {
					dot++
				} else {
					dot--
				}
			}
			if dot > 0 {
				pos = append(pos, sm)
			} else {
				neg = append(neg, sm)
			}
		}
		avg := func(set []int) float64 {
			s := 0.0
			for _, sm := range set {
				if sm&1 == 1 {
					s += b
				} else {
					s -= b
				}
			}
			return s / float64(len(set))
		}
		mean += pv * (e/(e+1)*avg(pos) + 1/(e+1)*avg(neg))
	}
	return mean
}

// ldpRatio bins outputs for inputs -1 and +1 and returns the largest ratio
// of bin frequencies that exceeds e^eps by more than sampling error, or 0.
// Sampling error: for counts a, b the log-ratio has standard error about
// sqrt(1/a + 1/b); a bin fails when log(a/b) - eps > 5 of those.
func ldpViolation(t *testing.T, sample func(x float64) float64, eps, lo, hi float64, bins, n int) float64 {
	t.Helper()
	count := func(x float64) []float64 {
		c := make([]float64, bins)
		for i := 0; i < n; i++ {
			v := sample(x)
			k := int((v - lo) / (hi - lo) * float64(bins))
			k = max(0, min(bins-1, k))
			c[k]++
		}
		return c
	}
	a, b := count(-1), count(1)
	worst := 0.0
	for k := range a {
		if a[k] < 100 || b[k] < 100 { // too few samples for a meaningful ratio
			continue
		}
		lr := math.Abs(math.Log(a[k] / b[k]))
		se := math.Sqrt(1/a[k] + 1/b[k])
		if lr-eps > 5*se {
			worst = math.Max(worst, lr)
		}
	}
	return worst
}

func TestEmpiricalLDP(t *testing.T) {
	n := samples(t, 400000, 100000)
	for _, k := range allKinds {
		for _, eps := range []float64{0.5, 1, 2} {
			t.Run(fmt.Sprintf("%s/eps=%g", k, eps), func(t *testing.T) {
				m, _ := New(k, eps, 1, Reject)
				r := rng.ForName(t.Name())
				in, out := []float64{0}, []float64{0}
				sample := func(x float64) float64 {
					in[0] = x
					if err := m.Perturb(r, in, out); err != nil {
						t.Fatal(err)
					}
					return out[0]
				}
				lo, hi := -m.Bound()*(1+1e-9), m.Bound()*(1+1e-9)
				if math.IsInf(hi, 1) {
					lo, hi = -8/eps, 8/eps
				}
				if v := ldpViolation(t, sample, eps, lo, hi, 40, n); v > 0 {
					t.Fatalf("binned frequency ratio e^%.3f exceeds e^%g", v, eps)
				}
			})
		}
	}
	// Negative control: PM built for 2 eps is not eps-LDP; the check must say so.
	m, _ := New(Piecewise, 2, 1, Reject)
	r := rng.ForName(t.Name() + "/control")
	in, out := []float64{0}, []float64{0}
	sample := func(x float64) float64 { in[0] = x; m.Perturb(r, in, out); return out[0] }
	if v := ldpViolation(t, sample, 1, -m.Bound(), m.Bound(), 40, n); v == 0 {
		t.Fatal("the LDP check did not detect a 2-eps mechanism tested at eps")
	}
}

func TestErrors(t *testing.T) {
	for _, eps := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := New(Piecewise, eps, 1, Reject); !errors.Is(err, ErrEpsilon) {
			t.Errorf("eps %v: err %v", eps, err)
		}
	}
	if _, err := New(None, 0, 3, Reject); err != nil {
		t.Errorf("none ignores eps: %v", err)
	}
	if _, err := New(Duchi, 1, 0, Reject); !errors.Is(err, ErrDimension) {
		t.Errorf("d = 0: %v", err)
	}
	if _, err := New(Kind(9), 1, 1, Reject); !errors.Is(err, ErrKind) {
		t.Errorf("kind 9: %v", err)
	}
	r := rng.ForName(t.Name())
	for _, k := range append([]Kind{None}, allKinds...) {
		m, _ := New(k, 1, 3, Reject)
		if err := m.Perturb(r, []float64{0, math.NaN(), 0}, make([]float64, 3)); !errors.Is(err, ErrNotFinite) {
			t.Errorf("%s NaN: %v", k, err)
		}
		if err := m.Perturb(r, []float64{0, 1.5, 0}, make([]float64, 3)); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("%s 1.5 with Reject: %v", k, err)
		}
		if err := m.Perturb(r, []float64{0, 0}, make([]float64, 3)); !errors.Is(err, ErrLength) {
			t.Errorf("%s short input: %v", k, err)
		}
		c, _ := New(k, 1, 3, Clip)
		out := make([]float64, 3)
		if err := c.Perturb(r, []float64{0, 1.5, -7}, out); err != nil {
			t.Errorf("%s with Clip: %v", k, err)
		}
	}
	none, _ := New(None, 1, 2, Clip)
	out := make([]float64, 2)
	none.Perturb(r, []float64{2, -0.5}, out)
	if out[0] != 1 || out[1] != -0.5 {
		t.Errorf("none with Clip gave %v", out)
	}
	if k, err := ParseKind("PM"); err != nil || k != Piecewise {
		t.Errorf("ParseKind(PM) = %v, %v", k, err)
	}
	if _, err := ParseKind("gauss"); err == nil {
		t.Error("ParseKind accepted gauss")
	}
}

func TestAliasing(t *testing.T) {
	r1, r2 := rng.Seeded(3), rng.Seeded(3)
	for _, k := range allKinds {
		m, _ := New(k, 5, 6, Reject)
		in := []float64{0.1, -0.2, 0.3, -0.4, 0.5, -0.6}
		out := make([]float64, 6)
		if err := m.Perturb(r1, in, out); err != nil {
			t.Fatal(err)
		}
		inPlace := append([]float64(nil), in...)
		if err := m.Perturb(r2, inPlace, inPlace); err != nil {
			t.Fatal(err)
		}
		for j := range out {
			if out[j] != inPlace[j] {
				t.Fatalf("%s: in-place perturbation differs at %d: %v vs %v", k, j, inPlace, out)
			}
		}
	}
}

func benchPerturb(b *testing.B, k Kind, eps float64, d int) {
	m, err := New(k, eps, d, Reject)
	if err != nil {
		b.Fatal(err)
	}
	r := rng.Seeded(1)
	in := make([]float64, d)
	for j := range in {
		in[j] = math.Sin(float64(j))
	}
	out := make([]float64, d)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := m.Perturb(r, in, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*d)/b.Elapsed().Seconds(), "coords/s")
	if kk := min(d, max(1, int(eps/2.5))); k == Piecewise || k == Hybrid {
		b.ReportMetric(float64(b.N*kk)/b.Elapsed().Seconds(), "perturbed/s")
	}
}

func BenchmarkPerturb(b *testing.B) {
	for _, k := range []Kind{Piecewise, Hybrid} {
		for _, eps := range []float64{1, 5} {
			for _, d := range []int{1, 20, 100} {
				b.Run(fmt.Sprintf("%s/eps=%g/d=%d", k, eps, d), func(b *testing.B) { benchPerturb(b, k, eps, d) })
			}
		}
	}
	b.Run("duchi/eps=1/d=20", func(b *testing.B) { benchPerturb(b, Duchi, 1, 20) })
	b.Run("laplace/eps=1/d=20", func(b *testing.B) { benchPerturb(b, Laplace, 1, 20) })
}
