package session

import (
	"context"
	"slices"

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
	if peers := preparePeers(o.self, r.IDs, p.Method, com); len(peers) > 0 {
		o.prep.Prepare(context.Background(), peers)
	}
}

// preparePeers are the peers an owner opens connections to for a sum over
// roster (sorted):
//
//   - ring: its two ring neighbours (a re-formed ring has new neighbours,
//     whose dials the re-form pays);
//   - Shamir with committee com: a dealer sends its shares to every member,
//     so an owner outside the committee dials every member, and a member
//     dials the members after it in peer-id order (the one before it dials
//     it): every (dealer, member) pair the sum uses is opened once, by one
//     side (a libp2p connection carries streams both ways). Later sums have
//     other committees and open what they lack themselves.
//
// A connection is prepared only; nothing is sent on it.
func preparePeers(self protocol.PeerID, roster []protocol.PeerID, method string, com []protocol.PeerID) []protocol.PeerID {
	i, ok := slices.BinarySearch(roster, self)
	n := len(roster)
	if !ok || n < 2 {
		return nil
	}
	if method == securesum.Ring {
		if n == 2 {
			return []protocol.PeerID{roster[(i+1)%n]}
		}
		return []protocol.PeerID{roster[(i+n-1)%n], roster[(i+1)%n]}
	}
	member := slices.Contains(com, self)
	var out []protocol.PeerID
	for _, m := range com {
		if m != self && (!member || m > self) {
			out = append(out, m)
		}
	}
	return out
}
