package node

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Owners that bootstrap only to the federated data user, and so know
// nothing of each other, complete a federated session: the user's
// FedConfig carries where each owner listens (roster_addrs, from its
// peerstore once the owner connected), the owners add those addresses to
// their peerstores, and their Shamir shares dial owner to owner. Three
// owners (the least min_parties allows), a committee of all three, one
// tree: every sum needs every owner-to-owner stream.
func TestFedOwnersMeetThroughRosterAddrs(t *testing.T) {
	if testing.Short() {
		t.Skip("libp2p hosts: skipped under -short")
	}
	const n = 3
	cfg := dataset.DefaultSynthetic(150, rng.SeedOf(t.Name()))
	cfg.Features, cfg.Informative, cfg.Redundant = 4, 3, 1
	d, err := dataset.Synthetic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d.Schema = d.IdentitySchema()
	parts, err := d.Partition(n, nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	maxRows := 0
	for _, p := range parts {
		maxRows = max(maxRows, p.Len())
	}
	user := newHost(t, nil)
	bcfg := dpboost.DefaultConfig()
	bcfg.Method, bcfg.Trees, bcfg.EnsembleSize, bcfg.Depth = dpboost.NP, 1, 1, 1
	sum := securesum.DefaultParams()
	sum.Committee, sum.MinParties, sum.Bound = n, n, float64(maxRows)
	sum.Timeout = 30 * time.Second
	pub := &fedboost.Public{Session: "roster-addrs", Boost: bcfg, Schema: d.Schema, Dim: d.Dim(), Colluders: 1,
		Sum: sum, MaxRows: maxRows, Beacon: []byte("roster-addrs"), StepTimeout: time.Minute, IdleTimeout: 5 * time.Minute}
	owners := make([]*Host, n)
	for i := range n {
		h := newHost(t, func(c *Config) { c.Bootstrap = user.Addrs()[:1] })
		owners[i] = h
		ocfg := fedboost.DefaultOwnerConfig()
		ocfg.User, ocfg.Data, ocfg.Ledger, ocfg.MaxEpsilon = user.ID(), parts[i], protocol.NewMemLedger(10), 1
		ocfg.AllowNoNoise, ocfg.NoneCharge, ocfg.Colluders = true, 1, 1
		ocfg.Log, ocfg.NoiseSecret, ocfg.SumRand = testLogger(t, "owner"), rng.SecretOf(7, uint64(i)), rng.Derive(8, uint64(i))
		o, err := fedboost.StartOwner(h, ocfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		pub.Roster = append(pub.Roster, h.ID())
	}
	slices.Sort(pub.Roster)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := user.WaitTopicPeers(ctx, wire.TopicFedControl, n); err != nil {
		t.Fatal(err)
	}
	// The precondition: no owner knows where another listens.
	for _, a := range owners {
		for _, b := range owners {
			if a != b && len(a.PeerAddrs(b.ID())) > 0 {
				t.Fatalf("owner %s already knows owner %s's addresses %v before the announcement", a.ID(), b.ID(), a.PeerAddrs(b.ID()))
			}
		}
		if got := user.PeerAddrs(a.ID()); len(got) == 0 {
			t.Fatalf("the user's peerstore has no address of owner %s", a.ID())
		}
	}
	done := make(chan error, 1)
	u, err := fedboost.StartUser(user, fedboost.UserConfig{Public: pub, ClassNames: d.Classes, Features: d.Features,
		AnnounceDelay: time.Second, Log: testLogger(t, "user"),
		OnDone: func(_ *dpboost.Model, err error) { done <- err }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	u.Start()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the session failed: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the session did not end")
	}
	// The owners dialled each other with the announced addresses.
	for _, a := range owners {
		for _, b := range owners {
			if a != b && len(a.PeerAddrs(b.ID())) == 0 {
				t.Errorf("owner %s never learned owner %s's addresses", a.ID(), b.ID())
			}
		}
	}
}
