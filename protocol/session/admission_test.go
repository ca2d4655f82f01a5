package session

import (
	"fmt"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// sybilJoins queues, ahead of everyone, a Join from each of n outsider ids
// that read the public Announce (the schema digest is in it) and join at
// once; the outsiders then never answer anything.
func sybilJoins(c *cluster, n int) []protocol.PeerID {
	var ids []protocol.PeerID
	for i := 0; i < n; i++ {
		id := protocol.PeerID(fmt.Sprintf("sybil-%02d", i))
		ids = append(ids, id)
		env, _ := wire.Wrap(&wire.Header{Version: wire.Version, Session: "hand"},
			&wire.Join{SchemaDigest: c.data.Owners[0].Schema.Digest(), Nonce: make([]byte, NonceBytes)})
		b, _ := wire.Marshal(env, wire.MaxControlBytes)
		c.w.q = append(c.w.q, msg{at: c.w.clock.Now().Add(latency), from: id, to: userID, proto: wire.ProtoSession, data: b})
	}
	return ids
}

// TestOpenSessionSybilsCannotTakeTheRoster is issue 20's probe: as many
// outsider ids as the session expects owners read the Announce and join
// before any owner. First-come (the user before this test) fixed the roster
// with the outsiders alone, so no owner released and the session failed.
// An open session now collects joins for its join window: every owner that
// joins within it is in the roster, and the session trains with the owners'
// shares while the outsiders stay silent. Over MaxRoster, the roster is
// drawn by lot among all joiners, so the outsiders who came first do not
// get it either.
func TestOpenSessionSybilsCannotTakeTheRoster(t *testing.T) {
	const owners = 8
	mutate := func(cfg *boost.Config, _ *securesum.Params) { cfg.Alpha = boost.AlphaValidation }
	t.Run("window", func(t *testing.T) {
		c := newCluster(t, owners, mutate)
		c.open = true
		sybils := sybilJoins(c, owners)
		c.startUser(t, nil)
		c.run(time.Minute)
		if !c.done || c.err != nil {
			t.Fatalf("done %v, err %v", c.done, c.err)
		}
		roster := c.user.roster.IDs
		if len(roster) != 2*owners {
			t.Fatalf("roster of %d, want the %d owners and the %d outsiders", len(roster), owners, len(sybils))
		}
		for _, id := range c.ids {
			if !contains(roster, id) {
				t.Fatalf("owner %s, which joined within the window, is not in the roster", id)
			}
		}
		if c.releases() == 0 {
			t.Fatal("no owner released")
		}
	})
	t.Run("lot", func(t *testing.T) {
		c := newCluster(t, owners, mutate)
		c.open = true
		c.userCfg = func(u *UserConfig) { u.MaxRoster = owners }
		sybilJoins(c, owners)
		c.startUser(t, nil)
		c.w.advance(time.Second)
		r := c.user.roster
		if r == nil || len(r.IDs) != owners {
			t.Fatalf("roster %v, want %d drawn by lot", r, owners)
		}
		honest := 0
		for _, id := range c.ids {
			if contains(r.IDs, id) {
				honest++
			}
		}
		// A fair lot of 8 among 8 owners and 8 outsiders has 4 owners on
		// average; all 8 outsiders (first-come) has probability 1/12870.
		if honest == 0 {
			t.Fatal("the lot kept only the outsiders that joined first")
		}
		t.Logf("roster by lot: %d of %d owners, %d outsiders", honest, owners, owners-honest)
	})
	t.Run("closed", func(t *testing.T) {
		// With an admission rule (an allow-list) the outsiders' joins are
		// refused and the session starts as soon as the owners joined.
		c := newCluster(t, owners, mutate)
		sybilJoins(c, owners)
		c.startUser(t, nil)
		c.w.advance(50 * time.Millisecond)
		if r := c.user.roster; r == nil || len(r.IDs) != owners {
			t.Fatalf("roster %v, want the %d admitted owners at once", r, owners)
		}
	})
}

func contains(ids []protocol.PeerID, id protocol.PeerID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// TestOpenSessionOutlivesSilentJoiners is issue 31 item 4, played in
// virtual time: 20 outsider ids Join an open session at once and then never
// answer anything; the 5 honest owners come onto the network 4 s later,
// after the join window. ExpectedOwners is 20, so the outsiders fill it and
// the rounds start without the owners. Before the fix the user stopped
// announcing at the start, turned later joins away and spent its 10
// attempts selecting silent outsiders ("0/1 owners answered"): the session
// failed. Now the session keeps announcing until a round is accepted, the
// owners join, echo the user's liveness check and enter roster version 2,
// selection prefers them over the joiners that never echoed, and the
// session trains with the honest owners whatever the silent ones do.
func TestOpenSessionOutlivesSilentJoiners(t *testing.T) {
	// alpha mode securesum runs an err sum over the whole roster every
	// attempt: the version the late owners enter leaves the silent
	// joiners out, so the sums run over the owners.
	for _, alpha := range []boost.AlphaMode{boost.AlphaValidation, boost.AlphaSecureSum} {
		t.Run(string(alpha), func(t *testing.T) { outlivesSilentJoiners(t, alpha) })
	}
}

func outlivesSilentJoiners(t *testing.T, alpha boost.AlphaMode) {
	const honest, silent = 5, 20
	c := newCluster(t, honest, func(cfg *boost.Config, _ *securesum.Params) {
		cfg.Alpha = alpha
		cfg.OwnersPerRound, cfg.Rounds, cfg.MaxAttempts = 1, 2, 10
	})
	c.open = true
	sybilJoins(c, silent)
	// The honest owners are not on the network for the first 4 s.
	arrive := c.w.clock.Now().Add(4 * time.Second)
	isHonest := map[protocol.PeerID]bool{}
	for _, id := range c.ids {
		isHonest[id] = true
	}
	c.w.drop = func(m msg) bool {
		return (isHonest[m.to] || isHonest[m.from]) && c.w.clock.Now().Before(arrive)
	}
	var reports []RoundReport
	c.userCfg = func(u *UserConfig) {
		u.ExpectedOwners = silent
		u.OnRound = func(r RoundReport) { reports = append(reports, r) }
	}
	// An observer of the control topic sees every Select.
	const observer protocol.PeerID = "observer"
	c.w.subs[wire.TopicControl] = append(c.w.subs[wire.TopicControl], observer)
	start := c.w.clock.Now()
	c.startUser(t, nil)
	c.run(time.Minute)
	took := c.w.clock.Now().Sub(start)
	for _, r := range reports {
		t.Logf("round %d attempt %d: %d/%d owners answered, accepted %v", r.Round, r.Attempt, r.Answered, r.Selected, r.Accepted)
	}
	if !c.done || c.err != nil {
		t.Fatalf("done %v, err %v (after %v of virtual time)", c.done, c.err, took)
	}
	if len(c.model.Rounds) != c.cfg.Rounds {
		t.Fatalf("model of %d rounds, want %d", len(c.model.Rounds), c.cfg.Rounds)
	}
	// Every selection: nobody selected twice, the outsiders only before the
	// owners had joined.
	times := map[string]int{}
	silentPicks := 0
	for _, m := range c.w.log {
		e := m.env()
		if m.to != observer || e == nil || e.GetSelect() == nil {
			continue
		}
		for _, p := range c.selectedIn(e) {
			times[p]++
			if !isHonest[protocol.PeerID(p)] {
				silentPicks++
			}
		}
	}
	for p, n := range times {
		if n > 1 {
			t.Errorf("%s selected %d times", p, n)
		}
	}
	// Attempts wait ShareTimeout (2 s) each: only the attempts that began
	// before the owners could answer (at 0.3 s and 2.3 s) select outsiders;
	// after that, selection prefers owners that echoed their check.
	if silentPicks > 2 {
		t.Errorf("%d selections of silent outsiders, want at most the 2 made before the owners arrived", silentPicks)
	}
	r := c.user.roster
	if r.Version < 2 {
		t.Errorf("roster version %d: the late owners never entered a roster", r.Version)
	}
	for _, id := range c.ids {
		if !contains(r.IDs, id) {
			t.Errorf("owner %s is not in the last roster (version %d)", id, r.Version)
		}
	}
	if len(r.IDs) != honest {
		t.Errorf("last roster (version %d) of %d, want the %d owners: the joiners that never echoed are left out", r.Version, len(r.IDs), honest)
	}
	if c.releases() < c.cfg.Rounds {
		t.Errorf("%d owners released, want at least %d", c.releases(), c.cfg.Rounds)
	}
	t.Logf("trained %d rounds in %v of virtual time: roster version %d of %d, %d selections of silent outsiders, %d honest releases",
		len(c.model.Rounds), took, r.Version, len(r.IDs), silentPicks, c.releases())
}
