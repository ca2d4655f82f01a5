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
	if got := securesum.PreparePeers("a", roster, securesum.Ring, nil); len(got) != 2 || got[0] != "d" || got[1] != "b" {
		t.Errorf("ring neighbours of a: %v, want [d b]", got)
	}
	if got := securesum.PreparePeers("x", roster, securesum.Ring, nil); got != nil {
		t.Errorf("not in the roster: prepared %v", got)
	}
	if got := securesum.PreparePeers("a", roster, securesum.Shamir, nil); got != nil {
		t.Errorf("no committee: prepared %v", got)
	}
}
