package securesum_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// A sum whose committee comes from the session's roster (Request.Pool):
// four of twelve owners deal, the committee is drawn from all
// twelve (four: no larger than a committee drawn from the dealers), the
// members that do not deal Serve (hold shares, reveal one
// partial sum), and the total is the four dealers' values. The committee
// is the same for every such sum of the purpose whatever the dealers, so
// its connections can be opened once. In the control (no pool), the
// committee is drawn from the dealers: nobody serves, and two dealer sets
// give two committees.
func TestPoolCommittee(t *testing.T) {
	p := directParams(securesum.Shamir)
	p.SingleInstance, p.MinParties = true, 3
	committees := map[bool][][]protocol.PeerID{}
	for _, pool := range []bool{true, false} {
		for round, dealerIdx := range [][]int{{1, 4, 7, 10}, {0, 2, 5, 11}} {
			c := newDirectCluster(t, 12, p)
			var want float64
			for _, i := range dealerIdx {
				c.dealers = append(c.dealers, c.roster[i])
				want += float64(i%5) / 4 // newDirectCluster's values
			}
			r := securesum.Request{Header: &wire.Header{Version: wire.Version, Session: "direct", Round: uint32(round + 1)},
				Purpose: "share", Roster: c.dealers, Length: 2, Beacon: directBeacon}
			if pool {
				r.Pool = c.roster
			}
			out := c.sumOf(t, r)
			// Exact up to the fixed-point scale: 4 values each within 2^-24.
			if out.err != nil || out.parties != 4 || math.Abs(out.total[0]-want) > 4.0/(1<<24) || out.total[1] != 4 {
				t.Fatalf("pool %v, dealers %v: total %v over %d, err %v; want %v over 4", pool, dealerIdx, out.total, out.parties, out.err, want)
			}
			c.net.RunFor(time.Second)
			var com []protocol.PeerID
			served := 0
			for _, id := range c.roster {
				h := c.got[id]
				if h.err != nil {
					t.Errorf("pool %v: %s: %v", pool, id, h.err)
				}
				_, dealer := slices.BinarySearch(c.dealers, id)
				if h.starts > 0 && !dealer {
					com = append(com, id)
				}
				if dealer && h.starts != 1 {
					t.Errorf("pool %v: dealer %s heard %d SumStarts", pool, id, h.starts)
				}
				served += h.served
			}
			if pool && (served == 0 || served != len(com)) {
				t.Errorf("pool %v: %d members served, %d non-dealers got a SumStart; want the same, more than 0", pool, served, len(com))
			}
			if !pool && served != 0 {
				t.Errorf("no pool: %d parties served; want 0 (the committee is drawn from the dealers)", served)
			}
			committees[pool] = append(committees[pool], com)
		}
	}
	// With a pool, the members that serve are exactly the session's one
	// committee (drawn from the roster, the same for both sums) minus each
	// sum's dealers.
	h := &wire.Header{Version: wire.Version, Session: "direct", Round: 1}
	roster := newDirectCluster(t, 12, p).roster
	// Four dealers: a committee of four (no larger than one drawn from the
	// dealers themselves), the first four of the pool's shuffle.
	com := securesum.Committee(roster, 4, directBeacon, h, "share", 0)
	if len(com) != 4 {
		t.Fatalf("committee %v", com)
	}
	for i, dealerIdx := range [][]int{{1, 4, 7, 10}, {0, 2, 5, 11}} {
		var want []protocol.PeerID
		for _, m := range com {
			if !slices.ContainsFunc(dealerIdx, func(j int) bool { return roster[j] == m }) {
				want = append(want, m)
			}
		}
		slices.Sort(want)
		if got := committees[true][i]; !slices.Equal(got, want) {
			t.Errorf("sum %d: members serving %v, want the roster's committee %v minus the dealers: %v", i+1, got, com, want)
		}
	}
}

// A pool needs Shamir sums dealt once: a re-formed instance could not name
// the silent members it leaves out of the pool.
func TestPoolNeedsSingleInstance(t *testing.T) {
	c := newDirectCluster(t, 6, directParams(securesum.Shamir))
	err := c.coord.Sum(securesum.Request{Header: &wire.Header{Version: wire.Version, Session: "direct", Round: 1},
		Purpose: "share", Roster: c.roster[:4], Pool: c.roster, Length: 2, Beacon: directBeacon}, func([]float64, int, error) {})
	if err == nil {
		t.Fatal("a pool sum without SingleInstance was accepted")
	}
}
