package ldp

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sync"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

var allKinds = []Kind{None, Piecewise, Hybrid, Duchi, Laplace}

func TestParseKind(t *testing.T) {
	for _, k := range allKinds {
		for _, s := range []string{k.String(), fmt.Sprint(k)} {
			got, err := ParseKind(s)
			if err != nil || got != k {
				t.Errorf("ParseKind(%q) = %v, %v; want %v", s, got, err, k)
			}
		}
	}
	for s, want := range map[string]Kind{"PM": Piecewise, "Hm": Hybrid, "DUCHI": Duchi, "Laplace": Laplace, "NONE": None} {
		if got, err := ParseKind(s); err != nil || got != want {
			t.Errorf("ParseKind(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "gauss", "pm ", "piecewise", "p"} {
		if _, err := ParseKind(s); !errors.Is(err, ErrKind) {
			t.Errorf("ParseKind(%q): err %v, want ErrKind", s, err)
		}
	}
	if got := Kind(9).String(); got != "Kind(9)" {
		t.Errorf("Kind(9).String() = %q", got)
	}
	if Reject.String() != "reject" || Clip.String() != "clip" || Range(5).String() != "Range(5)" {
		t.Error("Range.String")
	}
}

func TestNewErrors(t *testing.T) {
	for _, k := range privateKinds {
		for _, eps := range []float64{0, -1, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 5e-324} {
			if _, err := New(k, eps, 1, Reject); !errors.Is(err, ErrEpsilon) {
				t.Errorf("%s eps %v: err %v, want ErrEpsilon", k, eps, err)
			}
		}
	}
	for _, k := range allKinds {
		for _, d := range []int{0, -3} {
			if _, err := New(k, 1, d, Reject); !errors.Is(err, ErrDimension) {
				t.Errorf("%s d = %d: err %v, want ErrDimension", k, d, err)
			}
		}
		if _, err := New(k, 1, 2, Range(7)); !errors.Is(err, ErrRange) {
			t.Errorf("%s policy 7: err %v, want ErrRange", k, err)
		}
	}
	if _, err := New(Kind(9), 1, 1, Reject); !errors.Is(err, ErrKind) {
		t.Errorf("kind 9: err %v, want ErrKind", err)
	}
	for _, eps := range []float64{0, math.NaN(), -1} {
		m, err := New(None, eps, 3, Reject)
		if err != nil {
			t.Fatalf("None must ignore eps %v: %v", eps, err)
		}
		if !math.IsInf(m.Epsilon(), 1) || m.Bound() != 1 || m.Dim() != 3 || m.Kind() != None {
			t.Errorf("None: eps %v bound %v dim %d kind %v", m.Epsilon(), m.Bound(), m.Dim(), m.Kind())
		}
	}
}

func TestPerturbErrors(t *testing.T) {
	r := rng.ForName(t.Name())
	for _, k := range allKinds {
		for _, d := range []int{1, 3} {
			m, err := New(k, 1, d, Reject)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s/d=%d", k, d)
			bad := func(x float64) []float64 { v := make([]float64, d); v[d-1] = x; return v }
			for _, c := range []struct {
				in   []float64
				want error
			}{
				{bad(math.NaN()), ErrNotFinite},
				{bad(math.Inf(1)), ErrNotFinite},
				{bad(math.Inf(-1)), ErrNotFinite},
				{bad(1.5), ErrOutOfRange},
				{bad(-1 - 1e-9), ErrOutOfRange},
			} {
				out := constVec(d, 42)
				if err := m.Perturb(r, c.in, out); !errors.Is(err, c.want) {
					t.Errorf("%s input %v: err %v, want %v", name, c.in, err, c.want)
				}
				if slices.ContainsFunc(out, func(x float64) bool { return x != 42 }) {
					t.Errorf("%s input %v: out written on error: %v", name, c.in, out)
				}
			}
			// Within 1e-12 of the ends is float rounding, accepted.
			out := make([]float64, d)
			if err := m.Perturb(r, bad(1+1e-13), out); err != nil {
				t.Errorf("%s 1+1e-13 with Reject: %v", name, err)
			}
			for _, l := range [][2]int{{d - 1, d}, {d, d + 1}, {d + 1, d + 1}, {0, 0}} {
				if err := m.Perturb(r, make([]float64, l[0]), make([]float64, l[1])); !errors.Is(err, ErrLength) {
					t.Errorf("%s lengths %v: err %v, want ErrLength", name, l, err)
				}
			}
		}
	}
}

// TestClip: under Clip an input beyond [-1, 1] is perturbed exactly as its
// clipped value (same seed, same output).
func TestClip(t *testing.T) {
	for _, k := range allKinds {
		for _, d := range []int{1, 3} {
			c, _ := New(k, 1, d, Clip)
			rj, _ := New(k, 1, d, Reject)
			wild := []float64{1.5, -7, 0.25}[:d]
			tame := []float64{1, -1, 0.25}[:d]
			got, want := make([]float64, d), make([]float64, d)
			seed := rng.SeedOf(t.Name())
			if err := c.Perturb(rng.Seeded(seed), wild, got); err != nil {
				t.Fatalf("%s d=%d with Clip: %v", k, d, err)
			}
			if err := rj.Perturb(rng.Seeded(seed), tame, want); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s d=%d: Clip(%v) gave %v, Reject(%v) gave %v", k, d, wild, got, tame, want)
			}
			if k == None && !slices.Equal(got, tame) {
				t.Errorf("None with Clip gave %v, want %v", got, tame)
			}
			if v := c.Variance(wild, 0); v != rj.Variance(tame, 0) {
				t.Errorf("%s d=%d: Variance of a clipped input %v, want %v", k, d, v, rj.Variance(tame, 0))
			}
		}
	}
}

func TestVarianceOutOfRange(t *testing.T) {
	for _, k := range allKinds {
		m, _ := New(k, 1, 3, Reject)
		in := []float64{0, 0.5, 1}
		for _, j := range []int{-1, 3} {
			if v := m.Variance(in, j); !math.IsNaN(v) {
				t.Errorf("%s Variance(j=%d) = %v, want NaN", k, j, v)
			}
		}
		if v := m.Variance(in[:1], 2); !math.IsNaN(v) {
			t.Errorf("%s Variance with short t = %v, want NaN", k, v)
		}
		if v := m.Variance([]float64{0, math.NaN(), 0}, 1); !math.IsNaN(v) {
			t.Errorf("%s Variance of NaN input = %v, want NaN", k, v)
		}
	}
}

func TestAliasing(t *testing.T) {
	for _, c := range []struct {
		d   int
		eps float64
	}{{1, 1}, {6, 5}, {40, 100}} {
		for _, k := range allKinds {
			m, _ := New(k, c.eps, c.d, Reject)
			in := make([]float64, c.d)
			for j := range in {
				in[j] = math.Sin(float64(j + 1))
			}
			seed := rng.SeedOf(t.Name())
			out := make([]float64, c.d)
			if err := m.Perturb(rng.Seeded(seed), in, out); err != nil {
				t.Fatal(err)
			}
			inPlace := slices.Clone(in)
			if err := m.Perturb(rng.Seeded(seed), inPlace, inPlace); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out, inPlace) {
				t.Errorf("%s d=%d: in place %v, separate %v", k, c.d, inPlace, out)
			}
		}
	}
}

func TestBoundsAndClosedForms(t *testing.T) {
	for _, eps := range []float64{0.1, 0.5, 1, 2, 5, 20} {
		z, e := math.Exp(eps/2), math.Exp(eps)
		c, dd := (z+1)/(z-1), (e+1)/(e-1)
		near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-12*math.Abs(want) }
		pm, _ := New(Piecewise, eps, 1, Reject)
		du, _ := New(Duchi, eps, 1, Reject)
		hm, _ := New(Hybrid, eps, 1, Reject)
		la, _ := New(Laplace, eps, 1, Reject)
		if !near(pm.Bound(), c) || !near(du.Bound(), dd) {
			t.Errorf("eps %g: bounds PM %v Duchi %v, want C = %v, D = %v", eps, pm.Bound(), du.Bound(), c, dd)
		}
		wantHM := dd
		if eps > EpsStar {
			wantHM = math.Max(c, dd)
		}
		// Laplace: the clamp 1 + 64 b', b' = g num/den the discrete scale
		// (b <= b' <= b (1 + 2^-19), b = 2d/eps, d = 1), rounded up to the
		// grid g <= b 2^-20.
		b := 2 / eps
		if lb := la.Bound(); !near(hm.Bound(), wantHM) || lb < 1+64*b || lb > 1+64*b*(1+0x1p-19)+b*0x1p-20 {
			t.Errorf("eps %g: bounds HM %v Laplace %v", eps, hm.Bound(), la.Bound())
		}
		for _, x := range inputs {
			in := []float64{x}
			if got, want := pm.Variance(in, 0), x*x/(z-1)+(z+3)/(3*(z-1)*(z-1)); !near(got, want) {
				t.Errorf("PM eps %g t %g: variance %v, want %v", eps, x, got, want)
			}
			if got, want := du.Variance(in, 0), dd*dd-x*x; !near(got, want) {
				t.Errorf("Duchi eps %g t %g: variance %v, want %v", eps, x, got, want)
			}
			// The discrete Laplace variance is within 2^-18 of 2b^2 = 8/eps^2
			// (scale within 2^-19 of b; rounding adds at most g^2/4 <= b^2 2^-42).
			if got, want := la.Variance(in, 0), 8/(eps*eps); math.Abs(got-want) > 0x1p-18*want {
				t.Errorf("Laplace eps %g: variance %v, want %v", eps, got, want)
			}
			if eps > EpsStar {
				// Above eps*, HM's variance does not depend on t.
				want := (z+3)/(3*z*(z-1)) + (e+1)*(e+1)/(z*(e-1)*(e-1))
				if got := hm.Variance(in, 0); !near(got, want) {
					t.Errorf("HM eps %g t %g: variance %v, want %v", eps, x, got, want)
				}
			}
		}
		// PM's worst case |t| = 1: 4z/(3(z-1)^2).
		if got, want := pm.Variance([]float64{-1}, 0), 4*z/(3*(z-1)*(z-1)); !near(got, want) {
			t.Errorf("PM eps %g: worst-case variance %v, want %v", eps, got, want)
		}
		for _, d := range []int{2, 3, 20} {
			m, _ := New(Duchi, eps, d, Reject)
			if got, want := m.Bound(), dd*duchiCdExact(d); !near(got, want) {
				t.Errorf("Duchi eps %g d %d: bound %v, want D C_d = %v", eps, d, got, want)
			}
		}
	}
	z := math.Exp(EpsStar / 2)
	if p := 3*z*z*z - z*z + z - 7; math.Abs(p) > 1e-13 {
		t.Errorf("EpsStar: 3z^3 - z^2 + z - 7 = %v at z = e^{eps*/2}", p)
	}
}

// TestHybridThreshold: at or below eps* HM is Duchi, draw for draw.
func TestHybridThreshold(t *testing.T) {
	for _, eps := range []float64{0.1, 0.5, EpsStar} {
		hm, _ := New(Hybrid, eps, 1, Reject)
		du, _ := New(Duchi, eps, 1, Reject)
		r1, r2 := rng.Seeded(7), rng.Seeded(7)
		a, b := []float64{0}, []float64{0}
		for i := range 100 {
			in := []float64{math.Sin(float64(i))}
			hm.Perturb(r1, in, a)
			du.Perturb(r2, in, b)
			if a[0] != b[0] {
				t.Fatalf("eps %g: HM %v, Duchi %v", eps, a[0], b[0])
			}
		}
	}
	above, _ := New(Hybrid, math.Nextafter(EpsStar, 1), 1, Reject)
	if above.(*scalar).one.alpha <= 0 {
		t.Error("HM just above eps* has alpha = 0")
	}
}

// duchiCdExact evaluates LDP-REFERENCE.md's C_d with exact rationals:
// 2^{d-1}/binom(d-1, (d-1)/2) for odd d, 2^{d-1}/binom(d-1, d/2) for even d
// (the half-weighted tie rule).
func duchiCdExact(d int) float64 {
	pow := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), uint(d-1)))
	k := int64((d - 1) / 2)
	if d%2 == 0 {
		k = int64(d / 2)
	}
	c := new(big.Rat).Quo(pow, new(big.Rat).SetInt(new(big.Int).Binomial(int64(d-1), k)))
	f, _ := c.Float64()
	return f
}

func TestDuchiCd(t *testing.T) {
	ds := []int{199, 200, 1023, 1024, 1025, 1026, 1027, 4096, 10001}
	for d := 1; d <= 64; d++ {
		ds = append(ds, d)
	}
	for _, d := range ds {
		got, want := duchiCd(d), duchiCdExact(d)
		// The recurrence and the series are good to a few 1e-15.
		if math.Abs(got-want) > 1e-14*want {
			t.Errorf("C_%d = %v, exact %v (rel %.1e)", d, got, want, math.Abs(got-want)/want)
		}
	}
	if got := duchiCd(1_000_000); math.IsInf(got, 0) || math.IsNaN(got) {
		t.Errorf("C_1e6 = %v", got)
	}
}

// TestExtremeEpsilon: tiny and huge budgets give finite constants, finite
// outputs inside Bound, and a finite non-negative or +Inf variance. Huge
// budgets make PM return t.
func TestExtremeEpsilon(t *testing.T) {
	r := rng.ForName(t.Name())
	for _, k := range privateKinds {
		for _, eps := range []float64{1e-300, 1e-9, 700, 1e6, math.MaxFloat64} {
			for _, d := range []int{1, 3} {
				m, err := New(k, eps, d, Reject)
				if k == Laplace && eps < 1e-200 {
					// The exact discrete sampler needs its scale 2d/eps within
					// 2^55 grid units (eps/d >= about 2^-54): a smaller budget
					// is refused rather than released with a larger eps.
					if !errors.Is(err, ErrEpsilon) {
						t.Errorf("laplace eps %g d %d: %v, want ErrEpsilon", eps, d, err)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s eps %g d %d: %v", k, eps, d, err)
					continue
				}
				in := []float64{0.25, -1, 1}[:d]
				out := make([]float64, d)
				for range 200 {
					if err := m.Perturb(r, in, out); err != nil {
						t.Fatal(err)
					}
					for j, x := range out {
						if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > m.Bound() {
							t.Fatalf("%s eps %g d %d: output %v (bound %v)", k, eps, d, out, m.Bound())
						}
						if k == Piecewise && d == 1 && eps >= 700 && x != in[j] {
							t.Fatalf("PM at eps %g gave %v for %v", eps, x, in[j])
						}
					}
				}
				if s, ok := m.(*sampled); ok && eps >= 700 && s.k != d {
					t.Errorf("%s eps %g d %d: k = %d, want d", k, eps, d, s.k)
				}
				for j := range d {
					if v := m.Variance(in, j); math.IsNaN(v) || v < 0 {
						t.Errorf("%s eps %g d %d: variance %v", k, eps, d, v)
					}
				}
			}
		}
	}
}

func TestNoAllocs(t *testing.T) {
	r := rng.ForName(t.Name())
	for _, k := range allKinds {
		for _, c := range []struct {
			d   int
			eps float64
		}{{1, 1}, {5, 1}, {20, 10}, {100, 100}, {1000, 1}} {
			m, _ := New(k, c.eps, c.d, Reject)
			in := make([]float64, c.d)
			for j := range in {
				in[j] = math.Cos(float64(j))
			}
			out := make([]float64, c.d)
			if a := testing.AllocsPerRun(50, func() { m.Perturb(r, in, out) }); a != 0 {
				t.Errorf("%s d=%d eps=%g: %v allocations per Perturb", k, c.d, c.eps, a)
			}
		}
	}
}

// TestConcurrentUse shares one Mechanism between goroutines (each with its
// own random source) and checks the outputs match a serial run; under
// -race it also checks that Perturb does not write shared state.
func TestConcurrentUse(t *testing.T) {
	const workers, per = 4, 200
	for _, k := range allKinds {
		m, _ := New(k, 5, 7, Reject)
		in := []float64{-1, -0.5, 0, 0.5, 1, 0.3, -0.3}
		serial := make([][]float64, workers)
		for w := range workers {
			r := rng.Derive(1, uint64(w))
			for range per {
				out := make([]float64, 7)
				m.Perturb(r, in, out)
				serial[w] = append(serial[w], out...)
			}
		}
		var wg sync.WaitGroup
		par := make([][]float64, workers)
		for w := range workers {
			wg.Go(func() {
				r := rng.Derive(1, uint64(w))
				out := make([]float64, 7)
				for range per {
					if err := m.Perturb(r, in, out); err != nil {
						t.Error(err)
						return
					}
					par[w] = append(par[w], out...)
				}
			})
		}
		wg.Wait()
		for w := range workers {
			if !slices.Equal(serial[w], par[w]) {
				t.Errorf("%s: worker %d differs from the serial run", k, w)
			}
		}
	}
}
