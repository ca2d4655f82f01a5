package role

import (
	"fmt"
	"math"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
)

// OwnerLimits are the trust-bearing settings every data owner role has,
// whatever the system: the one data user it answers, its data's size, the
// ledger that records each spend before anything leaves, the largest epsilon
// one release may cost, whether an exact (noiseless) release is allowed and
// what it is charged, the smallest aggregate it helps reveal, and the
// colluders its noise is sized for. Each owner config checks them here, so
// the rules and their messages are written once.
type OwnerLimits struct {
	User       protocol.PeerID
	Rows       int // the owner's data rows
	Ledger     protocol.Ledger
	MaxEpsilon float64
	// AllowExact is the config's switch for noiseless releases, named
	// AllowExactField in errors (session: AllowNone, fedboost:
	// AllowNoNoise).
	AllowExact      bool
	AllowExactField string
	NoneCharge      float64
	MinParties      int
	Colluders       int
	// SessionMax is the most the owner spends in one session (0: no cap
	// beyond the lifetime budget).
	SessionMax float64
}

// Validate checks the limits; the error names the field as prefix.Field
// ("session.OwnerConfig.MaxEpsilon: must be > 0, got 0").
func (l OwnerLimits) Validate(prefix string) error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%s.%s: %s", prefix, field, fmt.Sprintf(format, a...))
	}
	switch {
	case l.User == "":
		return bad("User", "the data user's peer id is required")
	case l.Rows == 0:
		return bad("Data", "no data")
	case l.Ledger == nil:
		return bad("Ledger", "a budget ledger is required")
	case !(l.MaxEpsilon > 0):
		return bad("MaxEpsilon", "must be > 0, got %v", l.MaxEpsilon)
	case l.AllowExact && !(l.NoneCharge > 0):
		return bad("NoneCharge", "must be > 0 when %s is set (an exact release is never free), got %v", l.AllowExactField, l.NoneCharge)
	case l.MinParties < 0:
		return bad("MinParties", "must be >= 0 (0: securesum.DefaultMinParties), got %d", l.MinParties)
	case l.SessionMax < 0 || math.IsNaN(l.SessionMax) || math.IsInf(l.SessionMax, 0):
		return bad("SessionMaxEpsilon", "must be >= 0 and finite (0: no per-session cap), got %v", l.SessionMax)
	case l.Colluders < boost.ColludersAll:
		return bad("Colluders", "must be >= 0 (0, or boost.ColludersAll: all co-dealers), got %d", l.Colluders)
	}
	return nil
}
