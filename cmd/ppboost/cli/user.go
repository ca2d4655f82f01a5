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
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/protocol"
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

func runUser(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("user", "user --key FILE --validation FILE --model OUT --state DIR [--config FILE | flags]", errOut)
	var nf netFlags
	nf.register(fs, "/ip4/0.0.0.0/tcp/4001,/ip4/0.0.0.0/udp/4001/quic-v1")
	var lf logFlags
	lf.register(fs)
	def := boost.DefaultConfig()
	sdef := securesum.DefaultParams()
	tdef := session.DefaultTiming()
	config := fs.String("config", "", "JSON session configuration (see README); flags override it")
	learner := fs.String("learner", string(def.Learner), "base learner: stump | ncc | logreg")
	mechanism := fs.String("mechanism", def.Mechanism, "LDP mechanism: pm | hm | duchi | laplace | none")
	eps := fs.Float64("eps", def.Epsilon, "epsilon each contributing owner spends")
	var pf privacyFlags
	pf.register(fs)
	h := fs.Int("owners-per-round", 5, "owners H per round")
	rounds := fs.Int("rounds", def.Rounds, "boosting rounds M")
	alpha := fs.String("alpha", string(def.Alpha), "securesum | validation")
	thresholds := fs.String("thresholds", string(def.Thresholds), "stump thresholds from the user's data: boosted | best | median")
	seed := fs.Uint64("seed", def.Seed, "public seed for selection and committees")
	attempts := fs.Int("max-attempts", def.MaxAttempts, "attempts per round (alpha <= 0 retries)")
	method := fs.String("securesum", sdef.Method, "ring | shamir")
	threshold := fs.Int("threshold", sdef.Threshold, "Shamir threshold t")
	committee := fs.Int("committee", sdef.Committee, "Shamir committee size c")
	sumTimeout := fs.Duration("sum-timeout", sdef.Timeout, "secure-sum step timeout")
	sumMaxWait := fs.Duration("sum-max-wait", sdef.MaxWait, "cap of a secure sum's dealing or ring pass: a step waits for the measured round trips and is extended while shares arrive, up to this")
	expect := fs.Int("expect-owners", 0, "start as soon as this many owners joined (0: wait --join-timeout)")
	joinTimeout := fs.Duration("join-timeout", tdef.JoinTimeout, "how long to wait for owners")
	shareTimeout := fs.Duration("share-timeout", tdef.ShareTimeout, "how long to wait for the selected owners' shares")
	validation := fs.String("validation", "", "the user's own labelled data, CSV (required)")
	test := fs.String("test", "", "optional test CSV for progress reports")
	schema := fs.String("schema", "", "public feature schema (default: schema.json next to --validation)")
	var ldf loadFlags
	ldf.register(fs)
	modelOut := fs.String("model", "", "write the final model here (required)")
	var sf statusFlags
	sf.register(fs)
	progressMode := fs.String("progress", "auto", "progress line on standard error: auto (in place on a terminal, else a line every 10 s and per round) | tty | plain | off")
	if err := parse(fs, args); err != nil {
		return err
	}
	uf := userFile{Boost: def, Sum: sdef}
	if *config != "" {
		b, err := os.ReadFile(*config)
		if err != nil {
			return err
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&uf); err != nil {
			return fmt.Errorf("%s: %w", *config, err)
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	override := func(name string, apply func()) {
		if *config == "" || set[name] {
			apply()
		}
	}
	var perr error
	override("learner", func() { uf.Boost.Learner, perr = boost.ParseLearner(*learner) })
	if perr != nil {
		return usageError{perr}
	}
	override("alpha", func() { uf.Boost.Alpha, perr = boost.ParseAlphaMode(*alpha) })
	if perr != nil {
		return usageError{perr}
	}
	override("thresholds", func() { uf.Boost.Thresholds, perr = boost.ParseThresholdMethod(*thresholds) })
	if perr != nil {
		return usageError{perr}
	}
	override("mechanism", func() { uf.Boost.Mechanism = *mechanism })
	override("eps", func() { uf.Boost.Epsilon = *eps })
	psets := set
	if *config == "" {
		psets = nil
	}
	if err := pf.apply(&uf.Boost, psets); err != nil {
		return err
	}
	override("owners-per-round", func() { uf.Boost.OwnersPerRound = *h })
	override("rounds", func() { uf.Boost.Rounds = *rounds })
	override("seed", func() { uf.Boost.Seed = *seed })
	override("max-attempts", func() { uf.Boost.MaxAttempts = *attempts })
	override("securesum", func() { uf.Sum.Method = *method })
	override("threshold", func() { uf.Sum.Threshold = *threshold })
	override("committee", func() { uf.Sum.Committee = *committee })
	override("sum-timeout", func() { uf.Sum.Timeout = *sumTimeout })
	override("sum-max-wait", func() { uf.Sum.MaxWait = *sumMaxWait })
	override("expect-owners", func() { uf.ExpectOwners = *expect })
	timing := tdef
	timing.JoinTimeout, timing.ShareTimeout = *joinTimeout, *shareTimeout
	for _, d := range []struct {
		s   string
		dst *time.Duration
	}{{uf.JoinTimeout, &timing.JoinTimeout}, {uf.ShareTimeout, &timing.ShareTimeout}, {uf.AnnounceEvery, &timing.AnnounceInterval}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil {
			return fmt.Errorf("%s: %w", *config, err)
		}
		*d.dst = v
	}
	if set["join-timeout"] {
		timing.JoinTimeout = *joinTimeout
	}
	if set["share-timeout"] {
		timing.ShareTimeout = *shareTimeout
	}
	if err := uf.Boost.Validate(); err != nil {
		return usageError{err}
	}
	if err := uf.Sum.Validate(); err != nil {
		return usageError{err}
	}
	if need := max(uf.Boost.OwnersPerRound, uf.Sum.MinParties); uf.ExpectOwners > 0 && uf.ExpectOwners < need {
		return usagef("--expect-owners %d is fewer than a round needs (--owners-per-round %d, and at least %d owners per secure sum): the session could never start",
			uf.ExpectOwners, uf.Boost.OwnersPerRound, uf.Sum.MinParties)
	}
	if *validation == "" || *modelOut == "" {
		return usagef("--validation and --model are required")
	}
	if *config != "" && !set["status"] {
		sf.addr = uf.Status
	}
	prog, err := newProgress(errOut, *progressMode)
	if err != nil {
		return err
	}
	logOut := errOut
	if prog != nil {
		logOut = prog // log lines above the progress line
	}
	log, err := lf.logger("user", logOut)
	if err != nil {
		return err
	}
	if err := sf.bind(context.Background()); err != nil {
		return err
	}
	defer sf.closeUnused()
	warn := func(w string) { log.Warn(w) }
	own, err := loadOwnerData(*validation, *schema, ldf, warn)
	if err != nil {
		return err
	}
	if err := userPlan(errOut, set, *config != "", &uf.Boost, uf.ExpectOwners, own); err != nil {
		return err
	}
	var testData *dataset.Dataset
	if *test != "" {
		if testData, err = loadOwnerData(*test, *schema, ldf, warn); err != nil {
			return err
		}
	}
	metrics := node.NewMetrics()
	cfg, err := nf.config(max(uf.ExpectOwners, 16), log.Named("node"), metrics)
	if err != nil {
		return err
	}
	cfg.NAT.RelayService = node.RelayOn // every owner dials the user: it relays for owners behind NATs (node/nat.go)
	ctx, stop := signalContext()
	defer stop()
	host, post, stopNode, err := nf.start(ctx, cfg, metrics, log)
	if err != nil {
		return err
	}
	defer stopNode()
	type result struct {
		m   *boost.Model
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	cpPath := filepath.Join(nf.state, "checkpoint.json")
	resume, err := readCheckpoint(cpPath)
	if err != nil {
		return err
	}
	if resume != nil {
		log.Info("resuming the session of the checkpoint", "file", cpPath, "session", resume.Session, "after_round", resume.Round)
	}
	var board *status.Board // set once the user exists, before it runs
	var roundsMu sync.Mutex
	var seen []boost.RoundInfo
	spent := func() {
		roundsMu.Lock()
		defer roundsMu.Unlock()
		if line := spendLine(seen); line != "" {
			fmt.Fprintln(out, line)
		}
	}
	u, err := session.NewUser(host.ID(), post, session.UserConfig{
		Boost: uf.Boost, Sum: uf.Sum, Timing: timing, Own: own, Test: testData, ExpectedOwners: uf.ExpectOwners,
		Log: log, Resume: resume, Admit: admit(cfg.AllowList), // --allow: a closed session, no join window
		OnRound: func(r session.RoundReport) {
			roundsMu.Lock()
			seen = append(seen, r.RoundInfo)
			roundsMu.Unlock()
			metrics.ObserveRound(uf.Sum.Method, r.Accepted, r.Owners, r.SumTime)
			board.Round(r)
			if prog != nil {
				prog.round()
			}
			status := fmt.Sprintf("accepted, test acc %.4f", r.TestAccuracy)
			switch {
			case r.Owners == 0:
				status = "no shares (refusals: " + refusalText(r.Refusals) + ")"
			case !r.Accepted && r.Alpha <= 0:
				status = "dropped (alpha <= 0)"
			case !r.Accepted:
				status = "dropped (not significantly better than chance on the validation data)"
			}
			log.Info(fmt.Sprintf("round %d attempt %d: %d/%d owners answered, err %.4f, alpha %.4f, %s, elapsed %.1fs",
				r.Round, r.Attempt, r.Answered, r.Selected, r.Err, r.Alpha, status, r.Elapsed.Seconds()),
				"round", r.Round, "attempt", r.Attempt, "answered", r.Answered, "err", r.Err, "alpha", r.Alpha,
				"accepted", r.Accepted, "elapsed", r.Elapsed.Seconds())
		},
		Checkpoint: func(c session.Checkpoint) {
			b, err := json.Marshal(c)
			if err == nil {
				err = store.WriteFileAtomic(cpPath, b)
			}
			if err != nil {
				log.Error("checkpoint not written", "err", err)
			}
		},
		OnDone: func(m *boost.Model, err error) { done <- result{m, err} },
	})
	if err != nil && resume != nil {
		return fmt.Errorf("%s: %w (move it away to start a new session)", cpPath, err)
	}
	if err != nil {
		return err
	}
	u.Stats().SetHook(func(reason string) { metrics.Dropped("user", reason) })
	defer u.Close() // after the status page's last render (deferred below), before the node
	board = status.NewUserBoard(string(host.ID()), u.Snapshot, own)
	stopStatus := sf.serve(ctx, board, log)
	ended := false
	defer func() {
		if prog != nil {
			prog.finish()
		}
		stopStatus(ended)
	}()
	if prog != nil {
		prog.start(board)
	}
	if err := u.Attach(host); err != nil {
		return err
	}
	log.Info("data user running", "peer", string(host.ID()), "addrs", strings.Join(host.Addrs(), " "), "session", u.Session(),
		"learner", uf.Boost.Learner, "mechanism", uf.Boost.Mechanism, "eps", uf.Boost.Epsilon)
	select {
	case <-ctx.Done():
		u.Abort(errors.New("the data user was interrupted"))
		time.Sleep(200 * time.Millisecond) // let the Abort leave
		return fmt.Errorf("interrupted (restart with the same --state to resume from %s)", cpPath)
	case r := <-done:
		ended = true
		if prog != nil {
			prog.finish()
		}
		spent()
		// The session stated its outcome (complete, partial or failed),
		// logged it in the words every owner logs, and sent it to them.
		oc := u.Outcome()
		if oc.Kind != protocol.OutcomeFailed && r.m != nil && len(r.m.Rounds) > 0 {
			if err := r.m.Save(*modelOut); err != nil {
				return err
			}
		}
		// Give the Final or Abort publication a moment to leave before closing.
		time.Sleep(200 * time.Millisecond)
		if oc.Kind == protocol.OutcomeFailed {
			if r.err != nil && r.err.Error() != oc.Reason {
				log.Error("the failure in full", "err", r.err) // the outcome's reason is cut to 512 bytes
			}
			return oc.Err()
		}
		if testData != nil {
			ev, err := boost.Evaluate(testData.X, testData.Y, r.m.Classes, r.m.Predict)
			if err == nil {
				fmt.Fprintf(out, "final: %d of %d rounds, test accuracy %.4f, %d owners joined, %.1fs\n", len(r.m.Rounds), oc.Planned, ev.Accuracy, u.Joined(), time.Since(start).Seconds())
				majorityBaseline(own, testData).report(out, errOut, 1-ev.Accuracy, uf.Boost.Mechanism != "none")
			}
		}
		// The session is over (complete or partial): a restart starts a new one.
		if err := os.Rename(cpPath, filepath.Join(nf.state, "checkpoint-"+u.Session()+".done.json")); err != nil && !os.IsNotExist(err) {
			log.Warn("checkpoint not retired", "err", err)
		}
		log.Info("model written", "path", *modelOut, "outcome", oc.Kind.String(), "dropped", u.Stats().String())
		return oc.Err() // nil when complete; partial exits 3
	}
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
