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
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
	"github.com/ppboost/ppboost/protocol/wire"
	"github.com/ppboost/ppboost/store"
)

// testnetSetup is what `ppboost testnet` runs (buildTestnet): the
// session's boosting and secure-sum configuration and the network's size.
type testnetSetup struct {
	cfg              boost.Config
	sum              securesum.Params
	owners, per      int
	df               dataFlags
	model            string
	logf             logFlags
	logLevelExplicit bool
	force            bool // run a plan refuseHopelessPlan refuses
}

// buildTestnet turns `ppboost testnet`'s flags into a validated setup
// (defaults < flags; testnet has no --config file). Every error names the
// flag.
func buildTestnet(args []string, errOut io.Writer) (*testnetSetup, error) {
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
	s := &testnetSetup{}
	s.df.register(fs, "synthetic", "")
	fs.StringVar(&s.model, "model", "", "write the trained model to this file (read it with ppboost predict)")
	fs.IntVar(&s.owners, "owners", 300, "number of owner hosts")
	h := fs.Int("owners-per-round", 60, "owners H per round")
	rounds := fs.Int("rounds", 3, "boosting rounds M (H x (M + max(1, ceil(M/5))) must not exceed the owners: the rest serve retried attempts, whose learner had alpha <= 0 or was not significantly better than chance)")
	fs.IntVar(&s.per, "samples-per-owner", 200, "samples per owner")
	learner := fs.String("learner", "logreg", "stump | ncc | logreg (user's default is stump; logreg here because 60 owners per round under LDP leave a stump's many split values in noise, while logreg releases one short vector per owner)")
	mechanism := fs.String("mechanism", "pm", "pm | hm | duchi | laplace | none")
	eps := new(float64)
	epsVar(fs, eps, "eps", 5, "epsilon per contributing owner")
	var pf privacyFlags
	pf.register(fs)
	method := fs.String("securesum", "ring", "ring | shamir (user's default is shamir, which resists colluding owners; ring here because 300 hosts in one process cannot afford Shamir's ~10,000 TLS handshakes per sum; with --privacy distributed the default is shamir: distributed privacy refuses rings)")
	seed := fs.Uint64("seed", 1, "seed for data and selection")
	s.logf.register(fs)
	registerForce(fs, &s.force)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	cfg := boost.DefaultConfig()
	var err error
	if cfg.Learner, err = boost.ParseLearner(*learner); err != nil {
		return nil, usageError{err}
	}
	cfg.Mechanism, cfg.Epsilon, cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = *mechanism, *eps, *h, *rounds, *seed
	if err := pf.apply(&cfg, nil); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, usageError{configFlagNames(err)}
	}
	if err := s.df.checkTest(); err != nil {
		return nil, err
	}
	if s.df.data == "synthetic" && s.df.holdout.set && s.df.holdout.rows == 0 {
		return nil, usagef("--holdout %s: synthetic data draws its test rows; give a row count (default 10000), or --test FILE", s.df.holdout.String())
	}
	if s.owners < 1 || *h**rounds > s.owners {
		return nil, usagef("need at least owners-per-round x rounds = %d owners, have %d", *h**rounds, s.owners)
	}
	sum := securesum.DefaultParams()
	sum.Method = *method
	if cfg.Privacy == boost.PrivacyDistributed && !isFlagSet(fs, "securesum") {
		sum.Method = securesum.Shamir
	}
	sum.Committee = min(sum.Committee, s.owners)
	sum.Threshold = min(sum.Threshold, sum.Committee/2+1)
	if err := sum.Validate(); err != nil {
		return nil, usageError{flagNames(err, sumFlags, nil, "", "")}
	}
	s.cfg, s.sum, s.logLevelExplicit = cfg, sum, isFlagSet(fs, "log-level")
	return s, nil
}

// runTestnet starts, in one process, a data user and N owners as real libp2p
// hosts on 127.0.0.1, partitions built-in synthetic data among them, trains a
// private boosted model and prints it next to the non-private baseline.
func runTestnet(args []string, out, errOut io.Writer) error {
	s, err := buildTestnet(args, errOut)
	if err != nil {
		return err
	}
	return s.run(out, errOut)
}

// testnet is a running testnet: its hosts, ledgers and what closes them.
type testnet struct {
	*testnetSetup
	localNet
	out      io.Writer
	user     *node.Host
	hosts    []*node.Host
	ledgers  []*store.FileLedger
	data     boost.Data
	t0       time.Time
	startup  time.Duration
	mu       sync.Mutex
	model    *boost.Model
	training time.Duration
}

func (s *testnetSetup) run(out, errOut io.Writer) error {
	if s.logf.level == "info" && !s.logLevelExplicit {
		s.logf.level = "warn"
	}
	log, err := s.logf.logger("testnet", errOut)
	if err != nil {
		return err
	}
	data, err := s.prepareData(errOut)
	if err != nil {
		return err
	}
	// Before any host starts: the data user's forecast on its own rows.
	if err := refuseHopelessPlan(s.force, s.cfg, data.User, s.per, s.owners); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "ppboost-testnet-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, stop := signalContext()
	defer stop()
	tn := &testnet{testnetSetup: s, localNet: localNet{dir: dir, log: log}, out: out, data: data, t0: time.Now()}
	defer tn.close()
	if err := tn.startOwners(ctx); err != nil {
		return err
	}
	tn.startup = time.Since(tn.t0)
	fmt.Fprintf(out, "testnet: data user and %d owners up on 127.0.0.1 in %.2fs (user %s)\n", s.owners, tn.startup.Seconds(), tn.user.ID())
	// The sums the session runs: err_m's (alpha securesum) and the share
	// sums of distributed privacy; none with validation err_m under LDP.
	sums := "no secure sum (err_m from the data user's validation data)"
	if s.cfg.Alpha == boost.AlphaSecureSum || s.cfg.Privacy == boost.PrivacyDistributed {
		sums = string(s.sum.Method) + " sums"
	}
	fmt.Fprintf(out, "%s/%s eps=%g, %d owners x %d samples, %d per round, %d rounds, %s\n",
		s.cfg.Learner, s.cfg.Mechanism, s.cfg.Epsilon, s.owners, s.per, s.cfg.OwnersPerRound, s.cfg.Rounds, sums)
	fmt.Fprintf(out, "%5s %7s %8s %8s %8s %9s %8s\n", "round", "attempt", "answered", "err_m", "alpha_m", "test_acc", "elapsed")
	return tn.train(ctx)
}

// startOwners brings up the user's host and the owners' hosts, each owner
// with its ledger and its session.Owner attached.
func (tn *testnet) startOwners(ctx context.Context) error {
	var err error
	if tn.user, err = tn.newHost(ctx, "user", tn.owners+8, 0); err != nil {
		return err
	}
	tn.hosts = make([]*node.Host, tn.owners)
	for i := range tn.hosts {
		if tn.hosts[i], err = tn.newHost(ctx, fmt.Sprintf("owner-%03d", i), tn.owners+8, 0); err != nil {
			return err
		}
		if err := tn.hosts[i].Connect(ctx, tn.user.Addrs()[0]); err != nil {
			return fmt.Errorf("owner %d: %w", i, err)
		}
	}
	tn.ledgers = make([]*store.FileLedger, len(tn.hosts))
	for i, hst := range tn.hosts {
		led, err := store.OpenLedger(filepath.Join(tn.dir, fmt.Sprintf("owner-%03d.ledger", i)), tn.cfg.Epsilon, tn.log.Named("ledger"))
		if err != nil {
			return err
		}
		tn.ledgers[i] = led
		tn.closers = append(tn.closers, func() { led.Close() })
		cfg := session.DefaultOwnerConfig()
		cfg.User, cfg.Data, cfg.Ledger, cfg.MaxEpsilon, cfg.Log = tn.user.ID(), tn.data.Owners[i], led, tn.cfg.Epsilon, tn.log.Named("owner")
		cfg.AllowNone, cfg.NoneCharge = tn.cfg.Mechanism == "none", tn.cfg.Epsilon
		o, err := session.StartOwner(hst, cfg)
		if err != nil {
			return err
		}
		tn.closers = append(tn.closers, func() { o.Close() })
	}
	return nil
}

// train runs the data user's session and reports the model next to the
// non-private baseline.
func (tn *testnet) train(ctx context.Context) error {
	done := make(chan error, 1)
	cfg := session.DefaultUserConfig()
	cfg.Boost, cfg.Sum, cfg.Own, cfg.Test, cfg.ExpectedOwners = tn.cfg, tn.sum, tn.data.User, tn.data.Test, tn.owners
	cfg.Timing.AnnounceInterval = 300 * time.Millisecond
	cfg.Log = tn.log.Named("user")
	cfg.OnRound = func(r session.RoundReport) {
		tn.mu.Lock()
		defer tn.mu.Unlock()
		acc := "dropped"
		if r.Accepted {
			acc = fmt.Sprintf("%.4f", r.TestAccuracy)
		}
		fmt.Fprintf(tn.out, "%5d %7d %5d/%-2d %8.4f %8.4f %9s %7.2fs\n", r.Round, r.Attempt, r.Answered, r.Selected, r.Err, r.Alpha, acc, r.Elapsed.Seconds())
	}
	cfg.OnDone = func(m *boost.Model, err error) { tn.model = m; done <- err }
	// Rounds must not start before gossipsub can carry them: wait until every
	// owner is a known subscriber of the control topic.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := tn.user.WaitTopicPeers(wctx, wire.TopicControl, tn.owners)
	cancel()
	if err != nil {
		return fmt.Errorf("mesh not ready: %w", err)
	}
	t1 := time.Now()
	u, err := session.StartUser(tn.user, cfg)
	if err != nil {
		return err
	}
	defer u.Close()
	select {
	case <-ctx.Done():
		return fmt.Errorf("interrupted")
	case err := <-done:
		tn.training = time.Since(t1)
		if err != nil {
			if tn.model == nil || len(tn.model.Rounds) == 0 || !(errors.Is(err, boost.ErrOutOfOwners) || errors.Is(err, boost.ErrNoProgress)) {
				return err
			}
			fmt.Fprintf(tn.out, "training stopped early with %d rounds: %v\n", len(tn.model.Rounds), err)
		}
		return tn.report(u)
	}
}

// prepareData cuts the owners' shards, the data user's rows and the test
// rows: synthetic data as drawn for the testnet (2,000 user rows, --holdout
// rows or 10,000 for the test), any other data cut into --owners shards of
// --samples-per-owner rows, the user's rows (a quarter of the rest, 30 to
// 2,000) and --test's file or --holdout's rows.
func (s *testnetSetup) prepareData(errOut io.Writer) (boost.Data, error) {
	if s.df.data == "synthetic" {
		if _, err := s.df.options(errOut); err != nil { // --schema on synthetic data
			return boost.Data{}, err
		}
		data, err := boost.Prepare(boost.DataSpec{Source: "synthetic", Owners: s.owners, SamplesPerOwner: s.per,
			UserSamples: 2000, TestSamples: or(s.df.holdout.rows, 10000), Seed: s.cfg.Seed}, s.cfg, nil)
		if err != nil {
			return data, prepareError(err)
		}
		if s.df.test != "" {
			data.Test, err = s.df.loadTest(errOut, data.User)
		}
		return data, err
	}
	train, test, err := s.df.load(errOut, 0, s.cfg.Seed)
	if err != nil {
		return boost.Data{}, err
	}
	testN := 0
	if test == nil {
		testN = s.df.holdout.of(train.Len())
	}
	rest := train.Len() - testN
	user := min(2000, max(rest/4, min(30, rest/2)))
	if need := s.owners*s.per + user; testN >= train.Len() || need > rest {
		return boost.Data{}, usagef("--data %s has %d rows: %d owners x --samples-per-owner %d, the data user's %d and %d test rows need %d; lower --owners or --samples-per-owner",
			s.df.data, train.Len(), s.owners, s.per, user, testN, need+testN)
	}
	data, err := boost.Cut(train, test, boost.DataSpec{Source: s.df.data, Owners: s.owners, SamplesPerOwner: s.per,
		UserSamples: user, TestSamples: testN, Seed: s.cfg.Seed})
	if err != nil {
		return data, prepareError(err)
	}
	return data, nil
}

// report prints the private model's accuracy, the non-private baseline's,
// what the owners released and the timings.
func (tn *testnet) report(u *session.User) error {
	data, cfg, out := tn.data, tn.cfg, tn.out
	ev, err := boost.Evaluate(data.Test.X, data.Test.Y, tn.model.Classes, tn.model.Predict)
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
	for _, l := range tn.ledgers {
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
	if tn.testnetSetup.model != "" {
		if err := tn.model.Save(tn.testnetSetup.model); err != nil {
			return err
		}
		fmt.Fprintf(out, "model written to %s (%d rounds)\n", tn.testnetSetup.model, len(tn.model.Rounds))
	}
	fmt.Fprintf(out, "non-private baseline (same owners and seed): test accuracy %.4f (%+.1f points)\n", rev.Accuracy, 100*(ev.Accuracy-rev.Accuracy))
	fmt.Fprintf(out, "privacy: %d of %d owners %s (recorded in their ledgers first); the others released nothing (err_m came from the data user's validation data)\n",
		spent, len(tn.ledgers), release)
	fmt.Fprintf(out, "timing: startup %.2fs, training %.2fs, total %.2fs; dropped messages at the user: %s\n",
		tn.startup.Seconds(), tn.training.Seconds(), time.Since(tn.t0).Seconds(), u.Stats().String())
	fmt.Fprintln(out, "the same protocol at the papers' scale, over the in-memory network: ppboost simulate --owners 12000 --owners-per-round 1000 (see README)")
	return nil
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
