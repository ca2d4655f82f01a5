package cli

import (
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/simulate"
)

func init() {
	register("fed", "federated DP-GBDT (the Newton trainer, or DPBoost) with distributed noise over the in-memory network (any dataset cut into owners; default Adult)", runFed)
}

// fedFlags are the values of `ppboost fed`'s flags.
type fedFlags struct {
	df                                            dataFlags
	owners, samples, trees, ensemble, depth, bins int
	columns, minParties, maxRows                  int
	eps, lambda, lr, split, drop                  float64
	method, modelPath                             string
	colluders                                     colludersFlag
	seed                                          uint64
	ownersSet, force                              bool
	repeat                                        repeatFlag
}

func (f *fedFlags) register(fs *flag.FlagSet) {
	f.df.register(fs, "adult", "")
	fs.IntVar(&f.owners, "owners", 100, "owners the training rows are cut into (not given: 100, or one per 20 training rows if fewer, at least 10)")
	fs.IntVar(&f.samples, "samples", 20000, "synthetic: number of samples to generate")
	epsVar(fs, &f.eps, "eps", 1, "total privacy budget epsilon (np: none); newton: the eps of (eps, delta)-DP")
	fs.StringVar(&f.method, "method", "newton", "newton (beacon-drawn random trees, one noisy leaf sum per tree; K > 2 classes: K boosters, softmax) | dpboost (distributed noise; two classes) | np (no noise; two classes)")
	fs.IntVar(&f.trees, "trees", 0, "trees T (0: newton's rule as in ppboost dpboost, or dpboost's 20)")
	fs.IntVar(&f.ensemble, "ensemble-size", 10, "dpboost: trees per ensemble T_e (each owner is in one tree per ensemble)")
	fs.IntVar(&f.depth, "depth", 3, "depth of every tree")
	fs.IntVar(&f.bins, "bins", 0, "bins per numeric feature (0: newton's 32, dpboost's 8)")
	fs.Float64Var(&f.lambda, "lambda", 0, "L2 regularization of the leaves (0: newton's rule, twice the noise sd of a leaf's hessian sum; dpboost's 20)")
	fs.Float64Var(&f.lr, "lr", 0, "learning rate (0: newton's rule 0.1; dpboost's 0.1)")
	fs.IntVar(&f.columns, "columns", 3, "schema columns per node, drawn from the beacon (0: all)")
	fs.Float64Var(&f.split, "split-fraction", 0.8, "share of each tree's eps spent on the splits (the leaves get the rest)")
	fs.IntVar(&f.minParties, "min-parties", 5, "dealer floor of every sum (at least)")
	fs.IntVar(&f.maxRows, "max-rows", 0, "public cap on an owner's rows, as fed-user's: the sums' bound; newton's delta rule reads owners x max-rows, never the row count (0: 100,000/owners, rounded up); a larger shard is refused")
	f.colluders = colludersFlag{n: boost.ColludersAll}
	fs.Var(&f.colluders, "colluders", "all (default, as for real owners and fed-user: every dealing is DP on its own) or N (a closed deployment: shares sized for max(1, floor - N) honest dealers, far less noise); the simulated owners hold the same bound")
	fs.Float64Var(&f.drop, "drop-fraction", 0.1, "fraction of a tree's group whose silence its sums survive")
	fs.Uint64Var(&f.seed, "seed", 1, "seed for the data shuffle, the owners' partition and the simulation")
	fs.StringVar(&f.modelPath, "model", "", "write the model to this file (read it with ppboost predict; with --repeat, run 1's)")
	f.repeat.register(fs, "the seed draws the synthetic data or shuffles the file for the holdout, cuts the owners' shards and seeds the simulation and its noise")
	registerForce(fs, &f.force)
}

// fedSetup is what `ppboost fed` simulates: the session's public
// configuration, the owners' shards and the held-out test rows.
type fedSetup struct {
	fedFlags
	m           dpboost.Method
	pub         fedboost.Public
	parts       []*dataset.Dataset
	train, test *dataset.Dataset
}

// checkFlags checks what the flags alone decide.
func (f *fedFlags) checkFlags() (dpboost.Method, error) {
	m, err := dpboost.ParseMethod(f.method)
	if err != nil || (m != dpboost.DPBoost && m != dpboost.NP && m != dpboost.Newton) {
		return m, usagef("--method: %q is not newton, dpboost or np", f.method)
	}
	if err := f.repeat.check(); err != nil {
		return m, err
	}
	for name, v := range map[string]float64{"--trees": float64(f.trees), "--lambda": f.lambda, "--bins": float64(f.bins), "--lr": f.lr, "--max-rows": float64(f.maxRows)} {
		if v < 0 {
			return m, usagef("%s = %v, want a value >= 0 (0: the default)", name, v)
		}
	}
	if err := f.df.checkTest(); err != nil {
		return m, err
	}
	return m, nil
}

// loadData loads --data (holding out a test split if it has none) and
// sizes the owners from it when --owners was not given.
func (s *fedSetup) loadData(errOut io.Writer) error {
	train, test, err := s.df.load(errOut, s.samples, s.seed)
	if err != nil {
		return err
	}
	if train, test, err = s.df.cut(train, test, s.seed); err != nil {
		return err
	}
	return s.setData(train, test, errOut)
}

// setData takes the training and test rows and sizes the owners from them
// when --owners was not given (a simulation's choice of deployment shape:
// a deployment's roster is whoever joined, public by construction).
func (s *fedSetup) setData(train, test *dataset.Dataset, errOut io.Writer) error {
	if k := train.NumClasses(); k > 2 && s.m != dpboost.Newton {
		return usagef("--data %s has %d classes: federated %s trains binary models; for %d classes use ppboost fed --method newton (K boosters, softmax) or ppboost dpboost (one process)", s.df.data, k, s.m, k)
	} else if k < 2 {
		return usagef("--data %s has %d class: a classifier needs two", s.df.data, k)
	}
	if !s.ownersSet {
		// Sized from the data: 100 owners, or one per 20 training rows
		// (a leaf sum over a group needs rows in it), at least 10.
		if n := max(10, min(s.owners, train.Len()/20)); n != s.owners {
			fmt.Fprintf(errOut, "plan: %d owners (one per 20 of the %d training rows; --owners sets it)\n", n, train.Len())
			s.owners = n
		}
	}
	if s.owners < 1 || s.owners > train.Len() {
		return usagef("--owners %d: the %d training rows cannot give every owner a row; use at most %d", s.owners, train.Len(), train.Len())
	}
	s.train, s.test = train, test
	return nil
}

// rowCap is the public cap on an owner's rows: --max-rows, or
// fedboost.DefaultMaxRows of the owners. The session's row bound, which
// the Newton rule's delta reads, is owners x rowCap.
func (s *fedSetup) rowCap() int {
	if s.maxRows > 0 {
		return s.maxRows
	}
	return fedboost.DefaultMaxRows(s.owners)
}

// boostConfig is the trees' configuration: dpboost's defaults or the
// Newton rule for the session's public row bound (owners x rowCap, never
// the row count), with the flags given over them.
func (s *fedSetup) boostConfig() (dpboost.Config, error) {
	m := s.m
	cfg := dpboost.DefaultConfig()
	cfg.Trees, cfg.Bins, cfg.Lambda = 20, 8, 20
	if m == dpboost.Newton {
		cfg = dpboost.NewtonRule(s.eps, s.owners*s.rowCap(), s.train.NumClasses())
	}
	cfg.Method, cfg.Epsilon, cfg.EnsembleSize, cfg.Depth, cfg.ClipGradients = m, s.eps, s.ensemble, s.depth, m != dpboost.Newton
	if s.trees > 0 {
		cfg.Trees = s.trees
	}
	if s.bins > 0 {
		cfg.Bins = s.bins
	}
	if s.lr > 0 {
		cfg.LearningRate = s.lr
	}
	if m == dpboost.Newton {
		cfg.EnsembleSize = cfg.Trees
	}
	switch {
	case s.lambda > 0:
		cfg.Lambda = s.lambda
	case m == dpboost.Newton:
		cfg.Lambda = 1 // checked now, set from the design below
	}
	if err := cfg.Validate(); err != nil {
		return cfg, dpboostFlagError(err)
	}
	return cfg, nil
}

// public cuts the owners' shards and builds the session's public
// configuration; the Newton trainer's lambda and design come from it.
func (s *fedSetup) public(cfg dpboost.Config, errOut io.Writer) error {
	parts, err := s.train.Partition(s.owners, nil, s.seed)
	if err != nil {
		return usageError{err}
	}
	// The cap is declared, not read off the shards: it is announced (and
	// bounds delta's rule), so it must not depend on the data.
	maxRows := s.rowCap()
	for _, p := range parts {
		if p.Len() > maxRows {
			return usagef("--max-rows: an owner's shard has %d rows, more than the public cap %d (its owner would refuse the session); raise --max-rows or --owners", p.Len(), maxRows)
		}
	}
	sum := securesum.DefaultParams()
	sum.MinParties, sum.Bound = s.minParties, float64(maxRows)
	pub := fedboost.Public{Boost: cfg, Schema: s.train.Schema, Dim: s.train.Dim(), ColumnsPerNode: s.columns, SplitFraction: s.split,
		Noise: cfg.Private(), Colluders: s.colluders.n, DropFraction: s.drop, Sum: sum, MaxRows: maxRows,
		StepTimeout: 10 * time.Minute, IdleTimeout: time.Hour}
	if s.m == dpboost.Newton {
		// The roster the simulation runs (simulate.RunFed names the owners
		// so): the rule's lambda reads how many owners deal noise.
		for i := range s.owners {
			pub.Roster = append(pub.Roster, simulate.OwnerID(i))
		}
		if s.lambda == 0 {
			if pub.Boost.Lambda, err = pub.NewtonLambda(); err != nil {
				return usagef("--eps/--trees: %v", err)
			}
		}
		nd, err := pub.NewtonDesign()
		if err != nil {
			return usagef("--eps/--trees: %v", err)
		}
		fmt.Fprintf(errOut, "plan: %s\n", dpboost.NewtonWhy(pub.Boost, s.owners*maxRows))
		honest := boost.HonestFor(max(pub.Sum.MinParties, s.owners-int(math.Floor(pub.DropFraction*float64(s.owners)))), pub.Colluders)
		dealers := "honest dealers"
		if honest == 1 {
			dealers = "honest dealer: each adds the whole noise"
		}
		fmt.Fprintf(errOut, "privacy: (%.4g, %g)-DP per owner's rows (record-level) from %d leaf sums composed in Renyi DP; DLap scale %.4g per coordinate (decoded), shares sized for %d %s (colluders %s)\n",
			nd.Eps, nd.Delta, pub.Boost.Trees, nd.Tau/math.Ldexp(1, int(pub.Sum.ScaleBits)), honest, dealers, s.colluders.String())
	}
	s.pub, s.parts = pub, parts
	return nil
}

// buildFed turns `ppboost fed`'s flags into the simulation's setup
// (defaults < flags; the owners and the Newton rule sized from --data).
// It reads --data and writes the plan lines on errOut.
func buildFed(args []string, errOut io.Writer) (*fedSetup, error) {
	s, err := parseFed(args, errOut)
	if err != nil {
		return nil, err
	}
	if err := s.prepare(errOut); err != nil {
		return nil, err
	}
	return s, nil
}

// parseFed parses and checks the flags (no data read yet).
func parseFed(args []string, errOut io.Writer) (*fedSetup, error) {
	fs := newFlagSet("fed", "fed [--data SPEC] --owners N --eps E [--method newton|dpboost|np --trees T --depth D --max-rows N ...]", errOut)
	s := &fedSetup{}
	s.register(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	s.ownersSet = isFlagSet(fs, "owners")
	var err error
	s.m, err = s.checkFlags()
	return s, err
}

// plan builds the trees' configuration and the session's public
// configuration once the data is set.
func (s *fedSetup) plan(errOut io.Writer) error {
	cfg, err := s.boostConfig()
	if err != nil {
		return err
	}
	return s.public(cfg, errOut)
}

func runFed(args []string, out, errOut io.Writer) error {
	s, err := parseFed(args, errOut)
	if err != nil {
		return err
	}
	if s.repeat.n == 1 {
		if err := s.prepare(errOut); err != nil {
			return err
		}
		r, err := s.runOnce(out, errOut)
		if err == nil {
			singleRunHint(errOut, r.TestError, r.TestRows)
		}
		return err
	}
	n, runs := s.repeat.n, make([]runResult, 0, s.repeat.n)
	for i := range n {
		run := *s // the flags as given: setData sizes the owners per run
		run.seed += uint64(i)
		run.force = run.force || i > 0 // run 1 passed the check
		e := withErrOut(i, errOut)
		if err := run.prepare(e); err != nil {
			return runFailed(i, n, run.seed, err)
		}
		if i > 0 {
			run.modelPath = "" // --model keeps run 1's model
		}
		r, err := run.runOnce(io.Discard, e)
		if err != nil {
			return runFailed(i, n, run.seed, err)
		}
		if i == 0 && run.modelPath != "" {
			modelLine(out, errOut, false, run.modelPath, run.seed)
		}
		runs = append(runs, r)
		runLine(out, i, n, r)
	}
	return summarize(runs).report(out, errOut, false)
}

// prepare loads the data with the setup's seed, plans the session and
// refuses a hopeless plan (refuseHopeless).
func (s *fedSetup) prepare(errOut io.Writer) error {
	if err := s.loadData(errOut); err != nil {
		return err
	}
	if err := s.plan(errOut); err != nil {
		return err
	}
	return s.refuseHopeless()
}

// refuseHopeless is fed's check before the session (bestcase.go): the
// plan's trees trained by the one-process trainer at the same eps on the
// best cases of the data's shape must beat their majority class. The
// federation's noise in every sum is at least the one-process trainer's for
// the same eps (each honest dealer's share is sized so that the shares the
// data user cannot see through make up the whole noise), so a plan hopeless
// there is hopeless federated; the converse does not hold (with colluders
// all a total carries every dealer's whole noise), which makes the check
// one-sided: it misses plans that only the federation's extra noise sinks,
// and fed warns after the session when the model does not beat the
// majority class. (Scaling the one-process eps down by the federation's
// variance factor refused loans.csv's default plan, which federated reaches
// 0.275 against the majority class's 0.440.)
func (s *fedSetup) refuseHopeless() error {
	if s.m == dpboost.NP {
		return nil
	}
	cfg := s.pub.Boost
	return refuseBestCase(s.force, fmt.Sprintf("fed --method %s with %d trees of depth %d (checked with the one-process trainer, whose noise is at most the federation's)",
		cfg.Method, cfg.Trees, cfg.Depth), smallerTrees, cfg.Epsilon, s.train, s.train.Len(), s.seed, dpboostFit(cfg, s.seed))
}

// runOnce simulates the session once and reports its test error, next to
// the majority baseline, and its traffic.
func (s *fedSetup) runOnce(out, errOut io.Writer) (runResult, error) {
	// The flags' values, as the simulation below reads them.
	pub, parts, m, cfg, test, train := s.pub, s.parts, s.m, s.pub.Boost, s.test, s.train
	owners, eps, seed := &s.owners, &s.eps, &s.seed
	every := max(1, cfg.Trees/10)
	res, err := simulate.RunFed(simulate.FedOptions{Public: pub, Owners: parts, Seed: *seed,
		OnTree: func(r fedboost.TreeReport) {
			if m != dpboost.Newton || r.Tree%every == 0 || r.Tree == cfg.Trees {
				if m == dpboost.Newton {
					// One charge covers the session (Renyi composition over
					// the trees): a tree has no eps of its own to print.
					fmt.Fprintf(errOut, "tree %d: group of %d owners, %d sums\n", r.Tree, r.Group, r.Sums)
				} else {
					fmt.Fprintf(errOut, "tree %d: group of %d owners, %d sums, eps_t %.4g\n", r.Tree, r.Group, r.Sums, r.Eps)
				}
			}
		}})
	if res != nil && res.Outcome.Kind != 0 {
		// The session's outcome, as the data user and every owner logged it.
		if d := res.Disagreeing(); len(d) > 0 {
			return runResult{}, fmt.Errorf("fed: %d owners logged another outcome than the data user's %q (owner %d: %q)",
				len(d), res.Outcome, d[0], res.OwnerOutcomes[d[0]])
		}
		fmt.Fprintf(errOut, "outcome: %s (the data user and all %d owners)\n", res.Outcome, len(res.OwnerOutcomes))
		if err != nil {
			return runResult{}, res.Outcome.Err() // failed: exit 1
		}
	}
	if err != nil {
		return runResult{}, fmt.Errorf("fed: %w", err)
	}
	testErr := res.Model.Error(test)
	fmt.Fprintf(out, "test error %.4f (%d owners, eps %g, %s, colluders %s)\n", testErr, *owners, *eps, cfg.Method, s.colluders.String())
	base := majorityBaseline(train, test)
	base.report(out, errOut, testErr, cfg.Method != dpboost.NP)
	fmt.Fprintf(out, "owners sent %.0f messages and %.0f bytes per owner per tree they took part in; the user %d messages\n",
		res.MsgsPerOwnerTree, res.BytesPerOwnerTree, res.UserMsgs)
	if s.modelPath != "" {
		// No fill values: the simulated data user holds no rows of its own
		// (fed-user stores its own rows'), and the owners' exact means are
		// not covered by eps; predict fills gaps from the file it scores.
		if err := res.Model.Save(s.modelPath); err != nil {
			return runResult{}, err
		}
		fmt.Fprintf(out, "model written to %s (%d trees)\n", s.modelPath, len(res.Model.Boosters[0]))
	}
	fmt.Fprintf(out, "virtual time %v, wall %v\n", res.Virtual.Round(time.Millisecond), res.Wall.Round(time.Millisecond))
	return runResult{Seed: *seed, TestError: testErr, TestRows: test.Len(), Majority: base.Error, private: cfg.Method != dpboost.NP}, nil
}
