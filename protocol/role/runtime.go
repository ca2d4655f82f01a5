package role

import (
	crand "crypto/rand"
	"math/rand/v2"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/release"
	"github.com/ppboost/ppboost/protocol/securesum"
)

// Runtime points at the runtime settings the W&C and fedboost role configs
// share; Fill gives the zero ones their defaults, written once for both
// systems: the real clock, a silent logger, the secure random source for
// masks and coefficients and, for an owner (MinParties set), the smallest
// aggregate it helps reveal (securesum.DefaultMinParties).
type Runtime struct {
	MinParties *int
	Clock      *protocol.Clock
	Log        *hclog.Logger
	SumRand    **rand.Rand
	// Secret, if set (an owner), is the release gate's noise secret: 32
	// fresh random bytes when empty (values then re-derive only within
	// this process; the CLI keeps one derived from the node's identity).
	Secret *[]byte
}

// Fill sets each zero setting to its default and leaves the others.
func (r Runtime) Fill() {
	if r.MinParties != nil && *r.MinParties == 0 {
		*r.MinParties = securesum.DefaultMinParties
	}
	if *r.Clock == nil {
		*r.Clock = protocol.RealClock{}
	}
	if *r.Log == nil {
		*r.Log = hclog.NewNullLogger()
	}
	if *r.SumRand == nil {
		*r.SumRand = rng.Secure()
	}
	if r.Secret != nil && len(*r.Secret) == 0 {
		b := make([]byte, 32)
		if _, err := crand.Read(b); err != nil {
			panic("crypto/rand: " + err.Error()) // the OS source never fails on supported systems
		}
		*r.Secret = b
	}
}

// NewValues is an owner's release gate over ledger with its noise secret
// and per-session cap (release.Values).
func NewValues(ledger protocol.Ledger, secret []byte, sessionMax float64) *release.Values {
	return &release.Values{Ledger: ledger, Secret: secret, SessionMax: sessionMax}
}
