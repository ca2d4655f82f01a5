package simulate

import (
	"context"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/memnet"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
	"github.com/ppboost/ppboost/protocol/wire"
)

// TestOneEndpointServesTwoSystems: every peer has one memnet endpoint,
// shared through a protocol.Mux by a Wang & Chang role (wire.WC()) and a
// federated DPBoost role (wire.Fed()): the data user runs both users, and
// owners 0..11 run a W&C owner and a fedboost owner. The two sessions run
// concurrently on the same endpoints and both complete with every round or
// tree; neither role is handed the other's traffic (the muxes route
// everything, so no role counts a malformed or foreign message). The
// negative control: a message on a topic no port claimed is counted as
// unrouted and reaches no role.
func TestOneEndpointServesTwoSystems(t *testing.T) {
	// W&C: mechanism none, 20 owners, 4 rounds of 10.
	cfg := boost.DefaultConfig()
	cfg.Mechanism, cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = "none", 10, 4, 5
	data, err := boost.Prepare(boost.DataSpec{Source: "synthetic", SamplesPerOwner: 30, UserSamples: 500, TestSamples: 500, Seed: cfg.Seed}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPlan(Options{Boost: cfg, Sum: securesum.DefaultParams(), Data: data})
	if err != nil {
		t.Fatal(err)
	}
	// Federated DPBoost (np): 12 owners, the first 12 W&C owners' peers.
	const fedOwners = 12
	if len(data.Owners) < fedOwners {
		t.Fatalf("%d W&C owners, want at least %d", len(data.Owners), fedOwners)
	}
	syn := dataset.DefaultSynthetic(1200, 9)
	syn.Features, syn.Informative, syn.Redundant = 6, 4, 2
	union, err := dataset.Synthetic(syn)
	if err != nil {
		t.Fatal(err)
	}
	union.Schema = union.IdentitySchema()
	parts, err := union.Partition(fedOwners, nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	bc := dpboost.DefaultConfig()
	bc.Method, bc.Trees, bc.Depth, bc.Bins, bc.Lambda = dpboost.NP, 3, 2, 8, 1
	maxRows := 0
	for _, q := range parts {
		maxRows = max(maxRows, q.Len())
	}
	sum := securesum.DefaultParams()
	sum.Committee, sum.MinParties, sum.Bound = 8, 4, float64(maxRows)
	fo, pub, err := fedPlan(FedOptions{Owners: parts, Seed: 11, Log: p.opts.Log, Public: fedboost.Public{Boost: bc, Schema: union.Schema,
		Dim: union.Dim(), Colluders: 1, DropFraction: 0.25, Sum: sum, MaxRows: maxRows, StepTimeout: time.Minute, IdleTimeout: 10 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}

	net := memnet.New(netOptions(cfg.Seed, time.Millisecond, 0, 0, p.opts.Log))
	defer net.Close()
	port := func(m *protocol.Mux, s wire.System) protocol.Transport {
		tr, err := m.System(s)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	var muxes []*protocol.Mux
	var ep0 *memnet.Endpoint
	var fedOwnersRun []*fedboost.Owner
	for i, id := range p.ownerIDs() {
		ep, err := net.Join(id)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			ep0 = ep
		}
		m := protocol.NewMux(ep)
		muxes = append(muxes, m)
		wc := port(m, wire.WC())
		oc := p.owner(i)
		oc.Ledger, oc.Clock = protocol.NewMemLedger(p.budget), ep.Clock()
		o, err := session.NewOwner(id, protocol.Direct{Tr: wc, Log: p.opts.Log}, oc)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Attach(wc); err != nil {
			t.Fatal(err)
		}
		_ = o
		if i >= fedOwners {
			continue
		}
		fed := port(m, wire.Fed())
		fc := fedOwner(fo, &pub, i, protocol.NewMemLedger(1e9))
		fc.Clock = ep.Clock()
		f, err := fedboost.NewOwner(id, protocol.Direct{Tr: fed, Log: p.opts.Log}, fc)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Attach(fed); err != nil {
			t.Fatal(err)
		}
		fedOwnersRun = append(fedOwnersRun, f)
	}
	uep, err := net.Join(UserID)
	if err != nil {
		t.Fatal(err)
	}
	um := protocol.NewMux(uep)
	muxes = append(muxes, um)
	var wcModel *boost.Model
	var wcErr, fedErr error
	var wcDone, fedDone bool
	uc := p.user(0, nil)
	uc.Clock = uep.Clock()
	uc.OnDone = func(m *boost.Model, err error) { wcModel, wcErr, wcDone = m, err, true }
	wcPort := port(um, wire.WC())
	wu, err := session.NewUser(UserID, protocol.Direct{Tr: wcPort, Log: p.opts.Log}, uc)
	if err != nil {
		t.Fatal(err)
	}
	if err := wu.Attach(wcPort); err != nil {
		t.Fatal(err)
	}
	var fedModel *dpboost.Model
	fedPort := port(um, wire.Fed())
	fu, err := fedboost.NewUser(UserID, protocol.Direct{Tr: fedPort, Log: p.opts.Log}, fedboost.UserConfig{
		Public: &pub, ClassNames: pub.Schema.Classes, Features: parts[0].Features,
		AnnounceDelay: 100 * time.Millisecond, SumRand: rng.Derive(fo.Seed, 0x73756d, 1<<40),
		Clock: uep.Clock(), Log: p.opts.Log.Named("fed-user"),
		OnDone: func(m *dpboost.Model, err error) { fedModel, fedErr, fedDone = m, err, true },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := fu.Attach(fedPort); err != nil {
		t.Fatal(err)
	}
	// A port cannot claim another system's topic twice on one mux.
	if _, err := um.System(wire.WC()); err == nil {
		t.Fatal("a second W&C port on one mux was allowed")
	}
	fu.Start()
	if err := net.RunUntil(func() bool { return wcDone && fedDone }, 24*time.Hour); err != nil {
		t.Fatalf("W&C done %v, fed done %v: %v", wcDone, fedDone, err)
	}
	if wcErr != nil || wcModel == nil || wcModel.Partial != nil || len(wcModel.Rounds) == 0 {
		t.Fatalf("W&C session: %v, model %v", wcErr, wcModel)
	}
	if fedErr != nil || fedModel == nil || len(fedModel.Boosters) == 0 || len(fedModel.Boosters[0]) != bc.Trees {
		t.Fatalf("federated session: %v, model %v", fedErr, fedModel)
	}
	t.Logf("W&C: %d owners, %d rounds; federated: %d owners, %d trees", len(data.Owners), len(wcModel.Rounds), fedOwners, len(fedModel.Boosters[0]))
	for i, o := range fedOwnersRun {
		if n := o.Stats().Get("malformed"); n != 0 {
			t.Errorf("fed owner %d: %d malformed messages (W&C traffic leaked in?)", i, n)
		}
	}
	for _, m := range muxes {
		if s := m.Stats().Snapshot(); len(s) != 0 {
			t.Errorf("mux dropped %v", s)
		}
	}
	// Negative control: owner 0's endpoint joins the PFDS topic behind its
	// mux's back; a PFDS message then reaches the mux, which no port
	// claimed it for: counted as unrouted, handed to no role.
	if err := ep0.Join(wire.TopicPFDS); err != nil {
		t.Fatal(err)
	}
	if err := uep.Publish(context.Background(), wire.TopicPFDS, []byte("pfds")); err != nil {
		t.Fatal(err)
	}
	_ = net.RunUntil(func() bool { return muxes[0].Stats().Get("mux: unrouted") > 0 }, time.Minute)
	if n := muxes[0].Stats().Get("mux: unrouted"); n != 1 {
		t.Fatalf("unrouted PFDS message counted %d times, want 1", n)
	}
}
