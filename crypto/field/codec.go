package field

import (
	"fmt"
	"math"
)

// DefaultScaleBits gives S = 2^24: values are carried to within
// 2^-25 ≈ 3e-8, and 2^36 - 1 parties with |v| <= 1 (or 2^20 - 1 parties with
// |v| <= 2^16) sum without wrapping.
const DefaultScaleBits = 24

// MaxScaleBits is the largest scale NewCodec accepts.
const MaxScaleBits = 52

// twoTo60 is 2^60 = (P-1)/2 + 1 as a float64. (P-1)/2 itself is not a
// float64, so range checks on integral floats compare against 2^60 with >=.
const twoTo60 = 0x1p60

// Codec carries reals through the field in fixed point: a real v becomes
// round(v*S) mod P (rounding half away from zero) and decodes as the
// centered lift divided by S, where S = 2^scaleBits. Sums of encodings
// decode to the sum of the rounded values as long as the total magnitude
// stays within (P-1)/2 (see CheckBudget).
//
// The zero Codec has S = 1.
type Codec struct {
	bits uint
}

// NewCodec returns the codec with S = 2^scaleBits, 0 <= scaleBits <= 52,
// or an error wrapping ErrScale.
func NewCodec(scaleBits uint) (Codec, error) {
	if scaleBits > MaxScaleBits {
		return Codec{}, fmt.Errorf("%w: got %d", ErrScale, scaleBits)
	}
	return Codec{bits: scaleBits}, nil
}

// Scale returns S.
func (c Codec) Scale() float64 { return float64(uint64(1) << c.bits) }

// Encode returns round(v*S) mod P. It fails with ErrNotFinite for NaN and
// infinities and with ErrOverflow when |round(v*S)| > (P-1)/2, so that
// Decode(Encode(v)) is always within 1/(2S) of v. Multiplying by S (a
// power of two) and rounding are exact in float64, so that bound is exact.
func (c Codec) Encode(v float64) (Elem, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%w: cannot encode %v", ErrNotFinite, v)
	}
	x := math.Round(v * c.Scale())
	if math.Abs(x) >= twoTo60 { // x is integral: |x| <= 2^60 - 1 <=> |x| < 2^60
		return 0, fmt.Errorf("%w: %v * 2^%d rounds to %v, beyond ±(p-1)/2 = ±%d (largest encodable magnitude %v)",
			ErrOverflow, v, c.bits, x, half, c.maxMagnitude())
	}
	return FromInt(int64(x)), nil
}

// maxMagnitude returns the largest float64 |v| that Encode accepts: the
// float64 just below 2^60 (2^60 - 128, an integer) divided by S. Every
// integer up to it is at most (P-1)/2; the next float64 is 2^60.
func (c Codec) maxMagnitude() float64 { return math.Nextafter(twoTo60, 0) / c.Scale() }

// Decode returns the centered lift of x divided by S.
func (c Codec) Decode(x Elem) float64 { return float64(x.Int()) / c.Scale() }

// EncodeVec encodes every value; the error names the index of the first
// value that fails.
func (c Codec) EncodeVec(v []float64) ([]Elem, error) {
	out := make([]Elem, len(v))
	for i, x := range v {
		e, err := c.Encode(x)
		if err != nil {
			return nil, fmt.Errorf("value %d: %w", i, err)
		}
		out[i] = e
	}
	return out, nil
}

// DecodeVec decodes every element.
func (c Codec) DecodeVec(x []Elem) []float64 {
	out := make([]float64, len(x))
	for i, e := range x {
		out[i] = c.Decode(e)
	}
	return out
}

// CheckBudget reports whether summing `parties` values with |v| <= bound at
// this codec's scale is safe: parties * ceil(bound*S) <= (P-1)/2, computed
// without overflow as parties <= floor(((P-1)/2) / ceil(bound*S)). Each
// encoded value has |round(v*S)| <= ceil(bound*S), so the check is
// sufficient for the sum to decode exactly (up to the per-value rounding).
//
// Otherwise it returns an error wrapping ErrBudget that names parties,
// bound, the scale and the maximum safe number of parties. parties < 1 and
// a bound that is negative, NaN or infinite are errors too.
func (c Codec) CheckBudget(parties int, bound float64) error {
	if parties < 1 {
		return fmt.Errorf("%w: %d parties (need at least 1)", ErrBudget, parties)
	}
	if math.IsNaN(bound) || math.IsInf(bound, 0) || bound < 0 {
		return fmt.Errorf("%w: bound %v must be finite and non-negative", ErrBudget, bound)
	}
	per := math.Ceil(bound * c.Scale()) // exact: S is a power of two
	if per >= twoTo60 {
		return fmt.Errorf("%w: %d parties with |value| <= %v at scale 2^%d: one value alone needs %v > (p-1)/2 = %d; at most 0 parties fit",
			ErrBudget, parties, bound, c.bits, per, half)
	}
	p := uint64(per)
	if p == 0 { // bound == 0
		return nil
	}
	if maxParties := half / p; uint64(parties) > maxParties {
		return fmt.Errorf("%w: %d parties with |value| <= %v at scale 2^%d need %d*%d > (p-1)/2 = %d; at most %d parties fit",
			ErrBudget, parties, bound, c.bits, parties, p, half, maxParties)
	}
	return nil
}
