package session

import (
	"context"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
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
	// The err sum of the attempt that brought the roster.
	o.prepareErrSums(r, o.current)
}

// prepareAfter opens, once this owner has dealt in the err sum of k, the
// connections of the err sums that can come next: the next round's first
// attempt (k accepted) and k's round's next attempt (k dropped). A Shamir
// sum's committee depends on its round and attempt, so each sum has a new
// one, with about committee × roster owner pairs most of which have not
// met; opened while the current round runs, they are not on the next sum's
// critical path (200 owners on real hosts at 100 ms: warm sums that opened
// their committee themselves took 51-126 s and some left owners out under
// load; prepared ones 7-33 s and none out; RESULTS.md, "200 owners on real
// hosts in five processes").
func (o *Owner) prepareAfter(k roundKey) {
	if o.roster == nil {
		return
	}
	o.prepareErrSums(o.roster, roundKey{round: k.round + 1}, roundKey{round: k.round, attempt: k.attempt + 1})
}

// prepareErrSums opens the connections of the err sums of keys over the
// roster r: a ring's successor, or each Shamir committee's pairs (its
// committee follows from the beacon, the round and the attempt alone).
func (o *Owner) prepareErrSums(r *Roster, keys ...roundKey) {
	if o.prep == nil || !o.inRoster || o.party == nil || o.wcfg.GetAlphaMode() != string(boost.AlphaSecureSum) {
		return
	}
	p := o.party.Params()
	seen := map[protocol.PeerID]bool{}
	var peers []protocol.PeerID
	for _, k := range keys {
		var com []protocol.PeerID
		if p.Method == securesum.Shamir {
			h := &wire.Header{Session: o.session, Round: k.round, Attempt: k.attempt}
			com = securesum.Committee(r.IDs, p.Committee, r.Beacon, h, PurposeErr, 0)
		}
		for _, q := range securesum.PreparePeers(o.self, r.IDs, p.Method, com) {
			if !seen[q] {
				seen[q] = true
				peers = append(peers, q)
			}
		}
	}
	if len(peers) > 0 {
		o.prep.Prepare(context.Background(), peers)
	}
}
