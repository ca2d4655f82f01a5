package session

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// The data user's SumStart and SumResult reach each party of a sum on the
// sum stream, never the control topic; an owner takes a SumStart on that
// stream from the data user only: the same SumStart for a new instance,
// sent by another owner, is dropped and counted, and nothing is dealt.
func TestSumStartComesOnTheSumStream(t *testing.T) {
	c := newCluster(t, 8, func(cfg *boost.Config, p *securesum.Params) { p.Method = securesum.Shamir; cfg.Rounds = 1 })
	c.w.drop = func(m msg) bool { // the session stays open after the err sum
		e := m.env()
		return m.from == userID && e != nil && (e.GetAlpha() != nil || e.GetFinal() != nil)
	}
	c.startUser(t, nil)
	c.run(20 * time.Second)
	starts, results := map[protocol.PeerID]int{}, map[protocol.PeerID]int{}
	var start *wire.Envelope
	for _, m := range c.w.log {
		e := m.env()
		if e == nil || (e.GetSumStart() == nil && e.GetSumResult() == nil) {
			continue
		}
		if m.topic != "" || m.proto != wire.ProtoShamir || m.from != userID {
			t.Fatalf("%v from %s on topic %q, protocol %q; want the user's, on %s", e.GetBody(), m.from, m.topic, m.proto, wire.ProtoShamir)
		}
		if e.GetSumStart() != nil {
			starts[m.to]++
			start = e
		} else {
			results[m.to]++
		}
	}
	for _, id := range c.ids {
		if starts[id] != 1 || results[id] != 1 {
			t.Fatalf("owner %s got %d SumStarts and %d SumResults, want 1 and 1", id, starts[id], results[id])
		}
	}
	// Owner 1 replays the SumStart as a new instance to owner 0.
	forged := proto.Clone(start).(*wire.Envelope)
	forged.GetSumStart().Instance++
	forged.GetHeader().Seq += 1000
	raw, err := wire.Marshal(forged, wire.MaxSumFrameBytes)
	if err != nil {
		t.Fatal(err)
	}
	before, dropped := len(c.w.log), c.owners[0].Stats().Get(protocol.ErrNotUser.Error())
	poster{transport{c.w, c.ids[1]}}.Send(c.ids[0], wire.ProtoShamir, raw)
	c.w.advance(time.Second)
	if got := c.owners[0].Stats().Get(protocol.ErrNotUser.Error()); got != dropped+1 {
		t.Fatalf("owner 0 counted %d SumStarts not from the user, want %d", got, dropped+1)
	}
	for _, m := range c.w.log[before:] {
		if e := m.env(); e != nil && m.from == c.ids[0] && e.GetSum().GetInstance() == forged.GetSumStart().GetInstance() {
			t.Fatalf("owner 0 answered a SumStart from another owner: %v", e.GetSum())
		}
	}
}
