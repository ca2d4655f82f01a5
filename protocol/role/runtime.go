package role

import (
	"math/rand/v2"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
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
}
