package field

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// P is the field modulus, the Mersenne prime 2^61 - 1.
const P uint64 = 1<<61 - 1

// half is (P-1)/2 = 2^60 - 1, the largest magnitude the centered lift
// represents.
const half = (P - 1) / 2

// Errors. Every error this package returns wraps exactly one of these.
var (
	ErrZeroInverse = errors.New("field: zero has no inverse")
	ErrNotFinite   = errors.New("field: value is NaN or infinite")
	ErrOverflow    = errors.New("field: value too large for the field at this scale")
	ErrBudget      = errors.New("field: secure sum would overflow the field")
	ErrScale       = errors.New("field: scale bits must be in [0, 52]")
	ErrLength      = errors.New("field: vectors of different lengths")
)

// Elem is a field element. Every function and method of this package returns
// the canonical representative in [0, P) and expects canonical arguments;
// convert outside values with New (or check them against P) first.
type Elem uint64

// New reduces v mod P.
func New(v uint64) Elem {
	// v = hi*2^61 + lo with 2^61 = 1 (mod P); lo + hi <= 2^61 - 1 + 7 < 2P.
	s := (v & P) + (v >> 61)
	if s >= P {
		s -= P
	}
	return Elem(s)
}

// FromInt maps v to v mod P: non-negative v to v mod P, negative v to
// P - (|v| mod P) (zero when P divides |v|). math.MinInt64 is handled.
func FromInt(v int64) Elem {
	if v >= 0 {
		return New(uint64(v))
	}
	// -(v+1) cannot overflow; adding 1 back in uint64 gives |v| <= 2^63.
	return New(uint64(-(v + 1)) + 1).Neg()
}

// Add returns a + b mod P.
func (a Elem) Add(b Elem) Elem {
	s := uint64(a) + uint64(b) // < 2P, no overflow
	if s >= P {
		s -= P
	}
	return Elem(s)
}

// Sub returns a - b mod P.
func (a Elem) Sub(b Elem) Elem {
	if a >= b {
		return a - b
	}
	return Elem(uint64(a) + P - uint64(b))
}

// Neg returns -a mod P.
func (a Elem) Neg() Elem {
	if a == 0 {
		return 0
	}
	return Elem(P - uint64(a))
}

// Mul returns a * b mod P from the 128-bit product hi*2^64 + lo
// (math/bits.Mul64). Since 2^61 = 1 (mod P), the product x is congruent to
// (x mod 2^61) + (x >> 61). For canonical a, b the product is at most
// (P-1)^2, so x >> 61 <= P-2 and the sum is below 2P: one conditional
// subtraction finishes the reduction.
func (a Elem) Mul(b Elem) Elem {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	s := (lo & P) + (lo>>61 | hi<<3)
	if s >= P {
		s -= P
	}
	return Elem(s)
}

// MulAdd returns a*b + c mod P with a single reduction: c is added to the
// 128-bit product before folding. The total is at most (P-1)^2 + (P-1) =
// P(P-1), whose top bits (x >> 61) are at most P-2, so again one conditional
// subtraction suffices. It is the step of Horner's rule and of a dot product.
func (a Elem) MulAdd(b, c Elem) Elem {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	lo, carry := bits.Add64(lo, uint64(c), 0)
	hi += carry
	s := (lo & P) + (lo>>61 | hi<<3)
	if s >= P {
		s -= P
	}
	return Elem(s)
}

// Pow returns a^e by square-and-multiply (0^0 = 1).
func (a Elem) Pow(e uint64) Elem {
	r := Elem(1)
	for e > 0 {
		if e&1 == 1 {
			r = r.Mul(a)
		}
		a = a.Mul(a)
		e >>= 1
	}
	return r
}

// Inv returns the multiplicative inverse a^(P-2) (Fermat), or
// ErrZeroInverse for 0. It costs about 120 multiplications; invert many
// elements at once with one Inv and Montgomery's trick (see crypto/shamir).
func (a Elem) Inv() (Elem, error) {
	if a == 0 {
		return 0, ErrZeroInverse
	}
	return a.Pow(P - 2), nil
}

// Int is the centered lift: a if a <= (P-1)/2, else a - P. It is the
// inverse of FromInt on [-(P-1)/2, (P-1)/2].
func (a Elem) Int() int64 {
	if uint64(a) <= half {
		return int64(a)
	}
	return int64(a) - int64(P)
}

// Random returns an element uniform in [0, P): it takes the top 61 bits of
// r.Uint64() and rejects the single out-of-range value P (probability
// 2^-61 per draw). r is not used concurrently by this function beyond the
// draw; the caller owns it (crypto/rng.Secure in production).
func Random(r *rand.Rand) Elem {
	for {
		if v := r.Uint64() >> 3; v < P {
			return Elem(v)
		}
	}
}

// AddVec sets dst[i] = a[i] + b[i]. The three slices must have the same
// length; like crypto/subtle.XORBytes it panics otherwise, because a length
// mismatch here is a bug in the caller. Use VecAdd when the lengths come
// from outside input. dst may alias a or b.
func AddVec(dst, a, b []Elem) {
	if len(a) != len(dst) || len(b) != len(dst) {
		panic(fmt.Sprintf("field.AddVec: lengths %d, %d, %d differ", len(dst), len(a), len(b)))
	}
	for i := range dst {
		dst[i] = a[i].Add(b[i])
	}
}

// VecAdd is AddVec that returns an error wrapping ErrLength instead of
// panicking when the lengths differ.
func VecAdd(dst, a, b []Elem) error {
	if len(a) != len(dst) || len(b) != len(dst) {
		return fmt.Errorf("%w: dst %d, a %d, b %d", ErrLength, len(dst), len(a), len(b))
	}
	AddVec(dst, a, b)
	return nil
}
