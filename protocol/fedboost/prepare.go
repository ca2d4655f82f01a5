package fedboost

import (
	"context"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// sumPeers is the owner's notification that asks its transport to open
// connections to dial in the background (protocol.Preparer) and to hold a
// message to a peer of expect until that peer's own dial (protocol.Expecter):
// one side dials each pair a sum sends on (securesum.SumConnections).
// Without it, both members of a committee pair dialled each other when
// they dealt: 380 duplicate connection ends among 20 owners, every pair
// twice, in the federated Newton session on the simulated internet (issue
// 31).
type sumPeers struct {
	dial, expect []protocol.PeerID
	// ack, when set, is the session whose configuration ack waits for
	// these dials: the runner injects inputPrepared with it once they
	// have ended (protocol.PrepareNotifier; at once without one).
	ack string
}

// inputPrepared is the protocol of the local message the runner injects
// when the dials a configuration's ack waits for have ended (its data:
// the session). It never comes from the network.
const inputPrepared = "local:fedboost/prepared"

// expectSum, before this owner deals a sum of group with committee com,
// notifies the peers whose dial this owner's shares wait for.
func (o *Owner) expectSum(group, com []protocol.PeerID) {
	if ex := securesum.ExpectPeers(o.self, group, securesum.Shamir, com); len(ex) > 0 {
		o.life.Out.Notify(engine.Notify{Event: engine.EventReport, Value: sumPeers{expect: ex}})
	}
}

// prepareSums, when this owner joins a Newton session (every tree's group
// is the roster, and a sum's committee depends on the session and its
// purpose only), opens the connections of tree 1's sums in the background:
// the first tree then does not pay the dials on its critical path. Other
// methods draw a group per tree; their sums open what they need.
func (o *Owner) prepareSums(p *Public) {
	if !p.Newton() {
		return
	}
	group, params := p.Group(1), p.SumParams(1)
	h := &wire.Header{Session: p.Session, Round: 1}
	var ev sumPeers
	for c := range p.LeafLayout(1).Chunks {
		com := securesum.Committee(group, params.Committee, p.Beacon, h, leafPurpose(c), 0)
		dial, expect := securesum.SumConnections(o.self, group, securesum.Shamir, com)
		ev.dial, ev.expect = protocol.AppendNew(ev.dial, dial), protocol.AppendNew(ev.expect, expect)
	}
	if len(ev.dial) > 0 {
		// The configuration's ack waits for these connections
		// (ackConfig): the first tree then starts when they are open.
		ev.ack, o.ackAfter = p.Session, p.Session
	}
	if len(ev.dial) > 0 || len(ev.expect) > 0 {
		o.life.Out.Notify(engine.Notify{Event: engine.EventReport, Value: ev})
	}
}

// applySumPeers is the runner's side of sumPeers: the transport's, after
// the event (the expectations before the dials and before the shares the
// same event list sends).
func (o *Owner) applySumPeers(v sumPeers) {
	if e, ok := o.tr.(protocol.Expecter); ok && len(v.expect) > 0 {
		e.Expect(context.Background(), wire.ProtoFedShamir, v.expect)
	}
	if len(v.dial) == 0 {
		return
	}
	o.prepared = append(o.prepared, v.dial...)
	var done func()
	if v.ack != "" {
		done = func() { o.run.Inject(engine.Message{From: o.self, Protocol: inputPrepared, Data: []byte(v.ack)}) }
	}
	protocol.PrepareThen(context.Background(), o.tr, v.dial, done)
}
