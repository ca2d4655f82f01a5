package dlap_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ppboost/ppboost/crypto/dlap"
	"github.com/ppboost/ppboost/crypto/dpnoise"
	"github.com/ppboost/ppboost/crypto/rng"
)

// alpha is the false-rejection rate of each goodness-of-fit assertion.
const alpha = 1e-4

// The exact sampler against the exact pmf, by Pearson's chi-square (cells
// of expected count >= 5, tails merged; dpnoise.ChiSquare), critical value
// at alpha, for integer scales, rational scales (den > 1, the Y = X/den
// step) and a scale below 1 (num < den: mostly zeros).
func TestSampleMatchesPMF(t *testing.T) {
	const n = 200000
	for _, c := range []struct{ num, den uint64 }{{1, 1}, {3, 1}, {7, 2}, {5, 16}, {1, 3}, {1000, 1}, {(1 << 40) + 12345, 1 << 38}} {
		t.Run(fmt.Sprintf("%d/%d", c.num, c.den), func(t *testing.T) {
			r := rng.ForName(t.Name())
			s := make([]int64, n)
			for i := range s {
				s[i] = dlap.Sample(r, c.num, c.den)
			}
			stat, df := dpnoise.ChiSquare(s, func(x int64) float64 { return dlap.PMF(c.num, c.den, x) })
			crit := dpnoise.ChiSquareCritical(max(df, 1), alpha)
			t.Logf("chi2 = %.1f, df = %d, critical %.1f", stat, df, crit)
			if stat > crit {
				t.Fatalf("chi2 = %.1f > %.1f (df %d)", stat, crit, df)
			}
		})
	}
}

// Negative control: the same test rejects a scale 10% too small.
func TestSampleChiSquareDetectsWrongScale(t *testing.T) {
	const n = 200000
	r := rng.ForName(t.Name())
	s := make([]int64, n)
	for i := range s {
		s[i] = dlap.Sample(r, 9, 1)
	}
	stat, df := dpnoise.ChiSquare(s, func(x int64) float64 { return dlap.PMF(10, 1, x) })
	if crit := dpnoise.ChiSquareCritical(df, alpha); stat <= crit {
		t.Fatalf("scale 9 accepted as 10: chi2 = %.1f <= %.1f", stat, crit)
	}
}

// At the mechanisms' scales (about 2^20 grid units and more), where the pmf
// cannot be binned cheaply, mean and variance match: the sample mean has sd
// sigma/sqrt(N); the sample variance sd sigma^2 sqrt((2 + 3)/N) (excess
// kurtosis of Laplace: 3). Both within 5 sd.
func TestLargeScaleMoments(t *testing.T) {
	const n = 100000
	for _, num := range []uint64{1 << 20, 3<<40 + 1, 1 << 55} {
		r := rng.ForName(fmt.Sprint(t.Name(), num))
		sum, sq := 0.0, 0.0
		for range n {
			x := float64(dlap.Sample(r, num, 1)) / float64(num)
			sum += x
			sq += x * x
		}
		mean := sum / n
		v := sq/n - mean*mean
		if math.Abs(mean) > 5*math.Sqrt(2.0/n) {
			t.Errorf("num %d: mean %v scales", num, mean)
		}
		if math.Abs(v-2) > 5*2*math.Sqrt(5.0/n) {
			t.Errorf("num %d: variance %v scale^2, want 2", num, v)
		}
	}
}

// Epsilon is computed from the parameters, never above the budget asked for,
// and within 2^-19 of it while the scale is at least 2^20 grid units; the
// grid is a power of two at most min(delta, b) 2^-20/(coords+1).
func TestNewEpsilonAndGrid(t *testing.T) {
	for _, delta := range []float64{1, 2, 0.37, 3000} {
		for _, coords := range []int{1, 2, 17} {
			for _, eps := range []float64{1e-6, 0.01, 0.5, 1, 3, 50} {
				m, err := dlap.New(delta, coords, eps)
				if err != nil {
					t.Fatal(err)
				}
				got := m.Epsilon()
				if got > eps || got < eps*(1-0x1p-19) {
					t.Errorf("delta %v coords %d eps %v: %v gives %v", delta, coords, eps, m, got)
				}
				g, b := m.Grid(), delta/eps
				if fr, _ := math.Frexp(g); fr != 0.5 || g > math.Min(delta, b)*0x1p-20/float64(coords+1) {
					t.Errorf("grid %v for delta %v eps %v coords %d", g, delta, eps, coords)
				}
				if rs := m.RealScale(); rs < b || rs > b*(1+0x1p-19) {
					t.Errorf("delta %v coords %d eps %v: real scale %v, b = %v", delta, coords, eps, rs, b)
				}
				if v := m.NoiseVariance(); math.Abs(v/(2*b*b)-1) > 0x1p-18 {
					t.Errorf("noise variance %v, 2b^2 = %v", v, 2*b*b)
				}
			}
		}
	}
	for _, eps := range []float64{0.1, 1, 2.5, 1e4} {
		m, err := dlap.NewInt(1, eps)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Epsilon(); got > eps || got < eps*(1-0x1p-19) || m.Grid() != 1 {
			t.Errorf("NewInt(1, %v): eps %v grid %v", eps, got, m.Grid())
		}
	}
	// Budgets so large that the scale is below one grid unit are capped
	// (2^40 Delta_int): still a valid, smaller guarantee.
	m, err := dlap.New(2, 1, math.MaxFloat64)
	if err != nil || m.Epsilon() > math.MaxFloat64 {
		t.Fatalf("huge eps: %v %v", m, err)
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1), 1e-17} {
		if _, err := dlap.New(1, 1, bad); err == nil {
			t.Errorf("eps %v accepted", bad)
		}
	}
}

// Release is unbiased (randomized rounding) and its variance is Variance(v):
// mean within 5 sd/sqrt(N), variance within 5 sd of the sample variance.
func TestReleaseMoments(t *testing.T) {
	const n = 200000
	m, _ := dlap.New(1, 1, 0.5)
	for _, v := range []float64{0, 0.3, -1, 1e-9} {
		r := rng.ForName(fmt.Sprint(t.Name(), v))
		sum, sq := 0.0, 0.0
		for range n {
			x := m.Release(r, v) - v
			sum += x
			sq += x * x
		}
		mean, want := sum/n, m.Variance(v)
		if math.Abs(mean) > 5*math.Sqrt(want/n) {
			t.Errorf("v %v: bias %v", v, mean)
		}
		if got := sq/n - mean*mean; math.Abs(got-want) > 5*want*math.Sqrt(5.0/n) {
			t.Errorf("v %v: variance %v, want %v", v, got, want)
		}
	}
}

// ratioAudit is the empirical privacy audit: the two output histograms of
// neighbouring inputs (n draws each), and in every bin where both counts
// are at least minCount, a one-sided lower confidence bound on the log
// ratio, |log(c0/c1)| - z sqrt(1/c0 + 1/c1) (delta method; z = 4.5, a
// per-bin false alarm rate of 3.4e-6, Bonferroni over < 300 bins gives
// < 1e-3). It returns the bins whose bound exceeds eps and the number of
// bins tested.
func ratioAudit(h0, h1 map[int64]int, eps float64) (fails []string, tested int, maxLog float64) {
	const z, minCount = 4.5, 200
	for k, c0 := range h0 {
		c1 := h1[k]
		if c0 < minCount || c1 < minCount {
			continue
		}
		tested++
		a, b := float64(c0), float64(c1)
		maxLog = max(maxLog, math.Abs(math.Log(a/b)))
		if lb := math.Abs(math.Log(a/b)) - z*math.Sqrt(1/a+1/b); lb > eps {
			fails = append(fails, fmt.Sprintf("bin %d: counts %d, %d: log ratio >= %.3f > eps %.3f", k, c0, c1, lb, eps))
		}
	}
	return fails, tested, maxLog
}

// The likelihood-ratio audit at the sensitivity bound: NewInt(1, eps) on
// counts 0 and 1 (every output integer its own bin), New(delta, 1, eps) on
// 0 and delta (outputs binned by b/4 in real units: a union of grid points,
// whose probabilities obey the same bound). The negative control, the same
// mechanism with half the scale (2 eps), must be flagged.
func TestLikelihoodRatioAudit(t *testing.T) {
	const n = 1000000
	type sampler func(r *rand.Rand, v float64) int64
	run := func(name string, s sampler, v0, v1, eps float64) ([]string, int, float64) {
		h0, h1 := map[int64]int{}, map[int64]int{}
		r := rng.ForName(name)
		for range n {
			h0[s(r, v0)]++
			h1[s(r, v1)]++
		}
		return ratioAudit(h0, h1, eps)
	}
	const eps = 1.0
	ci, _ := dlap.NewInt(1, eps)
	half, _ := dlap.NewInt(1, 2*eps)
	cr, _ := dlap.New(3, 1, eps)
	halfR, _ := dlap.New(3, 1, 2*eps)
	binOf := func(m dlap.Mech, width float64) sampler {
		return func(r *rand.Rand, v float64) int64 { return int64(math.Floor(m.Release(r, v) / width)) }
	}
	for _, c := range []struct {
		name     string
		s        sampler
		v0, v1   float64
		violates bool
	}{
		{"count", func(r *rand.Rand, v float64) int64 { return ci.ReleaseInt(r, int64(v)) }, 0, 1, false},
		{"count-half-scale", func(r *rand.Rand, v float64) int64 { return half.ReleaseInt(r, int64(v)) }, 0, 1, true},
		{"real", binOf(cr, 3.0/4), 0, 3, false},
		{"real-half-scale", binOf(halfR, 3.0/4), 0, 3, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			fails, tested, maxLog := run(t.Name(), c.s, c.v0, c.v1, eps)
			t.Logf("%d bins tested, %d over eps = %g; largest empirical |log ratio| %.3f", tested, len(fails), eps, maxLog)
			if tested < 5 {
				t.Fatalf("only %d bins testable", tested)
			}
			if c.violates && len(fails) == 0 {
				t.Fatal("half the scale was not caught")
			}
			if !c.violates {
				for _, f := range fails {
					t.Error(f)
				}
			}
		})
	}
}

// oldLaplace is the float64 sampler this package replaces: v + b ln(w) with
// w = 1 - k 2^-53, the sign from the low bit.
func oldLaplace(r *rand.Rand, v, b float64) float64 {
	bits := r.Uint64()
	x := b * math.Log(1-float64(bits>>11)*0x1p-53)
	if bits&1 == 1 {
		x = -x
	}
	return v + x
}

// oldReachableFromZero reports whether x > 0 is an output of oldLaplace at
// input 0: some k with -b ln(1 - k 2^-53) == x exactly. The map k -> noise
// is monotone, so only the k next to the inverse (1 - e^{-x/b}) 2^53 can
// hit x; a window of +-64 covers the rounding of the inverse.
func oldReachableFromZero(x, b float64) bool {
	k0 := int64((-math.Expm1(-x / b)) * 0x1p53)
	for k := k0 - 64; k <= k0+64; k++ {
		if k >= 0 && k < 1<<53 && -b*math.Log(1-float64(k)*0x1p-53) == x {
			return true
		}
	}
	return false
}

// Mironov's attack (CCS 2012): an observer who sees one output x of the old
// sampler at input 1 and asks "could input 0 have produced x?" gets "no"
// for a large fraction of outputs (negative control: the attack works on
// the old sampler). With the grid mechanism every output at either input is
// a multiple of the grid within +-MaxUnits, and every such point has
// positive probability under both inputs (DLap has full support), so the
// reachable sets are identical and the same question is never answered
// "no".
func TestMironovAttack(t *testing.T) {
	const n, b = 20000, 1.0
	r := rng.ForName(t.Name())
	tried, unreachable := 0, 0
	for range n {
		x := oldLaplace(r, 1, b)
		if x <= 0.5 { // outputs both inputs reach with positive noise
			continue
		}
		tried++
		if !oldReachableFromZero(x, b) {
			unreachable++
		}
	}
	// Near x = 1.5 about 55% of the floats are not values of -b ln(w); the
	// share falls off for larger x. Require a tenth.
	t.Logf("old sampler: %d of %d outputs at input 1 impossible at input 0", unreachable, tried)
	if unreachable < tried/10 {
		t.Fatalf("negative control: only %d of %d old outputs distinguishable", unreachable, tried)
	}
	// The attack's premise holds for outputs of input 0 itself (positive
	// control of the reachability test).
	for range 2000 {
		if x := oldLaplace(r, 0, b); x > 0 && !oldReachableFromZero(x, b) {
			t.Fatalf("reachability test rejects an output of input 0: %v", x)
		}
	}
	m, _ := dlap.New(1, 1, 1/b)
	g := m.Grid()
	for _, v := range []float64{0, 1, 0.1, -1 + 1e-17} {
		for range n {
			x := m.Release(r, v)
			if u := x / g; u != math.Trunc(u) || math.Abs(u) > dlap.MaxUnits || math.IsInf(x, 0) || math.IsNaN(x) {
				t.Fatalf("input %v: output %v is not on the grid %v", v, x, g)
			}
		}
	}
}

// Sample and Release terminate and return finite values on the grid for any
// parameters New accepts and any input (NaN counts as 0, huge inputs are
// clamped).
func FuzzRelease(f *testing.F) {
	f.Add(1.0, uint8(1), 1.0, 0.5, uint64(1))
	f.Add(2.0, uint8(3), 1e-9, -1.0, uint64(2))
	f.Add(1e300, uint8(1), 1e300, math.Inf(1), uint64(3))
	f.Add(1e-300, uint8(200), math.MaxFloat64, math.NaN(), uint64(4))
	f.Add(3.0, uint8(1), 1e-16, 1e308, uint64(5))
	f.Fuzz(func(t *testing.T, delta float64, coords uint8, eps, v float64, seed uint64) {
		m, err := dlap.New(delta, int(coords), eps)
		if err != nil {
			return
		}
		if e := m.Epsilon(); !(e <= eps) || e <= 0 {
			t.Fatalf("%v: epsilon %v for budget %v", m, e, eps)
		}
		r := rng.Seeded(seed)
		for range 20 {
			x := m.Release(r, v)
			if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > math.Ldexp(dlap.MaxUnits, int(math.Log2(m.Grid()))) {
				t.Fatalf("%v: release %v for %v", m, x, v)
			}
			if u := x / m.Grid(); u != math.Trunc(u) {
				t.Fatalf("%v: release %v off the grid", m, x)
			}
		}
		if s := m.Variance(v); math.IsNaN(s) || s < 0 {
			t.Fatalf("%v: variance %v", m, s)
		}
	})
}

// Sample terminates with finite output for every num, den in [1, 2^62].
func FuzzSample(f *testing.F) {
	f.Add(uint64(1), uint64(1), uint64(1))
	f.Add(uint64(1<<62), uint64(1), uint64(2))
	f.Add(uint64(1), uint64(1<<62), uint64(3))
	f.Fuzz(func(t *testing.T, num, den, seed uint64) {
		num, den = num%(1<<62)+1, den%(1<<62)+1
		r := rng.Seeded(seed)
		for range 20 {
			dlap.Sample(r, num, den)
		}
	})
}

func BenchmarkRelease(b *testing.B) {
	m, _ := dlap.New(2, 1, 1)
	r := rng.ForName(b.Name())
	for b.Loop() {
		m.Release(r, 0.3)
	}
}

func BenchmarkSampleCount(b *testing.B) {
	m, _ := dlap.NewInt(1, 1)
	r := rng.ForName(b.Name())
	for b.Loop() {
		m.ReleaseInt(r, 17)
	}
}
