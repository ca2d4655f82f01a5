package dlap

import (
	"math"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

// TestBernoulliExp checks Bernoulli(exp(-n/d)) frequencies for gammas below,
// at and above 1 (the integer part takes another path) within 5 standard
// errors of n draws, sqrt(p(1-p)/n).
func TestBernoulliExp(t *testing.T) {
	r := rng.Seeded(11)
	const n = 200000
	for _, c := range []struct{ num, den uint64 }{{0, 1}, {1, 3}, {1, 1}, {7, 4}, {5, 2}, {1 << 40, 1 << 41}} {
		p := math.Exp(-float64(c.num) / float64(c.den))
		k := 0
		for range n {
			if BernoulliExp(r, c.num, c.den) {
				k++
			}
		}
		got := float64(k) / n
		se := math.Sqrt(p*(1-p)/n) + 1e-12
		if math.Abs(got-p) > 5*se {
			t.Errorf("BernoulliExp(%d/%d) = %.5f, want %.5f (5 se = %.5f)", c.num, c.den, got, p, 5*se)
		}
	}
}

// TestSampleGaussMoments checks the sampler against N_Z(0, s): the mean
// within 5 standard errors (sd/sqrt(n)), the variance within 5 of its
// standard errors (sqrt(2) var/sqrt(n), the Gaussian fourth moment), for
// small and large s, including s = 1 (t = 2) and a non-square s. The
// negative control: a sampler of the wrong variance (s+s/10) is caught by
// the same tolerance.
func TestSampleGaussMoments(t *testing.T) {
	r := rng.Seeded(3)
	const n = 100000
	for _, s := range []uint64{1, 2, 10, 1000, 123457, 1 << 24, MaxGaussVariance} {
		var sum, sq float64
		for range n {
			x := float64(SampleGauss(r, s))
			sum += x
			sq += x * x
		}
		mean, v := sum/n, sq/n
		want := gaussVar(float64(s))
		if math.Abs(mean) > 5*math.Sqrt(want/n) {
			t.Errorf("s=%d: mean %.4g, 5 se %.4g", s, mean, 5*math.Sqrt(want/n))
		}
		tol := 5 * math.Sqrt2 * want / math.Sqrt(n)
		if math.Abs(v-want) > tol {
			t.Errorf("s=%d: variance %.6g, want %.6g +- %.3g", s, v, want, tol)
		}
		if wrong := want * 1.1; math.Abs(v-wrong) <= tol {
			t.Errorf("s=%d: the test cannot tell variance %.6g from %.6g", s, v, wrong)
		}
	}
}

// gaussVar is the exact variance of N_Z(0, s) (below s; equal to it within
// 1e-12 relative for s >= 10).
func gaussVar(s float64) float64 {
	if s >= 10 {
		return s
	}
	var z, m float64
	for k := -200.0; k <= 200; k++ {
		w := math.Exp(-k * k / (2 * s))
		z += w
		m += k * k * w
	}
	return m / z
}

// TestSampleGaussPMF is a chi-square goodness-of-fit test of N_Z(0, 4) over
// 200,000 draws, the tails |x| > 8 pooled: the statistic's 99.99 %
// quantile for 17 degrees of freedom is about 45; the negative control (the
// PMF of N_Z(0, 4.4)) must fail it.
func TestSampleGaussPMF(t *testing.T) {
	r := rng.Seeded(5)
	const n, w = 200000, 8
	counts := make(map[int64]int)
	for range n {
		x := SampleGauss(r, 4)
		if x > w {
			x = w + 1
		} else if x < -w {
			x = -w - 1
		}
		counts[x]++
	}
	chi := func(s float64) float64 {
		c := 0.0
		tail := 0.0
		for x := int64(-w); x <= w; x++ {
			e := n * GaussPMF(s, x)
			tail += GaussPMF(s, x)
			d := float64(counts[x]) - e
			c += d * d / e
		}
		e := n * (1 - tail)
		d := float64(counts[w+1]+counts[-w-1]) - e
		return c + d*d/e
	}
	if c := chi(4); c > 45 {
		t.Errorf("chi-square vs N_Z(0,4) = %.1f, above the 99.99 %% quantile 45", c)
	}
	if c := chi(4.4); c <= 45 {
		t.Errorf("negative control: chi-square vs N_Z(0,4.4) = %.1f, the test cannot tell them apart", c)
	}
}
