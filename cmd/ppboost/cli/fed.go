package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/ppboost/ppboost/boost/dataset"
	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/securesum"
)

func init() {
	register("fed", "federated DPBoost with distributed noise over the in-memory network (Adult cut into owners)", runFed)
}

func runFed(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("fed", "fed --owners N --eps E [--trees T --ensemble-size T_e --depth D --bins B --columns K]", errOut)
	owners := fs.Int("owners", 100, "owners the training rows are cut into")
	eps := fs.Float64("eps", 4, "total privacy budget epsilon (np: none)")
	method := fs.String("method", "dpboost", "dpboost (distributed noise) | np (no noise)")
	trees := fs.Int("trees", 20, "trees T")
	ensemble := fs.Int("ensemble-size", 10, "trees per ensemble T_e (each owner is in one tree per ensemble)")
	depth := fs.Int("depth", 3, "depth of every tree")
	bins := fs.Int("bins", 8, "bins per numeric feature")
	lambda := fs.Float64("lambda", 20, "L2 regularization of the leaves")
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
	cfg := dpboost.DefaultConfig()
	m, err := dpboost.ParseMethod(*method)
	if err != nil || (m != dpboost.DPBoost && m != dpboost.NP) {
		return usagef("--method: %q is not dpboost or np", *method)
	}
	cfg.Method, cfg.Epsilon, cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Bins = m, *eps, *trees, *ensemble, *depth, *bins
	cfg.Lambda, cfg.ClipGradients = *lambda, true
	if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	d, err := dataset.Adult()
	if err != nil {
		return err
	}
	train, test := d.Shuffle(*seed).Split(26000)
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
	res, err := fedboost.Simulate(fedboost.SimOptions{Public: pub, Owners: parts, Seed: *seed,
		OnTree: func(r fedboost.TreeReport) {
			fmt.Fprintf(errOut, "tree %d: group of %d owners, %d sums, eps_t %.4g\n", r.Tree, r.Group, r.Sums, r.Eps)
		}})
	if err != nil {
		return fmt.Errorf("fed: %w", err)
	}
	fmt.Fprintf(out, "test error %.4f (%d owners, eps %g, %s)\n", res.Model.Error(test), *owners, *eps, cfg.Method)
	fmt.Fprintf(out, "owners sent %.0f messages and %.0f bytes per owner per tree they took part in; the user %d messages\n",
		res.MsgsPerOwnerTree, res.BytesPerOwnerTree, res.UserMsgs)
	fmt.Fprintf(out, "virtual time %v, wall %v\n", res.Virtual.Round(time.Millisecond), res.Wall.Round(time.Millisecond))
	return nil
}
