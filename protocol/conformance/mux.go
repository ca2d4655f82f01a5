package conformance

import (
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// RunTwoSystems checks that one transport endpoint serves roles of two
// systems at once: every peer of one cluster wraps its transport in a
// protocol.Mux, and a Wang & Chang session (wire.WC) and a federated
// DPBoost session (wire.Fed) run concurrently over the same endpoints, the
// user's endpoint running both users and every owner's both owners. Both
// must complete: the W&C model equals the reference trainer's and the
// federated one has every tree; no mux drops a message (every message
// reached the role of its system).
func RunTwoSystems(t *testing.T, h Harness) {
	n := min(12, h.MaxOwners())
	c := h.Start(t, n)
	wc := muxViews(t, c, wire.WC())
	fed := wc.sibling(t, wire.Fed())

	data := sessionData(t, n, 30)
	cfg := boost.DefaultConfig()
	cfg.Learner, cfg.Alpha, cfg.Mechanism = boost.Stump, boost.AlphaSecureSum, "none"
	cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = 3, 3, 5
	ref, err := boost.Train(cfg, data, nil)
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	fcfg := dpboost.DefaultConfig()
	fcfg.Method, fcfg.Trees, fcfg.Depth, fcfg.Bins, fcfg.Lambda = dpboost.NP, 3, 2, 8, 1
	f := startFed(t, fed, fcfg, false)
	s := startSession(t, wc, cfg, sumParams(c, "shamir", n), data, nil) // waits for the mesh, attaches the W&C user
	f.user.Start()
	limit := max(f.limit, min(200000*c.Scale(), 3*time.Minute))
	if !c.Run(func() bool { return s.finished() && f.out.finished() }, limit) {
		st, err := s.user.State()
		t.Fatalf("W&C done %v (user %s, %v), federated done %v", s.finished(), st, err, f.out.finished())
	}
	if s.err != nil {
		t.Fatalf("W&C session: %v", s.err)
	}
	sameModel(t, ref, s.model)
	f.out.mu.Lock()
	defer f.out.mu.Unlock()
	if f.out.err != nil {
		t.Fatalf("federated session: %v", f.out.err)
	}
	if got := len(f.out.model.Boosters[0]); got != fcfg.Trees {
		t.Fatalf("federated model: %d trees, want %d", got, fcfg.Trees)
	}
	for id, m := range wc.muxes {
		if d := m.Stats().Snapshot(); len(d) != 0 {
			t.Errorf("%s's mux dropped %v", id, d)
		}
	}
}

// muxCluster is one system's view of a cluster whose peers' transports
// are shared through a protocol.Mux: each peer's Transport is its port for
// the system.
type muxCluster struct {
	Cluster
	muxes map[protocol.PeerID]*protocol.Mux
	user  Peer
	peers []Peer
}

// muxViews wraps every peer of c in a mux and returns the view of sys.
func muxViews(t *testing.T, c Cluster, sys wire.System) *muxCluster {
	v := &muxCluster{Cluster: c, muxes: map[protocol.PeerID]*protocol.Mux{}}
	for _, p := range append([]Peer{c.User()}, c.Owners()...) {
		v.muxes[p.ID] = protocol.NewMux(p.Transport)
	}
	return v.sibling(t, sys)
}

// sibling is the view of sys over the same muxes.
func (v *muxCluster) sibling(t *testing.T, sys wire.System) *muxCluster {
	w := &muxCluster{Cluster: v.Cluster, muxes: v.muxes}
	port := func(p Peer) Peer {
		tr, err := v.muxes[p.ID].System(sys)
		if err != nil {
			t.Fatal(err)
		}
		return Peer{ID: p.ID, Transport: tr, Post: p.Post}
	}
	w.user = port(v.Cluster.User())
	for _, p := range v.Cluster.Owners() {
		w.peers = append(w.peers, port(p))
	}
	return w
}

func (v *muxCluster) User() Peer     { return v.user }
func (v *muxCluster) Owners() []Peer { return v.peers }
