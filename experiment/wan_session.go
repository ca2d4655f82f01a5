package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/node/netem"
	"github.com/ppboost/ppboost/protocol/role"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
	"github.com/ppboost/ppboost/protocol/wire"
	"github.com/ppboost/ppboost/store"
)

// A short session is what `ppboost testnet --privacy distributed` runs:
// logistic regression, each round's shares summed with Shamir among the
// H owners selected, eps 5, errm from the user's validation data.
const (
	wanSessionRounds = 2
	wanSessionEps    = 5.0
)

// wanSessionBound is the latency bound of one round attempt in one-way
// delays, from protocol/session/user.go: the user publishes Select and the
// share sum's SumStart back to back (1), then the sum's chain after
// SumStart runs (shares, holding, dealers, partials: 4); the user then
// aggregates, publishes the learner and, at once, the next attempt's
// Select (the next attempt's 1). After the last round the user is done
// when the last partial arrives. So 5 per attempt. The join phase before
// (announce, join, the join window) is a fixed wait of AnnounceInterval
// multiples at every delay, and is not timed.
func wanSessionBound() int { return 5 }

// runWANSession trains one short session among n owners behind links of
// delay d, timing it from the first round's start to the model.
//
// It returns the first attempt (which opens the owner-to-owner
// connections) as kind session-first and every later one as
// session-warm, each timed from the report of the attempt before (the
// first from the roster), with the wire bytes of the whole session per
// owner and attempt.
func runWANSession(ctx context.Context, tr string, n int, d time.Duration, seed uint64) ([]wanSum, error) {
	res := wanSum{Kind: "session-first"}
	dir, err := os.MkdirTemp("", "ppboost-wan-session-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	em, err := netem.New(seed, netem.Link{Delay: d})
	if err != nil {
		return nil, err
	}
	log := hclog.NewNullLogger()
	cfg := boost.DefaultConfig()
	cfg.Privacy = boost.PrivacyDistributed
	cfg.Epsilon, cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = wanSessionEps, n/4, wanSessionRounds, seed
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sum := securesum.DefaultParams()
	sum.Committee = min(sum.Committee, n)
	data, err := boost.Prepare(boost.DataSpec{Source: "synthetic", Owners: n, SamplesPerOwner: 100,
		UserSamples: 1000, TestSamples: 2000, Seed: seed}, cfg, nil)
	if err != nil {
		return nil, err
	}
	listen := "/ip4/127.0.0.1/tcp/0"
	if tr == "quic" {
		listen = "/ip4/127.0.0.1/udp/0/quic-v1"
	}
	var closers []func()
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	var nodes []*netem.Node
	mk := func(name string) (*node.Host, error) {
		key := filepath.Join(dir, name+".key")
		if _, err := node.GenerateKey(key); err != nil {
			return nil, err
		}
		c := node.DefaultConfig()
		c.KeyFile, c.ListenAddrs, c.ExpectedPeers, c.Logger = key, []string{listen}, n+8, log
		nn := em.Node(name)
		x, err := node.New(ctx, c, node.Emulated(nn)...)
		if err != nil {
			return nil, err
		}
		nn.Register(x.NetAddrs()...)
		closers = append(closers, func() { x.Close() })
		if name != "user" {
			nodes = append(nodes, nn)
		}
		return x, nil
	}
	user, err := mk("user")
	if err != nil {
		return nil, err
	}
	for i := range n {
		x, err := mk(fmt.Sprintf("owner-%03d", i))
		if err != nil {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		err = x.Connect(cctx, user.Addrs()[0])
		cancel()
		if err != nil {
			return nil, fmt.Errorf("owner %d: %w", i, err)
		}
		led, err := store.OpenLedger(filepath.Join(dir, fmt.Sprintf("owner-%03d.ledger", i)), wanSessionEps, log)
		if err != nil {
			return nil, err
		}
		closers = append(closers, func() { led.Close() })
		ocfg := session.DefaultOwnerConfig()
		ocfg.User, ocfg.Data, ocfg.Ledger, ocfg.MaxEpsilon, ocfg.Log = user.ID(), data.Owners[i], led, wanSessionEps, log
		o, err := session.StartOwner(x, ocfg, role.WithSendTimeout(30*time.Second))
		if err != nil {
			return nil, err
		}
		closers = append(closers, func() { o.Close() })
	}
	done := make(chan error, 1)
	var first time.Time
	started := make(chan time.Time, 1)
	ucfg := session.DefaultUserConfig()
	ucfg.Boost, ucfg.Sum, ucfg.Own, ucfg.Test, ucfg.ExpectedOwners, ucfg.Log = cfg, sum, data.User, data.Test, n, log
	ucfg.Timing.AnnounceInterval = 300 * time.Millisecond
	var sent0 int64
	var mu sync.Mutex
	var reports []time.Time
	ucfg.OnRound = func(session.RoundReport) { mu.Lock(); reports = append(reports, time.Now()); mu.Unlock() }
	ucfg.OnDone = func(_ *boost.Model, err error) { done <- err }
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err = user.WaitTopicPeers(wctx, wire.TopicControl, n)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("mesh not ready: %w", err)
	}
	u, err := session.StartUser(user, ucfg, role.WithSendTimeout(30*time.Second))
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { u.Close() })
	// The rounds start when the user publishes the roster; its state
	// leaves UserJoining then. Poll it (on its loop) from the side.
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			if s, err := u.State(); err == nil && s != session.UserJoining {
				started <- time.Now()
				return
			}
		}
	}()
	defer close(stop)
	wire0 := func() int64 {
		var s int64
		for _, nn := range nodes {
			s += nn.Sent()
		}
		return s
	}
	limit := 10*time.Minute + 50*d
	select {
	case first = <-started:
	case err := <-done:
		return nil, fmt.Errorf("session ended before its rounds: %v", err)
	case <-time.After(limit):
		return nil, errors.New("session did not start its rounds")
	}
	sent0 = wire0()
	select {
	case err := <-done:
		// Per round attempt: the data user drops a learner that fails its
		// significance test and retries with fresh owners (their noise is
		// fresh in every run), so the number of attempts varies; each
		// costs one bound.
		mu.Lock()
		at := append([]time.Time{first}, reports...)
		mu.Unlock()
		a := len(at) - 1
		switch {
		case a == 0:
			res.Err = fmt.Sprintf("no round: %v", err)
		case err != nil && !errors.Is(err, boost.ErrOutOfOwners) && !errors.Is(err, boost.ErrNoProgress):
			res.Err = err.Error()
		default:
			res.Parties = n
		}
		wb := float64(wire0()-sent0) / float64(n) / float64(max(a, 1))
		var out []wanSum
		for i := 1; i < len(at); i++ {
			s := res
			s.Seconds, s.WireBytes = at[i].Sub(at[i-1]).Seconds(), wb
			if i > 1 {
				s.Kind = "session-warm"
			}
			out = append(out, s)
		}
		if len(out) == 0 {
			res.Seconds = time.Since(first).Seconds()
			out = append(out, res)
		}
		return out, nil
	case <-time.After(limit):
		res.Seconds, res.Err = limit.Seconds(), "no model in time"
		return []wanSum{res}, nil
	}
}
