package experiment

import (
	"fmt"
	"math"
	"sort"

	"github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol/simulate"
)

// The paper's Table 2 Census rows (48,842-row Census Income, 100 agents,
// 10-fold CV): error of each method for LogReg and SVM at eps 1, 0.5, 0.1.
var pfdsPaperTable2 = map[string]map[pfds.Learner][3]float64{
	pfds.MethodNPAgt:  {pfds.LogReg: {.276, .276, .276}, pfds.SVM: {.283, .283, .283}},
	pfds.MethodDPPred: {pfds.LogReg: {.232, .245, .293}, pfds.SVM: {.253, .262, .269}},
	"PFDS(s)":         {pfds.LogReg: {.266, .301, .336}, pfds.SVM: {.267, .269, .268}},
	"PFDS":            {pfds.LogReg: {.212, .226, .246}, pfds.SVM: {.209, .224, .239}},
}

var pfdsPaperEps = []float64{1, 0.5, 0.1}

func init() {
	Register(Spec{
		Name:    "pfds-table2",
		Paper:   "Fioretto & Van Hentenryck 2019, Table 2 (Census rows)",
		Summary: "PFDS vs NP-Agt, DP-Pred, PFDS(s) and the stated departure PFDS-cv on Adult: 100 non-IID agents, LogReg and SVM, eps 1/0.5/0.1",
		Run:     runPFDSTable2,
	})
	Register(Spec{
		Name:    "pfds-eps1",
		Paper:   "Fioretto & Van Hentenryck 2019, Table 2 (Census rows, eps 1 only)",
		Summary: "Table 2's eps 1 rows alone (PFDS, PFDS-cv, NP-Agt, DP-Pred, LogReg and SVM; same folds and seeds as pfds-table2): the SVM goal's measurement",
		Run:     runPFDSEps1,
	})
	Register(Spec{
		Name:    "pfds-cv",
		Paper:   "Fioretto & Van Hentenryck 2019, Table 2 (Census rows; the stated departure PFDS-cv only)",
		Summary: "Table 2's PFDS-cv, NP-Agt and DP-Pred rows alone (LogReg and SVM, eps 1/0.5/0.1; same folds and seeds as pfds-table2)",
		Run:     runPFDSCv,
	})
	Register(Spec{
		Name:    "pfds-agents",
		Paper:   "Fioretto & Van Hentenryck 2019, Sec. 4 (agents' data size; not a figure of the paper)",
		Summary: "PFDS vs NP-Agt and DP-Pred on Adult at eps 1 as the number of agents (and so each agent's data) varies",
		Run:     runPFDSAgents,
	})
	Register(Spec{
		Name:    "pfds-fidelity",
		Paper:   "Fioretto & Van Hentenryck 2019, Fig. 3a",
		Summary: "synthetic dataset size error of PFDS and PFDS- (no post-processing) vs h_max on Adult",
		Run:     runPFDSFidelity,
	})
}

// pfdsData loads Adult (a 3,000-row prefix in short runs).
func pfdsData(r *Run) (*dataset.Dataset, *pfds.Domain, error) {
	d, err := dataset.Adult()
	if err != nil {
		return nil, nil, err
	}
	if r.Short {
		d, _ = d.Shuffle(1).Split(3000)
	}
	dom, err := pfds.NewDomain(d)
	return d, dom, err
}

func split(d *dataset.Dataset, test []int) (train, te pfds.Local) {
	in := make([]bool, d.Len())
	for _, i := range test {
		in[i] = true
	}
	for i := range d.X {
		if in[i] {
			te.X, te.Y = append(te.X, d.X[i]), append(te.Y, d.Y[i])
		} else {
			train.X, train.Y = append(train.X, d.X[i]), append(train.Y, d.Y[i])
		}
	}
	return train, te
}

func runPFDSTable2(r *Run) error {
	d, dom, err := pfdsData(r)
	if err != nil {
		return err
	}
	cfg := pfds.DefaultEval()
	// 10-fold stratified CV as in the paper. 20 of the 100 agents' final
	// predictors are evaluated per fold (all 100 agents take part in the
	// protocol and the baselines).
	folds, evalAgents := 10, 20
	// PFDS-cv, the stated departure (pfds.Variant), runs beside the
	// paper's modes on the same agents and folds, with the setting fixed
	// by pfds-variant's validation run.
	cfg.Modes = append(cfg.Modes, pfds.Variant)
	if r.Short {
		cfg.Agents, cfg.Epsilons, folds, evalAgents = 10, []float64{1}, 2, 2
		cfg.Params.HMax = 4
	}
	cfg.EvalAgents = evalAgents
	if r.Protocol {
		cfg.Share = pfdsProtocolShares(d)
	}
	return pfdsFoldTable(r, "pfds-table2", d, dom, cfg, folds)
}

// pfdsFoldTable runs cfg on folds stratified folds of d per seed (fold
// seed seed*1000+fold), writes the rows as name.csv and name.json and,
// when cfg spans several epsilons, one plot per learner.
func pfdsFoldTable(r *Run, name string, d *dataset.Dataset, dom *pfds.Domain, cfg pfds.EvalConfig, folds int) error {
	seeds := pfdsSeeds(r)
	st := newPFDSTable2Stats()
	r.Progress.Start(name, len(seeds)*folds)
	for _, seed := range seeds {
		for f, test := range pfds.StratifiedFolds(d.Y, folds, seed) {
			train, te := split(d, test)
			res, err := pfds.EvalFold(dom, train, te, cfg, seed*1000+uint64(f), nil)
			if err != nil {
				return fmt.Errorf("seed %d fold %d: %w", seed, f, err)
			}
			st.add(res)
			r.Progress.Step()
		}
	}
	out := r.sub("pfds")
	if err := st.report(r, out, name); err != nil {
		return err
	}
	if len(cfg.Epsilons) < 2 {
		return nil // one point per method: the table says it
	}
	for _, l := range cfg.Learners {
		if err := out.Plot(name+"-"+l.String(), st.figure(cfg, l, len(seeds)*folds)); err != nil {
			return err
		}
	}
	return nil
}

// pfdsT2Key is one row of Table 2: a method, learner and epsilon.
type pfdsT2Key struct {
	method  string
	learner pfds.Learner
	eps     float64
}

// pfdsTable2Stats are the per-fold values of every row.
type pfdsTable2Stats struct {
	errs, positive, emptyLeaf map[pfdsT2Key][]float64
}

func newPFDSTable2Stats() *pfdsTable2Stats {
	return &pfdsTable2Stats{errs: map[pfdsT2Key][]float64{}, positive: map[pfdsT2Key][]float64{}, emptyLeaf: map[pfdsT2Key][]float64{}}
}

// add records one fold's results.
func (st *pfdsTable2Stats) add(res []pfds.Result) {
	for _, x := range res {
		k := pfdsT2Key{x.Method, x.Learner, x.Eps}
		st.errs[k] = append(st.errs[k], x.Err)
		if x.Synth > 0 || x.Method == pfds.MethodVoteRelabel {
			st.positive[k] = append(st.positive[k], x.Positive)
		}
		if x.Method == pfds.MethodTreeVote {
			st.emptyLeaf[k] = append(st.emptyLeaf[k], x.EmptyLeaf)
		}
	}
}

// keys are the rows in the table's order: by learner, eps descending, then
// the methods in the paper's order followed by the diagnostics.
func (st *pfdsTable2Stats) keys() []pfdsT2Key {
	keys := make([]pfdsT2Key, 0, len(st.errs))
	for k := range st.errs {
		keys = append(keys, k)
	}
	order := map[string]int{pfds.MethodMajority: 0, pfds.MethodNPPred: 1, pfds.MethodNPAgt: 2, pfds.MethodDPPred: 3, "PFDS(s)": 4, "PFDS": 5, pfds.Variant.String(): 6,
		pfds.MethodTreeVote: 7, pfds.MethodVoteRelabel: 8, pfds.MethodOracleLabel: 9}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.learner != b.learner {
			return a.learner < b.learner
		}
		if a.eps != b.eps {
			return a.eps > b.eps
		}
		return order[a.method] < order[b.method]
	})
	return keys
}

// pfdsT2Row is a Table 2 row in the JSON file.
type pfdsT2Row struct {
	Method   string  `json:"method"`
	Learner  string  `json:"learner"`
	Eps      float64 `json:"eps"`
	Err      float64 `json:"error"`
	Std      float64 `json:"std"`
	Paper    float64 `json:"paper,omitempty"`
	Positive float64 `json:"positive_share,omitempty"`
	Empty    float64 `json:"empty_leaf_share,omitempty"`
	Majority float64 `json:"majority_class_error"`
}

// report writes the table (CSV and JSON) and logs its rows.
func (st *pfdsTable2Stats) report(r, out *Run, name string) error {
	maj, _ := MeanStd(st.errs[pfdsT2Key{pfds.MethodMajority, 0, 0}])
	var rows [][]string
	var js []pfdsT2Row
	for _, k := range st.keys() {
		if k.method == pfds.MethodMajority {
			continue
		}
		m, s := MeanStd(st.errs[k])
		paper := pfdsPaper(k.method, k.learner, k.eps)
		ps := ""
		if !math.IsNaN(paper) {
			ps = F(paper)
		} else {
			paper = 0
		}
		pos, posS := 0.0, ""
		if len(st.positive[k]) > 0 {
			pos, _ = MeanStd(st.positive[k])
			posS = fmt.Sprintf("%.3f", pos)
		}
		empty, emptyS := 0.0, ""
		if len(st.emptyLeaf[k]) > 0 {
			empty, _ = MeanStd(st.emptyLeaf[k])
			emptyS = fmt.Sprintf("%.3f", empty)
		}
		rows = append(rows, []string{k.method, k.learner.String(), F(k.eps), fmt.Sprintf("%.4f", m), fmt.Sprintf("%.4f", s), ps, fmt.Sprintf("%.4f", maj), posS, emptyS})
		js = append(js, pfdsT2Row{k.method, k.learner.String(), k.eps, m, s, paper, pos, empty, maj})
		r.Logf("%-12s %-6s eps %-4g error %.4f ± %.4f  paper %-5s  (majority class %.4f) %s %s", k.method, k.learner, k.eps, m, s, ps, maj, posS, emptyS)
	}
	if err := out.Table(name, []string{"method", "learner", "eps", "error", "std", "paper", "majority_class_error", "positive_share", "empty_leaf_share"}, rows); err != nil {
		return err
	}
	return out.JSON(name, js)
}

// runPFDSEps1 is pfds-table2 at eps 1 without PFDS(s): the same folds,
// fold seeds, agents and evaluated agents, so its rows equal Table 2's eps
// 1 rows run with the same code, at a fraction of the cost.
func runPFDSEps1(r *Run) error {
	return runPFDSFolds(r, "pfds-eps1", []float64{1}, []pfds.Mode{pfds.Full, pfds.Variant})
}

// runPFDSCv is pfds-table2 with PFDS-cv as the only sharing mode: its
// PFDS-cv, NP-Agt, DP-Pred and NP-Pred rows equal Table 2's, without the
// cost of the faithful modes' trees.
func runPFDSCv(r *Run) error {
	return runPFDSFolds(r, "pfds-cv", pfdsPaperEps, []pfds.Mode{pfds.Variant})
}

// runPFDSFolds runs Table 2's folds (10-fold stratified CV per seed, fold
// seed seed*1000+fold, 100 agents, 20 evaluated) at epsilons with modes and
// writes the rows as name.csv and name.json.
func runPFDSFolds(r *Run, name string, epsilons []float64, modes []pfds.Mode) error {
	d, dom, err := pfdsData(r)
	if err != nil {
		return err
	}
	cfg := pfds.DefaultEval()
	folds := 10
	cfg.Epsilons, cfg.Modes, cfg.EvalAgents = epsilons, modes, 20
	if r.Short {
		cfg.Agents, folds, cfg.EvalAgents = 10, 2, 2
		cfg.Params.HMax = 4
		cfg.Epsilons = epsilons[:1]
	}
	return pfdsFoldTable(r, name, d, dom, cfg, folds)
}

// figure is learner l's error against epsilon, beside the paper's PFDS
// and the majority class.
func (st *pfdsTable2Stats) figure(cfg pfds.EvalConfig, l pfds.Learner, runs int) Figure {
	maj, _ := MeanStd(st.errs[pfdsT2Key{pfds.MethodMajority, 0, 0}])
	fig := Figure{Title: fmt.Sprintf("PFDS on Adult, %s, %d agents", l, cfg.Agents), X: "epsilon", Y: "test error",
		ErrBars: sdBars(runs, "seed × fold runs")}
	for _, method := range []string{pfds.MethodNPAgt, pfds.MethodDPPred, "PFDS(s)", "PFDS", pfds.Variant.String()} {
		var s Series
		s.Name = method
		for _, eps := range cfg.Epsilons {
			v := st.errs[pfdsT2Key{method, l, eps}]
			if method == pfds.MethodNPAgt {
				v = st.errs[pfdsT2Key{method, l, 0}]
			}
			if len(v) == 0 {
				continue // a method this run did not train (pfds-cv runs one mode)
			}
			m, sd := MeanStd(v)
			s.X, s.Y, s.Err = append(s.X, eps), append(s.Y, m), append(s.Err, sd)
		}
		if len(s.X) > 0 {
			fig.Series = append(fig.Series, s)
		}
	}
	paper := Series{Name: "PFDS (paper)", PointsOnly: true}
	for i, eps := range pfdsPaperEps {
		paper.X, paper.Y = append(paper.X, eps), append(paper.Y, pfdsPaperTable2["PFDS"][l][i])
	}
	majS := Series{Name: "majority class", Dashed: true, NoPoint: true}
	for _, eps := range pfdsPaperEps {
		majS.X, majS.Y = append(majS.X, eps), append(majS.Y, maj)
	}
	fig.Series = append(fig.Series, paper, majS)
	return fig
}

func pfdsPaper(method string, l pfds.Learner, eps float64) float64 {
	for i, e := range pfdsPaperEps {
		if m, ok := pfdsPaperTable2[method]; ok && (e == eps || (method == pfds.MethodNPAgt && eps == 0)) {
			return m[l][i]
		}
	}
	return math.NaN()
}

func runPFDSFidelity(r *Run) error {
	d, dom, err := pfdsData(r)
	if err != nil {
		return err
	}
	agents, hs := 100, []int{2, 4, 6, 8}
	if r.Short {
		agents, hs = 10, []int{2, 4}
	}
	seeds := pfdsSeeds(r)
	all := pfds.Local{X: d.X, Y: d.Y}
	out := r.sub("pfds")
	var rows [][]string
	series := map[pfds.Mode]*Series{pfds.Full: {Name: "PFDS"}, pfds.Minus: {Name: "PFDS-"}}
	r.Progress.Start("pfds-fidelity", len(hs)*len(seeds))
	for _, h := range hs {
		perMode := map[pfds.Mode][]float64{}
		for _, seed := range seeds {
			parts, err := pfds.NonIID(dom, all.X, agents, 0, seed)
			if err != nil {
				return err
			}
			locals := make([]pfds.Local, len(parts))
			for i, idx := range parts {
				for _, k := range idx {
					locals[i].X = append(locals[i].X, all.X[k])
					locals[i].Y = append(locals[i].Y, all.Y[k])
				}
			}
			p := pfds.DefaultParams()
			p.HMax, p.P = h, min(4, h+1)
			for _, mode := range []pfds.Mode{pfds.Full, pfds.Minus} {
				sizes, err := pfds.SimulateSizes(dom, locals, p, mode, seed)
				if err != nil {
					return err
				}
				sum := 0.0
				for i, s := range sizes {
					sum += math.Abs(float64(s) - float64(len(locals[i].X)))
				}
				perMode[mode] = append(perMode[mode], sum/float64(len(sizes)))
			}
			r.Progress.Step()
		}
		for _, mode := range []pfds.Mode{pfds.Full, pfds.Minus} {
			m, s := MeanStd(perMode[mode])
			se := series[mode]
			se.X, se.Y, se.Err = append(se.X, float64(h)), append(se.Y, m), append(se.Err, s)
			rows = append(rows, []string{mode.String(), fmt.Sprint(h), fmt.Sprintf("%.1f", m), fmt.Sprintf("%.1f", s)})
			r.Logf("h_max %d %-6s mean |synthetic size - true size| per agent %.1f ± %.1f", h, mode, m, s)
		}
	}
	if err := out.Table("pfds-fidelity", []string{"method", "h_max", "size_error", "std"}, rows); err != nil {
		return err
	}
	return out.Plot("pfds-fidelity", Figure{Title: "synthetic size error per agent (Adult, eps 1)", X: "h_max", Y: "|size - true size|", LogY: true,
		ErrBars: sdBars(len(seeds), "seeds"),
		Series:  []Series{*series[pfds.Full], *series[pfds.Minus]}})
}

func runPFDSAgents(r *Run) error {
	d, dom, err := pfdsData(r)
	if err != nil {
		return err
	}
	counts, folds := []int{10, 25, 50, 100}, 2
	if r.Short {
		counts = []int{5, 10}
	}
	seeds := pfdsSeeds(r)
	methods := []string{pfds.MethodNPAgt, pfds.MethodDPPred, "PFDS", pfds.MethodTreeVote, pfds.MethodMajority}
	series := map[string]*Series{}
	for _, m := range methods {
		series[m] = &Series{Name: m, Dashed: m == pfds.MethodMajority}
	}
	var rows [][]string
	r.Progress.Start("pfds-agents", len(counts)*len(seeds)*folds)
	for _, n := range counts {
		cfg := pfds.DefaultEval()
		cfg.Agents, cfg.Epsilons, cfg.Learners, cfg.Modes, cfg.EvalAgents = n, []float64{1}, []pfds.Learner{pfds.LogReg}, []pfds.Mode{pfds.Full}, 10
		if r.Short {
			cfg.Params.HMax, cfg.EvalAgents = 4, 2
		}
		errs := map[string][]float64{}
		for _, seed := range seeds {
			for f, test := range pfds.StratifiedFolds(d.Y, folds, seed) {
				train, te := split(d, test)
				res, err := pfds.EvalFold(dom, train, te, cfg, seed*1000+uint64(f), nil)
				if err != nil {
					return err
				}
				for _, x := range res {
					errs[x.Method] = append(errs[x.Method], x.Err)
				}
				r.Progress.Step()
			}
		}
		for _, m := range methods {
			mean, sd := MeanStd(errs[m])
			s := series[m]
			s.X, s.Y, s.Err = append(s.X, float64(n)), append(s.Y, mean), append(s.Err, sd)
			rows = append(rows, []string{fmt.Sprint(n), m, fmt.Sprintf("%.4f", mean), fmt.Sprintf("%.4f", sd)})
			r.Logf("%3d agents %-9s error %.4f ± %.4f", n, m, mean, sd)
		}
	}
	out := r.sub("pfds")
	if err := out.Table("pfds-agents", []string{"agents", "method", "error", "std"}, rows); err != nil {
		return err
	}
	fig := Figure{Title: "Adult, LogReg, eps 1: error vs number of agents", X: "agents", Y: "test error",
		ErrBars: sdBars(len(seeds)*folds, "seed × fold runs")}
	for _, m := range methods {
		fig.Series = append(fig.Series, *series[m])
	}
	return out.Plot("pfds-agents", fig)
}

// pfdsProtocolShares runs the PFDS session over the in-memory network and
// returns what the first agent received (every agent receives the same
// shares on a fault-free network; the conformance suite checks they equal
// the reference's).
func pfdsProtocolShares(d *dataset.Dataset) func(*pfds.Domain, []pfds.Local, pfds.Params, uint64) ([]pfds.Shared, error) {
	return func(dom *pfds.Domain, agents []pfds.Local, p pfds.Params, seed uint64) ([]pfds.Shared, error) {
		as, _, err := simulate.RunPFDS(simulate.PFDSOptions{Domain: dom, Schema: d.Schema.Digest(), Agents: agents, Params: p,
			Learner: pfds.LogReg, Seed: seed})
		if err != nil {
			return nil, err
		}
		shares := as[0].Shares()
		if len(shares) != len(agents) {
			return nil, fmt.Errorf("protocol run: agent 0 holds %d of %d shares", len(shares), len(agents))
		}
		return shares, nil
	}
}

func init() {
	Register(Spec{
		Name:    "pfds-ablation",
		Paper:   "Fioretto & Van Hentenryck 2019, Table 2 (diagnosis of the Census rows; not in the paper)",
		Summary: "where PFDS's signal goes on Adult: no noise vs eps 4 and 1, vote-relabelled real rows, oracle-labelled synthetic rows, and h_max x leaf cap, t and the ERM's lambda on a validation split",
		Run:     runPFDSAblation,
	})
}

// pfdsNoNoiseEps stands for eps = infinity: the Laplace and exponential
// mechanisms at eps 1e6 are noise-free for any practical purpose (leaf
// noise scale 2 h_max / eps = 1.6e-5 records).
const pfdsNoNoiseEps = 1e6

// pfdsAblationEps are the budgets of the ablation's first part.
var pfdsAblationEps = []float64{pfdsNoNoiseEps, 4, 1}

// runPFDSAblation measures, at the paper's parameters, how much of the
// error comes from the privacy noise (eps = infinity, 4, 1) and how much
// from the pipeline (vote labels on synthetic rows), and whether any choice
// of h_max and leaf cap, of t or of the final ERM's lambda helps: those are
// evaluated on a validation split carved out of the training part of each
// seed's first outer fold, so no outer test row is read.
func runPFDSAblation(r *Run) error {
	d, dom, err := pfdsData(r)
	if err != nil {
		return err
	}
	ab := &pfdsAblation{r: r, d: d, dom: dom, folds: 5, hs: []int{3, 4, 5, 6, 8}, caps: []int{64, 256, 4096},
		errs: map[pfdsAbKey][]float64{}, pos: map[pfdsAbKey][]float64{}, empty: map[pfdsAbKey][]float64{},
		grid: map[[3]int][]float64{}, knobErr: map[[2]int][]float64{}, knobs: pfdsKnobs}
	evalAgents := 10
	ab.base = pfds.DefaultEval()
	if r.Short {
		ab.base.Agents, ab.folds, evalAgents = 10, 2, 2
		ab.base.Params.HMax = 4
		ab.hs, ab.caps = []int{3, 4}, []int{64}
		ab.knobs = ab.knobs[:2]
	}
	ab.base.Learners, ab.base.Modes, ab.base.EvalAgents = []pfds.Learner{pfds.LogReg}, []pfds.Mode{pfds.Full}, evalAgents
	seeds := pfdsSeeds(r)
	r.Progress.Start("pfds-ablation", len(seeds)*(ab.folds+len(ab.hs)*len(ab.caps)+len(ab.knobs)))
	for _, seed := range seeds {
		if err := ab.runSeed(seed); err != nil {
			return err
		}
	}
	out := r.sub("pfds")
	if err := out.Table("pfds-ablation", []string{"method", "eps", "error", "std", "majority_class_error", "positive_share", "empty_leaf_share"}, ab.noiseRows()); err != nil {
		return err
	}
	rows, fig := ab.gridReport(len(seeds))
	if err := out.Table("pfds-hmax", []string{"h_max", "max_leaves", "method", "error", "std", "majority_class_error"}, rows); err != nil {
		return err
	}
	if err := out.Table("pfds-knobs", []string{"setting", "method", "error", "std", "majority_class_error"}, ab.knobRows()); err != nil {
		return err
	}
	return out.Plot("pfds-hmax", fig)
}

// pfdsAbKey is a row of the ablation's first part: a method at an epsilon.
type pfdsAbKey struct {
	method string
	eps    float64
}

// pfdsKnob is one of the ablation's other free choices: t and the ERM's
// lambda.
type pfdsKnob struct {
	name   string
	t      int
	lambda float64
}

var pfdsKnobs = []pfdsKnob{{"paper: t 10, lambda 1e-3", 10, 1e-3}, {"t 3", 3, 1e-3}, {"t 30", 30, 1e-3},
	{"lambda 1e-4", 10, 1e-4}, {"lambda 1e-2", 10, 1e-2}, {"lambda 1e-1", 10, 1e-1}}

// pfdsGridMethods are the methods the grid and the knobs record (the last
// is the majority class, the reference).
var pfdsGridMethods = []string{"PFDS", pfds.MethodTreeVote, pfds.MethodVoteRelabel, pfds.MethodMajority}

// pfdsAblation is one runPFDSAblation: its settings and what it measured.
type pfdsAblation struct {
	r         *Run
	d         *dataset.Dataset
	dom       *pfds.Domain
	base      pfds.EvalConfig
	folds     int
	hs, caps  []int
	knobs     []pfdsKnob
	errs, pos map[pfdsAbKey][]float64
	empty     map[pfdsAbKey][]float64
	grid      map[[3]int][]float64 // (h, cap, method index) -> validation errors
	knobErr   map[[2]int][]float64 // (knob, method index) -> validation errors
}

// runSeed runs the three parts for one seed: noise vs pipeline on the
// outer CV folds; the h_max x cap grid and the knobs on a validation split
// of outer fold 0's training part.
func (ab *pfdsAblation) runSeed(seed uint64) error {
	cfg := ab.base
	cfg.Epsilons = pfdsAblationEps
	outer := pfds.StratifiedFolds(ab.d.Y, ab.folds, seed)
	for f, test := range outer {
		train, te := split(ab.d, test)
		res, err := pfds.EvalFold(ab.dom, train, te, cfg, seed*1000+uint64(f), nil)
		if err != nil {
			return fmt.Errorf("seed %d fold %d: %w", seed, f, err)
		}
		for _, x := range res {
			k := pfdsAbKey{x.Method, x.Eps}
			ab.errs[k] = append(ab.errs[k], x.Err)
			if x.Positive > 0 {
				ab.pos[k] = append(ab.pos[k], x.Positive)
			}
			if x.Method == pfds.MethodTreeVote {
				ab.empty[k] = append(ab.empty[k], x.EmptyLeaf)
			}
		}
		ab.r.Progress.Step()
	}
	itr, val := pfdsValidationSplit(ab.d, outer[0], seed)
	for _, h := range ab.hs {
		for _, c := range ab.caps {
			cfg := ab.base
			cfg.Epsilons = []float64{1}
			cfg.Params.HMax, cfg.Params.MaxLeaves, cfg.Params.P = h, c, min(4, h+1)
			res, err := pfds.EvalFold(ab.dom, itr, val, cfg, seed*1000+999, nil)
			if err != nil {
				return fmt.Errorf("seed %d h_max %d cap %d: %w", seed, h, c, err)
			}
			recordGrid(res, func(mi int, e float64) { ab.grid[[3]int{h, c, mi}] = append(ab.grid[[3]int{h, c, mi}], e) })
			ab.r.Progress.Step()
		}
	}
	// The other free choices at the paper's h_max, on the same split.
	for ki, kn := range ab.knobs {
		cfg := ab.base
		cfg.Epsilons = []float64{1}
		cfg.Params.T, cfg.Lambda = kn.t, kn.lambda
		res, err := pfds.EvalFold(ab.dom, itr, val, cfg, seed*1000+999, nil)
		if err != nil {
			return fmt.Errorf("seed %d %s: %w", seed, kn.name, err)
		}
		recordGrid(res, func(mi int, e float64) { ab.knobErr[[2]int{ki, mi}] = append(ab.knobErr[[2]int{ki, mi}], e) })
		ab.r.Progress.Step()
	}
	return nil
}

// recordGrid passes the error of every result whose method is one of
// pfdsGridMethods to add, with the method's index.
func recordGrid(res []pfds.Result, add func(mi int, err float64)) {
	for _, x := range res {
		for mi, m := range pfdsGridMethods {
			if x.Method == m {
				add(mi, x.Err)
			}
		}
	}
}

// pfdsValidationSplit carves a validation fold (one of 5, stratified) out
// of the training part of the outer fold whose test rows are test.
func pfdsValidationSplit(d *dataset.Dataset, test []int, seed uint64) (itr, val pfds.Local) {
	train, _ := split(d, test)
	inner := pfds.StratifiedFolds(train.Y, 5, seed+1)
	isVal := make([]bool, len(train.X))
	for _, i := range inner[0] {
		isVal[i] = true
	}
	for i := range train.X {
		if isVal[i] {
			val.X, val.Y = append(val.X, train.X[i]), append(val.Y, train.Y[i])
		} else {
			itr.X, itr.Y = append(itr.X, train.X[i]), append(itr.Y, train.Y[i])
		}
	}
	return itr, val
}

// noiseRows are the first part's table rows (and log lines).
func (ab *pfdsAblation) noiseRows() [][]string {
	r := ab.r
	maj, _ := MeanStd(ab.errs[pfdsAbKey{pfds.MethodMajority, 0}])
	var rows [][]string
	for _, eps := range pfdsAblationEps {
		for _, m := range []string{pfds.MethodDPPred, pfds.MethodTreeVote, "PFDS", pfds.MethodVoteRelabel, pfds.MethodOracleLabel} {
			k := pfdsAbKey{m, eps}
			mean, sd := MeanStd(ab.errs[k])
			ps, es := "", ""
			if len(ab.pos[k]) > 0 {
				v, _ := MeanStd(ab.pos[k])
				ps = fmt.Sprintf("%.3f", v)
			}
			if len(ab.empty[k]) > 0 {
				v, _ := MeanStd(ab.empty[k])
				es = fmt.Sprintf("%.3f", v)
			}
			epsS := F(eps)
			if eps == pfdsNoNoiseEps {
				epsS = "inf"
			}
			rows = append(rows, []string{m, epsS, fmt.Sprintf("%.4f", mean), fmt.Sprintf("%.4f", sd), fmt.Sprintf("%.4f", maj), ps, es})
			r.Logf("%-12s eps %-4s error %.4f ± %.4f (majority class %.4f) positive %s empty-leaf %s", m, epsS, mean, sd, maj, ps, es)
		}
	}
	for _, m := range []string{pfds.MethodNPPred, pfds.MethodNPAgt} {
		mean, sd := MeanStd(ab.errs[pfdsAbKey{m, 0}])
		rows = append(rows, []string{m, "", fmt.Sprintf("%.4f", mean), fmt.Sprintf("%.4f", sd), fmt.Sprintf("%.4f", maj), "", ""})
		r.Logf("%-12s          error %.4f ± %.4f", m, mean, sd)
	}
	return rows
}

// gridReport is the h_max x cap table's rows and its figure.
func (ab *pfdsAblation) gridReport(seeds int) ([][]string, Figure) {
	var rows [][]string
	fig := Figure{Title: "PFDS on a validation split (Adult, LogReg, eps 1)", X: "h_max", Y: "validation error",
		ErrBars: sdBars(seeds, "seeds (inner validation split)")}
	for _, c := range ab.caps {
		for mi, m := range pfdsGridMethods[:3] {
			s := Series{Name: fmt.Sprintf("%s, cap %d", m, c), Dashed: mi > 0}
			for _, h := range ab.hs {
				mean, sd := MeanStd(ab.grid[[3]int{h, c, mi}])
				s.X, s.Y, s.Err = append(s.X, float64(h)), append(s.Y, mean), append(s.Err, sd)
				vmaj, _ := MeanStd(ab.grid[[3]int{h, c, 3}])
				rows = append(rows, []string{fmt.Sprint(h), fmt.Sprint(c), m, fmt.Sprintf("%.4f", mean), fmt.Sprintf("%.4f", sd), fmt.Sprintf("%.4f", vmaj)})
				ab.r.Logf("validation h_max %d cap %4d %-12s error %.4f ± %.4f (majority class %.4f)", h, c, m, mean, sd, vmaj)
			}
			if m != pfds.MethodTreeVote {
				fig.Series = append(fig.Series, s)
			}
		}
	}
	vmaj := Series{Name: "majority class", Dashed: true, NoPoint: true}
	for _, h := range ab.hs {
		v, _ := MeanStd(ab.grid[[3]int{h, ab.caps[0], 3}])
		vmaj.X, vmaj.Y = append(vmaj.X, float64(h)), append(vmaj.Y, v)
	}
	fig.Series = append(fig.Series, vmaj)
	return rows, fig
}

// knobRows are the knobs' table rows.
func (ab *pfdsAblation) knobRows() [][]string {
	var rows [][]string
	for ki, kn := range ab.knobs {
		vmaj, _ := MeanStd(ab.knobErr[[2]int{ki, 3}])
		for mi, m := range pfdsGridMethods[:3] {
			mean, sd := MeanStd(ab.knobErr[[2]int{ki, mi}])
			rows = append(rows, []string{kn.name, m, fmt.Sprintf("%.4f", mean), fmt.Sprintf("%.4f", sd), fmt.Sprintf("%.4f", vmaj)})
			ab.r.Logf("validation h_max %d %-24s %-12s error %.4f ± %.4f (majority class %.4f)", ab.base.Params.HMax, kn.name, m, mean, sd, vmaj)
		}
	}
	return rows
}

// pfdsSeeds are the run's seeds, or seed 1 (the PFDS experiments' folds
// already average over splits).
func pfdsSeeds(r *Run) []uint64 {
	if len(r.Seeds) == 0 {
		return []uint64{1}
	}
	return r.Seeds
}
