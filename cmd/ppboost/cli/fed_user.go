package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

func init() {
	register("fed-user", "run a federated DPBoost data user on libp2p for a roster of owners (`ppboost owner --fed`)", runFedUser)
}

// fedUserSetup is what `ppboost fed-user` runs, built from its flags alone
// (buildFedUser); the runner adds the schema of --data.
type fedUserSetup struct {
	key, listen, bootstrap, data, schema, model, session string
	roster                                               []protocol.PeerID
	boost                                                dpboost.Config
	maxRows, columns, minParties, colluders              int
	split, drop                                          float64
	lambdaRule                                           bool // newton without --lambda: NewtonLambda's value
	joinTimeout, stepTimeout                             time.Duration
	logf                                                 logFlags
	load                                                 loadFlags
}

// buildFedUser turns the command line into a setup; every error names the
// flag.
func buildFedUser(args []string, errOut io.Writer) (*fedUserSetup, error) {
	fs := newFlagSet("fed-user", "fed-user --key FILE --data FILE --roster ID,ID,... --max-rows N [--method dpboost|newton|np --eps E --trees T ...]", errOut)
	s := &fedUserSetup{}
	var roster, method string
	var eps, lambda, lr float64
	var trees, ensemble, depth, bins int
	colluders := colludersFlag{n: -1, min: 1}
	fs.StringVar(&s.key, "key", "", "identity key file made by `ppboost keygen` (required)")
	fs.StringVar(&s.listen, "listen", "/ip4/0.0.0.0/tcp/4002", "comma-separated listen multiaddrs")
	fs.StringVar(&s.bootstrap, "bootstrap", "", "comma-separated multiaddrs to dial")
	fs.StringVar(&s.data, "data", "", "the data user's own CSV data: its public schema (--schema, or schema.json beside it) is announced (required)")
	fs.StringVar(&s.schema, "schema", "", "public feature schema (default: schema.json next to --data)")
	s.load.register(fs)
	s.logf.register(fs)
	fs.StringVar(&s.model, "model", "", "write the model here (JSON, ppboost predict reads it)")
	fs.StringVar(&s.session, "session", "", "session id (default: random)")
	fs.StringVar(&roster, "roster", "", "comma-separated peer ids of the owners (`ppboost owner --fed`) that take part (required)")
	fs.IntVar(&s.maxRows, "max-rows", 0, "public cap on an owner's rows, the secure sums' bound (required; owners with more refuse)")
	fs.StringVar(&method, "method", "dpboost", "dpboost (distributed noise) | newton (beacon-drawn trees, one noisy leaf sum per tree) | np (no noise: owners need --allow-none)")
	epsVar(fs, &eps, "eps", 1, "total privacy budget epsilon (np: none)")
	fs.IntVar(&trees, "trees", 10, "trees T (newton: its rule's count when not given)")
	fs.IntVar(&ensemble, "ensemble-size", 2, "dpboost: trees per ensemble (each owner is in one tree's group per ensemble)")
	fs.IntVar(&depth, "depth", 3, "depth of every tree")
	fs.IntVar(&bins, "bins", 8, "bins per numeric feature")
	fs.Float64Var(&lambda, "lambda", 0, "L2 regularization of the leaves (0: newton's rule, twice the noise sd of a leaf's hessian sum; 1 for the others)")
	fs.Float64Var(&lr, "lr", 0.1, "learning rate")
	fs.IntVar(&s.columns, "columns", 0, "schema columns per node, drawn from the beacon (0: all)")
	fs.Float64Var(&s.split, "split-fraction", 0.8, "share of each tree's eps spent on the splits")
	fs.IntVar(&s.minParties, "min-parties", securesum.DefaultMinParties, "dealer floor of every sum")
	fs.Var(&colluders, "colluders", "all (default, as for owners and fed: every dealing DP on its own) or N: dealers that may collude with the data user (owners must run with --colluders N or more)")
	fs.Float64Var(&s.drop, "drop-fraction", 0.1, "fraction of a tree's group whose silence its sums survive")
	fs.DurationVar(&s.joinTimeout, "join-timeout", 2*time.Minute, "how long to wait for the roster's owners to subscribe")
	fs.DurationVar(&s.stepTimeout, "step-timeout", 2*time.Minute, "bound of one level (or the leaves) of one tree")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if s.key == "" || s.data == "" || roster == "" {
		return nil, usagef("--key, --data and --roster are required")
	}
	for _, id := range splitList(roster) {
		if err := node.CheckPeerID(id); err != nil {
			return nil, usagef("--roster: %q is not a peer id: %v", id, err)
		}
		if slices.Contains(s.roster, protocol.PeerID(id)) {
			return nil, usagef("--roster: %s listed twice", id)
		}
		s.roster = append(s.roster, protocol.PeerID(id))
	}
	slices.Sort(s.roster)
	if s.maxRows < 1 {
		return nil, usagef("--max-rows must be at least 1, got %d", s.maxRows)
	}
	if lambda < 0 {
		return nil, usagef("--lambda must be >= 0, got %v", lambda)
	}
	m, err := dpboost.ParseMethod(method)
	if err != nil || (m != dpboost.DPBoost && m != dpboost.NP && m != dpboost.Newton) {
		return nil, usagef("--method: %q is not dpboost, newton or np", method)
	}
	s.lambdaRule = lambda == 0 && m == dpboost.Newton
	if lambda == 0 {
		lambda = 1 // the others' default; newton's rule is set by the runner from the design
	}
	cfg := dpboost.Config{Method: m, Task: dpboost.Classification, Epsilon: eps, Trees: trees, EnsembleSize: ensemble,
		Depth: depth, LearningRate: lr, Lambda: lambda, Bins: bins, ClipGradients: m != dpboost.Newton}
	if m == dpboost.Newton {
		// delta's rule reads the session's public row bound: every roster
		// owner holds at most --max-rows rows (owners with more refuse).
		rule := dpboost.NewtonRule(eps, len(s.roster)*s.maxRows, 2)
		if !isFlagSet(fs, "trees") {
			trees = rule.Trees
		}
		if !isFlagSet(fs, "bins") {
			bins = rule.Bins
		}
		cfg = rule
		cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Bins, cfg.LearningRate, cfg.Lambda = trees, trees, depth, bins, lr, lambda
	}
	if err := cfg.Validate(); err != nil {
		return nil, dpboostFlagError(err)
	}
	s.boost, s.colluders = cfg, colluders.n
	if s.session == "" {
		var b [8]byte
		rand.Read(b[:])
		s.session = "fed-" + hex.EncodeToString(b[:])
	}
	return s, nil
}

// public is the session's announced configuration for the user's data d
// (its schema, dimension and classes); errors name what is wrong.
func (s *fedUserSetup) public(d *dataset.Dataset) (*fedboost.Public, error) {
	switch k := d.NumClasses(); {
	case d.Schema == nil || k < 2:
		return nil, usagef("--data %s: a federated session needs a public schema and at least two classes (%d classes, schema %v)", s.data, k, d.Schema != nil)
	case k > 2 && s.boost.Method != dpboost.Newton:
		return nil, usagef("--data %s has %d classes: federated %s trains binary models; for %d classes use --method newton (K boosters, softmax) or ppboost dpboost (one process)", s.data, k, s.boost.Method, k)
	}
	sum := securesum.DefaultParams()
	sum.Method, sum.MinParties, sum.Bound = "shamir", s.minParties, float64(s.maxRows)
	beacon := make([]byte, 32)
	rand.Read(beacon)
	pub := &fedboost.Public{Session: s.session, Boost: s.boost, Schema: d.Schema, Dim: d.Dim(), ColumnsPerNode: s.columns,
		SplitFraction: s.split, Noise: s.boost.Private(), Colluders: s.colluders, DropFraction: s.drop, Sum: sum,
		MaxRows: s.maxRows, Roster: s.roster, Beacon: beacon, StepTimeout: s.stepTimeout, IdleTimeout: 10 * s.stepTimeout}
	if s.lambdaRule && pub.Newton() {
		l, err := pub.NewtonLambda()
		if err != nil {
			return nil, usagef("--eps/--trees: %v", err)
		}
		pub.Boost.Lambda = l
	}
	if err := pub.Validate(); err != nil {
		return nil, usageError{err}
	}
	return pub, nil
}

func runFedUser(args []string, out, errOut io.Writer) error {
	s, err := buildFedUser(args, errOut)
	if err != nil {
		return err
	}
	log, err := s.logf.logger("fed-user", errOut)
	if err != nil {
		return err
	}
	d, err := loadOwnerData(s.data, s.schema, s.load, func(w string) { log.Warn(w) })
	if err != nil {
		return err
	}
	pub, err := s.public(d)
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	ncfg := node.DefaultConfig()
	ncfg.KeyFile, ncfg.ListenAddrs, ncfg.Bootstrap = s.key, splitList(s.listen), splitList(s.bootstrap)
	ncfg.ExpectedPeers, ncfg.Logger = max(len(s.roster), ncfg.ExpectedPeers), log.Named("node")
	if err := ncfg.Validate(); err != nil {
		return usageError{err}
	}
	h, err := node.New(ctx, ncfg)
	if err != nil {
		return err
	}
	defer h.Close()
	done := make(chan error, 1)
	var model *dpboost.Model
	u, err := fedboost.StartUser(h, fedboost.UserConfig{Public: pub, ClassNames: d.Classes, Features: d.Features,
		AnnounceDelay: 2 * time.Second, Log: log,
		OnTree: func(r fedboost.TreeReport) {
			if r.Eps > 0 {
				log.Info("tree done", "tree", r.Tree, "group", r.Group, "sums", r.Sums, "eps_t", r.Eps)
			} else { // newton: the session's one charge covers every tree
				log.Info("tree done", "tree", r.Tree, "group", r.Group, "sums", r.Sums)
			}
		},
		OnDone: func(m *dpboost.Model, err error) {
			model = m
			done <- err
		}})
	if err != nil {
		return err
	}
	defer u.Close()
	log.Info("fed user running", "peer", string(h.ID()), "addrs", strings.Join(h.Addrs(), " "), "session", s.session,
		"method", s.boost.Method.String(), "trees", s.boost.Trees, "owners", len(s.roster))
	wctx, cancel := context.WithTimeout(ctx, s.joinTimeout)
	err = h.WaitTopicPeers(wctx, wire.TopicFedControl, len(s.roster))
	cancel()
	if err != nil {
		return fmt.Errorf("the roster's %d owners did not all subscribe within --join-timeout %v (%d peers connected): %w",
			len(s.roster), s.joinTimeout, h.ConnectedPeers(), err)
	}
	u.Start()
	select {
	case <-ctx.Done():
		return fmt.Errorf("interrupted")
	case err = <-done:
	}
	// Let the Final (or Abort) leave before the host closes.
	dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
	u.Drain(dctx)
	dcancel()
	time.Sleep(2 * time.Second) // one gossip heartbeat: owners relay the Final to those outside the publisher's mesh
	outc := u.Outcome()
	if err == nil && model != nil && s.model != "" {
		// predict's fill values come from the data user's own rows (--data),
		// never from the owners': the user holds no one else's.
		model.Fill = dataset.FillOf(d)
		if werr := model.Save(s.model); werr != nil {
			return werr
		}
		fmt.Fprintf(out, "model written to %s (%d trees)\n", s.model, len(model.Boosters[0]))
	}
	if outc.Kind == 0 && err != nil {
		return err
	}
	return outc.Err() // complete 0, failed 1
}
