package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/role"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
	"github.com/ppboost/ppboost/status"
	"github.com/ppboost/ppboost/store"
)

// userFile is the JSON form of `ppboost user --config FILE`. Flags given on
// the command line override it.
type userFile struct {
	Boost         boost.Config     `json:"boost"`
	Sum           securesum.Params `json:"sum"`
	ExpectOwners  int              `json:"expect_owners"`
	JoinTimeout   string           `json:"join_timeout"`
	ShareTimeout  string           `json:"share_timeout"`
	AnnounceEvery string           `json:"announce_interval"`
	Status        string           `json:"status"` // --status
}

// userFlags are the values of `ppboost user`'s session flags.
type userFlags struct {
	config, learner, mechanism, alpha, thresholds, method string
	eps                                                   float64
	h, rounds, attempts, threshold, committee, expect     int
	seed                                                  uint64
	sumTimeout, sumMaxWait, joinTimeout, shareTimeout     time.Duration
	pf                                                    privacyFlags
}

// userSetup is what `ppboost user` runs: the session configuration built
// from its flags, its --config file and the defaults (buildUser), and the
// node's and files' settings. It is pure data: buildUser reads only the
// --config file.
type userSetup struct {
	// cfg is ready for session.StartUser once the runner adds the user's own
	// data, the logger, the hooks and the checkpoint to resume.
	cfg                                           session.UserConfig
	validation, testPath, schema, model, progress string
	net                                           netFlags
	logf                                          logFlags
	load                                          loadFlags
	status                                        statusFlags
	set                                           map[string]bool // flags given on the command line
	fromFile                                      bool            // a --config file was read
	force                                         bool            // announce a plan refuseHopelessPlan refuses
}

func (f *userFlags) register(fs *flag.FlagSet, s *userSetup) {
	def := boost.DefaultConfig()
	sdef := securesum.DefaultParams()
	tdef := session.DefaultTiming()
	s.net.register(fs, "/ip4/0.0.0.0/tcp/4001,/ip4/0.0.0.0/udp/4001/quic-v1")
	s.logf.register(fs)
	fs.StringVar(&f.config, "config", "", "JSON session configuration (see README); flags override it")
	fs.StringVar(&f.learner, "learner", string(def.Learner), "base learner: stump | ncc | logreg")
	fs.StringVar(&f.mechanism, "mechanism", def.Mechanism, "LDP mechanism: pm | hm | duchi | laplace | none")
	epsVar(fs, &f.eps, "eps", def.Epsilon, "epsilon each contributing owner spends")
	f.pf.register(fs)
	fs.IntVar(&f.h, "owners-per-round", 5, "owners H per round")
	fs.IntVar(&f.rounds, "rounds", def.Rounds, "boosting rounds M")
	fs.StringVar(&f.alpha, "alpha", string(def.Alpha), "securesum | validation")
	fs.StringVar(&f.thresholds, "thresholds", string(def.Thresholds), "stump thresholds from the user's data: boosted | best | median")
	fs.Uint64Var(&f.seed, "seed", def.Seed, "public seed for selection and committees")
	fs.IntVar(&f.attempts, "max-attempts", def.MaxAttempts, "attempts per round (alpha <= 0 retries)")
	fs.StringVar(&f.method, "securesum", sdef.Method, "ring | shamir")
	fs.IntVar(&f.threshold, "threshold", sdef.Threshold, "Shamir threshold t")
	fs.IntVar(&f.committee, "committee", sdef.Committee, "Shamir committee size c")
	fs.DurationVar(&f.sumTimeout, "sum-timeout", sdef.Timeout, "secure-sum step timeout")
	fs.DurationVar(&f.sumMaxWait, "sum-max-wait", sdef.MaxWait, "cap of a secure sum's dealing or ring pass: a step waits for the measured round trips and is extended while shares arrive, up to this")
	fs.IntVar(&f.expect, "expect-owners", 0, "start as soon as this many owners joined (0: wait --join-timeout)")
	fs.DurationVar(&f.joinTimeout, "join-timeout", tdef.JoinTimeout, "how long to wait for owners")
	fs.DurationVar(&f.shareTimeout, "share-timeout", tdef.ShareTimeout, "how long to wait for the selected owners' shares")
	fs.StringVar(&s.validation, "data", "", "the data user's own labelled rows, CSV: its validation data; its public schema is announced (required)")
	fs.StringVar(&s.testPath, "test", "", "labelled CSV file to score the model on after every round and at the end (encoded with the announced schema)")
	fs.StringVar(&s.schema, "schema", "", "public schema of the CSV data (default: X.schema.json for X.csv, or schema.json beside --data)")
	s.load.register(fs)
	fs.StringVar(&s.model, "model", "", "write the final model here (required)")
	s.status.register(fs)
	registerForce(fs, &s.force)
	fs.StringVar(&s.progress, "progress", "auto", "progress line on standard error: auto (in place on a terminal, else a line every 10 s and per round) | tty | plain | off")
}

// readUserFile reads a --config file over the defaults; no path gives the
// defaults.
func readUserFile(path string) (userFile, error) {
	uf := userFile{Boost: boost.DefaultConfig(), Sum: securesum.DefaultParams()}
	if path == "" {
		return uf, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return uf, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&uf); err != nil {
		return uf, fmt.Errorf("%s: %w", path, err)
	}
	return uf, nil
}

// apply lays the flags over uf: without a --config file every flag (its
// default included), with one only the flags given on the command line.
func (f *userFlags) apply(uf *userFile, set map[string]bool) error {
	given := func(name string) bool { return f.config == "" || set[name] }
	var err error
	if given("learner") {
		if uf.Boost.Learner, err = boost.ParseLearner(f.learner); err != nil {
			return usagef("--learner: %v", err)
		}
	}
	if given("alpha") {
		if uf.Boost.Alpha, err = boost.ParseAlphaMode(f.alpha); err != nil {
			return usagef("--alpha: %v", err)
		}
	}
	if given("thresholds") {
		if uf.Boost.Thresholds, err = boost.ParseThresholdMethod(f.thresholds); err != nil {
			return usagef("--thresholds: %v", err)
		}
	}
	psets := set
	if f.config == "" {
		psets = nil
	}
	if err := f.pf.apply(&uf.Boost, psets); err != nil {
		return err
	}
	for _, o := range []struct {
		name  string
		apply func()
	}{
		{"mechanism", func() { uf.Boost.Mechanism = f.mechanism }},
		{"eps", func() { uf.Boost.Epsilon = f.eps }},
		{"owners-per-round", func() { uf.Boost.OwnersPerRound = f.h }},
		{"rounds", func() { uf.Boost.Rounds = f.rounds }},
		{"seed", func() { uf.Boost.Seed = f.seed }},
		{"max-attempts", func() { uf.Boost.MaxAttempts = f.attempts }},
		{"securesum", func() { uf.Sum.Method = f.method }},
		{"threshold", func() { uf.Sum.Threshold = f.threshold }},
		{"committee", func() { uf.Sum.Committee = f.committee }},
		{"sum-timeout", func() { uf.Sum.Timeout = f.sumTimeout }},
		{"sum-max-wait", func() { uf.Sum.MaxWait = f.sumMaxWait }},
		{"expect-owners", func() { uf.ExpectOwners = f.expect }},
	} {
		if given(o.name) {
			o.apply()
		}
	}
	return nil
}

// timing is the session's timing: the defaults, the flags' values, the
// file's, and the flags given on the command line over all of them.
func (f *userFlags) timing(uf userFile, set map[string]bool) (session.Timing, error) {
	timing := session.DefaultTiming()
	timing.JoinTimeout, timing.ShareTimeout = f.joinTimeout, f.shareTimeout
	for _, d := range []struct {
		key, s string
		dst    *time.Duration
	}{{"join_timeout", uf.JoinTimeout, &timing.JoinTimeout}, {"share_timeout", uf.ShareTimeout, &timing.ShareTimeout},
		{"announce_interval", uf.AnnounceEvery, &timing.AnnounceInterval}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil {
			return timing, fmt.Errorf("%s: %s: %w", f.config, d.key, err)
		}
		*d.dst = v
	}
	if set["join-timeout"] {
		timing.JoinTimeout = f.joinTimeout
	}
	if set["share-timeout"] {
		timing.ShareTimeout = f.shareTimeout
	}
	return timing, nil
}

// userTimingFlags name the flag of each Timing field (announce_interval
// has none: it comes from --config only).
var userTimingFlags = []struct{ field, flag string }{
	{"session.Timing.JoinTimeout", "--join-timeout"}, {"session.Timing.ShareTimeout", "--share-timeout"},
	{"session.Timing.AnnounceInterval", "--config announce_interval"},
}

// sumFlags name the flag of each securesum.Params field the user sets.
var sumFlags = []struct{ field, flag string }{
	{"method", "--securesum"}, {"committee", "--committee"}, {"threshold", "--threshold"},
	{"timeout, ping_timeout", "--sum-timeout"}, {"max_wait", "--sum-max-wait"},
}

// flagNames rewrites "field: ..." lines of a validation error as
// "--flag: ..." when the field's value came from a flag; a value from the
// --config file is named as "--config FILE: section.field".
func flagNames(err error, names []struct{ field, flag string }, set map[string]bool, config, section string) error {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		for _, m := range names {
			rest, ok := strings.CutPrefix(l, m.field+":")
			if !ok {
				continue
			}
			if flagName := strings.TrimPrefix(m.flag, "--"); config == "" || set[flagName] {
				lines[i] = m.flag + ":" + rest
			} else {
				lines[i] = fmt.Sprintf("--config %s: %s%s:%s", config, section, m.field, rest)
			}
			break
		}
	}
	return fmt.Errorf("%s", strings.Join(lines, "; "))
}

// buildUser turns `ppboost user`'s command line into a validated setup:
// defaults < --config file < flags given on the command line. Every error
// names the flag (or the file and key) to change.
func buildUser(args []string, errOut io.Writer) (*userSetup, error) {
	fs := newFlagSet("user", "user --key FILE --data FILE --model OUT --state DIR [--config FILE | flags]", errOut)
	var f userFlags
	s := &userSetup{}
	f.register(fs, s)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	uf, err := readUserFile(f.config)
	if err != nil {
		return nil, err
	}
	s.set, s.fromFile = setFlags(fs), f.config != ""
	if err := f.apply(&uf, s.set); err != nil {
		return nil, err
	}
	timing, err := f.timing(uf, s.set)
	if err != nil {
		return nil, err
	}
	cfg := session.DefaultUserConfig()
	cfg.Boost, cfg.Sum, cfg.Timing, cfg.ExpectedOwners = uf.Boost, uf.Sum, timing, uf.ExpectOwners
	if err := cfg.Boost.Validate(); err != nil {
		return nil, usageError{flagNames(err, configFlags, s.set, f.config, "boost.")}
	}
	if err := cfg.Sum.Validate(); err != nil {
		return nil, usageError{flagNames(err, sumFlags, s.set, f.config, "sum.")}
	}
	if err := cfg.Timing.Validate(); err != nil {
		return nil, usageError{flagNames(err, userTimingFlags, s.set, f.config, "")}
	}
	if cfg.ExpectedOwners < 0 {
		return nil, usagef("--expect-owners %d: want 0 (wait --join-timeout) or more", cfg.ExpectedOwners)
	}
	if need := max(cfg.Boost.OwnersPerRound, cfg.Sum.MinParties); cfg.ExpectedOwners > 0 && cfg.ExpectedOwners < need {
		return nil, usagef("--expect-owners %d is fewer than a round needs (--owners-per-round %d, and at least %d owners per secure sum): the session could never start",
			cfg.ExpectedOwners, cfg.Boost.OwnersPerRound, cfg.Sum.MinParties)
	}
	if s.validation == "" || s.model == "" {
		return nil, usagef("--data and --model are required")
	}
	if _, err := newProgress(io.Discard, s.progress); err != nil {
		return nil, err
	}
	if s.fromFile && !s.set["status"] {
		s.status.addr = uf.Status
	}
	s.cfg = cfg
	return s, nil
}

func runUser(args []string, out, errOut io.Writer) error {
	s, err := buildUser(args, errOut)
	if err != nil {
		return err
	}
	return s.run(out, errOut)
}

// userRun is a running data user's process state.
type userRun struct {
	*userSetup
	out, errOut io.Writer
	log         hclog.Logger
	prog        *progress
	metrics     *node.Metrics
	own, test   *dataset.Dataset
	cpPath      string
	board       *status.Board // set once the user exists, before it runs
	mu          sync.Mutex
	seen        []boost.RoundInfo
	done        chan userResult
}

type userResult struct {
	m   *boost.Model
	err error
}

// logging sets up the progress line and the logger above it.
func (r *userRun) logging() error {
	prog, err := newProgress(r.errOut, r.progress)
	if err != nil {
		return err
	}
	r.prog = prog
	logOut := r.errOut
	if prog != nil {
		logOut = prog // log lines above the progress line
	}
	r.log, err = r.logf.logger("user", logOut)
	return err
}

// loadData loads the user's validation and test data and prints the
// session's plan and forecast.
func (r *userRun) loadData() error {
	warn := func(w string) { r.log.Warn(w) }
	own, err := loadOwnerData(r.validation, r.schema, r.load, warn)
	if err != nil {
		return err
	}
	if err := userPlan(r.errOut, r.set, r.fromFile, &r.cfg.Boost, r.cfg.ExpectedOwners, own); err != nil {
		return err
	}
	// Before the node starts: nothing announced, no owner spends.
	if err := refuseHopelessPlan(r.force, r.cfg.Boost, own, 1, r.cfg.ExpectedOwners); err != nil {
		return err
	}
	// own is the user's own labelled rows: besides the thresholds and
	// validation, the model's fill values for predict --missing come from
	// them (boost.NewModel); the owners' rows never reach the user, and the
	// fill values never leave it (the Final does not carry them).
	r.own = own
	if r.testPath != "" {
		if r.test, err = loadOwnerData(r.testPath, r.schema, r.load, warn); err != nil {
			return err
		}
	}
	return nil
}

func (s *userSetup) run(out, errOut io.Writer) error {
	r := &userRun{userSetup: s, out: out, errOut: errOut, done: make(chan userResult, 1)}
	if err := r.logging(); err != nil {
		return err
	}
	if err := s.status.bind(context.Background()); err != nil {
		return err
	}
	defer s.status.closeUnused()
	if err := r.loadData(); err != nil {
		return err
	}
	r.metrics = node.NewMetrics()
	ncfg, err := s.net.config(max(s.cfg.ExpectedOwners, 16), r.log.Named("node"), r.metrics)
	if err != nil {
		return err
	}
	ncfg.NAT.RelayService = node.RelayOn // every owner dials the user: it relays for owners behind NATs (node/nat.go)
	ctx, stop := signalContext()
	defer stop()
	host, stopNode, err := s.net.start(ctx, ncfg, r.metrics, r.log)
	if err != nil {
		return err
	}
	defer stopNode()
	start := time.Now()
	// The board exists before the user starts (its rounds report to it);
	// it reads the user once StartUser returned.
	var started atomic.Pointer[session.User]
	r.board = status.NewUserBoard(string(host.ID()), func() session.UserSnapshot {
		if u := started.Load(); u != nil {
			return u.Snapshot()
		}
		return session.UserSnapshot{}
	}, r.own)
	if r.prog != nil {
		r.prog.start(r.board) // before the user's first round reports to it
	}
	u, err := r.startUser(host, admit(ncfg.AllowList))
	if err != nil {
		if r.prog != nil {
			r.prog.finish()
		}
		return err
	}
	started.Store(u)
	defer u.Close() // after the status page's last render (deferred below), before the node
	stopStatus := s.status.serve(ctx, r.board, r.log)
	ended := false
	defer func() {
		if r.prog != nil {
			r.prog.finish()
		}
		stopStatus(ended)
	}()
	r.log.Info("data user running", "peer", string(host.ID()), "addrs", strings.Join(host.Addrs(), " "), "session", u.Session(),
		"learner", s.cfg.Boost.Learner, "mechanism", s.cfg.Boost.Mechanism, "eps", s.cfg.Boost.Epsilon)
	select {
	case <-ctx.Done():
		u.Abort(errors.New("the data user was interrupted"))
		time.Sleep(200 * time.Millisecond) // let the Abort leave
		return fmt.Errorf("interrupted (restart with the same --state to resume from %s)", r.cpPath)
	case res := <-r.done:
		ended = true
		return r.finish(u, res, start)
	}
}

// startUser starts the session's data user on host from the setup's
// configuration, resuming STATE/checkpoint.json if there is one.
func (r *userRun) startUser(host *node.Host, admit func(protocol.PeerID) bool) (*session.User, error) {
	r.cpPath = filepath.Join(r.net.state, "checkpoint.json")
	resume, err := readCheckpoint(r.cpPath)
	if err != nil {
		return nil, err
	}
	if resume != nil {
		r.log.Info("resuming the session of the checkpoint", "file", r.cpPath, "session", resume.Session, "after_round", resume.Round)
	}
	cfg := r.cfg
	cfg.Own, cfg.Test, cfg.Log, cfg.Resume = r.own, r.test, r.log, resume
	cfg.Admit = admit // --allow: a closed session, no join window
	cfg.OnRound = r.onRound
	cfg.Checkpoint = r.checkpoint
	cfg.OnDone = func(m *boost.Model, err error) { r.done <- userResult{m, err} }
	u, err := session.StartUser(host, cfg, role.WithDropHook(func(reason string) { r.metrics.Dropped("user", reason) }))
	if err != nil && resume != nil {
		return nil, fmt.Errorf("%s: %w (move it away to start a new session)", r.cpPath, err)
	}
	if err == nil {
		if werr := r.metrics.WatchDriver("user", u.DriverStats); werr != nil {
			u.Close()
			return nil, werr
		}
	}
	return u, err
}

// onRound reports a round attempt: metrics, status page, progress, log.
func (r *userRun) onRound(rep session.RoundReport) {
	r.mu.Lock()
	r.seen = append(r.seen, rep.RoundInfo)
	r.mu.Unlock()
	r.metrics.ObserveRound(r.cfg.Sum.Method, rep.Accepted, rep.Owners, rep.SumTime)
	r.board.Round(rep)
	if r.prog != nil {
		r.prog.round()
	}
	status := fmt.Sprintf("accepted, test acc %.4f", rep.TestAccuracy)
	switch {
	case rep.Owners == 0 && len(rep.Silent) > 0:
		// A distributed share sum that fell below its dealer floor.
		status = "no share sum (" + rep.Absent() + "; refusals: " + refusalText(rep.Refusals) + ")"
	case rep.Owners == 0:
		status = "no shares (refusals: " + refusalText(rep.Refusals) + ")"
	case !rep.Accepted && rep.Alpha <= 0:
		status = "dropped (alpha <= 0)"
	case !rep.Accepted:
		status = "dropped (not significantly better than chance on the validation data)"
	}
	if a := rep.Absent(); a != "" && rep.Owners > 0 {
		status += " (" + a + ")"
	}
	r.log.Info(fmt.Sprintf("round %d attempt %d: %d/%d owners answered, err %.4f, alpha %.4f, %s, elapsed %.1fs",
		rep.Round, rep.Attempt, rep.Answered, rep.Selected, rep.Err, rep.Alpha, status, rep.Elapsed.Seconds()),
		"round", rep.Round, "attempt", rep.Attempt, "answered", rep.Answered, "err", rep.Err, "alpha", rep.Alpha,
		"accepted", rep.Accepted, "silent", rep.Silent, "elapsed", rep.Elapsed.Seconds())
}

// checkpoint writes the state a restarted user resumes from.
func (r *userRun) checkpoint(c session.Checkpoint) {
	b, err := json.Marshal(c)
	if err == nil {
		err = store.WriteFileAtomic(r.cpPath, b)
	}
	if err != nil {
		r.log.Error("checkpoint not written", "err", err)
	}
}

// finish reports how the session ended, saves the model of a complete or
// partial session and retires its checkpoint.
func (r *userRun) finish(u *session.User, res userResult, start time.Time) error {
	if r.prog != nil {
		r.prog.finish()
	}
	r.mu.Lock()
	if line := spendLine(r.seen); line != "" {
		fmt.Fprintln(r.out, line)
	}
	r.mu.Unlock()
	// The session stated its outcome (complete, partial or failed),
	// logged it in the words every owner logs, and sent it to them.
	oc := u.Outcome()
	// The page's badge and outcome line are this outcome, the one the exit
	// status comes from (complete 0, partial 3, failed 1).
	r.board.End(oc)
	if oc.Kind != protocol.OutcomeFailed && res.m != nil && len(res.m.Rounds) > 0 {
		if err := res.m.Save(r.model); err != nil {
			return err
		}
	}
	// Give the Final or Abort publication a moment to leave before closing.
	time.Sleep(200 * time.Millisecond)
	if oc.Kind == protocol.OutcomeFailed {
		if res.err != nil && res.err.Error() != oc.Reason {
			r.log.Error("the failure in full", "err", res.err) // the outcome's reason is cut to 512 bytes
		}
		return oc.Err()
	}
	if r.test != nil {
		ev, err := boost.Evaluate(r.test.X, r.test.Y, res.m.Classes, res.m.Predict)
		if err == nil {
			fmt.Fprintf(r.out, "final: %d of %d rounds, test accuracy %.4f, %d owners joined, %.1fs\n", len(res.m.Rounds), oc.Planned, ev.Accuracy, u.Joined(), time.Since(start).Seconds())
			majorityBaseline(r.own, r.test).report(r.out, r.errOut, 1-ev.Accuracy, r.cfg.Boost.Mechanism != "none")
		}
	}
	// The session is over (complete or partial): a restart starts a new one.
	if err := os.Rename(r.cpPath, filepath.Join(r.net.state, "checkpoint-"+u.Session()+".done.json")); err != nil && !os.IsNotExist(err) {
		r.log.Warn("checkpoint not retired", "err", err)
	}
	r.log.Info("model written", "path", r.model, "outcome", oc.Kind.String(), "dropped", u.Stats().String())
	return oc.Err() // nil when complete; partial exits 3
}

// readCheckpoint loads STATE/checkpoint.json if there is one: a data user
// restarted on the same --state resumes its session from it.
func readCheckpoint(path string) (*session.Checkpoint, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var c session.Checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w (move it away to start a new session)", path, err)
	}
	return &c, nil
}

func refusalText(r map[string]int) string {
	if len(r) == 0 {
		return "none; no answer"
	}
	return protocol.FormatCounts(r, "; ", func(k string, n int) string { return fmt.Sprintf("%d: %s", n, k) })
}
