package ldp

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Kind names a mechanism.
type Kind uint8

const (
	None      Kind = iota // identity: no privacy, the non-private baseline; eps is ignored, Bound() = 1
	Piecewise             // "pm"
	Hybrid                // "hm"
	Duchi                 // "duchi"
	Laplace               // "laplace"
)

var kindNames = [...]string{"none", "pm", "hm", "duchi", "laplace"}

// String returns the name ParseKind accepts: "none", "pm", "hm", "duchi" or
// "laplace" ("Kind(n)" for an unknown value).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// ParseKind accepts none, pm, hm, duchi and laplace, in any case.
func ParseKind(s string) (Kind, error) {
	for i, n := range kindNames {
		if strings.EqualFold(s, n) {
			return Kind(i), nil
		}
	}
	return 0, fmt.Errorf("%w: %q (want none, pm, hm, duchi or laplace)", ErrKind, s)
}

// Range is the policy for inputs outside [-1, 1].
type Range uint8

const (
	Reject Range = iota // an input outside [-1, 1] (beyond 1e-12) is an error
	Clip                // inputs outside [-1, 1] are clipped to [-1, 1]
)

// String returns "reject" or "clip".
func (p Range) String() string {
	switch p {
	case Reject:
		return "reject"
	case Clip:
		return "clip"
	}
	return fmt.Sprintf("Range(%d)", p)
}

// Errors, for errors.Is.
var (
	ErrKind       = errors.New("ldp: unknown mechanism")
	ErrEpsilon    = errors.New("ldp: epsilon must be positive and finite")
	ErrDimension  = errors.New("ldp: dimension must be at least 1")
	ErrRange      = errors.New("ldp: unknown range policy")
	ErrLength     = errors.New("ldp: input and output must have length Dim")
	ErrNotFinite  = errors.New("ldp: input is NaN or infinite")
	ErrOutOfRange = errors.New("ldp: input outside [-1, 1]")
)

// Mechanism perturbs vectors of Dim values in [-1, 1] with eps-LDP.
// Implementations are immutable and safe for concurrent use; the random
// source passed to Perturb is not.
type Mechanism interface {
	Kind() Kind
	// Epsilon is the budget the whole vector is released with; +Inf for None.
	Epsilon() float64
	Dim() int
	// Bound is the largest possible |output coordinate| (for Laplace, the
	// clamp 1 + 64 b rounded up to its grid); 1 for None.
	Bound() float64
	// Perturb writes an eps-LDP perturbation of t (len Dim) into out (len
	// Dim). out may be the same slice as t. NaN/Inf inputs are an error;
	// out-of-range inputs per the Range policy. Every input is checked
	// before anything is written, so on error out is unchanged. It does not
	// allocate.
	Perturb(r *rand.Rand, t, out []float64) error
	// Variance is the closed-form variance of output coordinate j given
	// input vector t (t_j clipped to [-1, 1] first). It is NaN when j is
	// outside t or [0, Dim), or t_j is NaN.
	Variance(t []float64, j int) float64
}

// rangeSlack tolerates float rounding at the interval ends under Reject.
const rangeSlack = 1e-12

// New validates the parameters and precomputes every constant that depends
// only on (kind, eps, d). eps <= 0, NaN or Inf is an error (None ignores
// eps), and so is an eps so small that the output bound overflows float64
// or, for Laplace, that eps/d is below about 2^-54 (the exact sampler's
// scale must fit 2^55 grid units); d < 1 is an error.
func New(kind Kind, eps float64, d int, policy Range) (Mechanism, error) {
	if int(kind) >= len(kindNames) {
		return nil, fmt.Errorf("%w: %d", ErrKind, kind)
	}
	if policy != Reject && policy != Clip {
		return nil, fmt.Errorf("%w: %d", ErrRange, policy)
	}
	if d < 1 {
		return nil, fmt.Errorf("%w: got %d", ErrDimension, d)
	}
	if kind == None {
		return &none{base{kind: None, eps: math.Inf(1), d: d, policy: policy}}, nil
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, fmt.Errorf("%w: got %v", ErrEpsilon, eps)
	}
	b := base{kind: kind, eps: eps, d: d, policy: policy}
	var m Mechanism
	switch {
	case kind == Laplace:
		l, err := newLaplace(b)
		if err != nil {
			return nil, err
		}
		m = l
	case d == 1:
		m = &scalar{base: b, one: newOneDim(kind, eps)}
	case kind == Duchi:
		m = newDuchiMulti(b)
	default: // Piecewise, Hybrid with d > 1
		// In floating point: int(eps/2.5) is undefined beyond the int range.
		k := int(math.Max(1, math.Min(float64(d), math.Floor(eps/2.5))))
		m = &sampled{base: b, k: k, scale: float64(d) / float64(k), one: newOneDim(kind, eps/float64(k))}
	}
	if err := checkConstants(m); err != nil {
		return nil, err
	}
	return m, nil
}

// checkConstants rejects budgets so small that the output bound is not a
// finite float64 (eps below about 1e-308; Laplace's own limit is in
// newLaplace).
func checkConstants(m Mechanism) error {
	bound := m.Bound()
	if math.IsInf(bound, 0) || math.IsNaN(bound) {
		return fmt.Errorf("%w: eps %v is too small for %s with d=%d (output bound overflows)",
			ErrEpsilon, m.Epsilon(), m.Kind(), m.Dim())
	}
	return nil
}

type base struct {
	kind   Kind
	eps    float64
	d      int
	policy Range
}

func (b *base) Kind() Kind       { return b.kind }
func (b *base) Epsilon() float64 { return b.eps }
func (b *base) Dim() int         { return b.d }

// input validates one coordinate under the range policy.
func (b *base) input(v float64) (float64, error) {
	if v >= -1 && v <= 1 { // the common case; false for NaN
		return v, nil
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, ErrNotFinite
	}
	if b.policy == Reject && (v < -1-rangeSlack || v > 1+rangeSlack) {
		return 0, fmt.Errorf("%w: %v", ErrOutOfRange, v)
	}
	return math.Max(-1, math.Min(1, v)), nil
}

// check validates lengths and every coordinate, so that an error never
// depends on the random draws and nothing is written before it.
func (b *base) check(t, out []float64) error {
	if len(t) != b.d || len(out) != b.d {
		return fmt.Errorf("%w: input %d, output %d, dim %d", ErrLength, len(t), len(out), b.d)
	}
	inRange := true
	for _, v := range t {
		inRange = inRange && v >= -1 && v <= 1 // false for NaN
	}
	if inRange {
		return nil
	}
	for j, v := range t {
		if _, err := b.input(v); err != nil {
			return fmt.Errorf("coordinate %d: %w", j, err)
		}
	}
	return nil
}

// at returns t_j clipped to [-1, 1] for Variance, ok false when j is out of
// range.
func (b *base) at(t []float64, j int) (float64, bool) {
	if j < 0 || j >= b.d || j >= len(t) {
		return 0, false
	}
	return math.Max(-1, math.Min(1, t[j])), true
}

// none is the identity: the input, clipped or rejected per the policy.
type none struct{ base }

func (m *none) Bound() float64 { return 1 }

func (m *none) Perturb(_ *rand.Rand, t, out []float64) error {
	if err := m.check(t, out); err != nil {
		return err
	}
	for j, v := range t {
		out[j], _ = m.input(v)
	}
	return nil
}

func (m *none) Variance(t []float64, j int) float64 {
	if v, ok := m.at(t, j); !ok || math.IsNaN(v) {
		return math.NaN()
	}
	return 0
}
