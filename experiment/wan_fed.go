package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/role"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// wanFedMethod marks the cases that train a federated Newton session
// (`ppboost fed-user` with its defaults: dpboost.NewtonRule at eps 1,
// colluders all) on Adult's first 26,000 rows cut among the owners.
const wanFedMethod = "fed-newton"

// wanFedTrees is a federated case's default number of trees.
const wanFedTrees = 30

// wanFedBound is the latency bound of one federated Newton tree in one-way
// delays, from protocol/fedboost/user.go: a Newton tree's structure is
// public (Public.NewtonTree), so a tree is one secure sum of its leaves.
// When the sum of tree t ends the user publishes tree t (FedTree, on the
// control topic) and at once sends tree t+1's SumStart to each owner of
// the group (1); an owner adds tree t to its predictions and deals its
// gradients (2), then the Shamir chain runs as in wanBound (holding,
// dealers, partials: 5). So 5 per tree, if the tree's publication reaches
// an owner no later than the SumStart (one gossip hop); every further
// gossip hop an owner waits for the tree adds one.
func wanFedBound() int { return 5 }

// wanFedRig is a federated Newton session's hosts, owners and data user.
type wanFedRig struct {
	wanRig
	trees int
	pub   *fedboost.Public
	train *dataset.Dataset

	mu    sync.Mutex
	stamp []time.Time // when each tree was reported
	done  chan error
}

// runWANFed trains one federated Newton session of c.rounds() trees among
// c.Owners owners and returns the first tree (which opens the owners'
// connections) as kind fed-first and every later one as fed-warm, each
// timed from the report of the tree before (the first from the user's
// start, after its announce delay).
func runWANFed(ctx context.Context, c wanCase, seed uint64) ([]wanSum, error) {
	dir, err := os.MkdirTemp("", "ppboost-wan-fed-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	r := &wanFedRig{wanRig: wanRig{n: c.Owners, d: c.Delay, seed: seed, dir: dir, tr: c.Transport}, trees: c.rounds(), done: make(chan error, 1)}
	defer r.close()
	if err := r.links(c); err != nil {
		return nil, err
	}
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	return r.run(ctx)
}

// setup starts the user's host and every owner (its host connected to the
// user, its ledger, its federated owner), and fixes the public plan.
func (r *wanFedRig) setup(ctx context.Context) error {
	d, err := dataset.Adult()
	if err != nil {
		return err
	}
	r.train, _ = d.Shuffle(r.seed).Split(26000)
	parts, err := r.train.Partition(r.n, nil, r.seed)
	if err != nil {
		return err
	}
	if r.user, err = r.host(ctx, "user"); err != nil {
		return err
	}
	maxRows := 0
	for _, p := range parts {
		maxRows = max(maxRows, p.Len())
	}
	cfg := dpboost.NewtonRule(1, dpboost.DefaultRowBound, 2)
	cfg.Trees, cfg.EnsembleSize = r.trees, r.trees
	sum := securesum.DefaultParams()
	sum.Committee, sum.Bound = min(sum.Committee, r.n), float64(maxRows)
	session := fmt.Sprintf("wan-fed-%d", r.seed)
	r.pub = &fedboost.Public{Session: session, Boost: cfg, Schema: r.train.Schema, Dim: r.train.Dim(), Noise: true,
		Colluders: boost.ColludersAll, DropFraction: 0.1, Sum: sum, MaxRows: maxRows, Beacon: []byte(session),
		StepTimeout: 2 * time.Minute, IdleTimeout: time.Hour}
	log := hclog.NewNullLogger()
	for i := range r.n {
		x, err := r.host(ctx, wanOwnerName(i))
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		err = x.Connect(cctx, r.user.Addrs()[0])
		cancel()
		if err != nil {
			return fmt.Errorf("owner %d: %w", i, err)
		}
		ocfg := fedboost.DefaultOwnerConfig()
		ocfg.User, ocfg.Data, ocfg.Ledger, ocfg.MaxEpsilon = r.user.ID(), parts[i], protocol.NewMemLedger(10), 10
		ocfg.Log, ocfg.NoiseSecret, ocfg.SumRand = log, rng.SecretOf(r.seed, uint64(i)), rng.Derive(r.seed+1, uint64(i))
		o, err := fedboost.StartOwner(x, ocfg, role.WithSendTimeout(30*time.Second))
		if err != nil {
			return err
		}
		r.closers = append(r.closers, func() { o.Close() })
		r.pub.Roster = append(r.pub.Roster, x.ID())
	}
	slices.Sort(r.pub.Roster)
	r.pub.Boost.Lambda, err = r.pub.NewtonLambda()
	return err
}

// wanFedAnnounce is the user's AnnounceDelay: the least it waits after
// announcing before tree 1 while owners' configuration acks still come in
// (fedboost.User.onConfigAck), and all it waits when none comes.
const wanFedAnnounce = 2 * time.Second

// run starts the user once every owner is on the control topic and times
// the trees.
func (r *wanFedRig) run(ctx context.Context) ([]wanSum, error) {
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err := r.user.WaitTopicPeers(wctx, wire.TopicFedControl, r.n)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("mesh not ready: %w", err)
	}
	ulog := hclog.NewNullLogger()
	if os.Getenv("PPBOOST_DBG") != "" { // the user's log, as the W&C session rig's
		ulog = hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: os.Stdout, Name: "U"})
	}
	u, err := fedboost.StartUser(r.user, fedboost.UserConfig{Public: r.pub, ClassNames: r.train.Classes, Features: r.train.Features,
		AnnounceDelay: wanFedAnnounce, Log: ulog,
		OnTree: func(fedboost.TreeReport) { r.mu.Lock(); r.stamp = append(r.stamp, time.Now()); r.mu.Unlock() },
		OnDone: func(_ *dpboost.Model, err error) { r.done <- err }}, role.WithSendTimeout(30*time.Second))
	if err != nil {
		return nil, err
	}
	r.closers = append(r.closers, func() { u.Close() })
	announced := time.Now()
	userSent0, sent0 := r.lk.sent("user"), r.wireSent()
	limit := 10*time.Minute + time.Duration(r.trees)*50*r.d
	stop, started := make(chan struct{}), make(chan wanStart, 1)
	defer close(stop)
	go watchFedStart(u, r.lk, stop, started)
	u.Start()
	var runErr error
	var st wanStart
	select {
	case runErr = <-r.done:
	case <-time.After(limit):
		runErr = errors.New("no model in time")
	}
	select {
	case st = <-started:
	default:
		return []wanSum{{Kind: "fed-config", Seconds: time.Since(announced).Seconds(), Err: fmt.Sprintf("tree 1 never started: %v", runErr)}}, nil
	}
	r.mu.Lock()
	at := append([]time.Time{st.selected}, r.stamp...)
	r.mu.Unlock()
	wb := float64(r.wireSent()-sent0) / float64(r.n) / float64(max(len(at)-1, 1))
	// The configuration's distribution down its tree, until every member
	// holds it (their acks) or tree 1 starts without some: its time and
	// the user's bytes meanwhile, as the W&C session's roster.
	out := []wanSum{{Kind: "fed-config", Seconds: st.selected.Sub(announced).Seconds(), Parties: r.n,
		WireBytes: float64(st.selectedSent - userSent0)}}
	for i := 1; i < len(at); i++ {
		s := wanSum{Kind: "fed-first", Seconds: at[i].Sub(at[i-1]).Seconds(), Parties: r.n, WireBytes: wb}
		if i > 1 {
			s.Kind = "fed-warm"
		}
		out = append(out, s)
	}
	// Duplicate connections among the owners, counted once at the end.
	dup := r.dupEnds()
	for i := range out {
		out[i].DupConnEnds = dup
	}
	if runErr != nil || len(out)-1 != r.trees {
		out = append(out, wanSum{Kind: "fed-end", Seconds: time.Since(st.selected).Seconds(), Err: fmt.Sprintf("%d of %d trees: %v", len(out)-1, r.trees, runErr)})
	}
	return out, nil
}

// watchFedStart sends on started when u has left UserIdle (tree 1 began;
// polled on its loop from the side, every 2 ms of virtual time), with the
// user's wire bytes then.
func watchFedStart(u *fedboost.User, lk wanLinks, stop <-chan struct{}, started chan<- wanStart) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(2 * time.Millisecond):
		}
		if state, _ := u.State(); state != fedboost.UserIdle {
			started <- wanStart{selected: time.Now(), selectedSent: lk.sent("user")}
			return
		}
	}
}
