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
	None      Kind = iota // identity: the non-private baseline; eps is ignored
	Piecewise             // "pm"
	Hybrid                // "hm"
	Duchi                 // "duchi"
	Laplace               // "laplace"
)

var kindNames = [...]string{"none", "pm", "hm", "duchi", "laplace"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// ParseKind accepts none, pm, hm, duchi and laplace (any case).
func ParseKind(s string) (Kind, error) {
	for i, n := range kindNames {
		if strings.EqualFold(s, n) {
			return Kind(i), nil
		}
	}
	return 0, fmt.Errorf("unknown mechanism %q (want none, pm, hm, duchi or laplace)", s)
}

// Range is the policy for inputs outside [-1, 1].
type Range uint8

const (
	Reject Range = iota // an input outside [-1, 1] (beyond 1e-12) is an error
	Clip                // inputs are clipped to [-1, 1]
)

// Errors.
var (
	ErrEpsilon    = errors.New("ldp: epsilon must be positive and finite")
	ErrDimension  = errors.New("ldp: dimension must be at least 1")
	ErrLength     = errors.New("ldp: input and output must have length Dim")
	ErrNotFinite  = errors.New("ldp: input is NaN or infinite")
	ErrOutOfRange = errors.New("ldp: input outside [-1, 1]")
	ErrKind       = errors.New("ldp: unknown mechanism")
)

// Mechanism perturbs vectors of Dim values in [-1, 1] with eps-LDP.
// Implementations are immutable and safe for concurrent use; the random
// source passed to Perturb is not.
type Mechanism interface {
	Kind() Kind
	Epsilon() float64
	Dim() int
	// Bound is the largest possible |output coordinate|; +Inf for Laplace, 1 for None.
	Bound() float64
	// Perturb writes an eps-LDP perturbation of t into out (both of length
	// Dim; out may be t itself).
	Perturb(r *rand.Rand, t, out []float64) error
	// Variance is the closed-form variance of output coordinate j given t.
	Variance(t []float64, j int) float64
}

// rangeSlack tolerates float rounding at the interval ends.
const rangeSlack = 1e-12

// New validates the parameters and precomputes the constants of a mechanism.
func New(kind Kind, eps float64, d int, policy Range) (Mechanism, error) {
	if d < 1 {
		return nil, fmt.Errorf("%w: got %d", ErrDimension, d)
	}
	if kind != None && (!(eps > 0) || math.IsInf(eps, 0)) {
		return nil, fmt.Errorf("%w: got %v", ErrEpsilon, eps)
	}
	b := base{kind: kind, eps: eps, d: d, policy: policy}
	switch kind {
	case None:
		return &none{b}, nil
	case Piecewise, Hybrid:
		k := max(1, min(d, int(math.Floor(eps/2.5))))
		m := &sampled{base: b, k: k, scale: float64(d) / float64(k), one: newOneDim(kind, eps/float64(k))}
		return m, nil
	case Duchi:
		return newDuchiMulti(b), nil
	case Laplace:
		return &laplace{base: b, scale: 2 * float64(d) / eps}, nil
	}
	return nil, fmt.Errorf("%w: %d", ErrKind, kind)
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

// input validates coordinate v under the range policy.
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

func (b *base) lengths(t, out []float64) error {
	if len(t) != b.d || len(out) != b.d {
		return fmt.Errorf("%w: input %d, output %d, dim %d", ErrLength, len(t), len(out), b.d)
	}
	return nil
}

// clipped returns t_j under the policy, ignoring errors (for Variance).
func (b *base) clipped(v float64) float64 { return math.Max(-1, math.Min(1, v)) }

// none is the identity.
type none struct{ base }

func (m *none) Bound() float64 { return 1 }

func (m *none) Perturb(_ *rand.Rand, t, out []float64) error {
	if err := m.lengths(t, out); err != nil {
		return err
	}
	for j, v := range t {
		x, err := m.input(v)
		if err != nil {
			return fmt.Errorf("coordinate %d: %w", j, err)
		}
		out[j] = x
	}
	return nil
}

func (m *none) Variance([]float64, int) float64 { return 0 }
