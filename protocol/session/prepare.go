package session

import (
	"slices"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
)

// maxPrepare bounds the connections an owner opens ahead of the sums.
const maxPrepare = 256

// preparePeers are the roster members an owner opens connections to when
// the roster is fixed (protocol.Preparer), so that the first secure sum does
// not pay the handshakes on its critical path:
//
//   - ring: its two ring neighbours (the ring is the sorted roster; a
//     re-formed ring has new neighbours, whose dials the re-form pays);
//   - Shamir: each sum's committee is drawn from the roster's beacon with the
//     instance's name, so no owner knows it before the SumStart, and over a
//     session's sums a dealer sends to most members. Every owner therefore
//     dials the next min(n/2, maxPrepare) members after itself in the
//     circular order of the sorted roster: each pair of owners at circular
//     distance at most n/2 is dialled once, by one side (a libp2p connection
//     carries streams both ways), which covers every pair for n <= 2*maxPrepare.
//
// A connection is prepared only; nothing is sent on it.
func preparePeers(self protocol.PeerID, roster []protocol.PeerID, method string) []protocol.PeerID {
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
	k := min(n/2, maxPrepare)
	out := make([]protocol.PeerID, 0, k)
	for j := 1; j <= k; j++ {
		out = append(out, roster[(i+j)%n])
	}
	return out
}
