package session

import (
	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// prepareSums opens, in the background, the connections this owner's err
// sums will need (protocol.Preparer), when the roster is fixed: the next
// sum is then not the one that pays the dials and handshakes. Sessions
// without err sums (alpha mode validation) need none; a distributed round's
// share sum runs among the owners its Select names, as soon as they are
// named, so there is nothing to open ahead of it.
func (o *Owner) prepareSums(r *Roster) {
	if o.prep == nil || !o.inRoster || o.party == nil || o.wcfg.GetAlphaMode() != string(boost.AlphaSecureSum) {
		return
	}
	p := o.party.Params()
	var com []protocol.PeerID
	if p.Method == securesum.Shamir {
		// The err sum of the attempt that brought the roster, over the
		// whole roster: its committee follows from the beacon alone.
		h := &wire.Header{Session: o.session, Round: o.current.round, Attempt: o.current.attempt}
		com = securesum.Committee(r.IDs, p.Committee, r.Beacon, h, PurposeErr, 0)
	}
	if peers := securesum.PreparePeers(o.self, r.IDs, p.Method, com); len(peers) > 0 {
		// The dials are the transport's, after this event (owner_run.go).
		o.lc.Out.Notify(engine.Notify{Event: engine.EventReport, Value: preparePeers(peers)})
	}
}
