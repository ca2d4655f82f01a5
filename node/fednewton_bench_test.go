package node

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// BenchmarkFedNewtonLibp2p100 runs federated Newton (the default of ppboost
// fed: dpboost.NewtonRule at eps 1) among 100 owner hosts and one data user,
// real libp2p hosts on loopback in this process, Adult's first 26,000 rows
// cut into 100 owners, and reports the wall time per tree after the first
// (s/tree) and of the first tree (s/first-tree, which opens the
// connections), over b.N sessions of `trees` trees. Shamir sums use a
// committee of 8 and a dealer floor of 90 (drop fraction 0.1). Run it with
//
//	go test -run XXX -bench FedNewtonLibp2p100 -benchtime 1x ./node
//
// (PPBOOST_BENCH_OWNERS=N changes the number of owner hosts.)
func BenchmarkFedNewtonLibp2p100(b *testing.B) {
	owners, trees := 100, 30
	if v, err := strconv.Atoi(os.Getenv("PPBOOST_BENCH_OWNERS")); err == nil && v > 0 {
		owners = v
	}
	d, err := dataset.Adult()
	if err != nil {
		b.Fatal(err)
	}
	train, _ := d.Shuffle(1).Split(26000)
	parts, err := train.Partition(owners, nil, 1)
	if err != nil {
		b.Fatal(err)
	}
	var perTree, first float64
	for i := 0; i < b.N; i++ {
		f, p := fedNewtonHosts(b, train, parts, trees, fmt.Sprintf("bench-%d", i))
		first += f
		perTree += p
	}
	b.ReportMetric(perTree/float64(b.N), "s/tree")
	b.ReportMetric(first/float64(b.N), "s/first-tree")
}

// fedNewtonHosts runs one session and returns the first tree's wall time
// and the mean of the others'.
func fedNewtonHosts(tb testing.TB, train *dataset.Dataset, parts []*dataset.Dataset, trees int, session string) (first, perTree float64) {
	log := hclog.NewNullLogger()
	n := len(parts)
	user := newHost(tb, func(c *Config) { c.ExpectedPeers = n })
	maxRows := 0
	for _, p := range parts {
		maxRows = max(maxRows, p.Len())
	}
	cfg := dpboost.NewtonRule(1, dpboost.DefaultRowBound, 2)
	cfg.Trees, cfg.EnsembleSize = trees, trees
	sum := securesum.DefaultParams()
	// A committee of 8 (as fedboost's own tests use): every owner deals to
	// 8 members, 800 streams per sum instead of 3,200 with the default 32.
	sum.Committee, sum.MinParties, sum.Bound = 8, 5, float64(maxRows)
	sum.Timeout = 60 * time.Second // the first sum's handshakes on two busy cores
	pub := &fedboost.Public{Session: session, Boost: cfg, Schema: train.Schema, Dim: train.Dim(), Noise: true,
		Colluders: 1, DropFraction: 0.1, Sum: sum, MaxRows: maxRows, Beacon: []byte(session),
		StepTimeout: 2 * time.Minute, IdleTimeout: time.Hour}
	var err error
	// The user's and the first owner's logs are shown if the run fails.
	olog := func(i int) hclog.Logger {
		if i == 0 {
			return testLogger(tb, "owner-0")
		}
		return log
	}
	hosts := make([]*Host, n)
	for i := range n {
		host := newHost(tb, func(c *Config) { c.Bootstrap, c.ExpectedPeers = user.Addrs()[:1], n+8 })
		hosts[i] = host
		ocfg := fedboost.DefaultOwnerConfig()
		ocfg.User, ocfg.Data, ocfg.Ledger, ocfg.MaxEpsilon, ocfg.Colluders = user.ID(), parts[i], protocol.NewMemLedger(10), 10, 1
		ocfg.Log, ocfg.NoiseSecret, ocfg.SumRand = olog(i), rng.SecretOf(7, uint64(i)), rng.Derive(8, uint64(i))
		o, err := fedboost.StartOwner(host, ocfg)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { o.Close() })
		pub.Roster = append(pub.Roster, host.ID())
	}
	slices.Sort(pub.Roster)
	if pub.Boost.Lambda, err = pub.NewtonLambda(); err != nil {
		tb.Fatal(err)
	}
	// Every owner knows where every other owner listens (the harness's
	// stand-in for the roster's addresses): secure sums dial owner to owner.
	for _, a := range hosts {
		for _, b := range hosts {
			if a != b {
				a.AddAddrs(b.ID(), b.Addrs())
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := user.WaitTopicPeers(ctx, wire.TopicFedControl, n); err != nil {
		tb.Fatal(err)
	}
	var mu sync.Mutex
	var stamps []time.Time
	done := make(chan error, 1)
	u, err := fedboost.StartUser(user, fedboost.UserConfig{Public: pub, ClassNames: train.Classes, Features: train.Features,
		AnnounceDelay: 2 * time.Second, Log: testLogger(tb, "user"),
		OnTree: func(fedboost.TreeReport) { mu.Lock(); stamps = append(stamps, time.Now()); mu.Unlock() },
		OnDone: func(_ *dpboost.Model, err error) { done <- err }})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { u.Close() })
	start := time.Now().Add(2 * time.Second) // the announce delay
	u.Start()
	select {
	case err := <-done:
		if err != nil {
			tb.Fatal(err)
		}
	case <-ctx.Done():
		tb.Fatal("the session did not end")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(stamps) != trees {
		tb.Fatalf("%d trees reported, want %d", len(stamps), trees)
	}
	first = stamps[0].Sub(start).Seconds()
	perTree = stamps[len(stamps)-1].Sub(stamps[0]).Seconds() / float64(trees-1)
	return first, perTree
}
