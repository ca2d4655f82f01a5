package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
	"github.com/ppboost/ppboost/protocol/wire"
	"github.com/ppboost/ppboost/store"
)

// runTestnet starts, in one process, a data user and N owners as real libp2p
// hosts on 127.0.0.1, partitions built-in synthetic data among them, trains a
// private boosted model and prints it next to the non-private baseline.
func runTestnet(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("testnet", "testnet [flags]  (a user and N owners as real libp2p hosts on 127.0.0.1)", errOut)
	// The defaults are the smallest honest setting that shows what ppboost is
	// for on one 2-core machine: local DP needs many owners per round (the
	// noise of H perturbed shares averages out as 1/H), and logistic
	// regression releases one short vector per owner. 300 hosts, 60 per
	// round, give a private model a median 3.3 points below the
	// non-private one (12 runs: -0.1 to -5.0) in about 3 s; 500 hosts run
	// out of file descriptors in one process. The ring sum is the cheap one
	// in one process (one connection per owner); Shamir's committee makes
	// ~10,000 TLS handshakes per sum at this size (see the README).
	owners := fs.Int("owners", 300, "number of owner hosts")
	h := fs.Int("owners-per-round", 60, "owners H per round")
	rounds := fs.Int("rounds", 3, "boosting rounds M (H x (M + max(1, ceil(M/5))) must not exceed the owners: the rest serve retried attempts, whose learner had alpha <= 0 or was not significantly better than chance)")
	per := fs.Int("samples-per-owner", 200, "samples per owner")
	learner := fs.String("learner", "logreg", "stump | ncc | logreg (user's default is stump; logreg here because 60 owners per round under LDP leave a stump's many split values in noise, while logreg releases one short vector per owner)")
	mechanism := fs.String("mechanism", "pm", "pm | hm | duchi | laplace | none")
	eps := fs.Float64("eps", 5, "epsilon per contributing owner")
	var pf privacyFlags
	pf.register(fs)
	method := fs.String("securesum", "ring", "ring | shamir (user's default is shamir, which resists colluding owners; ring here because 300 hosts in one process cannot afford Shamir's ~10,000 TLS handshakes per sum; with --privacy distributed the default is shamir: distributed privacy refuses rings)")
	seed := fs.Uint64("seed", 1, "seed for data and selection")
	var lf logFlags
	lf.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg := boost.DefaultConfig()
	var err error
	if cfg.Learner, err = boost.ParseLearner(*learner); err != nil {
		return usageError{err}
	}
	cfg.Mechanism, cfg.Epsilon, cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = *mechanism, *eps, *h, *rounds, *seed
	if err := pf.apply(&cfg, nil); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return usageError{configFlagNames(err)}
	}
	if *owners < 1 || *h**rounds > *owners {
		return usagef("need at least owners-per-round x rounds = %d owners, have %d", *h**rounds, *owners)
	}
	sum := securesum.DefaultParams()
	sum.Method = *method
	if cfg.Privacy == boost.PrivacyDistributed && !isFlagSet(fs, "securesum") {
		sum.Method = securesum.Shamir
	}
	sum.Committee = min(sum.Committee, *owners)
	sum.Threshold = min(sum.Threshold, sum.Committee/2+1)
	if err := sum.Validate(); err != nil {
		return usageError{err}
	}
	if lf.level == "info" && !isFlagSet(fs, "log-level") {
		lf.level = "warn"
	}
	log, err := lf.logger("testnet", errOut)
	if err != nil {
		return err
	}
	data, err := boost.Prepare(boost.DataSpec{Source: "synthetic", Owners: *owners, SamplesPerOwner: *per,
		UserSamples: 2000, TestSamples: 10000, Seed: *seed}, cfg, nil)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "ppboost-testnet-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, stop := signalContext()
	defer stop()

	t0 := time.Now()
	newHost := func(name string, expected int) (*node.Host, error) {
		key := filepath.Join(dir, name+".key")
		if _, err := node.GenerateKey(key); err != nil {
			return nil, err
		}
		c := node.DefaultConfig()
		c.KeyFile = key
		c.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0"}
		c.ExpectedPeers = expected
		c.Logger = log.Named(name)
		return node.New(ctx, c)
	}
	userHost, err := newHost("user", *owners+8)
	if err != nil {
		return err
	}
	defer userHost.Close()
	hosts := make([]*node.Host, *owners)
	var closers []func()
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	for i := range hosts {
		if hosts[i], err = newHost(fmt.Sprintf("owner-%03d", i), *owners+8); err != nil {
			return err
		}
		closers = append(closers, func() { hosts[i].Close() })
		if err := hosts[i].Connect(ctx, userHost.Addrs()[0]); err != nil {
			return fmt.Errorf("owner %d: %w", i, err)
		}
	}
	ledgers := make([]*store.FileLedger, len(hosts))
	for i, hst := range hosts {
		led, err := store.OpenLedger(filepath.Join(dir, fmt.Sprintf("owner-%03d.ledger", i)), *eps, log.Named("ledger"))
		if err != nil {
			return err
		}
		ledgers[i] = led
		closers = append(closers, func() { led.Close() })
		post := protocol.NewOutbox(hst, 10*time.Second, log)
		closers = append(closers, post.Close)
		o, err := session.NewOwner(hst.ID(), post, session.OwnerConfig{User: userHost.ID(), Data: data.Owners[i],
			Ledger: led, MaxEpsilon: *eps, AllowNone: *mechanism == "none", NoneCharge: *eps, Log: log.Named("owner")})
		if err != nil {
			return err
		}
		closers = append(closers, func() { o.Close() })
		if err := o.Attach(hst); err != nil {
			return err
		}
	}
	startup := time.Since(t0)
	fmt.Fprintf(out, "testnet: data user and %d owners up on 127.0.0.1 in %.2fs (user %s)\n", *owners, startup.Seconds(), userHost.ID())
	fmt.Fprintf(out, "%s/%s eps=%g, %d owners x %d samples, %d per round, %d rounds, %s sums\n",
		cfg.Learner, cfg.Mechanism, cfg.Epsilon, *owners, *per, *h, *rounds, sum.Method)
	fmt.Fprintf(out, "%5s %7s %8s %8s %8s %9s %8s\n", "round", "attempt", "answered", "err_m", "alpha_m", "test_acc", "elapsed")

	var mu sync.Mutex
	done := make(chan error, 1)
	var model *boost.Model
	post := protocol.NewOutbox(userHost, 10*time.Second, log)
	defer post.Close()
	timing := session.DefaultTiming()
	timing.AnnounceInterval = 300 * time.Millisecond
	u, err := session.NewUser(userHost.ID(), post, session.UserConfig{
		Boost: cfg, Sum: sum, Timing: timing, Own: data.User, Test: data.Test, ExpectedOwners: *owners,
		Log: log.Named("user"),
		OnRound: func(r session.RoundReport) {
			mu.Lock()
			defer mu.Unlock()
			acc := "dropped"
			if r.Accepted {
				acc = fmt.Sprintf("%.4f", r.TestAccuracy)
			}
			fmt.Fprintf(out, "%5d %7d %5d/%-2d %8.4f %8.4f %9s %7.2fs\n", r.Round, r.Attempt, r.Answered, r.Selected, r.Err, r.Alpha, acc, r.Elapsed.Seconds())
		},
		OnDone: func(m *boost.Model, err error) { model = m; done <- err },
	})
	if err != nil {
		return err
	}
	defer u.Close()
	// Rounds must not start before gossipsub can carry them: wait until every
	// owner is a known subscriber of the control topic.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = userHost.WaitTopicPeers(wctx, wire.TopicControl, *owners)
	cancel()
	if err != nil {
		return fmt.Errorf("mesh not ready: %w", err)
	}
	t1 := time.Now()
	if err := u.Attach(userHost); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("interrupted")
	case err := <-done:
		train := time.Since(t1)
		if err != nil {
			if model == nil || len(model.Rounds) == 0 || !(errors.Is(err, boost.ErrOutOfOwners) || errors.Is(err, boost.ErrNoProgress)) {
				return err
			}
			fmt.Fprintf(out, "training stopped early with %d rounds: %v\n", len(model.Rounds), err)
		}
		ev, err := boost.Evaluate(data.Test.X, data.Test.Y, model.Classes, model.Predict)
		if err != nil {
			return err
		}
		base := cfg
		base.Mechanism = "none"
		ref, err := boost.Train(base, data, nil)
		if err != nil {
			return fmt.Errorf("non-private baseline: %w", err)
		}
		rev, _ := boost.Evaluate(data.Test.X, data.Test.Y, ref.Classes, ref.Predict)
		spent := 0
		for _, l := range ledgers {
			if l.Spent() > 0 {
				spent++
			}
		}
		kind, release := cfg.Mechanism, fmt.Sprintf("released one eps=%g-LDP share each", cfg.Epsilon)
		if cfg.Privacy == boost.PrivacyDistributed {
			kind = "distributed noise"
			release = fmt.Sprintf("dealt their statistic into one share sum each, whose total is eps=%g-DP for each of them", cfg.Epsilon)
		}
		fmt.Fprintf(out, "private model (%s, eps=%g): test accuracy %.4f\n", kind, cfg.Epsilon, ev.Accuracy)
		fmt.Fprintf(out, "non-private baseline (same owners and seed): test accuracy %.4f (%+.1f points)\n", rev.Accuracy, 100*(ev.Accuracy-rev.Accuracy))
		fmt.Fprintf(out, "privacy: %d of %d owners %s (recorded in their ledgers first); the others released nothing (err_m came from the data user's validation data)\n",
			spent, len(ledgers), release)
		fmt.Fprintf(out, "timing: startup %.2fs, training %.2fs, total %.2fs; dropped messages at the user: %s\n",
			startup.Seconds(), train.Seconds(), time.Since(t0).Seconds(), u.Stats().String())
		fmt.Fprintln(out, "the same protocol at the papers' scale, over the in-memory network: ppboost simulate --owners 12000 --owners-per-round 1000 (see README)")
		return nil
	}
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
