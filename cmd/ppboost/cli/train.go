package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/crypto/ldp"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
)

// trainFlags are the flags sim and simulate share.
type trainFlags struct {
	dataFlags
	learner, mechanism, alpha, thresholds   string
	privacy                                 privacyFlags
	eps                                     float64
	ownersPerRound, samplesPerOwner, rounds int
	maxSplits                               int
	owners, userSamples, attempts           int
	splits                                  int
	seed                                    uint64
	model                                   string
	json                                    bool
	force                                   bool // run a plan refuseHopeless refuses
}

func (t *trainFlags) register(fs *flag.FlagSet) {
	def := boost.DefaultConfig()
	t.dataFlags.register(fs, "synthetic", "")
	fs.StringVar(&t.learner, "learner", string(def.Learner), "base learner: stump | ncc | logreg (not given, real data: chosen by the plan)")
	fs.StringVar(&t.mechanism, "mechanism", def.Mechanism, "LDP mechanism: pm | hm | duchi | laplace | none")
	epsVar(fs, &t.eps, "eps", def.Epsilon, "privacy budget each contributing owner spends")
	t.privacy.register(fs)
	fs.IntVar(&t.ownersPerRound, "owners-per-round", def.OwnersPerRound, "owners H whose shares build each base learner (not given, real data: sized from the data with --rounds, see plan:)")
	fs.IntVar(&t.samplesPerOwner, "samples-per-owner", 80, "samples each owner holds (not given, real data: 1)")
	fs.IntVar(&t.rounds, "rounds", def.Rounds, "boosting rounds M (not given, real data: the most, up to 10, that the forecast calls likely to work)")
	fs.StringVar(&t.alpha, "alpha", string(def.Alpha), "where err_m comes from: securesum (all owners) | validation (the user's data)")
	fs.StringVar(&t.thresholds, "thresholds", string(def.Thresholds), "stump thresholds from the user's data: boosted | best | median")
	fs.IntVar(&t.splits, "splits-per-feature", def.SplitsPerFeature, "public stump thresholds per feature (the chosen one plus quantiles)")
	fs.IntVar(&t.maxSplits, "max-splits", 0, "stumps: keep only the N candidate splits that classify the user's data best (each owner releases a value per split; 0: all; not given, real data: chosen by the plan)")
	fs.IntVar(&t.owners, "owners", 0, "total owners (0: synthetic makes H x 2M, room for M retried attempts; real data uses all it can fill)")
	fs.IntVar(&t.userSamples, "user-samples", 0, "size of the data user's own labelled data (0: 5000 synthetic; otherwise a quarter of the non-test rows, 30 to 1000)")
	fs.IntVar(&t.attempts, "max-attempts", def.MaxAttempts, "attempts per round before giving up (a learner with alpha <= 0, or not significantly better than chance on the user's data, is retried with fresh owners)")
	fs.Uint64Var(&t.seed, "seed", def.Seed, "seed for data, selection and (in simulations) noise")
	fs.StringVar(&t.model, "model", "", "write the trained model to this file")
	fs.BoolVar(&t.json, "json", false, "print JSON instead of a table")
	registerForce(fs, &t.force)
}

func (t *trainFlags) build(set map[string]bool) (boost.Config, boost.DataSpec, error) {
	cfg := boost.DefaultConfig()
	var err error
	if cfg.Learner, err = boost.ParseLearner(t.learner); err != nil {
		return cfg, boost.DataSpec{}, usageError{err}
	}
	if _, err = ldp.ParseKind(t.mechanism); err != nil {
		return cfg, boost.DataSpec{}, usageError{err}
	}
	cfg.Mechanism = t.mechanism
	if cfg.Alpha, err = boost.ParseAlphaMode(t.alpha); err != nil {
		return cfg, boost.DataSpec{}, usageError{err}
	}
	if cfg.Thresholds, err = boost.ParseThresholdMethod(t.thresholds); err != nil {
		return cfg, boost.DataSpec{}, usageError{err}
	}
	cfg.Epsilon, cfg.OwnersPerRound, cfg.Rounds = t.eps, t.ownersPerRound, t.rounds
	cfg.MaxAttempts, cfg.Seed, cfg.SplitsPerFeature, cfg.MaxSplits = t.attempts, t.seed, t.splits, t.maxSplits
	if err := t.privacy.apply(&cfg, nil); err != nil {
		return cfg, boost.DataSpec{}, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, boost.DataSpec{}, usageError{configFlagNames(err)}
	}
	if err := t.checkTest(); err != nil {
		return cfg, boost.DataSpec{}, err
	}
	if t.data == "synthetic" && t.holdout.set && t.holdout.rows == 0 {
		return cfg, boost.DataSpec{}, usagef("--holdout %s: synthetic data draws its test rows; give a row count (default 50000), or --test FILE", t.holdout.String())
	}
	ds := boost.DataSpec{Source: t.data, Owners: t.owners, SamplesPerOwner: t.samplesPerOwner,
		UserSamples: t.userSamples, TestSamples: t.holdout.rows, Seed: t.seed}
	for _, f := range []struct {
		name   string
		v, min int
	}{{"--samples-per-owner", t.samplesPerOwner, 1}, {"--owners", t.owners, 0}, {"--user-samples", t.userSamples, 0}} {
		if f.v < f.min {
			return cfg, ds, usagef("%s must be at least %d, got %d", f.name, f.min, f.v)
		}
	}
	if t.owners > 0 && t.owners < t.ownersPerRound && (set["owners-per-round"] || t.data == "synthetic") {
		return cfg, ds, usagef("--owners-per-round %d is more than --owners %d", t.ownersPerRound, t.owners)
	}
	return cfg, ds, nil
}

// checkOwners refuses an --owners-per-round the prepared data cannot give
// (exit 2, naming both flags and the numbers), instead of failing in round 1.
func (t *trainFlags) checkOwners(data boost.Data) error {
	if n := len(data.Owners); n < t.ownersPerRound {
		return usagef("--owners-per-round %d is more than the %d owners --data %s fills with --samples-per-owner %d; "+
			"use at most %d (or lower --samples-per-owner)", t.ownersPerRound, n, t.data, t.samplesPerOwner, n)
	}
	return nil
}

// prepareError classifies a boost.Prepare error: bad data (a file error,
// exit 1) or sizes the data cannot hold (the flags' fault, exit 2). Prepare's
// size errors carry no sentinel, so everything that is not a data error is
// taken for one.
func prepareError(err error) error {
	var pe *dataset.ParseError
	if errors.Is(err, dataset.ErrMissing) {
		// sim and simulate load through boost.Prepare, which has no
		// missing-value policy (yet): say how to get a complete file.
		return fmt.Errorf("%w\n  (fix the file, or choose a policy: --missing skip|zero|mean)", err)
	}
	if errors.As(err, &pe) || errors.Is(err, fs.ErrNotExist) {
		return dataError(err)
	}
	if errors.Is(err, dataset.ErrConfig) {
		return usageError{err}
	}
	return usagef("%v\n  (the sizes come from --owners, --samples-per-owner, --user-samples and --holdout; "+
		"for a small file set --user-samples and --holdout, or give --test FILE)", err)
}

// configFlags maps boost.Config's field names, as its Validate errors give
// them, to the flags that set them.
var configFlags = []struct{ field, flag string }{
	{"owners_per_round", "--owners-per-round"}, {"splits_per_feature", "--splits-per-feature"},
	{"max_attempts", "--max-attempts"}, {"epsilon", "--eps"}, {"rounds", "--rounds"},
	{"mechanism", "--mechanism"}, {"learner", "--learner"}, {"alpha", "--alpha"}, {"thresholds", "--thresholds"},
	{"privacy", "--privacy"}, {"privacy_clip", "--privacy-clip"}, {"drop_fraction", "--drop-fraction"}, {"colluders", "--colluders"},
	{"err_epsilon", "--err-eps"}, {"err_clip", "--err-clip"}, {"max_splits", "--max-splits"},
}

// colludersFlag is a colluder bound: "all" (boost.ColludersAll) or a count.
type colludersFlag struct {
	n   int
	min int // the smallest count accepted
}

func (c *colludersFlag) String() string {
	if c == nil || c.n < 0 {
		return "all"
	}
	return strconv.Itoa(c.n)
}

func (c *colludersFlag) Set(s string) error {
	if strings.EqualFold(s, "all") {
		c.n = boost.ColludersAll
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < c.min {
		return fmt.Errorf("want \"all\" or a whole number of at least %d, got %q", c.min, s)
	}
	c.n = n
	return nil
}

// privacyFlags choose LDP or distributed noise (sim, simulate, user, testnet).
type privacyFlags struct {
	privacy         string
	clip, drop      float64
	colluders       colludersFlag
	errEps, errClip float64
}

func (p *privacyFlags) register(fs *flag.FlagSet) {
	def := boost.DefaultConfig()
	fs.StringVar(&p.privacy, "privacy", string(def.Privacy), "ldp (every owner perturbs its share; --mechanism) | distributed (the selected owners secure-sum their statistics with discrete Laplace noise shares; stump and logreg; --mechanism none turns the noise off)")
	fs.Float64Var(&p.clip, "privacy-clip", def.PrivacyClip, "distributed stumps: an owner's weight total is clipped to this (sensitivity 2 x clip per column)")
	fs.Float64Var(&p.drop, "drop-fraction", def.DropFraction, "distributed: the share sum survives max(1, floor(f x H)) silent selected owners (0: none) and needs the rest, never fewer than --min-parties; a round too small for that selects spares (H = 3: four owners, any three deal)")
	p.colluders = colludersFlag{n: def.Colluders}
	fs.Var(&p.colluders, "colluders", "noisy sums (distributed shares, err): how many dealers may share what they see with the data user: all (the default, as for owners, fed and fed-user: every dealing is DP on its own; owners refuse less by default) or N (noise sized for max(1, dealer floor - N) honest dealers; owners must run with --colluders N or more)")
	fs.Float64Var(&p.errEps, "err-eps", def.ErrEpsilon, "alpha securesum: epsilon of each owner's err dealing (its clipped, noisy pair), charged to every roster owner for every round attempt")
	fs.Float64Var(&p.errClip, "err-clip", def.ErrClip, "alpha securesum: an owner's weight total in its err pair is clipped to this (sensitivity 2 x clip)")
}

// apply sets the privacy fields of cfg; with set (the flags given on the
// command line) only those, so that a --config file keeps the rest.
func (p *privacyFlags) apply(cfg *boost.Config, set map[string]bool) error {
	given := func(name string) bool { return set == nil || set[name] }
	if given("privacy") {
		v, err := boost.ParsePrivacy(p.privacy)
		if err != nil {
			return usageError{fmt.Errorf("--privacy: %w", err)}
		}
		cfg.Privacy = v
	}
	if given("privacy-clip") {
		cfg.PrivacyClip = p.clip
	}
	if given("drop-fraction") {
		cfg.DropFraction = p.drop
	}
	if given("colluders") {
		cfg.Colluders = p.colluders.n
	}
	if given("err-eps") {
		cfg.ErrEpsilon = p.errEps
	}
	if given("err-clip") {
		cfg.ErrClip = p.errClip
	}
	return nil
}

// configFlagNames rewrites "field: ..." lines of a Config.Validate error as
// "--flag: ...", so a CLI user sees the flag to change.
func configFlagNames(err error) error {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		for _, m := range configFlags {
			if rest, ok := strings.CutPrefix(l, m.field+":"); ok {
				lines[i] = m.flag + ":" + rest
				break
			}
		}
	}
	return fmt.Errorf("%s", strings.Join(lines, "; "))
}

// report prints training progress as a table (people) or collects it for JSON.
type report struct {
	out    io.Writer
	json   bool
	Header map[string]any    `json:"run"`
	Config boost.Config      `json:"config"`
	Rounds []boost.RoundInfo `json:"rounds"`
	Final  *boost.Evaluation `json:"final,omitempty"`
	Extra  map[string]any    `json:"stats,omitempty"`
	// Majority is the test error of always answering the majority class
	// of the user's data.
	Majority *float64 `json:"majority_error,omitempty"`
	errOut   io.Writer
	Elapsed  float64 `json:"elapsed_seconds"`
	Error    string  `json:"error,omitempty"`
}

func newReport(out, errOut io.Writer, asJSON bool, cfg boost.Config, data boost.Data, source string) *report {
	r := &report{out: out, errOut: errOut, json: asJSON, Config: cfg, Header: map[string]any{
		"data": source, "owners": len(data.Owners), "samples_per_owner": data.Owners[0].Len(),
		"user_samples": data.User.Len(), "test_samples": lenOr0(data),
	}}
	if !asJSON {
		fmt.Fprintf(out, "data %s: %d owners x %d samples, user %d, test %d\n",
			source, len(data.Owners), data.Owners[0].Len(), data.User.Len(), lenOr0(data))
		noise := "mechanism " + cfg.Mechanism
		if cfg.Privacy == boost.PrivacyDistributed {
			noise = fmt.Sprintf("distributed noise (clip %g, drop fraction %g, colluders %s)", cfg.PrivacyClip, cfg.DropFraction, (&colludersFlag{n: cfg.Colluders}).String())
			if cfg.Mechanism == "none" {
				noise = "distributed, no noise"
			}
		}
		alpha := string(cfg.Alpha)
		if cfg.Alpha == boost.AlphaSecureSum && cfg.Mechanism != "none" {
			alpha = fmt.Sprintf("securesum (err dealings eps %g each, clip %g)", cfg.ErrEpsilon, cfg.ErrClip)
		}
		fmt.Fprintf(out, "learner %s, %s, eps %g, %d owners/round, %d rounds, alpha %s\n",
			cfg.Learner, noise, cfg.Epsilon, cfg.OwnersPerRound, cfg.Rounds, alpha)
		fmt.Fprintf(out, "%5s %7s %6s %8s %8s %9s %8s\n", "round", "attempt", "owners", "err_m", "alpha_m", "test_acc", "elapsed")
	}
	return r
}

func lenOr0(d boost.Data) int {
	if d.Test == nil {
		return 0
	}
	return d.Test.Len()
}

func (r *report) round(ri boost.RoundInfo) {
	r.Rounds = append(r.Rounds, ri)
	if r.json {
		return
	}
	acc, why := "dropped", ""
	switch {
	case ri.Accepted:
		acc = fmt.Sprintf("%.4f", ri.TestAccuracy)
	case ri.Alpha <= 0:
		why = "  (alpha <= 0)"
	default:
		why = "  (not significantly better than chance on the user's data)"
	}
	fmt.Fprintf(r.out, "%5d %7d %6d %8.4f %8.4f %9s %7.2fs%s\n", ri.Round, ri.Attempt, ri.Owners, ri.Err, ri.Alpha, acc, ri.Elapsed.Seconds(), why)
}

func (r *report) finish(m *boost.Model, data boost.Data, start time.Time, trainErr error) error {
	r.Elapsed = time.Since(start).Seconds()
	if trainErr != nil {
		r.Error = trainErr.Error()
	}
	if data.Test != nil && len(m.Rounds) > 0 {
		ev, err := boost.Evaluate(data.Test.X, data.Test.Y, m.Classes, m.Predict)
		if err != nil {
			return err
		}
		r.Final = &ev
	}
	var base *baseline
	if data.Test != nil && data.User != nil {
		b := majorityBaseline(data.User, data.Test)
		base = &b
		r.Majority = &b.Error
	}
	if r.json {
		if base != nil && r.Final != nil && r.Config.Mechanism != "none" && 1-r.Final.Accuracy >= base.Error {
			base.report(io.Discard, r.errOut, 1-r.Final.Accuracy, true) // the warning, beside the JSON
		}
		enc := json.NewEncoder(r.out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	if trainErr != nil {
		fmt.Fprintf(r.out, "training stopped early: %v\n", trainErr)
	}
	if r.Final != nil {
		fmt.Fprintf(r.out, "final: %d rounds, test accuracy %.4f (misclassification %.2f%%), %.2fs\n",
			len(m.Rounds), r.Final.Accuracy, 100*(1-r.Final.Accuracy), r.Elapsed)
		if base != nil {
			base.report(r.out, r.errOut, 1-r.Final.Accuracy, r.Config.Mechanism != "none")
		}
	}
	if line := spendLine(r.Rounds); line != "" {
		fmt.Fprintln(r.out, line)
	}
	keys := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := r.Extra[k]
		if m, ok := v.(map[string]int); ok {
			v = protocol.FormatCounts(m, ", ", func(k string, n int) string { return fmt.Sprintf("%d %s", n, k) })
		}
		fmt.Fprintf(r.out, "%s: %v\n", k, v)
	}
	return nil
}

// spendLine says what the owners spent, and how much of it on attempts the
// data user dropped (issue 19 item 7): "" when nothing was charged.
func spendLine(rounds []boost.RoundInfo) string {
	total, dropped, n := 0.0, 0.0, 0
	for _, ri := range rounds {
		total += ri.Charged
		if !ri.Accepted {
			dropped += ri.Charged
			n++
		}
	}
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("owners' epsilon spent (summed over owners, at most): %.1f in all, %.1f of it on %d dropped attempt(s)", total, dropped, n)
}

func runSim(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("sim", "sim [flags]  (reference trainer, one process)", errOut)
	var tf trainFlags
	var rf repeatFlag
	tf.register(fs)
	rf.register(fs, "the seed draws the synthetic data or splits the file into test, user and owner rows, selects the owners and draws the noise")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := rf.check(); err != nil {
		return err
	}
	if rf.n == 1 {
		r, err := tf.simOnce(fs, out, errOut, errOut, tf.json, tf.model)
		if err == nil {
			singleRunHint(errOut, r.TestError, r.TestRows)
		}
		return err
	}
	base := tf.seed
	runs := make([]runResult, 0, rf.n)
	for i := range rf.n {
		tf.seed = base + uint64(i)
		model := ""
		if i == 0 {
			model = tf.model
		}
		r, err := tf.simOnce(fs, io.Discard, withErrOut(i, errOut), io.Discard, false, model)
		if err != nil {
			return runFailed(i, rf.n, tf.seed, err)
		}
		runs = append(runs, r)
		if !tf.json {
			runLine(out, i, rf.n, r)
		}
	}
	if tf.model != "" {
		modelLine(out, errOut, tf.json, tf.model, base)
	}
	return summarize(runs).report(out, errOut, tf.json)
}

// simOnce trains once with tf's seed: the plan on planOut, the report on
// out (JSON with asJSON) and its warning on warnOut; the model goes to
// model unless "". Its result is the test error and the baseline.
func (tf *trainFlags) simOnce(fs *flag.FlagSet, out, planOut, warnOut io.Writer, asJSON bool, model string) (runResult, error) {
	cfg, data, err := tf.prepare(fs, planOut)
	if err != nil {
		return runResult{}, err
	}
	if err := tf.refuseHopeless(cfg, data); err != nil {
		return runResult{}, err
	}
	start := time.Now()
	rep := newReport(out, warnOut, asJSON, cfg, data, tf.data)
	m, trainErr := boost.Train(cfg, data, rep.round)
	if m == nil {
		return runResult{}, trainErr
	}
	if errors.Is(trainErr, boost.ErrNoRetryRoom) {
		// Refused before anyone spent: the flags choose a plan that cannot
		// work, and the error says which would.
		return runResult{}, usageError{trainErr}
	}
	if err := rep.finish(m, data, start, trainErr); err != nil {
		return runResult{}, err
	}
	if model != "" && len(m.Rounds) > 0 {
		if err := m.Save(model); err != nil {
			return runResult{}, err
		}
	}
	if len(m.Rounds) == 0 {
		return runResult{}, fmt.Errorf("no base learner was accepted: %v", trainErr)
	}
	r := runResult{Seed: tf.seed, TestRows: lenOr0(data), private: cfg.Mechanism != "none"}
	if rep.Final != nil {
		r.TestError = 1 - rep.Final.Accuracy
	}
	if rep.Majority != nil {
		r.Majority = *rep.Majority
	}
	return r, nil
}

// prepare turns sim's and simulate's flags into a validated configuration
// and the cut data: synthetic data as the papers cut it (Prepare), any
// other data sized by fitPlan, with the plan and forecast on errOut.
func (t *trainFlags) prepare(fs *flag.FlagSet, errOut io.Writer) (boost.Config, boost.Data, error) {
	set := setFlags(fs)
	cfg, ds, err := t.build(set)
	if err != nil {
		return cfg, boost.Data{}, err
	}
	if t.data == "synthetic" {
		if _, err := t.options(errOut); err != nil { // --schema on synthetic data
			return cfg, boost.Data{}, err
		}
		data, err := boost.Prepare(ds, cfg, warnTo(errOut))
		if err != nil {
			return cfg, data, prepareError(err)
		}
		if t.test != "" {
			if data.Test, err = t.loadTest(errOut, data.User); err != nil {
				return cfg, data, err
			}
		}
		return cfg, data, t.checkOwners(data)
	}
	train, test, err := t.load(errOut, 0, t.seed)
	if err != nil {
		return cfg, boost.Data{}, err
	}
	data, p, err := t.fitPlan(set, &cfg, train, test)
	if err != nil {
		return cfg, data, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, data, usageError{configFlagNames(err)}
	}
	if err := printPlan(errOut, p, cfg, data); err != nil {
		return cfg, data, err
	}
	return cfg, data, nil
}
