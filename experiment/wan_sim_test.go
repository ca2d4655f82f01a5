package experiment

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ppboost/ppboost/protocol/securesum"
)

var simOwners = flag.Int("wansim.owners", 0, "TestWANSim: run this many owners instead of the default cases")

// TestWANSim runs the WAN harness's Shamir sums on the simulated internet
// (simLinks: QUIC over simnet, in testing/synctest's virtual time): every
// owner 100 ms one way from every other and from the user, a first sum and
// warm sums, every total over all owners. Virtual time makes the latency
// exact whatever the machine's load: the goal (issue 31) is 0 owners left
// out, a first sum within 3x the chain's bound (5 one-way delays) and every
// warm sum within 1.5x. 20 owners (about 4 s of wall time); -wansim.owners
// N runs N instead: 200 pass in 105 s of wall time (first sum 7.0 delays,
// warm 5.0, no duplicate connection); with a committee drawn anew for each
// round (before issue 31) the warm sums took 10.5 to 10.7 delays, each one
// dialling on its critical path (RESULTS.md "A simulated internet").
func TestWANSim(t *testing.T) {
	if testing.Short() && *simOwners == 0 {
		t.Skip("hundreds of QUIC hosts in one process (4 s; .ci/run runs it without -race)")
	}
	sizes := []int{20}
	if *simOwners > 0 {
		sizes = []int{*simOwners}
	}
	for _, n := range sizes {
		t.Run(fmt.Sprintf("owners=%d", n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := wanCase{Transport: "quic", Owners: n, Method: securesum.Shamir, Delay: 100 * time.Millisecond, Warm: 3, Sim: true}
				res, err := runWANCase(context.Background(), c, 1, t.Logf)
				if err != nil {
					t.Fatal(err)
				}
				bound := float64(wanBound(c.Method, n))
				for _, s := range res.Sums {
					delays := s.Seconds / c.Delay.Seconds()
					t.Logf("%s: %.3f s = %.1f one-way delays (bound %g), %d/%d dealers, %d duplicate connection ends %s",
						s.Kind, s.Seconds, delays, bound, s.Parties, n, s.DupConnEnds, s.Err)
					limit := 1.5 * bound
					if s.Kind == "first" {
						limit = 3 * bound
					}
					if s.Err != "" || s.Parties != n || delays > limit {
						t.Errorf("%s sum: %v delays (limit %v), %d of %d dealers, err %q", s.Kind, delays, limit, s.Parties, n, s.Err)
					}
				}
			})
		})
	}
}

// TestWANSimSessions trains whole sessions on the simulated internet, 100
// ms one way: a 3-round W&C session (`ppboost testnet --privacy
// distributed`'s short session) and a 30-tree federated Newton session
// (`ppboost fed-user`'s defaults), each round attempt or tree timed in
// virtual time against its latency bound (wanSessionBound, wanFedBound):
// the first within 3x, every later one within 1.5x, and every session
// ends with its model. 20 owners; -wansim.owners N runs N.
func TestWANSimSessions(t *testing.T) {
	if testing.Short() && *simOwners == 0 {
		t.Skip("whole sessions among QUIC hosts in one process (.ci/run runs it without -race)")
	}
	n := 20
	if *simOwners > 0 {
		n = *simOwners
	}
	for _, c := range []wanCase{
		{Transport: "quic", Owners: n, Method: wanSessionMethod, Delay: 100 * time.Millisecond, Rounds: 3, Sim: true},
		{Transport: "quic", Owners: n, Method: wanFedMethod, Delay: 100 * time.Millisecond, Rounds: 30, Sim: true},
	} {
		t.Run(fmt.Sprintf("%s/owners=%d", c.Method, n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { checkSimSession(t, c) })
		})
	}
}

// checkSimSession runs c and checks every attempt or tree against its
// bound.
func checkSimSession(t *testing.T, c wanCase) {
	res, err := runWANCase(context.Background(), c, 1, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	bound := float64(wanBound(c.Method, c.Owners))
	var total float64
	for i, s := range res.Sums {
		delays := s.Seconds / c.Delay.Seconds()
		total += s.Seconds
		limit := 1.5 * bound
		if i == 0 {
			limit = 3 * bound
		}
		if i < 3 || i == len(res.Sums)-1 || s.Err != "" || delays > limit {
			t.Logf("%s %d: %.3f s = %.1f one-way delays (bound %g), %.0f wire bytes per owner %s", s.Kind, i+1, s.Seconds, delays, bound, s.WireBytes, s.Err)
		}
		if s.Err != "" || delays > limit {
			t.Errorf("%s %d: %.1f delays (limit %v) %s", s.Kind, i+1, delays, limit, s.Err)
		}
	}
	t.Logf("%d attempts or trees in %.1f s of virtual time (%.1f one-way delays each)", len(res.Sums), total, total/c.Delay.Seconds()/float64(max(len(res.Sums), 1)))
	if c.Method == wanFedMethod && len(res.Sums) != c.rounds() {
		t.Errorf("%d trees, want %d", len(res.Sums), c.rounds())
	}
}
