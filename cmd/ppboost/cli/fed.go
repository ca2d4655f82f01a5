package cli

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/simulate"
)

func init() {
	register("fed", "federated DP-GBDT (the Newton trainer, or DPBoost) with distributed noise over the in-memory network (any dataset cut into owners; default Adult)", runFed)
}

func runFed(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("fed", "fed [--data SPEC] --owners N --eps E [--method newton|dpboost|np --trees T --depth D ...]", errOut)
	var df dataFlags
	df.register(fs, "adult", "")
	owners := fs.Int("owners", 100, "owners the training rows are cut into (not given: 100, or one per 20 training rows if fewer, at least 10)")
	holdout := fs.Float64("holdout", 0.2, "fraction held out for the test error when the data has no test split")
	samples := fs.Int("samples", 20000, "synthetic: number of samples to generate")
	eps := fs.Float64("eps", 1, "total privacy budget epsilon (np: none); newton: the eps of (eps, delta)-DP")
	method := fs.String("method", "newton", "newton (beacon-drawn random trees, one noisy leaf sum per tree) | dpboost (distributed noise) | np (no noise)")
	trees := fs.Int("trees", 0, "trees T (0: newton's rule as in ppboost dpboost, or dpboost's 20)")
	ensemble := fs.Int("ensemble-size", 10, "dpboost: trees per ensemble T_e (each owner is in one tree per ensemble)")
	depth := fs.Int("depth", 3, "depth of every tree")
	bins := fs.Int("bins", 0, "bins per numeric feature (0: newton's 32, dpboost's 8)")
	lambda := fs.Float64("lambda", 0, "L2 regularization of the leaves (0: newton's rule, twice the noise sd of a leaf's hessian sum; dpboost's 20)")
	lr := fs.Float64("lr", 0, "learning rate (0: newton's rule 0.1; dpboost's 0.1)")
	columns := fs.Int("columns", 3, "schema columns per node, drawn from the beacon (0: all)")
	split := fs.Float64("split-fraction", 0.8, "share of each tree's eps spent on the splits (the leaves get the rest)")
	minParties := fs.Int("min-parties", 5, "dealer floor of every sum (at least)")
	colluders := colludersFlag{n: 1}
	fs.Var(&colluders, "colluders", "all or N: dealers that may collude with the data user (shares are sized for max(1, floor - N) honest dealers); the simulated owners hold the same bound, as a closed deployment's would (real owners default to all)")
	drop := fs.Float64("drop-fraction", 0.1, "fraction of a tree's group whose silence its sums survive")
	seed := fs.Uint64("seed", 1, "seed for the data shuffle, the owners' partition and the simulation")
	if err := parse(fs, args); err != nil {
		return err
	}
	m, err := dpboost.ParseMethod(*method)
	if err != nil || (m != dpboost.DPBoost && m != dpboost.NP && m != dpboost.Newton) {
		return usagef("--method: %q is not newton, dpboost or np", *method)
	}
	for name, v := range map[string]float64{"--trees": float64(*trees), "--lambda": *lambda, "--bins": float64(*bins), "--lr": *lr} {
		if v < 0 {
			return usagef("%s = %v, want a value >= 0 (0: the default)", name, v)
		}
	}
	if !(*holdout > 0 && *holdout < 1) {
		return usagef("--holdout = %v, want 0 < h < 1", *holdout)
	}
	train, test, err := df.load(errOut, *samples, *seed)
	if err != nil {
		return err
	}
	if test == nil {
		n := train.Len() - int(float64(train.Len())**holdout)
		train, test = train.Shuffle(*seed).Split(n)
	}
	if k := train.NumClasses(); k != 2 {
		return usagef("--data %s has %d classes: fed trains binary models; for more classes use ppboost dpboost (one process) or sim", df.data, k)
	}
	if !isFlagSet(fs, "owners") {
		// Sized from the data: 100 owners, or one per 20 training rows
		// (a leaf sum over a group needs rows in it), at least 10.
		if n := max(10, min(*owners, train.Len()/20)); n != *owners {
			fmt.Fprintf(errOut, "plan: %d owners (one per 20 of the %d training rows; --owners sets it)\n", n, train.Len())
			*owners = n
		}
	}
	if *owners < 1 || *owners > train.Len() {
		return usagef("--owners %d: the %d training rows cannot give every owner a row; use at most %d", *owners, train.Len(), train.Len())
	}
	cfg := dpboost.DefaultConfig()
	cfg.Trees, cfg.Bins, cfg.Lambda = 20, 8, 20
	if m == dpboost.Newton {
		cfg = dpboost.NewtonRule(*eps, train.Len(), train.NumClasses())
	}
	cfg.Method, cfg.Epsilon, cfg.EnsembleSize, cfg.Depth, cfg.ClipGradients = m, *eps, *ensemble, *depth, m != dpboost.Newton
	if *trees > 0 {
		cfg.Trees = *trees
	}
	if *bins > 0 {
		cfg.Bins = *bins
	}
	if *lr > 0 {
		cfg.LearningRate = *lr
	}
	if m == dpboost.Newton {
		cfg.EnsembleSize = cfg.Trees
	}
	switch {
	case *lambda > 0:
		cfg.Lambda = *lambda
	case m == dpboost.Newton:
		cfg.Lambda = 1 // checked now, set from the design below
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	parts, err := train.Partition(*owners, nil, *seed)
	if err != nil {
		return usageError{err}
	}
	maxRows := 0
	for _, p := range parts {
		maxRows = max(maxRows, p.Len())
	}
	sum := securesum.DefaultParams()
	sum.MinParties, sum.Bound = *minParties, float64(maxRows)
	pub := fedboost.Public{Boost: cfg, Schema: train.Schema, Dim: train.Dim(), ColumnsPerNode: *columns, SplitFraction: *split,
		Noise: cfg.Private(), Colluders: colluders.n, DropFraction: *drop, Sum: sum, MaxRows: maxRows,
		StepTimeout: 10 * time.Minute, IdleTimeout: time.Hour}
	if m == dpboost.Newton {
		if *lambda == 0 {
			if pub.Boost.Lambda, err = pub.NewtonLambda(); err != nil {
				return usagef("--eps/--trees: %v", err)
			}
		}
		nd, err := pub.NewtonDesign()
		if err != nil {
			return usagef("--eps/--trees: %v", err)
		}
		fmt.Fprintf(errOut, "plan: %s\n", dpboost.NewtonWhy(pub.Boost, train.Len()))
		fmt.Fprintf(errOut, "privacy: (%.4g, %g)-DP per owner's rows (record-level) from %d leaf sums composed in Renyi DP; DLap scale %.4g per coordinate (decoded), shares sized for %d honest dealers\n",
			nd.Eps, nd.Delta, pub.Boost.Trees, nd.Tau/math.Ldexp(1, int(pub.Sum.ScaleBits)),
			boost.HonestFor(max(pub.Sum.MinParties, *owners-int(math.Floor(pub.DropFraction*float64(*owners)))), pub.Colluders))
	}
	every := max(1, cfg.Trees/10)
	res, err := simulate.RunFed(simulate.FedOptions{Public: pub, Owners: parts, Seed: *seed,
		OnTree: func(r fedboost.TreeReport) {
			if m != dpboost.Newton || r.Tree%every == 0 || r.Tree == cfg.Trees {
				fmt.Fprintf(errOut, "tree %d: group of %d owners, %d sums, eps_t %.4g\n", r.Tree, r.Group, r.Sums, r.Eps)
			}
		}})
	if res != nil && res.Outcome.Kind != 0 {
		// The session's outcome, as the data user and every owner logged it.
		if d := res.Disagreeing(); len(d) > 0 {
			return fmt.Errorf("fed: %d owners logged another outcome than the data user's %q (owner %d: %q)",
				len(d), res.Outcome, d[0], res.OwnerOutcomes[d[0]])
		}
		fmt.Fprintf(errOut, "outcome: %s (the data user and all %d owners)\n", res.Outcome, len(res.OwnerOutcomes))
		if err != nil {
			return res.Outcome.Err() // failed: exit 1
		}
	}
	if err != nil {
		return fmt.Errorf("fed: %w", err)
	}
	testErr := res.Model.Error(test)
	fmt.Fprintf(out, "test error %.4f (%d owners, eps %g, %s)\n", testErr, *owners, *eps, cfg.Method)
	majorityBaseline(train, test).report(out, errOut, testErr, cfg.Method != dpboost.NP)
	fmt.Fprintf(out, "owners sent %.0f messages and %.0f bytes per owner per tree they took part in; the user %d messages\n",
		res.MsgsPerOwnerTree, res.BytesPerOwnerTree, res.UserMsgs)
	fmt.Fprintf(out, "virtual time %v, wall %v\n", res.Virtual.Round(time.Millisecond), res.Wall.Round(time.Millisecond))
	return nil
}
