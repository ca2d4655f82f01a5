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
func TestOwnerRuntimeFill(t *testing.T) {
	var min int
	var clock protocol.Clock
	var log hclog.Logger
	var r *rand.Rand
	OwnerRuntime{&min, &clock, &log, &r}.Fill()
	if _, real := clock.(protocol.RealClock); min != securesum.DefaultMinParties || !real || log == nil || r == nil {
		t.Fatalf("zero settings filled as %d %T %v %v", min, clock, log, r)
	}
	min2, clock2, log2, r2 := 7, protocol.Clock(protocol.NewManualClock(time.Unix(1, 0))), hclog.New(nil), rand.New(rand.NewPCG(1, 2))
	keep := []any{clock2, log2, r2}
	OwnerRuntime{&min2, &clock2, &log2, &r2}.Fill()
	if min2 != 7 || clock2 != keep[0] || log2 != keep[1] || r2 != keep[2] {
		t.Fatal("a set value was replaced")
	}
}
