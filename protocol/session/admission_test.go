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
