package session

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Every (dealer, member) pair a Shamir sum uses is prepared exactly once, by
// one side, and nothing else; a ring owner prepares its two neighbours.
func TestPreparePeersCoverTheSumsPairs(t *testing.T) {
	for _, n := range []int{2, 3, 20, 32, 33, 200} {
		roster := make([]protocol.PeerID, n)
		for i := range roster {
			roster[i] = protocol.PeerID(fmt.Sprintf("p%05d", i))
		}
		h := &wire.Header{Session: "s", Round: 1}
		com := securesum.Committee(roster, 32, []byte("beacon"), h, PurposeErr, 0)
		dialled := map[[2]protocol.PeerID]int{}
		for _, self := range roster {
			for _, p := range securesum.PreparePeers(self, roster, securesum.Shamir, com) {
				if p == self {
					t.Fatalf("n=%d: %s prepares itself", n, self)
				}
				dialled[[2]protocol.PeerID{min(self, p), max(self, p)}]++
			}
		}
		need := 0
		for _, d := range roster {
			for _, m := range com {
				if d == m {
					continue
				}
				pair := [2]protocol.PeerID{min(d, m), max(d, m)}
				if slices.Contains(com, d) && d > m {
					continue // counted from the other member
				}
				need++
				if dialled[pair] != 1 {
					t.Errorf("n=%d: dealer %s and member %s prepared %d times, want once", n, d, m, dialled[pair])
				}
			}
		}
		if len(dialled) != need {
			t.Errorf("n=%d: %d pairs prepared, the sum uses %d", n, len(dialled), need)
		}
	}
	roster := []protocol.PeerID{"a", "b", "c", "d"}
	if got := securesum.PreparePeers("a", roster, securesum.Ring, nil); len(got) != 1 || got[0] != "b" {
		t.Errorf("ring peers of a: %v, want [b]", got)
	}
	// Every pair of ring neighbours is prepared once, by one side (both
	// dialling at once leaves two connections).
	for n := 2; n <= 6; n++ {
		ring := []protocol.PeerID{"a", "b", "c", "d", "e", "f"}[:n]
		dialled := map[[2]protocol.PeerID]int{}
		for _, self := range ring {
			for _, p := range securesum.PreparePeers(self, ring, securesum.Ring, nil) {
				dialled[[2]protocol.PeerID{min(self, p), max(self, p)}]++
			}
		}
		for i := range ring {
			pair := [2]protocol.PeerID{min(ring[i], ring[(i+1)%n]), max(ring[i], ring[(i+1)%n])}
			if dialled[pair] != 1 {
				t.Errorf("ring of %d: neighbours %v prepared %d times, want once", n, pair, dialled[pair])
			}
		}
		want := n // a ring of n > 2 has n neighbour pairs, of 2 one
		if n == 2 {
			want = 1
		}
		if len(dialled) != want {
			t.Errorf("ring of %d: %d pairs prepared, want %d", n, len(dialled), want)
		}
	}
	if got := securesum.PreparePeers("x", roster, securesum.Ring, nil); got != nil {
		t.Errorf("not in the roster: prepared %v", got)
	}
	if got := securesum.PreparePeers("a", roster, securesum.Shamir, nil); got != nil {
		t.Errorf("no committee: prepared %v", got)
	}
}
