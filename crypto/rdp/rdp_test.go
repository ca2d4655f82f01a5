package rdp

import (
	"math"
	"testing"

	"github.com/ppboost/ppboost/crypto/dlap"
)

// TestZCDPAgainstExactGaussian: T Gaussian releases of sensitivity Delta and
// noise sigma are rho = T Delta^2/(2 sigma^2)-zCDP and, exactly, one
// Gaussian with mu = sqrt(T) Delta/sigma (Balle & Wang's profile). The
// accountant's eps must not be below the exact eps (that would be unsound)
// and should be within 25 % above it (the conversion's known slack at these
// budgets is 5-20 %). The negative control: the exact eps of half the noise
// (twice the mu) must exceed the accountant's eps for the real noise, so a
// composition that forgot a factor would be caught.
func TestZCDPAgainstExactGaussian(t *testing.T) {
	for _, c := range []struct {
		T     int
		sigma float64
		delta float64
	}{{1, 10, 1e-6}, {50, 200, 1e-6}, {200, 100, 1e-5}, {20, 3, 1e-6}, {1000, 50, 1e-6}} {
		rho := float64(c.T) / (2 * c.sigma * c.sigma)
		mu := math.Sqrt(float64(c.T)) / c.sigma
		got := ZCDPEpsilon(rho, c.delta)
		exact := GaussianEpsilon(mu, c.delta)
		if got < exact*(1-1e-9) || got > 1.25*exact {
			t.Errorf("T=%d sigma=%g: accountant eps %.5g, exact Gaussian %.5g (want within [1, 1.25]x)", c.T, c.sigma, got, exact)
		}
		if classic := rho + 2*math.Sqrt(rho*math.Log(1/c.delta)); got > classic {
			t.Errorf("T=%d sigma=%g: eps %.5g above the classical conversion %.5g", c.T, c.sigma, got, classic)
		}
		if wrong := GaussianEpsilon(2*mu, c.delta); wrong <= got {
			t.Errorf("negative control: half the noise gives exact eps %.5g, not above %.5g", wrong, got)
		}
		if back := ZCDPRho(got, c.delta); math.Abs(back-rho) > 1e-9*rho {
			t.Errorf("ZCDPRho(ZCDPEpsilon(%g)) = %g", rho, back)
		}
	}
}

// TestDiscreteGaussianRenyi checks by brute force (the PMFs summed over
// +-40 sigma) that the discrete Gaussian N_Z(0, s) shifted by an integer
// Delta has Renyi divergence at most alpha Delta^2/(2 s) (CKS 2020,
// Proposition 5): the bound the trainer's rho rests on. Its negative
// control, a quarter of the variance, exceeds the bound.
func TestDiscreteGaussianRenyi(t *testing.T) {
	renyi := func(s float64, shift int64, alpha float64) float64 {
		w := int64(40*math.Sqrt(s)) + 40
		sum := 0.0
		for x := -w; x <= w+shift; x++ {
			p, q := dlap.GaussPMF(s, x-shift), dlap.GaussPMF(s, x)
			sum += math.Pow(p, alpha) * math.Pow(q, 1-alpha)
		}
		return math.Log(sum) / (alpha - 1)
	}
	for _, c := range []struct {
		s     float64
		shift int64
	}{{1, 1}, {2, 1}, {10, 3}, {400, 16}, {4096, 64}} {
		for _, alpha := range []float64{1.5, 2, 4, 16} {
			bound := alpha * float64(c.shift*c.shift) / (2 * c.s)
			if d := renyi(c.s, c.shift, alpha); d > bound*(1+1e-9) {
				t.Errorf("s=%g shift=%d alpha=%g: D = %.6g above alpha Delta^2/(2s) = %.6g", c.s, c.shift, alpha, d, bound)
			}
			if d := renyi(c.s/4, c.shift, alpha); d <= bound {
				t.Errorf("negative control s=%g: D = %.6g not above %.6g", c.s/4, d, bound)
			}
		}
	}
}

// TestDLapClosedForm holds the closed-form discrete Laplace curve against
// the brute-force sum of the PMFs (dlap.PMF) over +-60 tau, for shifts 0 to
// 5 and small scales; the negative control is the curve of a scale 10 %
// smaller, which must differ by more than the tolerance.
func TestDLapClosedForm(t *testing.T) {
	brute := func(tau float64, k int64, alpha float64) float64 {
		num, den := uint64(tau*1000), uint64(1000)
		w := int64(60*tau) + 60
		s := 0.0
		for x := -w; x <= w+k; x++ {
			p, q := dlap.PMF(num, den, x-k), dlap.PMF(num, den, x)
			if p > 0 && q > 0 {
				s += math.Pow(p, alpha) * math.Pow(q, 1-alpha)
			}
		}
		return math.Log(s) / (alpha - 1)
	}
	for _, tau := range []float64{0.5, 2, 7.5, 40} {
		for k := int64(0); k <= 5; k++ {
			for _, alpha := range []float64{1.5, 2, 8, 32} {
				want := brute(tau, k, alpha)
				got := DLap(tau, k)(alpha)
				if math.Abs(got-want) > 1e-9*max(1, want) {
					t.Errorf("tau %g k %d alpha %g: closed form %.12g, brute force %.12g", tau, k, alpha, got, want)
				}
				if k > 0 {
					if wrong := DLap(tau*0.9, k)(alpha); math.Abs(wrong-want) <= 1e-9*max(1, want) {
						t.Errorf("negative control tau %g k %d: cannot tell scale %g", tau, k, tau*0.9)
					}
				}
			}
		}
	}
	// Pure DP is the limit: the curve never exceeds k/tau.
	if v := DLap(3, 2)(1e6); v > 2.0/3+1e-9 {
		t.Errorf("D_inf bound: %g > k/tau", v)
	}
}

// TestPureZCDPBoundsDLap: the exact discrete Laplace curve of one
// coordinate (DLap, held against the summed PMFs elsewhere in this file) is
// within PureZCDP(k/tau, k^2/(2 tau^2)), the bound the K-class federated
// Newton design adds up over coordinates (eps-DP implies eps^2/2-zCDP), at
// small and large shifts and over the orders the conversion searches; and
// the bound is tight to first order where the design works (k/tau small:
// within 5 % at alpha <= 8). Negative control: a bound from half the shift
// (k/2) falls below the exact curve.
func TestPureZCDPBoundsDLap(t *testing.T) {
	for _, c := range []struct {
		tau float64
		k   int64
	}{{50, 1}, {200, 3}, {1e4, 300}, {2, 5}, {3e7, 1 << 22}} {
		e := float64(c.k) / c.tau
		bound := PureZCDP(e, e*e/2)
		half := PureZCDP(e/2, e*e/8)
		exact := DLap(c.tau, c.k)
		for _, a := range []float64{1.01, 1.5, 2, 4, 8, 32, 256, 1e4} {
			x, b := exact(a), bound(a)
			if x > b*(1+1e-9) {
				t.Fatalf("tau %v k %d alpha %v: exact %v above the bound %v", c.tau, c.k, a, x, b)
			}
			if e < 0.05 && a <= 8 && x < 0.95*b {
				t.Errorf("tau %v k %d alpha %v: exact %v, bound %v: looser than 5 %%", c.tau, c.k, a, x, b)
			}
			if e < 0.05 && a <= 8 && half(a) >= x {
				t.Errorf("negative control: half the shift's bound %v not below the exact %v", half(a), x)
			}
		}
	}
}
