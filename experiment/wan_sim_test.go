package experiment

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
)

var (
	simOwners   = flag.Int("wansim.owners", 0, "TestWANSim: run this many owners instead of the default cases")
	simUserMbps = flag.Int("wansim.usermbps", 0, "TestWANSimSessions: the data user's link in Mbit/s (0: the owners' 100)")
	simDelay    = flag.Duration("wansim.delay", 100*time.Millisecond, "TestWANSim: the one-way delay of every link")
)

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
				c := wanCase{Transport: "quic", Owners: n, Method: securesum.Shamir, Delay: *simDelay, Warm: 3, Sim: true}
				res, err := runWANCase(context.Background(), c, 1, t.Logf)
				if err != nil {
					t.Fatal(err)
				}
				bound := float64(wanBound(c.Method, n))
				for _, s := range res.Sums {
					delays := s.Seconds / c.Delay.Seconds()
					t.Logf("%s: %.3f s = %.1f one-way delays (bound %g), %d/%d dealers, %d duplicate connection ends, %d relayed ends %s",
						s.Kind, s.Seconds, delays, bound, s.Parties, n, s.DupConnEnds, s.RelayedConnEnds, s.Err)
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
		{Transport: "quic", Owners: n, Method: wanSessionMethod, Delay: 100 * time.Millisecond, Rounds: 3, Sim: true, UserMbps: *simUserMbps},
		{Transport: "quic", Owners: n, Method: wanFedMethod, Delay: 100 * time.Millisecond, Rounds: 30, Sim: true, UserMbps: *simUserMbps},
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
	sums := res.Sums
	if len(sums) > 0 && (sums[0].Kind == "session-roster" || sums[0].Kind == "fed-config") {
		// The roster's (the configuration's) distribution down its tree:
		// the user sends it to the first k owners (what it sent
		// meanwhile, at the simulation's 100 Mbit/s uplink, is a floor),
		// which open their first sums' connections and ack (2 delays and
		// a fresh connection besides); beyond k owners, they forward it
		// to the rest on fresh connections (wanTreeLevel) and send as
		// much as the user did. Within 3x that.
		r := sums[0]
		bps := 100e6
		if c.UserMbps > 0 {
			bps = float64(c.UserMbps) * 1e6
		}
		floor := r.WireBytes * 8 / bps / c.Delay.Seconds()
		delays := r.Seconds / c.Delay.Seconds()
		b := float64(wanRosterBound(c.Method, c.Owners))
		limit := 3 * (b + floor)
		if session.RosterTreeDepth(c.Owners) > 1 {
			limit = 3 * (b + 2*floor)
		}
		t.Logf("%s: %.3f s = %.1f one-way delays; the user sent %.0f bytes meanwhile (%.1f delays of its uplink): limit %.1f delays",
			r.Kind, r.Seconds, delays, r.WireBytes, floor, limit)
		if r.Err != "" || delays > limit {
			t.Errorf("%s: %.1f delays (limit %.1f) %s", r.Kind, delays, limit, r.Err)
		}
		sums = sums[1:]
	}
	for i, s := range sums {
		delays := s.Seconds / c.Delay.Seconds()
		total += s.Seconds
		limit := 1.5 * bound
		if i == 0 {
			limit = 3 * bound
		}
		if i < 3 || i == len(sums)-1 || s.Err != "" || delays > limit {
			t.Logf("%s %d: %.3f s = %.1f one-way delays (bound %g), %.0f wire bytes per owner %s", s.Kind, i+1, s.Seconds, delays, bound, s.WireBytes, s.Err)
		}
		if s.Err != "" || delays > limit {
			t.Errorf("%s %d: %.1f delays (limit %v) %s", s.Kind, i+1, delays, limit, s.Err)
		}
	}
	t.Logf("%d attempts or trees in %.1f s of virtual time (%.1f one-way delays each)", len(sums), total, total/c.Delay.Seconds()/float64(max(len(sums), 1)))
	if len(sums) > 0 && (c.Method == wanSessionMethod || c.Method == wanFedMethod) {
		last := sums[len(sums)-1]
		t.Logf("duplicate connection ends among the owners at the end: %d; messages that waited for the peer's dial: %d connected, %d lapsed", last.DupConnEnds, last.ExpectMet, last.ExpectLapsed)
		if last.DupConnEnds != 0 && c.Owners <= 200 {
			// One side dials each pair (securesum.PreparePeers and
			// ExpectPeers; issue 31 item 2). At 1,000 owners one pair of
			// about 31,000 was dialled from both ends in one run, 0.6 s
			// apart, the second dial after the first connection had
			// arrived: not explained (RESULTS), so reported, not failed.
			t.Errorf("%d duplicate connection ends among the owners, want 0", last.DupConnEnds)
		}
	}
	if c.Method == wanSessionMethod && len(sums) > 0 {
		// The session trains: its model holds every planned round from
		// 200 owners on (50 or more a round; `ppboost simulate` with this
		// plan: 3 of 3 rounds in each of 3 seeds at 200 owners). With 5
		// owners a round (20 owners) later rounds are often dropped at
		// chance (simulate: 1, 1 and 3 rounds in 3 seeds), so there at
		// least the first.
		got, want := sums[len(sums)-1].Rounds, c.rounds()
		t.Logf("model: %d of %d rounds accepted", got, want)
		if c.Owners < 200 {
			want = 1
		}
		if got < want {
			t.Errorf("the session's model has %d rounds, want at least %d", got, want)
		}
	}
	if c.Method == wanFedMethod && len(sums) != c.rounds() {
		t.Errorf("%d trees, want %d", len(sums), c.rounds())
	}
}

var simSymmetric = flag.Bool("wansim.symmetric", false, "TestWANSimNAT: symmetric NATs (the negative control: hole punching fails, the test must fail)")

// TestWANSimNAT is hole punching for real (issue 31 item 5): 20 owners
// behind 10 NATs (2 per NAT, endpoint-independent mapping) and the data
// user on a public address serving the relay, every host with default NAT
// settings. Owners reserve a slot at the relay, open the first sum's
// connections through it (a peer behind another NAT cannot be dialled), and
// DCUtR upgrades them to direct connections. Goals: at least 90% of the
// owner pairs behind different NATs direct, and the sums' share traffic
// owner to owner: the relay carries none of it (a warm sum costs the relay
// under 1 KB; relayed, a Shamir sum's shares among 20 owners are tens of
// KB). -wansim.symmetric runs the negative control (symmetric NATs), which
// fails both goals.
func TestWANSimNAT(t *testing.T) {
	if testing.Short() {
		t.Skip("21 QUIC hosts behind simulated NATs, 4 sums")
	}
	synctest.Test(t, func(t *testing.T) {
		c := wanCase{Transport: "quic", Owners: 20, Method: securesum.Shamir, Delay: 50 * time.Millisecond, Warm: 3, Sim: true,
			NAT: 10, NATSymmetric: *simSymmetric}
		res, err := runWANCase(context.Background(), c, 1, t.Logf)
		if err != nil {
			t.Fatal(err)
		}
		p := res.Punch
		if p == nil {
			t.Fatal("no hole-punching figures")
		}
		if p.Pairs == 0 || p.Fraction() < 0.9 {
			t.Errorf("%d of %d owner pairs behind different NATs direct (%.0f%%), want >= 90%%", p.Direct, p.Pairs, 100*p.Fraction())
		}
		if p.PunchOK == 0 {
			t.Errorf("no hole punch counted as a success (%d failures)", p.PunchFailed)
		}
		for _, s := range res.Sums {
			if s.Err != "" || s.Parties != c.Owners {
				t.Errorf("%s sum: %d of %d dealers, err %q", s.Kind, s.Parties, c.Owners, s.Err)
			}
			if s.Kind == "warm" && s.RelayBytes > 1024 {
				t.Errorf("warm sum: the relay carried %d bytes, want coordination only (< 1 KB)", s.RelayBytes)
			}
		}
	})
}

// TestExperimentWANSimShort runs `ppboost experiment wan-sim` at its short
// size through its child process (this test binary re-executed, its cases
// under testing.Main in synctest bubbles): 6 owners at 0 and 50 ms. The
// 50 ms sums take exactly their chain (virtual time), so the table says
// 5 one-way delays, and the table, the JSON and the plot exist.
func TestExperimentWANSimShort(t *testing.T) {
	s, ok := Lookup("wan-sim")
	if !ok {
		t.Fatal("wan-sim not registered")
	}
	dir := t.TempDir()
	if err := s.Run(&Run{Out: dir, Seeds: []uint64{1}, Short: true, Log: testWriter{t}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"wan-sim.csv", "wan-sim.json", "wan-sim.png", "wan-sim.svg"} {
		if st, err := os.Stat(filepath.Join(dir, "wan", f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "wan", "wan-sim.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Rows []struct {
			DelayMS float64  `json:"delay_ms"`
			Delays  *float64 `json:"delays"`
			Failed  int      `json:"failed"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	timed := 0
	for _, r := range out.Rows {
		if r.Failed != 0 {
			t.Errorf("a failed step: %+v", r)
		}
		if r.DelayMS == 50 {
			timed++
			if r.Delays == nil || *r.Delays < 5 || *r.Delays > 5.2 {
				t.Errorf("50 ms row: %v one-way delays, want 5 (the chain, in virtual time)", r.Delays)
			}
		}
	}
	if timed != 2 {
		t.Errorf("%d rows at 50 ms, want 2 (first and warm)", timed)
	}
}
