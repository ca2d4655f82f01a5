package session

import (
	"slices"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// prepareSums opens, in the background, the connections this owner's sums
// will need (protocol.Preparer), when the roster is fixed: the next sum is
// then not the one that pays the dials and handshakes. Two committees are
// known from the roster and the beacon alone (securesum.Committee seeds
// with the beacon, session and purpose): the err sums' (alpha mode
// secure-sum), over the whole roster, and the share sums' of a distributed
// session, which every attempt's selected owners deal to (its committee
// comes from the roster: Request.Pool). An owner opens at most one
// connection to each member of each (2 x Params.Committee, whatever the
// roster's size), one side dialling each pair; a pair the other side
// dials and this owner sends to waits for that dial instead of dialling
// too (securesum.SumConnections, protocol.Expecter).
//
// The roster's addresses go to the address book first (the dials need
// them). Once per roster version: from the chunks as they arrive
// (provisional, before the first Select) or when the roster is installed.
func (o *Owner) prepareSums(r *Roster) {
	if o.preparedFor == r.Version {
		return
	}
	o.preparedFor = r.Version
	if o.book != nil {
		for i, p := range r.IDs {
			if p != o.self && len(r.Addrs[i]) > 0 {
				o.book.AddAddrs(p, r.Addrs[i])
			}
		}
	}
	if _, in := slices.BinarySearch(r.IDs, o.self); o.prep == nil || !in || o.party == nil {
		return
	}
	var ev preparePeers
	add := func(method, proto string, com []protocol.PeerID) {
		dial, ex := securesum.SumConnections(o.self, r.IDs, method, com)
		ev.dial = protocol.AppendNew(ev.dial, dial)
		if len(ex) > 0 {
			ev.expect = append(ev.expect, expected{proto: proto, peers: ex})
		}
	}
	h := &wire.Header{Session: o.session, Round: o.current.round, Attempt: o.current.attempt}
	if o.wcfg.GetAlphaMode() == string(boost.AlphaSecureSum) {
		p := o.party.Params()
		var com []protocol.PeerID
		if p.Method == securesum.Shamir {
			// The err sums' committee, over the whole roster.
			com = securesum.Committee(r.IDs, p.Committee, r.Beacon, h, PurposeErr, 0)
		}
		add(p.Method, o.party.Protocol(), com)
	}
	if o.shareParty != nil {
		if p := o.shareParty.Params(); p.Method == securesum.Shamir {
			add(p.Method, o.shareParty.Protocol(), securesum.Committee(r.IDs, p.Committee, r.Beacon, h, PurposeShare, 0))
		}
	}
	if len(ev.dial) > 0 && o.ackDue(r.Version) {
		// The version's RosterAck waits for these dials (ackRoster).
		ev.ack, o.ackAfter = r.Version, r.Version
	}
	if len(ev.dial) > 0 || len(ev.expect) > 0 {
		// The dials are the transport's, after this event (owner_run.go).
		o.lc.Out.Notify(engine.Notify{Event: engine.EventReport, Value: ev})
	}
}
