package securesum

import (
	"slices"

	"github.com/ppboost/ppboost/protocol"
)

// PreparePeers are the peers an owner opens connections to for a sum over
// roster (sorted): the dial half of SumConnections.
func PreparePeers(self protocol.PeerID, roster []protocol.PeerID, method string, com []protocol.PeerID) []protocol.PeerID {
	dial, _ := SumConnections(self, roster, method, com)
	return dial
}

// ExpectPeers are the peers that open their connection to self for a sum
// over roster and that self sends to in it: the expect half of
// SumConnections.
func ExpectPeers(self protocol.PeerID, roster []protocol.PeerID, method string, com []protocol.PeerID) []protocol.PeerID {
	_, expect := SumConnections(self, roster, method, com)
	return expect
}

// SumConnections plans self's connections for a sum over roster (sorted),
// so that every pair the sum sends on is opened once, by one side.
//
// dial are the peers self opens connections to (prepared only; nothing is
// sent on them):
//
//   - ring: its successor in the ring, whose connection also carries the
//     backward pass (its predecessor dials it; a re-formed ring has new
//     neighbours, whose dials the re-form pays);
//   - Shamir with committee com: a dealer sends its shares to every member,
//     so an owner outside the committee dials every member, and a member
//     dials the members after it in peer-id order (the one before it dials
//     it). Later sums have other committees and open what they lack
//     themselves.
//
// expect are the peers that dial self (self is in their dial) and that
// self sends to in the sum: a message from self to one of them before its
// connection is up should wait for that connection rather than dial a
// second one (protocol.Expecter):
//
//   - ring: its predecessor, which dials it and to which the backward pass
//     goes (with two owners, the second one's: the first dials it);
//   - Shamir with committee com: a member sends its shares to the members
//     before it in peer-id order, which dial it. Dealers outside the
//     committee dial it too, but it sends them nothing.
func SumConnections(self protocol.PeerID, roster []protocol.PeerID, method string, com []protocol.PeerID) (dial, expect []protocol.PeerID) {
	i, ok := slices.BinarySearch(roster, self)
	n := len(roster)
	if !ok || n < 2 {
		return nil, nil
	}
	if method == Ring {
		// Each owner dials its successor only: the predecessor dials it.
		// Both dialling each other at once would leave two connections.
		if n > 2 || i == 0 {
			dial = []protocol.PeerID{roster[(i+1)%n]}
		}
		if n > 2 || i == 1 {
			expect = []protocol.PeerID{roster[(i+n-1)%n]}
		}
		return dial, expect
	}
	member := slices.Contains(com, self)
	for _, m := range com {
		switch {
		case m == self:
		case !member || m > self:
			dial = append(dial, m)
		default:
			expect = append(expect, m)
		}
	}
	return dial, expect
}
