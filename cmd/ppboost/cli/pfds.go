package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"time"

	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/pfds"
	"github.com/ppboost/ppboost/protocol/simulate"
	"github.com/ppboost/ppboost/store"
)

func init() {
	register("pfds", "PFDS (Fioretto & Van Hentenryck): private trees and synthetic data shared among agents; sim | testnet | agent | announce", runPFDS)
}

func runPFDS(args []string, out, errOut io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(errOut, "Usage: ppboost pfds <sim|testnet|agent|announce> [flags]")
		fmt.Fprintln(errOut, "  sim      many agents in one process: the reference trainer, or the session over the in-memory network (-protocol)")
		fmt.Fprintln(errOut, "  testnet  an announcer and N agents as real libp2p hosts on 127.0.0.1")
		fmt.Fprintln(errOut, "  agent    one agent node: joins the announcer's sessions, shares, trains")
		fmt.Fprintln(errOut, "  announce publish one session's parameters and roster")
		if len(args) == 0 {
			return usagef("pfds: missing subcommand (sim or testnet)")
		}
		return nil
	}
	switch args[0] {
	case "sim":
		return runPFDSSim(args[1:], out, errOut)
	case "testnet":
		return runPFDSTestnet(args[1:], out, errOut)
	case "agent":
		return runPFDSAgent(args[1:], out, errOut)
	case "announce":
		return runPFDSAnnounce(args[1:], out, errOut)
	}
	return usagef("pfds: unknown subcommand %q (want sim, testnet, agent or announce)", args[0])
}

// pfdsFlags are the flags sim and testnet share.
type pfdsFlags struct {
	dataFlags
	agentsSet, maxLeavesSet             bool // --agents, --max-leaves given
	thresholdOrSampleSet                bool
	learner, variant, split, attr       string
	agents, hmax, t, p, maxLeaves, eval int
	eps, lambda, threshold              float64
	sample                              bool
	seed                                uint64
	modelPath                           string
	force                               bool
}

func (f *pfdsFlags) register(fsName string, fs *flag.FlagSet, agents int) {
	d := bp.DefaultParams()
	f.dataFlags.register(fs, "adult", "adult | csv:PATH (or PATH.csv; features and bounds from the public schema)")
	fs.IntVar(&f.agents, "agents", agents, "number of agents")
	epsVar(fs, &f.eps, "eps", d.Eps, "privacy budget of every agent (eps/2 tree, eps/2 counts)")
	fs.IntVar(&f.hmax, "hmax", d.HMax, "tree levels h_max")
	fs.IntVar(&f.t, "t", d.T, "candidate split values t")
	fs.IntVar(&f.p, "p", d.P, "levels of the post-processing p")
	v := bp.DefaultVariant()
	fs.IntVar(&f.maxLeaves, "max-leaves", d.MaxLeaves, fmt.Sprintf("public cap on a tree's leaves (0: none) (default %d with --variant pfds-cv)", v.MaxLeaves))
	fs.StringVar(&f.learner, "learner", "logreg", "final ERM: logreg (softmax for more than two classes) | svm (Platt-calibrated; one-vs-rest for more than two classes)")
	fs.StringVar(&f.variant, "variant", "pfds-cv", "pfds-cv (random trees, published leaf counts, count vote: the variant that learns, RESULTS.md) | "+
		"pfds (the paper's algorithm) | pfds-s (own tree labels) | pfds-minus (no post-processing)")
	fs.Float64Var(&f.threshold, "threshold", v.Threshold, "pfds-cv: a leaf whose noisy total is below threshold/eps gets no rows and no vote")
	fs.BoolVar(&f.sample, "sample", v.Sample, "pfds-cv: labels drawn from the pooled counts (false: their argmax)")
	fs.StringVar(&f.split, "split", "noniid", "noniid (agent i gets x with probability ~ 1/|x_a - a_i|) | iid")
	fs.StringVar(&f.attr, "split-attr", "", "attribute a of the non-IID split (default: age if the data has it, else its first numeric attribute)")
	fs.IntVar(&f.eval, "eval", 10, "agents whose final predictors are evaluated")
	fs.Float64Var(&f.lambda, "lambda", 1e-3, "L2 weight of the final ERM")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the split and of every agent's noise (reproducible runs)")
	registerForce(fs, &f.force)
	fs.StringVar(&f.modelPath, "model", "", "write the first evaluated agent's final predictor to this file (read it with ppboost predict; with --repeat, run 1's)")
}

type pfdsSetup struct {
	d         *dataset.Dataset
	dom       *bp.Domain
	train     bp.Local
	test      bp.Local
	locals    []bp.Local
	params    bp.Params
	learner   bp.Learner
	mode      bp.Mode
	attrIndex int
	// cv is PFDS-cv's setting when --variant pfds-cv (mode bp.Variant);
	// params are then pfds.VariantParams(*cv).
	cv *bp.VariantParams
}

// simulate runs the setup's algorithm in one process over locals at eps.
func (s *pfdsSetup) simulate(locals []bp.Local, eps float64, seed uint64) ([]bp.Shared, error) {
	if s.cv != nil {
		v := *s.cv
		v.Eps = eps
		return bp.SimulateVariant(s.dom, locals, v, seed)
	}
	p := s.params
	p.Eps = eps
	return bp.Simulate(s.dom, locals, p, s.mode, seed)
}

// check checks what the flags alone decide: the PFDS parameters, the
// final learner, the variant, the test fraction and the split kind.
func (f *pfdsFlags) check(s *pfdsSetup) error {
	if f.data != "adult" && f.data != "fashion" && !f.isCSV() {
		return usagef("--data %q: want adult, fashion or csv:PATH (or PATH.csv)", f.data)
	}
	s.params = bp.Params{Eps: f.eps, HMax: f.hmax, T: f.t, P: f.p, MaxLeaves: f.maxLeaves, Optimize: true}
	if f.variant == "pfds-cv" {
		v := bp.VariantParams{Eps: f.eps, HMax: f.hmax, MaxLeaves: f.maxLeaves, Threshold: f.threshold, Sample: f.sample}
		if !f.maxLeavesSet {
			v.MaxLeaves = bp.DefaultVariant().MaxLeaves
		}
		if err := v.Validate(); err != nil {
			return usageError{err}
		}
		s.cv, s.params = &v, pfds.VariantParams(v)
	} else if f.thresholdOrSampleSet {
		return usagef("--threshold and --sample are PFDS-cv's: they need --variant pfds-cv")
	}
	if err := s.params.Validate(); err != nil {
		return usageError{err}
	}
	var err error
	if s.learner, err = bp.ParseLearner(f.learner); err != nil || s.learner == bp.LinReg {
		return usagef("-learner %q: want logreg or svm", f.learner)
	}
	switch f.variant {
	case "pfds-cv":
		s.mode = bp.Variant
	case "pfds":
		s.mode = bp.Full
	case "pfds-s":
		s.mode = bp.Self
	case "pfds-minus":
		s.mode = bp.Minus
	default:
		return usagef("--variant %q: want pfds-cv, pfds, pfds-s or pfds-minus", f.variant)
	}
	if err := f.checkTest(); err != nil {
		return err
	}
	if f.split != "iid" && f.split != "noniid" {
		return usagef("-split %q: want iid or noniid", f.split)
	}
	return nil
}

// setup builds a PFDS run from the flags: it checks them, loads --data
// (any number of classes: the final learners take K), sizes the agents from it when --agents was not given, holds
// out the test rows and splits the rest among the agents.
func (f *pfdsFlags) setup(errOut io.Writer) (*pfdsSetup, error) {
	s := &pfdsSetup{}
	if err := f.check(s); err != nil {
		return nil, err
	}
	var err error
	var test *dataset.Dataset
	if s.d, test, err = f.load(errOut, 0, f.seed); err != nil {
		return nil, err
	}
	if s.dom, err = bp.NewDomain(s.d); err != nil {
		return nil, err
	}
	if !f.agentsSet {
		// Sized from the data: about 50 training rows per agent (a local
		// model needs some), at most the default. It is the simulation's
		// deployment shape: a deployment's roster is whoever joined, public
		// by construction, and the announcement carries no row count.
		rows := s.d.Len()
		if test == nil {
			rows -= f.holdout.of(s.d.Len())
		}
		if n := min(f.agents, max(2, rows/50)); n != f.agents {
			fmt.Fprintf(errOut, "plan: %d agents (about 50 of the %d training rows each; --agents sets it)\n", n, rows)
			f.agents = n
		}
	}
	if f.agents < 1 {
		return nil, usagef("-agents %d: want at least 1", f.agents)
	}
	if s.attrIndex, err = splitAttr(s.dom, f.attr); err != nil {
		return nil, err
	}
	f.attr = s.dom.Attrs[s.attrIndex].Name
	if test != nil {
		s.train, s.test = bp.Local{X: s.d.X, Y: s.d.Y}, bp.Local{X: test.X, Y: test.Y}
	} else {
		k := f.holdout.of(s.d.Len())
		if k >= s.d.Len() {
			return nil, usagef("--holdout %s: --data %s has %d rows; hold out fewer, or give --test FILE", f.holdout.String(), f.data, s.d.Len())
		}
		s.holdOut(float64(k)/float64(s.d.Len()), f.seed)
	}
	if err := s.splitAgents(f.split, f.agents, f.seed); err != nil {
		return nil, err
	}
	// The check before anything is shared (bestcase.go): the same agents,
	// parameters and final learner on the best case of the data's shape.
	// Not for PFDS-cv: its best cases do not bound it. Its synthetic labels
	// are counts pooled over random trees, which a label carried by one
	// feature or by the sum of all of them does not reach: on Adult's shape
	// it stays at the majority class on each best case (0.253/0.252,
	// 0.236/0.236) while it learns Adult's own labels (0.1796 against
	// 0.2409), so the check would refuse the plan that works. The run
	// still warns when it does not beat the majority class.
	if s.cv != nil {
		return s, nil
	}
	if err := refuseBestCase(f.force, fmt.Sprintf("PFDS (%s, %d agents, h_max %d, %s)", s.mode, len(s.locals), f.hmax, s.learner),
		"fewer --agents (more rows each) or a lower --hmax (the same eps buys less noise per level)", f.eps, s.d, len(s.train.X), f.seed, pfdsFit(s, f.lambda, len(s.locals), f.seed)); err != nil {
		return nil, err
	}
	return s, nil
}

// holdOut moves a stratified fold of about fraction of the rows (one fold
// of round(1/fraction)) to the test set; the rest are the training rows.
func (s *pfdsSetup) holdOut(fraction float64, seed uint64) {
	k := int(math.Round(1 / fraction))
	testIdx := bp.StratifiedFolds(s.d.Y, max(k, 2), seed)[0]
	in := make([]bool, s.d.Len())
	for _, i := range testIdx {
		in[i] = true
	}
	for i := range s.d.X {
		if in[i] {
			s.test.X, s.test.Y = append(s.test.X, s.d.X[i]), append(s.test.Y, s.d.Y[i])
		} else {
			s.train.X, s.train.Y = append(s.train.X, s.d.X[i]), append(s.train.Y, s.d.Y[i])
		}
	}
}

// splitAgents splits the training rows among the agents: iid, or non-IID
// on the split attribute.
func (s *pfdsSetup) splitAgents(split string, agents int, seed uint64) error {
	var parts [][]int
	if split == "iid" {
		parts = bp.IID(len(s.train.X), agents, seed)
	} else {
		var err error
		if parts, err = bp.NonIID(s.dom, s.train.X, agents, s.attrIndex, seed); err != nil {
			return err
		}
	}
	s.locals = make([]bp.Local, len(parts))
	for i, idx := range parts {
		for _, k := range idx {
			s.locals[i].X = append(s.locals[i].X, s.train.X[k])
			s.locals[i].Y = append(s.locals[i].Y, s.train.Y[k])
		}
	}
	return nil
}

func testError(test bp.Local, predict func([]float64) int) float64 {
	wrong := 0
	for i, x := range test.X {
		if predict(x) != test.Y[i] {
			wrong++
		}
	}
	return float64(wrong) / float64(len(test.X))
}

// splitAttr finds the non-IID split attribute: name, or if name is empty
// "age" if the domain has it, else its first numeric attribute, else its
// first attribute.
func splitAttr(dom *bp.Domain, name string) (int, error) {
	names := make([]string, len(dom.Attrs))
	for i, a := range dom.Attrs {
		names[i] = a.Name
	}
	if name == "" {
		for i, a := range dom.Attrs {
			if a.Name == "age" {
				return i, nil
			}
		}
		for i, a := range dom.Attrs {
			if a.Cats == 0 {
				return i, nil
			}
		}
		if len(dom.Attrs) > 0 {
			return 0, nil
		}
		return -1, usagef("--split-attr: the data has no attributes")
	}
	for i, n := range names {
		if n == name {
			return i, nil
		}
	}
	return -1, usagef("--split-attr %q: not an attribute of the data (it has %s)", name, strings.Join(names, ", "))
}

// pfdsMajorityError is the test error of the training rows' most frequent
// class.
func pfdsMajorityError(train, test bp.Local) float64 {
	counts := map[int]int{}
	maj := 0
	for _, y := range train.Y {
		counts[y]++
		if counts[y] > counts[maj] || (counts[y] == counts[maj] && y < maj) {
			maj = y
		}
	}
	return testError(test, func([]float64) int { return maj })
}

// evalAgents trains the first n agents' final predictors on their data
// plus shares and returns the mean test error, and NP-Agt's, and the first
// evaluated agent's predictor (the one --model writes) and index.
func evalAgents(s *pfdsSetup, n int, lambda float64, shares func(i int) []bp.Shared) (pfdsErr, npErr float64, first *bp.Model, firstAgent int, err error) {
	n = min(n, len(s.locals))
	k := 0
	for i := 0; i < n; i++ {
		if len(s.locals[i].X) == 0 {
			continue
		}
		u := bp.Union(s.locals[i], shares(i))
		m, err := bp.FitClasses(s.learner, u.X, u.Y, s.dom.Classes, lambda)
		if err != nil {
			return 0, 0, nil, 0, err
		}
		if first == nil {
			first, firstAgent = m, i
		}
		pfdsErr += testError(s.test, m.Class)
		own, err := bp.FitClasses(s.learner, s.locals[i].X, s.locals[i].Y, s.dom.Classes, lambda)
		if err != nil {
			return 0, 0, nil, 0, err
		}
		npErr += testError(s.test, own.Class)
		k++
	}
	if k == 0 {
		return 0, 0, nil, 0, usagef("--eval %d: none of the first %d agents holds rows; raise --eval or lower --agents", n, n)
	}
	return pfdsErr / float64(k), npErr / float64(k), first, firstAgent, nil
}

// saveAgentModel writes agent's predictor to path (no fill values: predict
// fills gaps from the file it scores).
func saveAgentModel(s *pfdsSetup, m *bp.Model, agent int, path string, out io.Writer) error {
	if err := bp.NewModelFile(m, agent, s.d, nil).Save(path); err != nil {
		return err
	}
	fmt.Fprintf(out, "model written to %s (agent %d's %s predictor)\n", path, agent, m.Learner)
	return nil
}

func runPFDSSim(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("pfds sim", "pfds sim [flags]", errOut)
	var f pfdsFlags
	f.register("sim", fs, 100)
	proto := fs.Bool("protocol", false, "run the session over the in-memory network and check it against the reference")
	var rf repeatFlag
	rf.register(fs, "the seed holds out the test rows, splits the rest among the agents and seeds every agent's noise")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := rf.check(); err != nil {
		return err
	}
	f.setFlags(fs)
	if rf.n == 1 {
		r, err := pfdsSimOnce(f, *proto, out, errOut)
		if err == nil {
			singleRunHint(errOut, r.TestError, r.TestRows)
		}
		return err
	}
	runs := make([]runResult, 0, rf.n)
	for i := range rf.n {
		run := f // the flags as given: setup sizes the agents per run
		run.seed += uint64(i)
		if i > 0 {
			run.modelPath = "" // --model keeps run 1's model
			run.force = true   // run 1 passed the check
		}
		r, err := pfdsSimOnce(run, *proto, io.Discard, withErrOut(i, errOut))
		if err != nil {
			return runFailed(i, rf.n, run.seed, err)
		}
		runs = append(runs, r)
		runLine(out, i, rf.n, r)
	}
	return summarize(runs).report(out, errOut, false)
}

// pfdsSimOnce runs pfds sim once with f's seed; its result is the PFDS
// test error (the mean over the evaluated agents) and the majority class's.
func pfdsSimOnce(f pfdsFlags, proto bool, out, errOut io.Writer) (runResult, error) {
	s, err := f.setup(errOut)
	if err != nil {
		return runResult{}, err
	}
	fmt.Fprintf(out, "pfds sim: %s, %d agents (%s split on %s), %d train / %d test rows; eps %g, %s, %s\n",
		s.d.Name, len(s.locals), f.split, f.attr, len(s.train.X), len(s.test.X), f.eps, s.describe(), s.learner)
	t0 := time.Now()
	ref, err := s.simulate(s.locals, f.eps, f.seed)
	if err != nil {
		return runResult{}, err
	}
	synth := 0
	for _, r := range ref {
		synth += len(r.Rows)
	}
	fmt.Fprintf(out, "reference: %d synthetic records shared in %.2fs\n", synth, time.Since(t0).Seconds())
	if proto {
		if s.mode != bp.Full && s.mode != bp.Variant {
			return runResult{}, usagef("--protocol runs the pfds-cv and pfds variants (the sessions of the mesh), not %s", f.variant)
		}
		t1 := time.Now()
		agents, virt, err := simulate.RunPFDS(simulate.PFDSOptions{Domain: s.dom, Schema: s.d.Schema.Digest(), Agents: s.locals, Params: s.params,
			CV: s.cv, Learner: s.learner, Seed: f.seed})
		if err != nil {
			return runResult{}, err
		}
		same := 0
		for _, a := range agents {
			sh := a.DataShares()
			ok := len(sh) == len(ref)
			for j := 0; ok && j < len(sh); j++ {
				ok = reflect.DeepEqual(sh[j], ref[j].Data)
			}
			if ok {
				same++
			}
		}
		fmt.Fprintf(out, "protocol: %d agents over the in-memory network, %.2fs wall, %v virtual; %d/%d agents hold exactly the reference's shares\n",
			len(agents), time.Since(t1).Seconds(), virt.Round(time.Millisecond), same, len(agents))
		if same != len(agents) {
			return runResult{}, fmt.Errorf("protocol run differs from the reference")
		}
	}
	pe, ne, first, agent, err := evalAgents(s, f.eval, f.lambda, func(i int) []bp.Shared { return ref })
	if err != nil {
		return runResult{}, err
	}
	if f.modelPath != "" {
		if err := saveAgentModel(s, first, agent, f.modelPath, out); err != nil {
			return runResult{}, err
		}
	}
	maj := pfdsMajorityError(s.train, s.test)
	fmt.Fprintf(out, "test error over the first %d agents: %s %.4f, NP-Agt %.4f; majority class %.4f\n",
		min(f.eval, len(s.locals)), s.mode, pe, ne, maj)
	if pe >= maj {
		fmt.Fprintf(errOut, "warning: the private predictors (test error %.4f) do not beat the majority class (%.4f): raise --eps, or use more rows per agent (fewer --agents)\n", pe, maj)
	}
	return runResult{Seed: f.seed, TestError: pe, TestRows: len(s.test.X), Majority: maj, private: true}, nil
}

// pfdsTestnet is a `ppboost pfds testnet` run: its setup (buildPFDSTestnet)
// and, once started, its hosts and drivers.
type pfdsTestnet struct {
	f       pfdsFlags
	s       *pfdsSetup
	timeout time.Duration
	logf    logFlags
	localNet
	ann     *node.Host
	ids     []protocol.PeerID
	drivers []*pfds.Driver
}

// buildPFDSTestnet checks the flags and builds the run's data and
// parameters (defaults < flags; the agents sized from --data).
func buildPFDSTestnet(args []string, errOut io.Writer) (*pfdsTestnet, error) {
	fs := newFlagSet("pfds testnet", "pfds testnet [flags]  (an announcer and N agents as libp2p hosts on 127.0.0.1)", errOut)
	tn := &pfdsTestnet{}
	tn.f.register("testnet", fs, 10)
	fs.DurationVar(&tn.timeout, "timeout", 20*time.Second, "tree and data phase timeouts")
	tn.logf.register(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if !isFlagSet(fs, "log-level") {
		tn.logf.level = "warn"
	}
	var err error
	if tn.log, err = tn.logf.logger("pfds", errOut); err != nil {
		return nil, err
	}
	tn.f.setFlags(fs)
	if tn.s, err = tn.f.setup(errOut); err != nil {
		return nil, err
	}
	if tn.s.mode != bp.Full && tn.s.mode != bp.Variant {
		return nil, usagef("--variant %s: testnet runs the sessions of the mesh, pfds-cv and pfds", tn.f.variant)
	}
	return tn, nil
}

func runPFDSTestnet(args []string, out, errOut io.Writer) error {
	tn, err := buildPFDSTestnet(args, errOut)
	if err != nil {
		return err
	}
	if tn.dir, err = os.MkdirTemp("", "ppboost-pfds-"); err != nil {
		return err
	}
	defer os.RemoveAll(tn.dir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer tn.close()
	t0 := time.Now()
	if err := tn.start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "pfds testnet: announcer and %d agents up on 127.0.0.1 in %.2fs\n", len(tn.s.locals), time.Since(t0).Seconds())
	t1 := time.Now()
	if err := tn.announce(ctx); err != nil {
		return err
	}
	return tn.report(time.Since(t1), out, errOut)
}

// start brings up the announcer and one agent host per shard, each with
// its ledger and driver, and waits for the gossip mesh.
func (tn *pfdsTestnet) start(ctx context.Context) error {
	var err error
	if tn.ann, err = tn.newHost(ctx, "announcer", len(tn.s.locals)+8, pfds.MaxMessage+4096); err != nil {
		return err
	}
	if err := tn.ann.Join(pfds.Topic); err != nil {
		return err
	}
	s := tn.s
	for i, l := range s.locals {
		h, err := tn.newHost(ctx, fmt.Sprintf("agent-%03d", i), len(tn.s.locals)+8, pfds.MaxMessage+4096)
		if err != nil {
			return err
		}
		if err := h.Connect(ctx, tn.ann.Addrs()[0]); err != nil {
			return fmt.Errorf("agent %d: %w", i, err)
		}
		led, err := store.OpenLedger(filepath.Join(tn.dir, fmt.Sprintf("agent-%03d.ledger", i)), tn.f.eps, tn.log.Named("ledger"))
		if err != nil {
			return err
		}
		a, err := pfds.NewAgent(pfds.Config{ID: h.ID(), Announcer: tn.ann.ID(), Domain: s.dom, Schema: s.d.Schema.Digest(),
			Data: l, Ledger: led, Rand: bp.AgentRand(tn.f.seed, i), Log: tn.log.Named("agent").With("agent", i)})
		if err != nil {
			return err
		}
		d, err := pfds.Start(h, a, tn.log)
		if err != nil {
			return err
		}
		tn.closers = append(tn.closers, d.Close)
		tn.ids, tn.drivers = append(tn.ids, h.ID()), append(tn.drivers, d)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = tn.ann.WaitTopicPeers(wctx, pfds.Topic, len(s.locals))
	cancel()
	if err != nil {
		return fmt.Errorf("mesh not ready: %w", err)
	}
	time.Sleep(1500 * time.Millisecond) // a known subscriber joins the mesh at its next heartbeat (1 s)
	return nil
}

// announce publishes the session and waits for every agent to finish.
func (tn *pfdsTestnet) announce(ctx context.Context) error {
	s := tn.s
	ms := uint32(tn.timeout.Milliseconds())
	msg := pfds.EncodeAnnounce(tn.ann.ID(), &pfds.Announce{Session: fmt.Sprintf("testnet-%d", time.Now().UnixNano()), Params: s.params, CV: s.cv, RosterAddrs: pfds.RosterAddrsOf(tn.ann, tn.ids),
		Learner: s.learner, SchemaDigest: s.d.Schema.Digest(), Roster: tn.ids, TreeTimeout: ms, DataTimeout: ms})
	if err := tn.ann.Publish(ctx, pfds.Topic, msg); err != nil {
		return err
	}
	for i, d := range tn.drivers {
		select {
		case <-d.Done():
		case <-ctx.Done():
			return fmt.Errorf("interrupted waiting for agent %d", i)
		}
	}
	return nil
}

// report compares every agent's shares with the reference trainer's and
// prints the agents' test error next to NP-Agt's and the majority class's.
func (tn *pfdsTestnet) report(session time.Duration, out, errOut io.Writer) error {
	s, f := tn.s, &tn.f
	ref, err := s.simulate(s.locals, f.eps, f.seed)
	if err != nil {
		return err
	}
	complete, same := 0, 0
	var shares [][]bp.Shared
	for _, d := range tn.drivers {
		var sh []bp.Shared
		d.Agent(func(a *pfds.Agent) { sh = a.Shares() })
		shares = append(shares, sh)
		if len(sh) == len(ref) {
			complete++
			ok := true
			for j := range sh {
				ok = ok && reflect.DeepEqual(sh[j].Data, ref[j].Data)
			}
			if ok {
				same++
			}
		}
	}
	fmt.Fprintf(out, "session: %.2fs; %d/%d agents received every share; %d/%d hold exactly the reference's shares\n",
		session.Seconds(), complete, len(tn.drivers), same, len(tn.drivers))
	pe, ne, first, agent, err := evalAgents(s, f.eval, f.lambda, func(i int) []bp.Shared { return shares[i] })
	if err != nil {
		return err
	}
	if f.modelPath != "" {
		if err := saveAgentModel(s, first, agent, f.modelPath, out); err != nil {
			return err
		}
	}
	maj := pfdsMajorityError(s.train, s.test)
	fmt.Fprintf(out, "test error over the first %d agents: %s %.4f, NP-Agt %.4f; majority class %.4f\n",
		min(f.eval, len(s.locals)), s.mode, pe, ne, maj)
	if pe >= maj {
		fmt.Fprintf(errOut, "warning: the private predictors (test error %.4f) do not beat the majority class (%.4f): raise --eps, or use more rows per agent (fewer --agents)\n", pe, maj)
	}
	if same != len(tn.drivers) {
		return fmt.Errorf("%d agents differ from the reference", len(tn.drivers)-same)
	}
	return nil
}

// setFlags records which of the flags whose default depends on others
// were given.
func (f *pfdsFlags) setFlags(fs *flag.FlagSet) {
	f.agentsSet, f.maxLeavesSet = isFlagSet(fs, "agents"), isFlagSet(fs, "max-leaves")
	f.thresholdOrSampleSet = isFlagSet(fs, "threshold") || isFlagSet(fs, "sample")
}

// describe names the algorithm and its public parameters.
func (s *pfdsSetup) describe() string {
	if s.cv != nil {
		return fmt.Sprintf("%s (%s)", s.mode, s.cv)
	}
	p := s.params
	return fmt.Sprintf("%s (h_max %d, t %d, p %d, max leaves %d)", s.mode, p.HMax, p.T, p.P, p.MaxLeaves)
}
