package dpnoise

import (
	"fmt"
	"math"
	"testing"

	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/rng"
)

// alpha is the false-rejection rate of every goodness-of-fit assertion
// below: with a handful of fixed-seed checks the suite fails by chance with
// probability below 1e-3 if the samplers are right.
const alpha = 1e-4

// The design identity: h shares of NB(1/h, a) differences are exactly
// DLap(a), so the exact pmf of the sum of h shares must equal the discrete
// Laplace pmf (to the truncation of the series, 1e-18 relative, plus
// Lgamma rounding, ~1e-13).
func TestHSharesAreDiscreteLaplace(t *testing.T) {
	for _, h := range []int{1, 3, 7} {
		p := Params{Scale: 2.5, Honest: h}
		for k := int64(-30); k <= 30; k++ {
			got, want := p.SumPMF(h, k), DLapPMF(p.A(), k)
			if math.Abs(got-want) > 1e-10*want+1e-15 {
				t.Fatalf("h=%d: P(sum=%d) = %.15g, DLap gives %.15g", h, k, got, want)
			}
		}
	}
}

// sumShares draws n samples of the sum of k contributors' shares.
func sumShares(p Params, k, n int, seed string) []int64 {
	r := rng.ForName(seed)
	out := make([]int64, n)
	for i := range out {
		var s int64
		for range k {
			s += p.Share(r)
		}
		out[i] = s
	}
	return out
}

// For n = 8 contributors with shares sized for h = 5 honest ones, every
// number of dropped (or colluding, hence subtracted) contributors the
// design allows, 0 to n-h, leaves a sum whose noise has the exact pmf of
// NB(k/h) - NB(k/h) — DLap(t) itself when k = h. Chi-square against that
// pmf with the critical value at alpha.
func TestSumOfSharesHasTargetPMF(t *testing.T) {
	const n, h, samples = 8, 5, 40000
	p := Params{Scale: 3, Honest: h}
	for dropped := 0; dropped <= n-h; dropped++ {
		k := n - dropped
		t.Run(fmt.Sprintf("dropped=%d", dropped), func(t *testing.T) {
			s := sumShares(p, k, samples, t.Name())
			stat, df := ChiSquare(s, func(x int64) float64 { return p.SumPMF(k, x) })
			crit := ChiSquareCritical(df, alpha)
			t.Logf("k=%d: chi2 = %.1f, df = %d, critical %.1f", k, stat, df, crit)
			if stat > crit {
				t.Fatalf("chi2 = %.1f > %.1f (df %d, alpha %g)", stat, crit, df, alpha)
			}
		})
	}
}

// Negative control: the same test rejects shares of the wrong scale (15%
// too small, i.e. too little noise) and shares sized for one honest
// contributor when the target assumes the sum of five (each share a full
// DLap: 5 times the variance).
func TestWrongNoiseIsRejected(t *testing.T) {
	const samples = 40000
	target := Params{Scale: 3, Honest: 5}
	pmf := func(x int64) float64 { return target.SumPMF(5, x) }
	cases := []struct {
		name string
		p    Params
		k    int
	}{
		{"scale-15%", Params{Scale: 3 * 0.85, Honest: 5}, 5},
		{"sized-for-one", Params{Scale: 3, Honest: 1}, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := sumShares(c.p, c.k, samples, t.Name())
			stat, df := ChiSquare(s, pmf)
			crit := ChiSquareCritical(df, alpha)
			if stat <= crit {
				t.Fatalf("wrong noise accepted: chi2 = %.1f <= %.1f (df %d)", stat, crit, df)
			}
			t.Logf("rejected: chi2 = %.1f > %.1f", stat, crit)
		})
	}
}

// At production scales (t ~ 10^6..10^8 encoded units, where the pmf cannot
// be tabulated cheaply) the sum's mean and variance match the design.
// Tolerances: the sample mean has sd sigma/sqrt(N); the sample variance has
// sd sigma^2 sqrt((2 + ex)/N), ex the excess kurtosis of NB(r)-NB(r),
// ex = (6/r + (1-a)^2/(r a))/2 (cumulants of a difference of iid
// variables: kappa4 doubles, kappa2 doubles). Both within 5 sd.
func TestLargeScaleMoments(t *testing.T) {
	const n, h, samples = 6, 4, 20000
	codec, _ := field.NewCodec(field.DefaultScaleBits)
	p, err := ForEpsilon(0.5, 2, codec, 2, h) // a node histogram of sensitivity 2 at eps 0.5
	if err != nil {
		t.Fatal(err)
	}
	for k := h; k <= n; k++ {
		s := sumShares(p, k, samples, fmt.Sprintf("%s/%d", t.Name(), k))
		mean, m2 := 0.0, 0.0
		for _, x := range s {
			mean += float64(x)
		}
		mean /= samples
		for _, x := range s {
			d := float64(x) - mean
			m2 += d * d
		}
		v := m2 / (samples - 1)
		want := p.SumVariance(k)
		a, r := p.A(), float64(k)/h
		ex := (6/r + (1-a)*(1-a)/(r*a)) / 2
		if sd := math.Sqrt(want / samples); math.Abs(mean) > 5*sd {
			t.Fatalf("k=%d: mean %.4g, 5 sd = %.4g", k, mean, 5*sd)
		}
		if sd := want * math.Sqrt((2+ex)/samples); math.Abs(v-want) > 5*sd {
			t.Fatalf("k=%d: variance %.4g, want %.4g +- %.3g", k, v, want, 5*sd)
		}
		// In decoded units the scale of the k = h sum is t/S = 2/eps = 4
		// (plus the 2/S rounding term).
		t.Logf("k=%d: sd %.4g encoded = %.4g decoded (DLap(t) sd sqrt(2) t/S = %.4g)", k, math.Sqrt(v), math.Sqrt(v)/codec.Scale(),
			math.Sqrt2*p.RealScale(codec))
	}
}

func TestForEpsilon(t *testing.T) {
	codec, _ := field.NewCodec(24)
	p, err := ForEpsilon(1, 2, codec, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Delta_int = 2 * 2^24 + 2.
	if want := 2*float64(1<<24) + 2; p.Scale != want {
		t.Fatalf("scale %v, want %v", p.Scale, want)
	}
	if eps := p.Epsilon(IntSensitivity(2, codec, 2)); math.Abs(eps-1) > 1e-12 {
		t.Fatalf("epsilon %v, want 1", eps)
	}
	for _, bad := range []Params{{Scale: 0, Honest: 1}, {Scale: 1, Honest: 0}, {Scale: math.Inf(1), Honest: 1}} {
		if bad.Validate() == nil {
			t.Fatalf("%+v accepted", bad)
		}
	}
}

// The Noise hook adds a share to every coordinate, in the field.
func TestNoiseHook(t *testing.T) {
	p := Params{Scale: 2, Honest: 1}
	enc := make([]field.Elem, 1000)
	if err := p.Noise(rng.ForName(t.Name()))(enc); err != nil {
		t.Fatal(err)
	}
	nonzero := 0
	for _, e := range enc {
		if e.Int() != 0 {
			nonzero++
		}
	}
	// P(DLap(a)=0) = (1-a)/(1+a) = 0.245 at t = 2: about 755 of 1000 nonzero,
	// sd sqrt(1000 * 0.245 * 0.755) = 13.6.
	if nonzero < 755-70 || nonzero > 755+70 {
		t.Fatalf("%d of 1000 coordinates got noise, want about 755", nonzero)
	}
	if (Params{}).Noise(nil)(enc) == nil {
		t.Fatal("zero params accepted")
	}
}

func BenchmarkShareLarge(b *testing.B) {
	codec, _ := field.NewCodec(24)
	p, _ := ForEpsilon(0.1, 2, codec, 2, 10)
	r := rng.ForName(b.Name())
	for b.Loop() {
		p.Share(r)
	}
}

// Poisson against its exact pmf e^-lam lam^k/k!, on both sides of the
// switch to PTRS at 10: Pearson chi-square over cells k = 0, 1, ... with
// expected count >= 5 and the upper tail merged into the last cell,
// critical value at alpha (Wilson-Hilferty).
func TestPoissonPMF(t *testing.T) {
	const n = 100000
	for _, lam := range []float64{1e-3, 0.5, 3, 9.99, 10, 25} {
		r := rng.ForName(fmt.Sprint(t.Name(), lam))
		counts := map[int64]float64{}
		for range n {
			k := Poisson(r, lam)
			if k < 0 {
				t.Fatalf("lam %v: negative draw %d", lam, k)
			}
			counts[k]++
		}
		pmf := func(k int64) float64 {
			lg, _ := math.Lgamma(float64(k) + 1)
			return math.Exp(-lam + float64(k)*math.Log(lam) - lg)
		}
		var stat, mass, obs, exp float64
		cells := 0
		for k := int64(0); ; k++ {
			obs += counts[k]
			exp += n * pmf(k)
			mass += pmf(k)
			if exp >= 5 && n*(1-mass) >= 5 {
				stat += (obs - exp) * (obs - exp) / exp
				obs, exp = 0, 0
				cells++
			}
			if n*(1-mass) < 5 {
				// The rest (this cell's remainder and the tail) is one cell.
				rest := 0.0
				for kk, c := range counts {
					if kk > k {
						rest += c
					}
				}
				o, e := obs+rest, exp+n*(1-mass)
				stat += (o - e) * (o - e) / e
				cells++
				break
			}
		}
		df := max(cells-1, 1)
		crit := ChiSquareCritical(df, alpha)
		t.Logf("lam %v: chi2 %.1f, df %d, critical %.1f", lam, stat, df, crit)
		if stat > crit {
			t.Errorf("lam %v: chi2 %.1f > %.1f", lam, stat, crit)
		}
	}
}

// The samplers terminate with finite, non-negative draws at extreme
// parameters (termination holds with probability 1 for a random stream; a
// constant stream can stall any rejection sampler and is not a case).
func TestSamplersTerminate(t *testing.T) {
	r0 := rng.ForName(t.Name() + "/poisson")
	for _, lam := range []float64{1e-300, 1e-3, 9.999999, 10, 1e6, 1e15} {
		for range 100 {
			if k := Poisson(r0, lam); k < 0 {
				t.Fatalf("Poisson(%v) = %d", lam, k)
			}
		}
	}
	r := rng.ForName(t.Name())
	for _, shape := range []float64{1e-6, 0.2, 1, 50} {
		for _, a := range []float64{1e-12, 0.5, 1 - 1e-9} {
			for range 100 {
				if k := Polya(r, shape, a); k < 0 {
					t.Fatalf("Polya(%v, %v) = %d", shape, a, k)
				}
			}
		}
	}
}

// With h = 1 a share is DLap(t) drawn by the exact integer sampler: its
// pmf passes the chi-square test against DLap's (alpha), for scales that are
// integers, dyadic fractions and general floats.
func TestSingleHonestShareIsExactDLap(t *testing.T) {
	const samples = 100000
	for _, scale := range []float64{1, 2.5, 3.7, 0.3} {
		p := Params{Scale: scale, Honest: 1}
		if _, _, ok := ratio(scale); !ok {
			t.Fatalf("scale %v has no exact ratio", scale)
		}
		s := sumShares(p, 1, samples, fmt.Sprint(t.Name(), scale))
		stat, df := ChiSquare(s, func(x int64) float64 { return DLapPMF(p.A(), x) })
		crit := ChiSquareCritical(max(df, 1), alpha)
		t.Logf("scale %v: chi2 %.1f, df %d, critical %.1f", scale, stat, df, crit)
		if stat > crit {
			t.Errorf("scale %v: chi2 %.1f > %.1f", scale, stat, crit)
		}
	}
	for _, bad := range []float64{0, math.Inf(1), math.NaN(), 1e300} {
		if _, _, ok := ratio(bad); ok {
			t.Errorf("ratio(%v) accepted", bad)
		}
	}
}
