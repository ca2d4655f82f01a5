package dlap

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
)

// ErrParams is wrapped by every parameter error.
var ErrParams = errors.New("dlap: bad parameters")

const (
	// MaxUnits bounds |n + X| in grid units (a post-processing clamp).
	// Release converts the integer to float64 (exact up to 2^53, rounded to
	// nearest beyond: a fixed function of the integer, so still
	// post-processing, with one set of possible outputs for every input).
	MaxUnits = 1 << 61
	// maxInput bounds |v/g| before rounding.
	maxInput = 1 << 52
	// maxScale bounds num and den in Sample, and the clamp of X before n is
	// added (2^62 > MaxUnits + maxInput, so the clamp is hidden).
	maxScale = 1 << 62
	// maxNum bounds the scale of a Mech: P(|X| > MaxUnits) <
	// exp(-2^61/2^55) = e^-64, so the clamp costs no accuracy.
	maxNum = 1 << 55
	// fineDen is the denominator of a scale below 2^20 grid units.
	fineDen = 1 << 40
)

// bernFrac is Bernoulli(n/(d k)), n <= d k, from uniform integers.
func bernFrac(r *rand.Rand, n, d, k uint64) bool {
	if hi, lo := bits.Mul64(d, k); hi == 0 {
		return r.Uint64N(lo) < n
	}
	// d k overflows: the product of Bernoulli(n/d) and Bernoulli(1/k).
	return r.Uint64N(d) < n && r.Uint64N(k) == 0
}

// bernExp is Bernoulli(exp(-n/d)) for 0 <= n <= d (CKS Algorithm 1): the
// number K of the first failure of Bernoulli(gamma/K), K = 1, 2, ..., is
// odd with probability sum_k (-gamma)^k/k! = exp(-gamma).
func bernExp(r *rand.Rand, n, d uint64) bool {
	k := uint64(1)
	for bernFrac(r, n, d, k) {
		k++
	}
	return k%2 == 1
}

// Sample draws X with P(X = x) = (1 - a)/(1 + a) a^|x|, a = exp(-den/num),
// exactly (CKS Algorithm 2). num and den must be in [1, 2^62]. |X| saturates
// at 2^63 - 1 (probability below exp(-2^63/num) when den = 1).
func Sample(r *rand.Rand, num, den uint64) int64 {
	for {
		// X ~ Geometric(1 - exp(-1/num)) as U + num V: U uniform in
		// [0, num) kept with probability exp(-U/num), V the number of
		// Bernoulli(exp(-1)) successes before the first failure.
		u := r.Uint64N(num)
		if !bernExp(r, u, num) {
			continue
		}
		var v uint64 // 2^64 loop iterations would be needed to overflow
		for bernExp(r, 1, 1) {
			v++
		}
		hi, lo := bits.Mul64(num, v)
		var c uint64
		lo, c = bits.Add64(lo, u, 0)
		hi += c
		// Y = floor(X/den) ~ Geometric(1 - exp(-den/num)).
		y := uint64(math.MaxInt64)
		if hi < den {
			if q, _ := bits.Div64(hi, lo, den); q < y {
				y = q
			}
		}
		neg := r.Uint64()&1 == 1
		if neg && y == 0 {
			continue // -0: restart, so 0 is not counted twice
		}
		if neg {
			return -int64(y)
		}
		return int64(y)
	}
}

// Mech releases a real value of bounded sensitivity on the grid 2^exp with
// discrete Laplace noise. The zero value is not usable: build one with New
// or NewInt.
type Mech struct {
	exp      int    // grid = 2^exp
	sens     uint64 // Delta_int, integer sensitivity in grid units
	num, den uint64 // noise scale num/den grid units
	integer  bool   // NewInt: inputs are integers, no rounding slack
}

// New is the mechanism for a real-valued query of L1 sensitivity delta over
// coords coordinates that one record can change, at budget eps: the grid
// g = 2^floor(log2(min(delta, delta/eps) 2^-20/(coords+1))) (at least
// delta 2^-50), Delta_int = ceil(delta/g) + coords, and the scale
// ceil(Delta_int/eps) grid units (or, below 2^20 units, the rational
// ceil(Delta_int 2^40/eps)/2^40, at most 2^40 Delta_int: a budget so large
// is capped there, which only adds privacy). Each coordinate is released
// with its own Release call; the sum over the coords coordinates is the one
// query. A budget so small that the scale would pass 2^55 grid units
// coarsens the grid until it fits; it is an error when even a grid of
// delta leaves it above (eps below about (coords+1) 2^-55).
func New(delta float64, coords int, eps float64) (Mech, error) {
	if !(delta > 0) || math.IsInf(delta, 0) || coords < 1 || coords > 1<<20 || !(eps > 0) || math.IsInf(eps, 0) {
		return Mech{}, fmt.Errorf("%w: sensitivity %v over %d coordinates at eps %v", ErrParams, delta, coords, eps)
	}
	b := delta / eps
	_, de := math.Frexp(delta) // delta < 2^de
	e := de - 50               // the floor: delta/g < 2^50
	if x := math.Min(delta, b) / float64(coords+1); x >= math.SmallestNonzeroFloat64 {
		_, xe := math.Frexp(x) // 2^(xe-1) <= x < 2^xe
		e = max(e, xe-21)      // g = 2^(xe-21) <= x 2^-20
	}
	// A budget so small that the scale would pass 2^55 units coarsens the
	// grid (accuracy no longer matters there) until Delta_int is coords+1.
	units := math.Ceil(math.Ldexp(delta, -e)) + float64(coords)
	for units/eps > maxNum && units > float64(coords+1) {
		e++
		units = math.Ceil(math.Ldexp(delta, -e)) + float64(coords)
	}
	m := Mech{exp: e, sens: uint64(units)}
	if err := m.setScale(eps); err != nil {
		return Mech{}, fmt.Errorf("%w: sensitivity %v over %d coordinates at eps %v", err, delta, coords, eps)
	}
	return m, nil
}

// NewInt is the mechanism for an integer-valued query (a count) of integer
// L1 sensitivity sens at budget eps: grid 1, Delta_int = sens, and the
// scale as in New. Its inputs must be integers (ReleaseInt).
func NewInt(sens uint64, eps float64) (Mech, error) {
	if sens < 1 || sens > 1<<50 || !(eps > 0) || math.IsInf(eps, 0) {
		return Mech{}, fmt.Errorf("%w: integer sensitivity %d at eps %v", ErrParams, sens, eps)
	}
	m := Mech{exp: 0, sens: sens, integer: true}
	if err := m.setScale(eps); err != nil {
		return Mech{}, fmt.Errorf("%w: integer sensitivity %d at eps %v", err, sens, eps)
	}
	return m, nil
}

// setScale sets num/den >= sens/eps, so that Epsilon() <= eps.
func (m *Mech) setScale(eps float64) error {
	t := float64(m.sens) / eps // rounding is corrected below
	switch {
	case t >= 1<<20:
		if t > maxNum-1024 {
			return fmt.Errorf("%w: the noise scale %.3g grid units exceeds 2^55", ErrParams, t)
		}
		m.num, m.den = uint64(math.Ceil(t)), 1
	default:
		m.num, m.den = uint64(math.Max(1, math.Ceil(math.Ldexp(t, 40)))), fineDen
	}
	// Float rounding of t may leave num/den a hair below sens/eps: step num
	// up until the exact epsilon is within the budget.
	for m.epsRat().Cmp(ratOf(eps)) > 0 {
		m.num++
	}
	return nil
}

func ratOf(x float64) *big.Rat { return new(big.Rat).SetFloat64(x) }

// epsRat is Delta_int den/num, exactly.
func (m Mech) epsRat() *big.Rat {
	n := new(big.Int).Mul(new(big.Int).SetUint64(m.sens), new(big.Int).SetUint64(m.den))
	return new(big.Rat).SetFrac(n, new(big.Int).SetUint64(m.num))
}

// Epsilon is the guarantee of one release, Delta_int den/num, rounded up to
// a float64: neighbouring inputs change any output's probability by at most
// this factor's exponential.
func (m Mech) Epsilon() float64 {
	q := m.epsRat()
	f, _ := q.Float64() // the nearest float64
	if ratOf(f).Cmp(q) < 0 {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}

// Grid is g = 2^exp: every release is an integer multiple of it.
func (m Mech) Grid() float64 { return math.Ldexp(1, m.exp) }

// Sensitivity is Delta_int, in grid units.
func (m Mech) Sensitivity() uint64 { return m.sens }

// Scale is the noise scale num/den in grid units.
func (m Mech) Scale() (num, den uint64) { return m.num, m.den }

// RealScale is the noise scale in the input's units, g num/den.
func (m Mech) RealScale() float64 { return m.Grid() * float64(m.num) / float64(m.den) }

// NoiseVariance is the variance of g X: g^2 2a/(1-a)^2, a = exp(-den/num).
func (m Mech) NoiseVariance() float64 {
	x := float64(m.den) / float64(m.num)
	a, oma := math.Exp(-x), -math.Expm1(-x)
	return math.Ldexp(2*a/(oma*oma), 2*m.exp) // no Inf * 0 for huge grids
}

// Variance is the variance of Release(v): the noise variance plus the
// rounding variance g^2 f (1 - f), f = frac(v/g). It ignores the clamp at
// MaxUnits.
func (m Mech) Variance(v float64) float64 {
	x := m.scaled(v)
	f := x - math.Floor(x)
	return m.NoiseVariance() + math.Ldexp(f*(1-f), 2*m.exp)
}

// scaled is v/g clamped to +-2^52; NaN is 0 (the guarantee covers the
// query's valid, finite inputs).
func (m Mech) scaled(v float64) float64 {
	x := math.Ldexp(v, -m.exp)
	if math.IsNaN(x) {
		return 0
	}
	return math.Max(-maxInput, math.Min(maxInput, x))
}

// Units is the release in grid units: v/g rounded at random to a
// neighbouring integer (up with probability frac(v/g): unbiased), plus
// DLap(num/den), clamped to +-MaxUnits. For an integer mechanism v must be
// an integer (then no rounding draw is made).
func (m Mech) Units(r *rand.Rand, v float64) int64 {
	x := m.scaled(v)
	fl := math.Floor(x)
	n := int64(fl)
	if f := x - fl; f > 0 && r.Float64() < f {
		n++
	}
	return m.add(r, n)
}

// add returns clamp(n + X) for |n| <= 2^52.
func (m Mech) add(r *rand.Rand, n int64) int64 {
	z := max(-maxScale, min(maxScale, Sample(r, m.num, m.den)))
	return max(-MaxUnits, min(MaxUnits, n+z))
}

// Release is g Units(r, v) as a float64: exact (on the grid) below 2^53
// units, rounded to nearest beyond.
func (m Mech) Release(r *rand.Rand, v float64) float64 {
	return math.Ldexp(float64(m.Units(r, v)), m.exp)
}

// ReleaseInt is n + X, clamped to +-MaxUnits (n first to +-2^52), for an
// integer mechanism (NewInt) or a grid-1 one.
func (m Mech) ReleaseInt(r *rand.Rand, n int64) int64 {
	n = max(-maxInput, min(maxInput, n))
	if m.exp != 0 {
		return m.Units(r, float64(n))
	}
	return m.add(r, n)
}

// Integer reports whether the mechanism was made by NewInt.
func (m Mech) Integer() bool { return m.integer }

// PMF is P(X = x) for the mechanism's noise: (1-a)/(1+a) a^|x|.
func (m Mech) PMF(x int64) float64 { return PMF(m.num, m.den, x) }

// PMF is P(X = x) for DLap(num/den).
func PMF(num, den uint64, x int64) float64 {
	if x < 0 {
		x = -x
	}
	s := float64(den) / float64(num)
	oma := -math.Expm1(-s)
	return oma / (2 - oma) * math.Exp(-s*float64(x))
}

// String describes the mechanism.
func (m Mech) String() string {
	return fmt.Sprintf("dlap(grid 2^%d, sensitivity %d, scale %d/%d, eps %.6g)", m.exp, m.sens, m.num, m.den, m.Epsilon())
}
