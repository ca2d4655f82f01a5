package experiment

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/simulate"
)

// Federated DPBoost (protocol/fedboost): the full protocol over the
// in-memory network with distributed noise, on Adult cut into 100 and 1,000
// owners, next to one-process DPBoost with the same configuration, NP and
// the majority class.

func init() {
	Register(Spec{Name: "fed-dpboost", Paper: "ppboost issue 15 (federated DPBoost; cf. Maddock et al., CCS 2022)",
		Summary: "federated DPBoost (distributed noise) with 100 and 1,000 owners vs one-process DPBoost, NP: Adult test error vs eps, messages and bytes per owner per tree",
		Run:     func(r *Run) error { return runFedDPBoost(r, "fed-dpboost", fedDefaults(r)) }})
	Register(Spec{Name: "fed-dpboost-ne1", Paper: "ppboost issue 15 (federated DPBoost)",
		Summary: "fed-dpboost with one ensemble of 10 trees (eps_t = eps) and 4 bins per numeric column",
		Run: func(r *Run) error {
			s := fedDefaults(r)
			if !r.Short {
				s.trees, s.ensemble, s.bins = 10, 10, 4
			}
			return runFedDPBoost(r, "fed-dpboost-ne1", s)
		}})
}

// fedSetting is the configuration shared by the federated runs and the
// one-process reference.
type fedSetting struct {
	trees, ensemble, depth, bins int
	lambda, splitFraction        float64
	eps                          []float64
	owners                       []int
	columns                      []int // columns per node (0: all)
	// colluders is the sessions' colluder bound. fed-dpboost keeps 1 (a
	// closed deployment whose owners know each other: each adds a share of
	// the noise sized for floor - 1 honest dealers), the trust its
	// committed figures (results/fed) were measured with; the owners'
	// default is boost.ColludersAll, which dpgbdt-fed measures beside it.
	colluders int
}

func fedDefaults(r *Run) fedSetting {
	// Depth 3 and 8 bins: a noisy histogram's noise grows with the levels
	// (the budget is split among them) and with the cells a prefix sum
	// covers. 80% of eps_t to the splits: the leaves' sums are large.
	s := fedSetting{trees: 20, ensemble: 10, depth: 3, bins: 8, lambda: 20, splitFraction: 0.8,
		eps: []float64{1, 2, 4, 10}, owners: []int{100, 1000}, columns: []int{3, 0}, colluders: 1}
	if r.Short {
		s = fedSetting{trees: 4, ensemble: 2, depth: 2, bins: 8, lambda: 20, splitFraction: 0.8, eps: []float64{10}, owners: []int{40}, columns: []int{3}, colluders: 1}
	}
	return s
}

func (s fedSetting) config(method dpboost.Method, eps float64) dpboost.Config {
	cfg := dpboost.DefaultConfig()
	cfg.Method, cfg.Epsilon, cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Bins = method, eps, s.trees, s.ensemble, s.depth, s.bins
	cfg.Lambda, cfg.ClipGradients = s.lambda, true
	return cfg
}

// FedRun is one federated run's outcome.
type FedRun struct {
	Error                               float64
	MsgsPerOwnerTree, BytesPerOwnerTree float64
	Wall, Virtual                       time.Duration
}

// RunFederated trains federated DPBoost (or Newton) on train cut into
// owners, with noise shares sized for colluders (boost.ColludersAll: every
// dealing DP on its own, the owners' default; N: max(1, floor - N) honest
// dealers), and returns its test error and traffic.
func RunFederated(cfg dpboost.Config, columns int, splitFraction float64, train, test *dataset.Dataset, owners, colluders int, seed uint64) (*FedRun, error) {
	parts, err := train.Partition(owners, nil, seed)
	if err != nil {
		return nil, err
	}
	// A declared cap, not the largest shard: it is announced, and the
	// session's row bound (owners x cap) is what delta's rule reads.
	maxRows := fedboost.DefaultMaxRows(owners)
	for _, p := range parts {
		if p.Len() > maxRows {
			return nil, fmt.Errorf("an owner's shard has %d rows, above the public cap %d", p.Len(), maxRows)
		}
	}
	sum := securesum.DefaultParams()
	sum.MinParties = 5
	sum.Bound = float64(maxRows)
	pub := fedboost.Public{Boost: cfg, Schema: train.Schema, Dim: train.Dim(), ColumnsPerNode: columns, SplitFraction: splitFraction, Noise: cfg.Private(),
		Colluders: colluders, DropFraction: 0.1, Sum: sum, MaxRows: maxRows, StepTimeout: 10 * time.Minute, IdleTimeout: time.Hour}
	for i := range owners {
		pub.Roster = append(pub.Roster, simulate.OwnerID(i)) // RunFed's names; the rule's lambda reads the roster's size
	}
	if cfg.Method == dpboost.Newton && cfg.Lambda == 0 {
		// The rule's lambda, from this design's noise (dpboost.NewtonRule).
		if pub.Boost.Lambda, err = pub.NewtonLambda(); err != nil {
			return nil, err
		}
	}
	res, err := simulate.RunFed(simulate.FedOptions{Public: pub, Owners: parts, Seed: seed})
	if err != nil {
		return nil, err
	}
	return &FedRun{Error: res.Model.Error(test), MsgsPerOwnerTree: res.MsgsPerOwnerTree, BytesPerOwnerTree: res.BytesPerOwnerTree, Wall: res.Wall, Virtual: res.Virtual}, nil
}

func runFedDPBoost(r *Run, name string, s fedSetting) error {
	seeds := seedsOf(r)
	type key struct {
		name string
		eps  float64
	}
	errs := map[key][]float64{}
	traffic := map[string][2][]float64{}
	var names []string
	addName := func(n string) {
		for _, x := range names {
			if x == n {
				return
			}
		}
		names = append(names, n)
	}
	r.Progress.Start(name, len(seeds)*len(s.eps)*(2+len(s.owners)*len(s.columns)))
	for _, seed := range seeds {
		train, test, err := adultSplit(r, seed)
		if err != nil {
			return err
		}
		npModel, err := dpboost.TrainClassifier(s.config(dpboost.NP, 1), train, rng.Derive(seed, 0x6e70), nil)
		if err != nil {
			return err
		}
		npErr := npModel.Error(test)
		for _, eps := range s.eps {
			m, err := dpboost.TrainClassifier(s.config(dpboost.DPBoost, eps), train, rng.Derive(seed, 0x6470, math.Float64bits(eps)), nil)
			if err != nil {
				return err
			}
			k := key{"dpboost (one process)", eps}
			addName(k.name)
			errs[k] = append(errs[k], m.Error(test))
			r.Progress.Step()
			k = key{"np (one process)", eps}
			addName(k.name)
			errs[k] = append(errs[k], npErr)
			r.Progress.Step()
			for _, n := range s.owners {
				for _, c := range s.columns {
					fr, err := RunFederated(s.config(dpboost.DPBoost, eps), c, s.splitFraction, train, test, n, s.colluders, seed)
					if err != nil {
						return fmt.Errorf("federated, %d owners, %d columns per node, eps %g: %w", n, c, eps, err)
					}
					name := fmt.Sprintf("federated, %d owners, %s", n, columnLabel(c))
					k := key{name, eps}
					addName(name)
					errs[k] = append(errs[k], fr.Error)
					tr := traffic[name]
					tr[0], tr[1] = append(tr[0], fr.MsgsPerOwnerTree), append(tr[1], fr.BytesPerOwnerTree)
					traffic[name] = tr
					r.Logf("seed %d eps %g %s: test error %.4f (one process %.4f), %.0f msgs and %.0f bytes per owner per tree, %v",
						seed, eps, name, fr.Error, errs[key{"dpboost (one process)", eps}][len(errs[key{"dpboost (one process)", eps}])-1],
						fr.MsgsPerOwnerTree, fr.BytesPerOwnerTree, fr.Wall.Round(time.Millisecond))
					r.Progress.Step()
				}
			}
		}
	}
	fig := Figure{Title: fmt.Sprintf("Federated DPBoost, Adult: T %d, T_e %d, depth %d, %d bins, colluders %s", s.trees, s.ensemble, s.depth, s.bins, colludersLabel(s.colluders)), X: "total privacy budget eps", Y: "test error",
		ErrBars: sdBars(len(seeds), "seeds")}
	var rows [][]string
	for _, name := range names {
		se := Series{Name: name}
		for _, eps := range s.eps {
			e := errs[key{name, eps}]
			mean, std := MeanStd(e)
			se.X, se.Y, se.Err = append(se.X, eps), append(se.Y, mean), append(se.Err, std)
			msgs, bytes := "", ""
			if tr, ok := traffic[name]; ok {
				m, _ := MeanStd(tr[0])
				b, _ := MeanStd(tr[1])
				msgs, bytes = F(m), F(b)
			}
			rows = append(rows, []string{name, F(eps), F(mean), F(std), strconv.Itoa(len(e)), msgs, bytes})
			r.Logf("%-40s eps %-4g test error %.4f +- %.4f", name, eps, mean, std)
		}
		fig.Series = append(fig.Series, se)
	}
	lo, hi := s.eps[0], s.eps[len(s.eps)-1]
	fig.Series = append(fig.Series,
		Series{Name: "majority class", X: []float64{lo, hi}, Y: []float64{adultMajorityError, adultMajorityError}, Dashed: true, NoPoint: true})
	if err := r.Plot(name, fig); err != nil {
		return err
	}
	return r.Table(name, []string{"method", "eps", "test_error_mean", "test_error_std", "runs", "msgs_per_owner_tree", "bytes_per_owner_tree"}, rows)
}

func columnLabel(c int) string {
	if c == 0 {
		return "all columns per node"
	}
	if c == 1 {
		return "1 column per node"
	}
	return fmt.Sprintf("%d columns per node", c)
}

// colludersLabel is a colluder bound as the flag spells it: "all" or N.
func colludersLabel(c int) string {
	if c == boost.ColludersAll {
		return "all"
	}
	return strconv.Itoa(c)
}
