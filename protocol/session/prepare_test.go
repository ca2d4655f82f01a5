package session

import (
	"fmt"
	"testing"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
)

// Every pair of roster members is prepared by exactly one side when the
// roster has at most 2*maxPrepare members (both sides only at circular
// distance n/2 of an even roster), a ring owner prepares its two
// neighbours, and nobody prepares itself or more than maxPrepare peers.
func TestPreparePeersCoverEveryPair(t *testing.T) {
	for _, n := range []int{2, 3, 7, 60, 200, 2*maxPrepare + 1, 1000} {
		roster := make([]protocol.PeerID, n)
		for i := range roster {
			roster[i] = protocol.PeerID(fmt.Sprintf("p%05d", i))
		}
		dialled := map[[2]int]int{}
		for i, self := range roster {
			ps := preparePeers(self, roster, securesum.Shamir)
			if len(ps) > maxPrepare {
				t.Fatalf("n=%d: %d prepared by %s", n, len(ps), self)
			}
			for _, p := range ps {
				var j int
				fmt.Sscanf(string(p), "p%05d", &j)
				if j == i {
					t.Fatalf("n=%d: %s prepares itself", n, self)
				}
				dialled[[2]int{min(i, j), max(i, j)}]++
			}
		}
		pairs, twice := n*(n-1)/2, 0
		for _, c := range dialled {
			if c > 1 {
				twice++
			}
		}
		if n <= 2*maxPrepare+1 && len(dialled) != pairs {
			t.Errorf("n=%d: %d of %d pairs prepared", n, len(dialled), pairs)
		}
		if n%2 == 1 && twice > 0 || n%2 == 0 && twice > n/2 {
			t.Errorf("n=%d: %d pairs dialled from both sides", n, twice)
		}
		if n > 2*maxPrepare+1 && len(dialled) != n*maxPrepare {
			t.Errorf("n=%d: %d pairs prepared, want n x maxPrepare = %d", n, len(dialled), n*maxPrepare)
		}
	}
	roster := []protocol.PeerID{"a", "b", "c", "d"}
	if got := preparePeers("a", roster, securesum.Ring); len(got) != 2 || got[0] != "d" || got[1] != "b" {
		t.Errorf("ring neighbours of a: %v, want [d b]", got)
	}
	if got := preparePeers("x", roster, securesum.Ring); got != nil {
		t.Errorf("not in the roster: prepared %v", got)
	}
}
