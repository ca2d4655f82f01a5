package shamir

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/ppboost/ppboost/crypto/field"
)

// Share is one holder's share of a vector.
type Share struct {
	X field.Elem   // evaluation point, non-zero
	Y []field.Elem // one value per secret coordinate
}

// Errors. Every error this package returns wraps one of these.
var (
	ErrThreshold    = errors.New("shamir: threshold must satisfy 1 <= t <= n")
	ErrTooFewShares = errors.New("shamir: fewer shares than the threshold")
	ErrDuplicateX   = errors.New("shamir: two shares at the same point")
	ErrZeroX        = errors.New("shamir: evaluation point 0 would reveal the secret")
	ErrLength       = errors.New("shamir: shares of different lengths")
	ErrMismatchX    = errors.New("shamir: adding shares held at different points")
	ErrNotElement   = errors.New("shamir: value is not a canonical field element (>= p)")
	ErrNoRandom     = errors.New("shamir: nil random source")
)

// quadraticLimit is the number of points up to which duplicates are found by
// comparing every pair (no allocation, and the error names both positions);
// above it a sorted copy is scanned.
const quadraticLimit = 64

// Points returns the evaluation points 1..n (nil for n <= 0).
func Points(n int) []field.Elem {
	if n <= 0 {
		return nil
	}
	xs := make([]field.Elem, n)
	for i := range xs {
		xs[i] = field.Elem(i + 1)
	}
	return xs
}

// checkPoints verifies that xs are canonical, non-zero and distinct.
// scratch must have len(xs) elements when len(xs) > quadraticLimit.
func checkPoints(xs, scratch []field.Elem) error {
	for i, x := range xs {
		if x == 0 {
			return fmt.Errorf("%w: point %d", ErrZeroX, i)
		}
		if uint64(x) >= field.P {
			return fmt.Errorf("%w: point %d is %d", ErrNotElement, i, x)
		}
	}
	if len(xs) <= quadraticLimit {
		for i := range xs {
			for j := 0; j < i; j++ {
				if xs[i] == xs[j] {
					return fmt.Errorf("%w: x = %d at points %d and %d", ErrDuplicateX, xs[i], j, i)
				}
			}
		}
		return nil
	}
	sorted := scratch[:len(xs)]
	copy(sorted, xs)
	slices.Sort(sorted)
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return fmt.Errorf("%w: x = %d appears twice", ErrDuplicateX, sorted[i])
		}
	}
	return nil
}

// Split shares each coordinate of secret with an independent random
// polynomial of degree t-1 whose constant term is the coordinate, evaluated
// at xs (len n). It requires 1 <= t <= n, distinct non-zero canonical xs and
// canonical secret values. Share i is held at xs[i].
//
// The coefficients come from r: crypto/rng.Secure() in production, since
// the hiding property (t-1 shares are uniform whatever the secret) holds
// only for unpredictable coefficients. Split makes two allocations whatever
// the vector length: the shares and one backing array for all their values
// and its scratch.
func Split(r *rand.Rand, secret []field.Elem, xs []field.Elem, t int) ([]Share, error) {
	if r == nil {
		return nil, ErrNoRandom
	}
	return split(func() field.Elem { return field.Random(r) }, secret, xs, t)
}

// split is Split with the coefficient source as a function, so a test can
// substitute a weak source and show that the hiding test detects it.
func split(coefficient func() field.Elem, secret []field.Elem, xs []field.Elem, t int) ([]Share, error) {
	n, L := len(xs), len(secret)
	if t < 1 || t > n {
		return nil, fmt.Errorf("%w: t = %d, n = %d", ErrThreshold, t, n)
	}
	for c, s := range secret {
		if uint64(s) >= field.P {
			return nil, fmt.Errorf("%w: secret coordinate %d is %d", ErrNotElement, c, s)
		}
	}
	// One array: n*L share values, then t coefficients and n accumulators.
	buf := make([]field.Elem, n*L+t+n)
	coef, acc := buf[n*L:n*L+t], buf[n*L+t:]
	if err := checkPoints(xs, acc); err != nil {
		return nil, err
	}
	shares := make([]Share, n)
	for i := range shares {
		shares[i] = Share{X: xs[i], Y: buf[i*L : (i+1)*L : (i+1)*L]}
	}
	for c, s := range secret {
		coef[0] = s
		for k := 1; k < t; k++ {
			coef[k] = coefficient()
		}
		// Horner at every point at once: the n chains are independent, so
		// the multiplications overlap instead of waiting on each other.
		for i := range acc {
			acc[i] = coef[t-1]
		}
		for k := t - 2; k >= 0; k-- {
			ck := coef[k]
			for i, x := range xs {
				acc[i] = acc[i].MulAdd(x, ck)
			}
		}
		for i, y := range acc {
			buf[i*L+c] = y
		}
	}
	clear(coef) // the coefficients determine every share; do not leave them behind
	return shares, nil
}

// Add returns the coordinate-wise sum of two shares held at the same point:
// a share of the sum of the two secrets. It errs with ErrMismatchX or
// ErrLength when the points or lengths differ.
func Add(a, b Share) (Share, error) {
	if a.X != b.X {
		return Share{}, fmt.Errorf("%w: %d and %d", ErrMismatchX, a.X, b.X)
	}
	if len(a.Y) != len(b.Y) {
		return Share{}, fmt.Errorf("%w: %d and %d", ErrLength, len(a.Y), len(b.Y))
	}
	s := Share{X: a.X, Y: make([]field.Elem, len(a.Y))}
	field.AddVec(s.Y, a.Y, b.Y)
	return s, nil
}

// LagrangeAtZero returns lambda_i = prod_{j != i} x_j / (x_j - x_i), so
// that f(0) = sum_i lambda_i f(x_i) for every polynomial f of degree below
// len(xs), for distinct non-zero canonical xs. It makes one field inversion
// (Montgomery's batch trick).
func LagrangeAtZero(xs []field.Elem) ([]field.Elem, error) {
	if len(xs) == 0 {
		return nil, fmt.Errorf("%w: no points", ErrTooFewShares)
	}
	buf := make([]field.Elem, 2*len(xs))
	lam, scratch := buf[:len(xs):len(xs)], buf[len(xs):]
	if err := checkPoints(xs, scratch); err != nil {
		return nil, err
	}
	if err := lagrange(lam, scratch, xs); err != nil {
		return nil, err
	}
	return lam, nil
}

// lagrange fills lam with the coefficients at 0 for xs, which must already
// be checked; d is scratch of len(xs).
func lagrange(lam, d, xs []field.Elem) error {
	// lambda_i = N / d_i with N = prod_j x_j and d_i = x_i prod_{j != i} (x_j - x_i).
	num := field.Elem(1)
	for i, xi := range xs {
		num = num.Mul(xi)
		di := xi
		for j, xj := range xs {
			if j != i {
				di = di.Mul(xj.Sub(xi))
			}
		}
		d[i] = di
	}
	// Batch inversion: lam[i] holds d_0 ... d_{i-1}; invert the full product
	// once, then walk back: inv = N / (d_0 ... d_i) at step i.
	prod := field.Elem(1)
	for i, di := range d {
		lam[i] = prod
		prod = prod.Mul(di)
	}
	inv, err := prod.Inv()
	if err != nil { // unreachable for checked points: every d_i is non-zero
		return fmt.Errorf("shamir: lagrange coefficients: %w", err)
	}
	inv = inv.Mul(num)
	for i := len(xs) - 1; i >= 0; i-- {
		lam[i] = lam[i].Mul(inv)
		inv = inv.Mul(d[i])
	}
	return nil
}

// Reconstruct interpolates the secret at 0 from the first t of shares
// (len(shares) >= t, distinct non-zero X, equal lengths, canonical values).
// Fewer than t shares give ErrTooFewShares. Only the first t shares are
// read; the result is the secret whenever they are genuine shares of a
// polynomial of degree below t. Reconstruct makes two allocations.
func Reconstruct(shares []Share, t int) ([]field.Elem, error) {
	if t < 1 {
		return nil, fmt.Errorf("%w: t = %d", ErrThreshold, t)
	}
	if len(shares) < t {
		return nil, fmt.Errorf("%w: %d shares, threshold %d", ErrTooFewShares, len(shares), t)
	}
	use := shares[:t]
	L := len(use[0].Y)
	buf := make([]field.Elem, 3*t)
	xs, lam, d := buf[:t], buf[t:2*t], buf[2*t:]
	for i, s := range use {
		if len(s.Y) != L {
			return nil, fmt.Errorf("%w: share %d has %d values, share 0 has %d", ErrLength, i, len(s.Y), L)
		}
		for c, y := range s.Y {
			if uint64(y) >= field.P {
				return nil, fmt.Errorf("%w: share %d value %d is %d", ErrNotElement, i, c, y)
			}
		}
		xs[i] = s.X
	}
	if err := checkPoints(xs, d); err != nil {
		return nil, err
	}
	if err := lagrange(lam, d, xs); err != nil {
		return nil, err
	}
	out := make([]field.Elem, L)
	for i, s := range use {
		li := lam[i]
		for c, y := range s.Y {
			out[c] = li.MulAdd(y, out[c])
		}
	}
	return out, nil
}
