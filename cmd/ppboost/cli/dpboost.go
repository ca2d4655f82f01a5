package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dpboost"
	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
)

func init() {
	register("dpboost", "train differentially private GBDTs (the Newton trainer; DPBoost and the PARA, SEQ, NP baselines)", runDPBoost)
}

// dpboostFlags are the values of `ppboost dpboost`'s flags.
type dpboostFlags struct {
	df                                             dataFlags
	eps, delta, lambda, lr, hessShare, leafMax     float64
	trees, ensemble, depth, bins, samples, maxRows int
	method, modelPath                              string
	seed, noiseSeed                                uint64
	clipGrad, clipEns, quiet, lambdaSet, force     bool
	repeat                                         repeatFlag
}

func (f *dpboostFlags) register(fs *flag.FlagSet) {
	def := dpboost.DefaultConfig()
	f.df.register(fs, "adult", "")
	epsVar(fs, &f.eps, "eps", def.Epsilon, "total privacy budget epsilon (ignored by np); newton: the eps of (eps, delta)-DP")
	fs.Float64Var(&f.delta, "delta", 0, "newton: delta of the guarantee (0: the rule's min(1e-6, 0.1/max-rows))")
	fs.IntVar(&f.maxRows, "max-rows", 0, "newton: public bound on the training rows, which delta's rule reads instead of the row count (0: 100,000); more rows are refused")
	fs.IntVar(&f.trees, "trees", 0, "trees T (per class for one-vs-rest; 0: newton's rule, or dpboost's 50)")
	fs.IntVar(&f.ensemble, "ensemble-size", 0, "trees per ensemble T_e for dpboost (0: all T trees in one ensemble, N_e = 1)")
	fs.IntVar(&f.depth, "depth", 0, "depth of every tree (2^depth leaves; 0: newton's rule, or dpboost's 6)")
	fs.StringVar(&f.method, "method", "newton", "newton (random trees, noisy Newton leaves, zCDP) | dpboost | para | seq | np")
	fs.Float64Var(&f.lambda, "lambda", 0, "L2 regularization lambda of the leaves (0: newton's rule, twice the noise sd of a leaf's hessian sum; dpboost's 0.1; enters DPBoost's Delta V)")
	fs.Float64Var(&f.lr, "lr", 0, "learning rate eta (also DPBoost's GLC decay; 0: newton's rule, or dpboost's 0.1)")
	fs.IntVar(&f.bins, "bins", 0, "bins per numeric feature, equal width over the public range (0: newton's 32, dpboost's 255)")
	fs.Float64Var(&f.hessShare, "hessian-share", 0, "newton: share of each tree's zCDP budget spent on the hessian sums (0: the rule's 0.1)")
	fs.Float64Var(&f.leafMax, "leaf-max", 0, "newton: bound on a leaf's Newton step before the learning rate (0: the rule's 2)")
	fs.StringVar(&f.modelPath, "model", "", "write the model to this file (read it with ppboost predict)")
	fs.IntVar(&f.samples, "samples", 20000, "synthetic: number of samples to generate")
	fs.Uint64Var(&f.seed, "seed", 1, "seed for the data shuffle and the synthetic generator")
	fs.Uint64Var(&f.noiseSeed, "noise-seed", 0, "seed the privacy noise (reproducible runs only; 0: crypto-keyed secure source)")
	fs.BoolVar(&f.clipGrad, "clip-gradients", false, "clip gradients to [-1, 1] instead of leaving rows with |g| > 1 out of the tree (GDF)")
	fs.BoolVar(&f.clipEns, "glc-per-ensemble", false, "restart the geometric leaf clipping index in every ensemble (Alg. 2 uses the global t)")
	fs.BoolVar(&f.quiet, "quiet", false, "no per-tree progress")
	registerForce(fs, &f.force)
	f.repeat.register(fs, "the seed draws the synthetic data or shuffles the file for the holdout; --noise-seed, when given, moves with it (0 stays a fresh secure source every run)")
}

// check checks what the flags alone decide.
func (f *dpboostFlags) check() (dpboost.Method, error) {
	m, err := dpboost.ParseMethod(f.method)
	if err != nil {
		return m, usagef("--method: %v", err)
	}
	if err := f.repeat.check(); err != nil {
		return m, err
	}
	if err := f.df.checkTest(); err != nil {
		return m, err
	}
	if f.samples < 10 {
		return m, usagef("--samples = %d, want at least 10", f.samples)
	}
	for name, v := range map[string]float64{"--trees": float64(f.trees), "--depth": float64(f.depth), "--lambda": f.lambda, "--lr": f.lr,
		"--bins": float64(f.bins), "--delta": f.delta, "--max-rows": float64(f.maxRows), "--hessian-share": f.hessShare, "--leaf-max": f.leafMax, "--ensemble-size": float64(f.ensemble)} {
		if v < 0 {
			return m, usagef("%s = %v, want a value >= 0 (0: the default)", name, v)
		}
	}
	if !(f.eps > 0) && m != dpboost.NP {
		return m, usagef("--eps = %v, want a finite value > 0", f.eps)
	}
	return m, nil
}

// dpboostFlagOf names the flag of each dpboost.Config field.
var dpboostFlagOf = map[string]string{"Epsilon": "--eps", "Trees": "--trees", "EnsembleSize": "--ensemble-size",
	"Depth": "--depth", "Lambda": "--lambda", "LearningRate": "--lr", "Bins": "--bins", "Delta": "--delta",
	"HessianShare": "--hessian-share", "LeafMax": "--leaf-max"}

// dpboostFlagError is a dpboost.Config.Validate error as a usage error
// naming the flag of the bad field.
func dpboostFlagError(err error) error {
	for field, flag := range dpboostFlagOf {
		if bytes.Contains([]byte(err.Error()), []byte(": "+field+" = ")) {
			return usagef("%s: %v", flag, err)
		}
	}
	return usageError{err}
}

// rowBound is the public row bound of a Newton plan: --max-rows, or
// dpboost.DefaultRowBound. The plan reads it, never the row count.
func (f *dpboostFlags) rowBound() int {
	if f.maxRows > 0 {
		return f.maxRows
	}
	return dpboost.DefaultRowBound
}

// checkRows refuses, before anything is trained, Newton training data of
// more rows than the plan's row bound: its delta covers no more. A delta
// the user chose (--delta) is public and stands on its own, so without
// --max-rows it is not checked.
func (f *dpboostFlags) checkRows(m dpboost.Method, rows int) error {
	if m != dpboost.Newton || (f.delta > 0 && f.maxRows == 0) {
		return nil
	}
	if err := dpboost.CheckRowBound(rows, f.rowBound()); err != nil {
		return usagef("--max-rows: %v; declare a bound of at least the training rows with --max-rows (delta's rule then reads it), or choose --delta", err)
	}
	return nil
}

// config is the trainer's configuration: dpboost's defaults or the Newton
// rule for the public row bound, with the flags given (non-zero) over
// them. Of the data it reads only the number of classes (public: the
// schema's) and, to refuse it, whether its rows exceed the bound.
func (f *dpboostFlags) config(m dpboost.Method, train *dataset.Dataset) (dpboost.Config, error) {
	if err := f.checkRows(m, train.Len()); err != nil {
		return dpboost.Config{}, err
	}
	cfg := dpboost.DefaultConfig()
	if m == dpboost.Newton {
		cfg = dpboost.NewtonRule(f.eps, f.rowBound(), train.NumClasses())
	}
	cfg.Method, cfg.Epsilon = m, f.eps
	// Flags given override the defaults (0 keeps them).
	set := func(dst *float64, v float64) {
		if v > 0 {
			*dst = v
		}
	}
	seti := func(dst *int, v int) {
		if v > 0 {
			*dst = v
		}
	}
	seti(&cfg.Trees, f.trees)
	seti(&cfg.Depth, f.depth)
	seti(&cfg.Bins, f.bins)
	set(&cfg.LearningRate, f.lr)
	set(&cfg.Delta, f.delta)
	set(&cfg.HessianShare, f.hessShare)
	set(&cfg.LeafMax, f.leafMax)
	cfg.EnsembleSize, cfg.ClipGradients, cfg.ClipPerEnsemble = f.ensemble, f.clipGrad, f.clipEns
	if cfg.EnsembleSize == 0 {
		cfg.EnsembleSize = cfg.Trees
	}
	autoLambda := m == dpboost.Newton && f.lambda == 0
	switch {
	case autoLambda:
		cfg.Lambda = 1 // checked below, then set by the rule
	case m == dpboost.Newton || f.lambdaSet:
		cfg.Lambda = f.lambda
	}
	if err := cfg.Validate(); err != nil {
		return cfg, dpboostFlagError(err)
	}
	if m != dpboost.Newton {
		return cfg, nil
	}
	var err error
	if autoLambda {
		if cfg.Lambda, err = dpboost.NewtonLambda(cfg, train.NumClasses()); err != nil {
			return cfg, usagef("--eps/--trees: %v", err)
		}
	}
	if _, err := dpboost.PlanNewton(cfg, train.NumClasses()); err != nil {
		return cfg, usagef("--eps/--trees: %v", err)
	}
	return cfg, nil
}

// dpboostSetup is what `ppboost dpboost` trains: the validated trainer
// configuration and the data.
type dpboostSetup struct {
	dpboostFlags
	cfg         dpboost.Config
	train, test *dataset.Dataset
}

// buildDPBoost turns `ppboost dpboost`'s flags into a validated setup
// (defaults, or the Newton rule for the public row bound, < flags). It
// reads --data.
func buildDPBoost(args []string, errOut io.Writer) (*dpboostSetup, error) {
	s, m, err := parseDPBoost(args, errOut)
	if err != nil {
		return nil, err
	}
	if err := s.load(m, errOut); err != nil {
		return nil, err
	}
	return s, nil
}

// load reads --data with the setup's seed (holding out a test split if it
// has none) and sets the configuration for it.
func (s *dpboostSetup) load(m dpboost.Method, errOut io.Writer) error {
	train, test, err := s.df.load(errOut, s.samples, s.seed)
	if err != nil {
		return err
	}
	if train, test, err = s.df.cut(train, test, s.seed); err != nil {
		return err
	}
	return s.setData(m, train, test)
}

// parseDPBoost parses and checks the flags (no data read yet).
func parseDPBoost(args []string, errOut io.Writer) (*dpboostSetup, dpboost.Method, error) {
	fs := newFlagSet("dpboost", "dpboost --data SPEC --eps E [--method newton|dpboost|para|seq|np --trees T --depth D --max-rows N ...] [--model FILE]", errOut)
	s := &dpboostSetup{}
	s.register(fs)
	if err := parse(fs, args); err != nil {
		return nil, 0, err
	}
	s.lambdaSet = isFlagSet(fs, "lambda")
	m, err := s.check()
	return s, m, err
}

// setData sets the training and test rows and the configuration for them.
func (s *dpboostSetup) setData(m dpboost.Method, train, test *dataset.Dataset) error {
	s.train, s.test = train, test
	var err error
	s.cfg, err = s.config(m, train)
	return err
}

func runDPBoost(args []string, out, errOut io.Writer) error {
	s, m, err := parseDPBoost(args, errOut)
	if err != nil {
		return err
	}
	if s.repeat.n == 1 {
		if err := s.load(m, errOut); err != nil {
			return err
		}
		if err := s.refuseHopeless(); err != nil {
			return err
		}
		r, err := s.runOnce(out, errOut)
		if err == nil {
			singleRunHint(errOut, r.TestError, r.TestRows)
		}
		return err
	}
	n, seed, noiseSeed, model := s.repeat.n, s.seed, s.noiseSeed, s.modelPath
	runs := make([]runResult, 0, n)
	for i := range n {
		s.seed, s.modelPath = seed+uint64(i), ""
		if noiseSeed != 0 {
			s.noiseSeed = noiseSeed + uint64(i)
		}
		if i == 0 {
			s.modelPath = model
		}
		e := withErrOut(i, errOut)
		if err := s.load(m, e); err != nil {
			return runFailed(i, n, s.seed, err)
		}
		if i == 0 {
			if err := s.refuseHopeless(); err != nil {
				return err
			}
		}
		r, err := s.runOnce(io.Discard, e)
		if err != nil {
			return runFailed(i, n, s.seed, err)
		}
		runs = append(runs, r)
		runLine(out, i, n, r)
	}
	if model != "" {
		modelLine(out, errOut, false, model, seed)
	}
	return summarize(runs).report(out, errOut, false)
}

// refuseHopeless is dpboost's check before training (bestcase.go): the
// plan's best case of the data's shape must beat its majority class.
func (s *dpboostSetup) refuseHopeless() error {
	if s.cfg.Method == dpboost.NP {
		return nil
	}
	return refuseBestCase(s.force, fmt.Sprintf("dpboost --method %s with %d trees of depth %d", s.cfg.Method, s.cfg.Trees, s.cfg.Depth), smallerTrees,
		s.cfg.Epsilon, s.train, s.train.Len(), s.seed, dpboostFit(s.cfg, s.seed))
}

// run trains the setup's model, reports it and writes it to --model.
func (s *dpboostSetup) run(out, errOut io.Writer) error {
	_, err := s.runOnce(out, errOut)
	return err
}

// runOnce is run, returning the test error and the majority baseline.
func (s *dpboostSetup) runOnce(out, errOut io.Writer) (runResult, error) {
	cfg, train, test := s.cfg, s.train, s.test
	if cfg.Method == dpboost.Newton {
		fmt.Fprintf(errOut, "plan: %s\n", dpboost.NewtonWhy(cfg, s.rowBound()))
	}
	r := rng.Secure()
	if s.noiseSeed != 0 {
		r = rng.Seeded(s.noiseSeed)
	}
	fmt.Fprintf(errOut, "dpboost: %s on %s (%d train, %d test rows, %d features), T=%d depth=%d lambda=%g eta=%g\n",
		cfg.Method, train.Name, train.Len(), test.Len(), train.Dim(), cfg.Trees, cfg.Depth, cfg.Lambda, cfg.LearningRate)
	reportDPBoostPrivacy(errOut, cfg, dpboost.AccountClasses(cfg, boostersFor(train)))
	var treeTime time.Duration
	progress := func(ti dpboost.TreeInfo) {
		treeTime += ti.Elapsed
		if !s.quiet {
			dpboostProgress(errOut, cfg.Method, ti)
		}
	}
	start := time.Now()
	model, err := dpboost.TrainClassifier(cfg, train, r, progress)
	if err != nil {
		return runResult{}, err
	}
	total := cfg.Trees * len(model.Boosters)
	testErr := model.Error(test)
	fmt.Fprintf(out, "method %s eps %g trees %d: test error %.4f (%d rows), train error %.4f, %.4f s per tree, %.2f s in all\n",
		cfg.Method, cfg.Epsilon, cfg.Trees, testErr, test.Len(), model.Error(train),
		treeTime.Seconds()/float64(total), time.Since(start).Seconds())
	base := majorityBaseline(train, test)
	base.report(out, errOut, testErr, cfg.Method != dpboost.NP)
	if s.modelPath != "" {
		// No fill values: dpboost's training rows are the private data its
		// eps protects, and their exact column means, modes and row count
		// in the model file would be a release the eps does not cover (a
		// row count is what issue 30's public plans keep out of a model).
		// predict --missing mean then fills from the file it scores, and
		// says so.
		fmt.Fprintf(errOut, "note: the model stores no fill values for predict --missing (exact training means would not be covered by eps); predict fills gaps from the file it scores\n")
		if err := model.Save(s.modelPath); err != nil {
			return runResult{}, err
		}
		fmt.Fprintf(out, "model written to %s\n", s.modelPath)
	}
	return runResult{Seed: s.seed, TestError: testErr, TestRows: test.Len(), Majority: base.Error, private: cfg.Method != dpboost.NP}, nil
}

// reportDPBoostPrivacy states the training's privacy guarantee.
func reportDPBoostPrivacy(errOut io.Writer, cfg dpboost.Config, acc dpboost.Accounting) {
	if acc.Newton != nil {
		na := acc.Newton
		fmt.Fprintf(errOut, "privacy: (%.4g, %g)-DP from %.4g-zCDP over %d rounds (%d boosters; random splits cost nothing); noise sd per leaf: gradient sum %.4g, hessian sum %.4g (hessian share %g, lambda %.4g)\n",
			na.Epsilon, na.Delta, na.Rho, cfg.Trees, acc.Classes, na.NoiseG, na.NoiseH, cfg.HessianShare, cfg.Lambda)
	} else if acc.Private {
		fmt.Fprintf(errOut, "privacy: eps=%g total (%d ensembles, %d one-vs-rest models), eps_t=%g per tree (splits %g per depth, leaves %g); sequential composition alone would give %g\n",
			acc.Total, acc.Ensembles, acc.Classes, acc.PerTree[0], acc.SplitPerDepth[0], acc.Leaf[0], acc.Sequential)
	} else {
		fmt.Fprintln(errOut, "privacy: none (np)")
	}
}

// dpboostProgress prints one tree's progress line (Newton: every tenth
// round of class 0).
func dpboostProgress(errOut io.Writer, method dpboost.Method, ti dpboost.TreeInfo) {
	if method == dpboost.Newton {
		if ti.Class == 0 && (ti.Tree%max(1, ti.Trees/10) == 0 || ti.Tree == ti.Trees) {
			fmt.Fprintf(errOut, "round %d/%d: rho %.4g per tree, %v\n", ti.Tree, ti.Trees, ti.Rho, ti.Elapsed.Round(10*time.Microsecond))
		}
		return
	}
	fmt.Fprintf(errOut, "class %d tree %d/%d: %d rows, %d filtered, eps_t %.4g, %v\n",
		ti.Class, ti.Tree, ti.Trees, ti.Subset, ti.Filtered, ti.Eps, ti.Elapsed.Round(10*time.Microsecond))
}

func boostersFor(d *dataset.Dataset) int {
	if d.NumClasses() > 2 {
		return d.NumClasses()
	}
	return 1
}

// predictModel is what predict needs from a model of either kind: SAMME
// (boost.Model) or DP-GBDT (dpboost.Model), told apart by the file's
// "format" field. scores gives one row's value per class (writeScores):
// probabilities when scoreKind is "prob", raw scores ("score") otherwise.
type predictModel struct {
	Schema     *dataset.Schema
	Fill       *dataset.Fill // the training values for --missing mean|zero; nil in older models
	ClassNames []string
	Classes    int
	predict    func([]float64) int
	check      func(*dataset.Dataset) error
	scoreKind  string
	scores     func([]float64) []float64
}

func (p *predictModel) Predict(x []float64) int            { return p.predict(x) }
func (p *predictModel) CheckData(d *dataset.Dataset) error { return p.check(d) }

// predictFrom scores a SAMME model by its votes: per class, the summed
// alpha of the rounds whose learner votes for it (in round order, as
// Predict sums them).
func predictFrom(m *boost.Model) *predictModel {
	votes := func(x []float64) []float64 {
		v := make([]float64, m.Classes)
		for i := range m.Rounds {
			r := &m.Rounds[i]
			v[r.Base.Predict(x)] += r.Alpha
		}
		return v
	}
	return &predictModel{m.Schema, m.Fill, m.ClassNames, m.Classes, m.Predict, m.CheckData, "score", votes}
}

func predictFromDP(m *dpboost.Model) *predictModel {
	kind := "score"
	if m.Config.Method == dpboost.Newton {
		kind = "prob"
	}
	scores := func(x []float64) []float64 { _, s := m.ClassScores(x); return s }
	return &predictModel{m.Schema, m.Fill, m.ClassNames, m.Classes(), m.Predict, m.CheckData, kind, scores}
}

// predictFromPFDS scores a PFDS agent's linear predictor: for two classes
// the raw score for class 1 and its negation for class 0 (+-F, as
// two-class boosters); for K > 2 the K linear scores (the class is their
// argmax).
func predictFromPFDS(m *bp.ModelFile) *predictModel {
	pm := m.Model()
	return &predictModel{m.Schema, m.Fill, m.ClassNames, m.Classes(), pm.Class, m.CheckData, "score", pm.Scores}
}

// loadPredictModel reads a model file of any kind (SAMME, DP-GBDT, PFDS).
func loadPredictModel(path string) (*predictModel, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	var head struct {
		Format string `json:"format"`
	}
	_ = json.Unmarshal(b, &head) // a bad file is reported by the reader below
	if head.Format == bp.ModelFileFormat {
		m, err := bp.ReadModelFile(bytes.NewReader(b), path)
		if err != nil {
			return nil, err
		}
		return predictFromPFDS(m), nil
	}
	if head.Format == dpboost.ModelFormat {
		m, err := dpboost.ReadModel(bytes.NewReader(b), path)
		if err != nil {
			return nil, err
		}
		if m.Config.Task != dpboost.Classification {
			return nil, fmt.Errorf("%s: a regression model; predict evaluates classifiers", path)
		}
		return predictFromDP(m), nil
	}
	m, err := boost.ReadModel(bytes.NewReader(b), path)
	if err != nil {
		return nil, err
	}
	return predictFrom(m), nil
}
