package securesum_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// A coordinator that is a sub-machine arms its instances' timers as named
// timers of its role (Env.Timers), under its prefix; Fire runs them; Stop
// (the role's session ended) cancels them, and a late expiry then does
// nothing: no SumStart is sent again and done is not called.
func TestCoordinatorNamedTimersAndStop(t *testing.T) {
	var out engine.Out
	clock := protocol.NewManualClock(time.Unix(1000, 0))
	sent := 0
	env := securesum.Env{Self: "user", Clock: clock, Rand: rng.Derive(1, 2), Log: hclog.NewNullLogger(),
		Timers: &out, TimerPrefix: "pairs/",
		Send: func(protocol.PeerID, string, *wire.Envelope) { sent++ }}
	p := securesum.DefaultParams()
	p.MinParties = 3
	c := securesum.NewCoordinator(env, p)
	var roster []protocol.PeerID
	for i := range 5 {
		roster = append(roster, protocol.PeerID(fmt.Sprintf("owner-%d", i)))
	}
	done := 0
	req := securesum.Request{Header: &wire.Header{Version: wire.Version, Session: "s", Round: 2, Attempt: 1},
		Purpose: "err", Roster: roster, Length: 2, Beacon: []byte("b")}
	if err := c.Sum(req, func([]float64, int, error) { done++ }); err != nil {
		t.Fatal(err)
	}
	name := "pairs/sum/err/2/1"
	effects := out.Take()
	var set []engine.Effect
	for _, e := range effects {
		if _, ok := e.(engine.SetTimer); ok {
			set = append(set, e)
		}
	}
	if len(set) != 1 || set[0].(engine.SetTimer).Name != name || sent != len(roster) {
		t.Fatalf("after Sum: timers %v, %d SumStarts sent; want one timer %q and %d sends", set, sent, name, len(roster))
	}
	// The timer fires: the stalled instance sends its SumStart again and re-arms.
	sent = 0
	if !c.Fire(name) {
		t.Fatal("Fire did not take its own timer")
	}
	if sent == 0 || !hasTimer(out.Take(), name) {
		t.Fatalf("a stalled instance re-sent %d messages and did not re-arm", sent)
	}
	if c.Fire("shares/sum/err/2/1") || c.Fire("idle") {
		t.Fatal("Fire took another coordinator's or the role's timer")
	}
	c.Stop()
	if got := out.Take(); !reflect.DeepEqual(got, []engine.Effect{engine.CancelTimer{Name: name}}) {
		t.Fatalf("Stop: %v, want the instance's timer cancelled", got)
	}
	sent = 0
	if !c.Fire(name) || sent != 0 || done != 0 || out.Pending() != 0 {
		t.Fatalf("a timer after Stop: sent %d, done %d, %d effects", sent, done, out.Pending())
	}
}

func hasTimer(effects []engine.Effect, name string) bool {
	for _, e := range effects {
		if s, ok := e.(engine.SetTimer); ok && strings.HasPrefix(s.Name, name) {
			return true
		}
	}
	return false
}
