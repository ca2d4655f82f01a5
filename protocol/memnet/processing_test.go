package memnet_test

import (
	"testing"
	"time"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
)

// A busy peer handles its messages one at a time, in arrival order, each
// after its processing time: three messages arriving together at 1 ms on a
// peer that takes 10 ms each run at 11, 21 and 31 ms; another peer is not
// slowed; back at zero processing the peer is instant again.
func TestBusyPeerQueuesItsMessages(t *testing.T) {
	tn := newTestnet(t, memnet.Options{Deterministic: true, Delay: time.Millisecond}, 3)
	tn.net.SetProcessing("p1", 10*time.Millisecond, 0)
	for _, m := range []string{"a", "b", "c"} {
		send(t, tn.eps[0], "p1", m)
	}
	send(t, tn.eps[0], "p2", "d")
	tn.drain(t)
	want := map[string]time.Duration{"a": 11 * time.Millisecond, "b": 21 * time.Millisecond, "c": 31 * time.Millisecond, "d": time.Millisecond}
	order := ""
	for _, d := range tn.deliveries() {
		if d.at != want[d.data] {
			t.Errorf("%q handled at %v, want %v", d.data, d.at, want[d.data])
		}
		if d.to == "p1" {
			order += d.data
		}
	}
	if order != "abc" {
		t.Errorf("busy peer handled %q, want abc in order", order)
	}
	tn.net.SetProcessing("p1", 0, 0)
	start := tn.elapsed()
	send(t, tn.eps[0], "p1", "e")
	tn.drain(t)
	got := tn.deliveries()
	if last := got[len(got)-1]; last.data != "e" || last.at-start != time.Millisecond {
		t.Errorf("after SetProcessing(0): %v, want e after 1ms", last)
	}
	// Prepare only counts.
	tn.eps[0].Prepare(ctx, []protocol.PeerID{"p1", "p2"})
	if n := tn.net.Prepared("p0"); n != 2 {
		t.Errorf("Prepared(p0) = %d, want 2", n)
	}
}
