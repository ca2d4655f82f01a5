package release

import (
	"errors"
	"fmt"
	"math"

	"github.com/ppboost/ppboost/crypto/dpnoise"
	"github.com/ppboost/ppboost/crypto/ldp"
	"github.com/ppboost/ppboost/crypto/rdp"
	"github.com/ppboost/ppboost/protocol"
)

// Mechanism is one release's mechanism: it knows its own privacy loss.
type Mechanism interface {
	// Epsilon is the loss of one release under this mechanism (pure DP,
	// delta 0 for every kind here), computed from its parameters.
	Epsilon() float64
	// String names the mechanism for logs and errors.
	String() string
}

// LDP is a perturbed share released under a local mechanism (PM, HM, Duchi,
// Laplace): its loss is the mechanism's own epsilon for the whole vector.
type LDP struct{ M ldp.Mechanism }

func (l LDP) Epsilon() float64 {
	if l.M == nil || l.M.Kind() == ldp.None {
		return math.Inf(1)
	}
	return l.M.Epsilon()
}

func (l LDP) String() string {
	if l.M == nil {
		return "ldp(nil)"
	}
	return fmt.Sprintf("ldp %s eps %g d %d", l.M.Kind(), l.M.Epsilon(), l.M.Dim())
}

// DLap is a value dealt into a secure sum with a dpnoise share: its loss
// is IntSensitivity / t, the integer L1 sensitivity of the encoded value
// (dpnoise.IntSensitivity) over the discrete Laplace scale the shares add
// up to with Noise.Honest honest dealers.
type DLap struct {
	Noise          dpnoise.Params
	IntSensitivity float64
}

func (d DLap) Epsilon() float64 {
	if d.Noise.Validate() != nil || !(d.IntSensitivity > 0) {
		return math.Inf(1)
	}
	return d.Noise.Epsilon(d.IntSensitivity)
}

func (d DLap) String() string {
	return fmt.Sprintf("dlap t %g h %d sensitivity %g", d.Noise.Scale, d.Noise.Honest, d.IntSensitivity)
}

// Exact is a release without noise (mechanism none, only for owners that
// allow it): it is charged the owner's own charge, never a token amount.
type Exact struct{ Charge float64 }

func (e Exact) Epsilon() float64 { return e.Charge }
func (e Exact) String() string   { return fmt.Sprintf("exact (charged %g)", e.Charge) }

// ErrUnbounded is returned for a mechanism whose loss is not finite and
// positive (a broken design): nothing is charged and nothing may leave.
var ErrUnbounded = errors.New("release: mechanism has no finite positive epsilon")

// Gate charges releases to one owner's ledger.
type Gate struct{ Ledger protocol.Ledger }

// Charge records m's epsilon under key (round and attempt are recorded with
// it) and returns the epsilon once the ledger has it durably. Any error
// means the release must not happen.
func (g Gate) Charge(key string, round, attempt uint32, m Mechanism) (float64, error) {
	eps := m.Epsilon()
	if !(eps > 0) || math.IsInf(eps, 0) {
		return 0, fmt.Errorf("%w: %s", ErrUnbounded, m)
	}
	if err := g.Ledger.Spend(key, round, attempt, eps); err != nil {
		return 0, err
	}
	return eps, nil
}

// Sequential is the release of several mechanisms on the same data: their
// losses add up (basic composition).
type Sequential []Mechanism

func (s Sequential) Epsilon() float64 {
	if len(s) == 0 {
		return math.Inf(1)
	}
	sum := 0.0
	for _, m := range s {
		sum += m.Epsilon()
	}
	return sum
}

func (s Sequential) String() string { return fmt.Sprintf("sequential(%d)", len(s)) }

// Parallel is the release of mechanisms on disjoint parts of the data (the
// nodes of one tree level: a row is in one of them): the loss is the
// largest of theirs (parallel composition).
type Parallel []Mechanism

func (p Parallel) Epsilon() float64 {
	if len(p) == 0 {
		return math.Inf(1)
	}
	worst := 0.0
	for _, m := range p {
		worst = max(worst, m.Epsilon())
	}
	return worst
}

func (p Parallel) String() string { return fmt.Sprintf("parallel(%d)", len(p)) }

// Exponential is the exponential mechanism that samples candidate i with
// probability proportional to exp(Coefficient u_i) for a utility of
// sensitivity Sensitivity: its loss is 2 Coefficient Sensitivity (the
// float probabilities add the excess of PROTOCOL.md's "LDP mechanisms").
type Exponential struct{ Coefficient, Sensitivity float64 }

func (e Exponential) Epsilon() float64 {
	if !(e.Coefficient > 0) || !(e.Sensitivity > 0) {
		return math.Inf(1)
	}
	return 2 * e.Coefficient * e.Sensitivity
}

func (e Exponential) String() string {
	return fmt.Sprintf("exponential coefficient %g sensitivity %g", e.Coefficient, e.Sensitivity)
}

// Renyi is a release (or a whole composed series of releases) accounted in
// Renyi DP: Curve is its composed RDP curve and the loss charged is the eps
// of (eps, Delta)-DP from crypto/rdp's conversion. The ledger holds eps
// only, so an owner's total across sessions composes these eps values
// basically (sound, if loose: each is a valid (eps, Delta) guarantee and
// the deltas add up too).
type Renyi struct {
	Curve rdp.Curve
	Delta float64
	Label string // what it releases, for logs
}

func (r Renyi) Epsilon() float64 {
	if r.Curve == nil || !(r.Delta > 0 && r.Delta < 1) {
		return math.Inf(1)
	}
	return rdp.Epsilon(r.Curve, r.Delta)
}

func (r Renyi) String() string { return fmt.Sprintf("renyi %s (delta %g)", r.Label, r.Delta) }
