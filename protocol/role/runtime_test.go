package role

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
)

// Fill gives zero settings their defaults and leaves set ones alone.
func TestRuntimeFill(t *testing.T) {
	var min int
	var clock protocol.Clock
	var log hclog.Logger
	var r *rand.Rand
	Runtime{MinParties: &min, Clock: &clock, Log: &log, SumRand: &r}.Fill()
	if _, real := clock.(protocol.RealClock); min != securesum.DefaultMinParties || !real || log == nil || r == nil {
		t.Fatalf("zero settings filled as %d %T %v %v", min, clock, log, r)
	}
	min2, clock2, log2, r2 := 7, protocol.Clock(protocol.NewManualClock(time.Unix(1, 0))), hclog.New(nil), rand.New(rand.NewPCG(1, 2))
	keep := []any{clock2, log2, r2}
	Runtime{MinParties: &min2, Clock: &clock2, Log: &log2, SumRand: &r2}.Fill()
	if min2 != 7 || clock2 != keep[0] || log2 != keep[1] || r2 != keep[2] {
		t.Fatal("a set value was replaced")
	}
	// A user's config has no MinParties.
	var clock3 protocol.Clock
	var log3 hclog.Logger
	var r3 *rand.Rand
	Runtime{Clock: &clock3, Log: &log3, SumRand: &r3}.Fill()
	if clock3 == nil || log3 == nil || r3 == nil {
		t.Fatal("a user's runtime was not filled")
	}
}
