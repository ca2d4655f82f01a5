package pfds

import (
	"math"

	"github.com/ppboost/ppboost/crypto/rng"
)

// Methods of the paper's Table 2, plus two references.
const (
	MethodNPAgt    = "NP-Agt"    // each agent alone, non-private
	MethodDPPred   = "DP-Pred"   // vote of every agent's eps-DP predictor
	MethodMajority = "Majority"  // the training set's majority class
	MethodNPPred   = "NP-Pred"   // non-private ERM on the whole training set
	MethodTreeVote = "Tree-vote" // diagnostic: the vote of the shared trees on the test rows
	// MethodVoteRelabel is a diagnostic (not private): the ERM trained on
	// the real training fold with every label replaced by the vote of the
	// shared trees. It bounds what any synthetic data labelled by that vote
	// can teach an ERM: the rows are the real distribution, only the labels
	// are the trees'.
	MethodVoteRelabel = "Vote-relabel"
	// MethodOracleLabel is a control (not private): the ERM trained on the
	// shared synthetic rows labelled by the non-private NP-Pred model
	// instead of the vote. It shows whether the synthetic features can carry
	// the signal when the labels do.
	MethodOracleLabel = "Oracle-label"
)

// EvalConfig is one Table 2 experiment.
type EvalConfig struct {
	Params     Params    // Eps is overwritten by each entry of Epsilons
	Epsilons   []float64 // privacy budgets to evaluate
	Agents     int       // number of agents the training fold is split among
	EvalAgents int       // agents whose final predictors are evaluated (the first ones); 0 = all
	Learners   []Learner // LogReg and/or SVM
	Lambda     float64   // L2 weight of the non-private ERMs
	LambdaDP   float64   // L2 weight of objective perturbation
	Attr       int       // the attribute of the non-IID split
	IID        bool      // split uniformly instead
	Modes      []Mode    // PFDS variants to run
	// Variant is the setting of mode Variant (PFDS-cv); its Eps is
	// overwritten by each entry of Epsilons.
	Variant VariantParams
	// Share, if set, produces the shares of mode Full instead of Simulate
	// (the experiments pass the distributed session over the in-memory
	// network here); it must draw agent i's noise from AgentRand(seed, i).
	Share func(dom *Domain, agents []Local, p Params, seed uint64) ([]Shared, error)
}

// DefaultEval is the paper's Census setting: 100 agents, eps 1, 0.5, 0.1,
// PFDS and PFDS(s) (PFDS- is in the paper's data-fidelity figure only: its
// clipped noisy leaves make hundreds of times too many records to train on),
// logistic regression and SVM, non-IID on attribute 0 (Adult: age).
func DefaultEval() EvalConfig {
	return EvalConfig{Params: DefaultParams(), Epsilons: []float64{1, 0.5, 0.1}, Agents: 100,
		Learners: []Learner{LogReg, SVM}, Lambda: 1e-3, LambdaDP: 1e-2, Modes: []Mode{Full, Self}, Variant: DefaultVariant()}
}

// Result is the mean test error of one method.
type Result struct {
	Method  string
	Learner Learner
	Eps     float64 // 0 for the non-private methods
	Err     float64 // mean misclassification rate over the evaluated agents
	Synth   int     // synthetic records shared in all (PFDS variants)
	// Positive is the share of class 1 among the synthetic labels (PFDS
	// variants; the real training data has about 24% on Adult), and among
	// the vote's labels of the real training rows for Vote-relabel.
	Positive float64
	// EmptyLeaf (Tree-vote rows) is the share of (synthetic row, other
	// agent's tree) pairs in which the row falls into a leaf that holds
	// none of that agent's training rows, so that the leaf's label is the
	// argmax of pure Laplace noise.
	EmptyLeaf float64
}

// EvalFold runs every method on one train/test split and returns the mean
// test errors. Everything random derives from seed.
func EvalFold(dom *Domain, train, test Local, cfg EvalConfig, seed uint64, logf func(string, ...any)) ([]Result, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	agents, err := splitFold(dom, train, cfg, seed)
	if err != nil {
		return nil, err
	}
	f := &fold{dom: dom, train: train, test: test, cfg: cfg, seed: seed, agents: agents, eval: cfg.EvalAgents, npPred: map[Learner]*Model{}}
	if f.eval <= 0 || f.eval > len(agents) {
		f.eval = len(agents)
	}
	out, err := f.references()
	if err != nil {
		return nil, err
	}
	for _, eps := range cfg.Epsilons {
		dp, err := f.dpPred(eps)
		if err != nil {
			return nil, err
		}
		out = append(out, dp...)
		for _, mode := range cfg.Modes {
			res, synth, err := f.shared(eps, mode)
			if err != nil {
				return nil, err
			}
			out = append(out, res...)
			logf("eps %g %s: %d synthetic records", eps, mode, synth)
		}
	}
	return out, nil
}

// splitFold cuts the training rows among the agents (IID or non-IID).
func splitFold(dom *Domain, train Local, cfg EvalConfig, seed uint64) ([]Local, error) {
	var parts [][]int
	if cfg.IID {
		parts = IID(len(train.X), cfg.Agents, seed)
	} else {
		var err error
		if parts, err = NonIID(dom, train.X, cfg.Agents, cfg.Attr, seed); err != nil {
			return nil, err
		}
	}
	agents := make([]Local, len(parts))
	for i, idx := range parts {
		for _, k := range idx {
			agents[i].X = append(agents[i].X, train.X[k])
			agents[i].Y = append(agents[i].Y, train.Y[k])
		}
	}
	return agents, nil
}

// fold is one EvalFold: the split, the agents, and the non-private
// predictors (the Oracle-label rows' labels).
type fold struct {
	dom         *Domain
	train, test Local
	cfg         EvalConfig
	seed        uint64
	agents      []Local
	eval        int // agents whose predictors are evaluated
	npPred      map[Learner]*Model
}

// references are the non-private rows: the majority class, NP-Pred (one
// model on all training rows) and NP-Agt (each agent alone).
func (f *fold) references() ([]Result, error) {
	maj := MajorityClass(f.train.Y, f.dom.Classes)
	out := []Result{{Method: MethodMajority, Err: errorOf(f.test, func([]float64) int { return maj })}}
	for _, l := range f.cfg.Learners {
		m, err := FitClasses(l, f.train.X, f.train.Y, f.dom.Classes, f.cfg.Lambda)
		if err != nil {
			return nil, err
		}
		f.npPred[l] = m
		out = append(out, Result{Method: MethodNPPred, Learner: l, Err: errorOf(f.test, m.Class)})
		sum, k := 0.0, 0
		for i := 0; i < f.eval; i++ {
			if len(f.agents[i].X) == 0 {
				continue
			}
			m, err := FitClasses(l, f.agents[i].X, f.agents[i].Y, f.dom.Classes, f.cfg.Lambda)
			if err != nil {
				return nil, err
			}
			sum += errorOf(f.test, m.Class)
			k++
		}
		out = append(out, Result{Method: MethodNPAgt, Learner: l, Err: sum / float64(k)})
	}
	return out, nil
}

// dpPred is the DP-Pred row of each learner at eps: the vote of every
// agent's DP model.
func (f *fold) dpPred(eps float64) ([]Result, error) {
	var out []Result
	for _, l := range f.cfg.Learners {
		var ens Ensemble
		for i, a := range f.agents {
			if len(a.X) == 0 {
				continue
			}
			m, err := FitDPClasses(l, a.X, a.Y, nil, f.dom.Classes, len(f.dom.Attrs), eps, f.cfg.LambdaDP, rng.Derive(f.seed, 0x4450, uint64(i), uint64(l), math.Float64bits(eps)))
			if err != nil {
				return nil, err
			}
			ens = append(ens, m)
		}
		out = append(out, Result{Method: MethodDPPred, Learner: l, Eps: eps, Err: errorOf(f.test, ens.Class)})
	}
	return out, nil
}

// share runs the sharing of one PFDS mode at eps.
func (f *fold) share(eps float64, mode Mode) ([]Shared, error) {
	p := f.cfg.Params
	p.Eps = eps
	switch {
	case mode == Variant:
		v := f.cfg.Variant
		v.Eps = eps
		return SimulateVariant(f.dom, f.agents, v, f.seed^math.Float64bits(eps))
	case mode == Full && f.cfg.Share != nil:
		return f.cfg.Share(f.dom, f.agents, p, f.seed^math.Float64bits(eps))
	}
	return Simulate(f.dom, f.agents, p, mode, f.seed^math.Float64bits(eps))
}

// shared is the rows of one PFDS mode at eps: for the full protocol the
// tree vote and the diagnostics, then per learner the evaluated agents'
// predictors trained on their rows plus the shared ones.
func (f *fold) shared(eps float64, mode Mode) (out []Result, synth int, err error) {
	shares, err := f.share(eps, mode)
	if err != nil {
		return nil, 0, err
	}
	pos := 0
	var trees []*Tree
	for _, s := range shares {
		synth += len(s.Rows)
		trees = append(trees, s.Tree)
		for _, l := range s.Data.Labels {
			pos += l
		}
	}
	positive := float64(pos) / math.Max(1, float64(synth))
	if mode == Full {
		wrong := 0
		for i, v := range Vote(f.dom, trees, f.test.X) {
			if v != f.test.Y[i] {
				wrong++
			}
		}
		out = append(out, Result{Method: MethodTreeVote, Eps: eps, Err: float64(wrong) / float64(len(f.test.Y)),
			Synth: synth, Positive: positive, EmptyLeaf: emptyLeafShare(f.dom, f.agents, shares)})
		diag, err := diagnose(f.dom, f.train, shares, trees, f.npPred, f.cfg, eps, f.test)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, diag...)
	}
	for _, l := range f.cfg.Learners {
		// Every agent trains on the same shared rows plus its own:
		// start each from the model of the shared rows alone.
		common := Union(Local{}, shares)
		base, err := FitClasses(l, common.X, common.Y, f.dom.Classes, f.cfg.Lambda)
		if err != nil {
			return nil, 0, err
		}
		sum := 0.0
		for i := 0; i < f.eval; i++ {
			u := Union(f.agents[i], shares)
			m, err := fitClasses(l, u.X, u.Y, f.dom.Classes, f.cfg.Lambda, base.flat())
			if err != nil {
				return nil, 0, err
			}
			sum += errorOf(f.test, m.Class)
		}
		out = append(out, Result{Method: mode.String(), Learner: l, Eps: eps, Err: sum / float64(f.eval), Synth: synth, Positive: positive})
	}
	return out, synth, nil
}

// diagnose returns the Vote-relabel and Oracle-label rows of one epsilon.
func diagnose(dom *Domain, train Local, shares []Shared, trees []*Tree, npPred map[Learner]*Model, cfg EvalConfig, eps float64, test Local) ([]Result, error) {
	var out []Result
	relabel := Local{X: train.X, Y: Vote(dom, trees, train.X)}
	pos := 0
	for _, y := range relabel.Y {
		pos += y
	}
	common := Union(Local{}, shares)
	for _, l := range cfg.Learners {
		m, err := FitClasses(l, relabel.X, relabel.Y, dom.Classes, cfg.Lambda)
		if err != nil {
			return nil, err
		}
		out = append(out, Result{Method: MethodVoteRelabel, Learner: l, Eps: eps, Err: errorOf(test, m.Class),
			Positive: float64(pos) / float64(len(relabel.Y))})
		oracle := Local{X: common.X, Y: make([]int, len(common.X))}
		opos := 0
		for i, x := range common.X {
			oracle.Y[i] = npPred[l].Class(x)
			opos += oracle.Y[i]
		}
		m, err = FitClasses(l, oracle.X, oracle.Y, dom.Classes, cfg.Lambda)
		if err != nil {
			return nil, err
		}
		out = append(out, Result{Method: MethodOracleLabel, Learner: l, Eps: eps, Err: errorOf(test, m.Class),
			Synth: len(common.X), Positive: float64(opos) / math.Max(1, float64(len(common.X)))})
	}
	return out, nil
}

// emptyLeafShare is the share of (synthetic row of agent j, tree of agent
// k != j) pairs whose leaf in tree k holds none of agent k's rows.
func emptyLeafShare(dom *Domain, agents []Local, shares []Shared) float64 {
	occupied := make([][]bool, len(shares))
	for k, s := range shares {
		occupied[k] = make([]bool, len(s.Tree.Nodes))
		for _, x := range agents[k].X {
			occupied[k][s.Tree.leafOf(dom, x)] = true
		}
	}
	empty, pairs := 0, 0
	for j, s := range shares {
		for _, x := range s.Rows {
			for k, o := range shares {
				if k == j {
					continue
				}
				if !occupied[k][o.Tree.leafOf(dom, x)] {
					empty++
				}
				pairs++
			}
		}
	}
	if pairs == 0 {
		return 0
	}
	return float64(empty) / float64(pairs)
}

// MajorityClass is the most frequent of classes labels in y (ties to the
// smallest class).
func MajorityClass(y []int, classes int) int {
	counts := make([]int, max(2, classes))
	for _, v := range y {
		if v >= 0 && v < len(counts) {
			counts[v]++
		}
	}
	maj := 0
	for c, n := range counts {
		if n > counts[maj] {
			maj = c
		}
	}
	return maj
}

// errorOf is the misclassification rate of predict on test.
func errorOf(test Local, predict func([]float64) int) float64 {
	wrong := 0
	for i, x := range test.X {
		if predict(x) != test.Y[i] {
			wrong++
		}
	}
	return float64(wrong) / float64(len(test.X))
}
