package role

import (
	"math/rand/v2"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
)

// OwnerRuntime points at the runtime settings every owner config has (the
// W&C and fedboost OwnerConfigs); Fill gives the zero ones their defaults,
// written once for both systems: the smallest aggregate the owner helps
// reveal (securesum.DefaultMinParties), the real clock, a silent logger
// and the secure random source for masks and coefficients.
type OwnerRuntime struct {
	MinParties *int
	Clock      *protocol.Clock
	Log        *hclog.Logger
	SumRand    **rand.Rand
}

// Fill sets each zero setting to its default and leaves the others.
func (r OwnerRuntime) Fill() {
	if *r.MinParties == 0 {
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
