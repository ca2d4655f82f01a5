package securesum

import (
	"slices"

	"github.com/ppboost/ppboost/protocol"
)

// PreparePeers are the peers an owner opens connections to for a sum over
// roster (sorted):
//
//   - ring: its successor in the ring, whose connection also carries the
//     backward pass (its predecessor dials it; a re-formed ring has new
//     neighbours, whose dials the re-form pays);
//   - Shamir with committee com: a dealer sends its shares to every member,
//     so an owner outside the committee dials every member, and a member
//     dials the members after it in peer-id order (the one before it dials
//     it): every (dealer, member) pair the sum uses is opened once, by one
//     side (a libp2p connection carries streams both ways). Later sums have
//     other committees and open what they lack themselves.
//
// A connection is prepared only; nothing is sent on it.
func PreparePeers(self protocol.PeerID, roster []protocol.PeerID, method string, com []protocol.PeerID) []protocol.PeerID {
	i, ok := slices.BinarySearch(roster, self)
	n := len(roster)
	if !ok || n < 2 {
		return nil
	}
	if method == Ring {
		// Each owner dials its successor only: the predecessor dials it.
		// Both dialling each other at once would leave two connections.
		if n == 2 && i == 1 {
			return nil
		}
		return []protocol.PeerID{roster[(i+1)%n]}
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

// ExpectPeers are the peers that open their connection to self for a sum
// over roster (self is in their PreparePeers) and that self sends to in
// the sum: a message from self to one of them before its connection is up
// should wait for that connection rather than dial a second one
// (protocol.Expecter):
//
//   - ring: its predecessor, which dials it and to which the backward pass
//     goes (with two owners, the second one's: the first dials it);
//   - Shamir with committee com: a member sends its shares to the members
//     before it in peer-id order, which dial it. Dealers outside the
//     committee dial it too, but it sends them nothing.
//
// Every pair a sum sends on is then opened by one side: the sender dials it
// (PreparePeers) or waits for the receiver's dial (ExpectPeers).
func ExpectPeers(self protocol.PeerID, roster []protocol.PeerID, method string, com []protocol.PeerID) []protocol.PeerID {
	i, ok := slices.BinarySearch(roster, self)
	n := len(roster)
	if !ok || n < 2 {
		return nil
	}
	if method == Ring {
		if n == 2 && i == 0 {
			return nil
		}
		return []protocol.PeerID{roster[(i+n-1)%n]}
	}
	if !slices.Contains(com, self) {
		return nil
	}
	var out []protocol.PeerID
	for _, m := range com {
		if m < self {
			out = append(out, m)
		}
	}
	return out
}
