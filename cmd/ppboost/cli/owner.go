package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/pfds"
	"github.com/ppboost/ppboost/protocol/role"
	"github.com/ppboost/ppboost/protocol/session"
	"github.com/ppboost/ppboost/status"
	"github.com/ppboost/ppboost/store"
)

// netFlags are the libp2p flags owners and the user share.
type netFlags struct {
	key, listen, bootstrap, psk, allow, metrics, state string
	mdns                                               bool
}

func (n *netFlags) register(fs interface {
	StringVar(*string, string, string, string)
	BoolVar(*bool, string, bool, string)
}, defListen string) {
	fs.StringVar(&n.key, "key", "", "identity key file made by `ppboost keygen` (required)")
	fs.StringVar(&n.listen, "listen", defListen, "comma-separated listen multiaddrs")
	fs.StringVar(&n.bootstrap, "bootstrap", "", "comma-separated multiaddrs to dial, e.g. /ip4/127.0.0.1/tcp/4001/p2p/12D3...")
	fs.StringVar(&n.psk, "psk", "", "private-network key file (TCP only: QUIC is disabled)")
	fs.StringVar(&n.allow, "allow", "", "file of allowed peer ids, one per line (others are refused)")
	fs.StringVar(&n.metrics, "metrics", "", "serve Prometheus /metrics on this address, e.g. 127.0.0.1:9100")
	fs.StringVar(&n.state, "state", "", "directory for durable state: budget ledger, checkpoints (required)")
	fs.BoolVar(&n.mdns, "mdns", false, "discover peers on the LAN with mDNS (listen on 0.0.0.0 for it to work)")
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func (n *netFlags) config(expected int, log hclog.Logger, metrics *node.Metrics) (node.Config, error) {
	if n.key == "" || n.state == "" {
		return node.Config{}, usagef("--key and --state are required")
	}
	cfg := node.DefaultConfig()
	cfg.KeyFile = n.key
	if l := splitList(n.listen); len(l) > 0 {
		cfg.ListenAddrs = l
	}
	cfg.Bootstrap = splitList(n.bootstrap)
	cfg.PSKFile = n.psk
	cfg.MDNS = n.mdns
	cfg.ExpectedPeers = max(expected, cfg.ExpectedPeers)
	cfg.Logger = log
	cfg.Metrics = metrics
	if n.allow != "" {
		b, err := os.ReadFile(n.allow)
		if err != nil {
			return cfg, fmt.Errorf("--allow: %w", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				cfg.AllowList = append(cfg.AllowList, line)
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{err}
	}
	if err := os.MkdirAll(n.state, 0o700); err != nil {
		return cfg, fmt.Errorf("--state: %w", err)
	}
	return cfg, nil
}

// start brings up the metrics endpoint (if asked for), the libp2p host and
// an outbox that posts on it; the returned function shuts them down.
func (n *netFlags) start(ctx context.Context, cfg node.Config, metrics *node.Metrics, log hclog.Logger) (*node.Host, func(), error) {
	if n.metrics != "" {
		// Bind before anything else starts: an address that cannot be bound
		// is a usage error, not a log line on a node that runs blind.
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", n.metrics)
		if err != nil {
			return nil, nil, usagef("--metrics %q: %v", n.metrics, err)
		}
		go func() {
			if err := metrics.ServeListener(ctx, ln); err != nil {
				log.Error("metrics server", "err", err)
			}
		}()
	}
	h, err := node.New(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	// The roles started on h post through an Outbox of their own (role.NewPost)
	// and close it before the node.
	return h, func() { h.Close() }, nil
}

// signalContext is cancelled on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// loadOwnerData loads a node's CSV file (an owner's shard, the user's
// validation or test data) as the data commands do: with --schema, or the
// schema.json beside the file (announced), the missing-value policy of
// --missing, and errors that name the file, line and column.
func loadOwnerData(path, schemaPath string, ldf loadFlags, warn func(string)) (*dataset.Dataset, error) {
	opt, err := ldf.options(io.Discard)
	if err != nil {
		return nil, err
	}
	opt.Warn = warn
	return loadDataFile(path, schemaPath, opt)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ownerSetup is what `ppboost owner` runs: the session.OwnerConfig built
// from its flags, its --config file and the defaults (buildOwner), and the
// node's and files' settings. buildOwner reads only the --config file.
type ownerSetup struct {
	// cfg is ready for session.StartOwner once the runner adds the data, the
	// ledger, the logger and the hooks.
	cfg          session.OwnerConfig
	data, schema string
	budget       float64
	resetMark    bool // --ledger-reset-mark
	expectPeers  int
	stay         bool
	wait         time.Duration
	net          netFlags
	logf         logFlags
	load         loadFlags
	status       statusFlags
	fed          *fedboost.OwnerConfig // --fed: a federated DPBoost owner on the same host (serve.go)
	pfds         *pfdsOwner            // --pfds: a PFDS agent on the same host (owner_pfds.go)
	noWC         bool                  // --wc=false: no W&C role, only the systems --fed and --pfds enable
}

// ownerFlags are the owner's flags that shape its session.OwnerConfig.
type ownerFlags struct {
	config, user     string
	eps, sessionMax  float64
	noRing, allowNon bool
	colluders        colludersFlag
	wc               bool
	fed              fedOwnerFlags
	pfds             pfdsOwnerFlags
}

func (f *ownerFlags) register(fs *flag.FlagSet, s *ownerSetup) {
	def := session.DefaultOwnerConfig()
	s.net.register(fs, "/ip4/0.0.0.0/tcp/0,/ip4/0.0.0.0/udp/0/quic-v1")
	s.logf.register(fs)
	fs.StringVar(&s.data, "data", "", "the owner's private data, CSV (required)")
	fs.StringVar(&s.schema, "schema", "", "public feature schema (default: schema.json next to --data)")
	s.load.register(fs)
	fs.StringVar(&f.user, "user", "", "peer id of the data user this owner works for (required)")
	// The defaults fit a data user's defaults (--eps 5): an owner with
	// default flags can give one share of a default session.
	epsVar(fs, &f.eps, "eps", def.MaxEpsilon, "largest epsilon this owner spends on one share (sessions asking for more are not joined)")
	fs.Float64Var(&s.budget, "budget", 5, "lifetime privacy budget, enforced by the ledger across sessions and restarts")
	fs.Float64Var(&f.sessionMax, "session-eps-max", 0, "most this owner spends in one session of any system (a share and its err dealings, a federated session's or ensembles' charges): a session whose plan costs more is refused at join, and a charge past it (err attempts) is refused while running; 0 (default): each session's own plan cost (W&C: the share and 3 err dealings per round; federated: its charges)")
	fs.BoolVar(&s.resetMark, resetMarkFlag, false, resetMarkUsage)
	fs.IntVar(&s.expectPeers, "expect-peers", 256, "peers this owner may talk to (the session's owners): sizes connection and stream limits")
	fs.BoolVar(&s.stay, "stay", false, "keep running after a session ends (final model, abort or idle timeout), after a refused session and without announcements, and serve further sessions")
	fs.DurationVar(&s.wait, "wait", 2*time.Minute, "exit with status 4, saying why, when no announcement from the data user arrives within this time (bootstrap unreachable, not admitted, wrong --user); 0 waits forever")
	fs.BoolVar(&f.noRing, "no-ring", def.NoRing, "refuse sessions whose secure sums are masked rings (a ring hides a value from one peer but not from its two ring neighbours together; choose Shamir when owners may collude)")
	f.colluders = colludersFlag{n: boost.ColludersAll, min: 1}
	fs.Var(&f.colluders, "colluders", "how many co-dealers of a noisy sum this owner assumes may share what they see with the data user: all (default: whatever it deals is DP on its own, safe against sybils) or N >= 1 (closed deployments with --allow: noise sized for max(1, dealer floor - N) honest dealers); sessions assuming fewer are refused")
	s.status.register(fs)
	fs.BoolVar(&f.allowNon, "allow-none", def.AllowNone, "take part in sessions that ask for shares without noise (mechanism none: tests and baselines); each such share is charged --eps")
	fs.StringVar(&f.config, configFlag, "", "JSON object of flag values, keys are flag names (see README); flags given on the command line override it")
	fs.BoolVar(&f.wc, "wc", true, "serve Wang & Chang sessions (ppboost user); --wc=false serves only the systems --fed and --pfds enable")
	f.fed.register(fs)
	f.pfds.register(fs)
}

// buildOwner turns `ppboost owner`'s command line into a validated setup:
// defaults < --config file (keys are flag names) < flags given on the
// command line. Every error names the flag.
func buildOwner(args []string, errOut io.Writer) (*ownerSetup, error) {
	fs := newFlagSet("owner", "owner --data FILE --key FILE --bootstrap ADDR --user PEERID --eps E --budget B --state DIR  (or --config FILE)", errOut)
	var f ownerFlags
	s := &ownerSetup{}
	f.register(fs, s)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if f.config != "" {
		if err := applyConfigFile(fs, f.config); err != nil {
			return nil, err
		}
	}
	if s.data == "" || f.user == "" {
		return nil, usagef("--data and --user are required")
	}
	if err := node.CheckPeerID(f.user); err != nil {
		return nil, usagef("--user %q is not a peer id (ppboost keygen prints the user's, 12D3KooW...): %v", f.user, err)
	}
	if !(f.eps > 0) || !(s.budget > 0) {
		return nil, usagef("--eps and --budget must be positive")
	}
	cfg := session.DefaultOwnerConfig()
	cfg.User, cfg.MaxEpsilon, cfg.NoRing = protocol.PeerID(f.user), f.eps, f.noRing
	cfg.AllowNone, cfg.NoneCharge = f.allowNon, f.eps
	cfg.Colluders = max(0, f.colluders.n)
	if !(f.sessionMax >= 0) || math.IsInf(f.sessionMax, 0) {
		return nil, usagef("--session-eps-max must be >= 0 and finite, got %v", f.sessionMax)
	}
	cfg.SessionMaxEpsilon, cfg.SessionCapAuto = f.sessionMax, f.sessionMax == 0
	s.cfg = cfg
	var err error
	if s.fed, err = f.fed.build(fs, &f); err != nil {
		return nil, err
	}
	if s.pfds, err = f.pfds.build(fs, &f); err != nil {
		return nil, err
	}
	if s.noWC = !f.wc; s.noWC && s.fed == nil && s.pfds == nil {
		return nil, usagef("--wc=false leaves no system to serve: add --fed or --pfds")
	}
	if s.noWC && s.status.addr != "" {
		return nil, usagef("--status shows the W&C session, and --wc=false runs none: drop one of them")
	}
	return s, nil
}

func runOwner(args []string, out, errOut io.Writer) error {
	s, err := buildOwner(args, errOut)
	if err != nil {
		return err
	}
	return s.run(errOut)
}

// ownerRun is a running owner's process state.
type ownerRun struct {
	*ownerSetup
	log      hclog.Logger
	host     *node.Host
	owner    *session.Owner
	outcomes chan protocol.Outcome
	refusals chan string
	heard    bool
}

func (s *ownerSetup) run(errOut io.Writer) error {
	log, err := s.logf.logger("owner", errOut)
	if err != nil {
		return err
	}
	if err := s.status.bind(context.Background()); err != nil {
		return err
	}
	defer s.status.closeUnused()
	d, err := loadOwnerData(s.data, s.schema, s.load, func(w string) { log.Warn(w) })
	if err != nil {
		return err
	}
	metrics := node.NewMetrics()
	// A Shamir committee member receives a stream from every owner of the
	// roster: size the node's limits for a few hundred peers.
	ncfg, err := s.net.config(s.expectPeers, log.Named("node"), metrics)
	if err != nil {
		return err
	}
	ncfg.AllowList = appendIfMissing(ncfg.AllowList, string(s.cfg.User))
	if s.fed != nil {
		ncfg.AllowList = appendIfMissing(ncfg.AllowList, string(s.fed.User))
	}
	if s.pfds != nil {
		ncfg.AllowList = appendIfMissing(ncfg.AllowList, string(s.pfds.announcer))
		// A PFDS tree or data share is up to pfds.MaxMessage bytes.
		ncfg.MaxMessage = max(ncfg.MaxMessage, pfds.MaxMessage+4096)
	}
	ledger, err := openLedger(filepath.Join(s.net.state, "ledger.jsonl"), s.budget, s.resetMark, "--", log.Named("ledger"))
	if err != nil {
		return err
	}
	defer ledger.Close() // after everything deferred below: the owner spends until it is closed
	ctx, stop := signalContext()
	defer stop()
	h, stopNode, err := s.net.start(ctx, ncfg, metrics, log)
	if err != nil {
		return err
	}
	defer stopNode()
	r := &ownerRun{ownerSetup: s, log: log, host: h, outcomes: make(chan protocol.Outcome, 16), refusals: make(chan string, 16)}
	var started atomic.Pointer[session.Owner] // set once StartOwner returned
	board := status.NewOwnerBoard(string(h.ID()), func() session.OwnerSnapshot {
		if o := started.Load(); o != nil {
			return o.Snapshot()
		}
		return session.OwnerSnapshot{}
	})
	cfg := s.cfg
	cfg.Data, cfg.Ledger, cfg.Admit, cfg.Observe, cfg.Log = d, metered{ledger, metrics}, admit(ncfg.AllowList), board.OwnerEvent, log
	// The release gate's noise secret comes from the identity key: a
	// restarted owner re-derives what it released before.
	if cfg.NoiseSecret, err = node.NoiseSecret(ncfg.KeyFile); err != nil {
		return err
	}
	cfg.OnOutcome = func(_ string, out protocol.Outcome) {
		select {
		case r.outcomes <- out:
		default:
		}
	}
	cfg.OnRefuse = func(s, reason string) {
		select {
		case r.refusals <- fmt.Sprintf("refused session %s: %s", s, reason):
		default:
		}
	}
	tr, extra, err := s.startRoles(h, d, cfg.Ledger, cfg.Admit, metrics, log) // h, or its W&C port beside others
	if err != nil {
		return err
	}
	defer extra.close()
	if s.noWC {
		log.Info("owner running without W&C (--wc=false)", "peer", string(h.ID()), "addrs", strings.Join(h.Addrs(), " "),
			"samples", d.Len(), "budget", s.budget, "spent", ledger.Spent())
		if s.stay {
			<-ctx.Done() // each role serves further sessions until interrupted
			return nil
		}
		return extra.finish(ctx, nil, false)
	}
	o, err := session.StartOwner(tr, cfg, role.WithDropHook(func(reason string) { metrics.Dropped("owner", reason) }))
	if err != nil {
		return err
	}
	if err := metrics.WatchDriver("owner", o.DriverStats); err != nil {
		o.Close()
		return err
	}
	started.Store(o)
	r.owner = o
	defer o.Close() // after the status page's last render (deferred below), before the node
	stopStatus := s.status.serve(ctx, board, log)
	sessionEnded := false
	defer func() { stopStatus(sessionEnded) }()
	log.Info("owner running", "peer", string(h.ID()), "addrs", strings.Join(h.Addrs(), " "), "samples", d.Len(),
		"budget", s.budget, "spent", ledger.Spent())
	sessionEnded, err = r.serve(ctx)
	return extra.finish(ctx, err, s.stay)
}

// resetMarkFlag is the flag of `owner` and `pfds agent` that accepts a
// ledger that lost records (store.LedgerOptions.ResetMark).
const resetMarkFlag = "ledger-reset-mark"

const resetMarkUsage = "accept, knowingly, a ledger that lost records (truncated, emptied, deleted, an older copy restored: it is behind its high-water mark, the .hwm file beside it, and the budget of the lost records can be spent again); logged at warn level; use it once, after restoring what can be restored"

// openLedger opens a budget ledger; one that lost records is refused
// with what was found and the two ways on (dash is the command's flag
// prefix).
func openLedger(path string, budget float64, resetMark bool, dash string, log hclog.Logger) (*store.FileLedger, error) {
	l, err := store.OpenLedgerWith(path, budget, log, store.LedgerOptions{ResetMark: resetMark})
	if errors.Is(err, store.ErrLedgerRolledBack) || errors.Is(err, store.ErrLedgerMissing) || errors.Is(err, store.ErrLedgerMarkCorrupt) {
		return nil, fmt.Errorf("%w; restore the newer ledger, or, to accept the loss knowingly (the budget of the lost records can then be spent again), run once with %s%s", err, dash, resetMarkFlag)
	}
	return l, err
}

// silent says why no announcement arrived within --wait.
func (r *ownerRun) silent() error {
	user, wait := r.cfg.User, r.wait
	if err := r.host.BootstrapErr(); err != nil {
		return fmt.Errorf("no announcement from the data user %s within %v: %w", user, wait, err)
	}
	if r.net.bootstrap == "" && !r.net.mdns {
		return fmt.Errorf("no announcement from the data user %s within %v: no --bootstrap address and no --mdns, so this node knows no peer", user, wait)
	}
	return fmt.Errorf("no announcement from the data user %s within %v, though this node reaches %d peers: is --user right, is the data user running and announcing, or did its session start without this owner?", user, wait, r.host.ConnectedPeers())
}

// waiting reports whether the owner has heard nothing from its data user.
func (r *ownerRun) waiting() bool {
	st, _ := r.owner.State()
	return !r.heard && st == session.OwnerIdle
}

// serve runs until the session ends (or, with --stay, until interrupted)
// and returns whether a session ended (the status page lingers) and the
// exit error. An owner that hears no announcement within --wait says why
// and exits 4 (with --stay it keeps trying and says why once a minute).
func (r *ownerRun) serve(ctx context.Context) (sessionEnded bool, err error) {
	var waitC <-chan time.Time
	if r.wait > 0 {
		waitC = time.After(r.wait)
	}
	var every <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			r.log.Info("stopping", "dropped", r.owner.Stats().String())
			return false, nil // interrupted: no linger
		case <-waitC:
			waitC = nil
			if !r.waiting() {
				continue
			}
			err := r.silent()
			if !r.stay {
				return false, refusedError{err}
			}
			r.log.Warn(err.Error() + "; still trying (--stay), said again once a minute")
			every = time.Tick(time.Minute)
		case <-every:
			if !r.waiting() {
				every = nil
				continue
			}
			r.log.Warn(r.silent().Error() + "; still trying (--stay)")
		case why := <-r.refusals:
			if done, err := r.refused(ctx, why); done {
				return true, err // the status page shows the refusal
			}
		case out := <-r.outcomes:
			// The session logged its outcome in the data user's words.
			r.heard = true
			if r.stay {
				r.log.Info("waiting for another session (--stay)", "dropped", r.owner.Stats().String())
				continue
			}
			r.log.Info("leaving", "dropped", r.owner.Stats().String())
			return true, out.Err() // complete 0, partial 3, failed 1
		}
	}
}

// refused handles a refused session: without --stay the owner lets its
// Refuse leave and exits 4.
func (r *ownerRun) refused(ctx context.Context, why string) (bool, error) {
	r.heard = true
	if r.stay {
		r.log.Info("waiting for another session (--stay)", "last", why)
		return false, nil
	}
	// The Refuse to the data user is queued: let it leave.
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	r.owner.Drain(dctx)
	cancel()
	return true, refusedError{errors.New(why)}
}

// admit turns the --allow list into the owner's roster check: with an
// allow-list, a roster naming any other peer is refused.
func admit(allow []string) func(protocol.PeerID) bool {
	if len(allow) == 0 {
		return nil
	}
	set := make(map[protocol.PeerID]bool, len(allow))
	for _, a := range allow {
		set[protocol.PeerID(a)] = true
	}
	return func(p protocol.PeerID) bool { return set[p] }
}

func appendIfMissing(list []string, s string) []string {
	if len(list) == 0 {
		return list // no allow-list configured: everyone may connect
	}
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// metered reports ledger spends to the metrics.
type metered struct {
	protocol.Ledger
	m *node.Metrics
}

func (l metered) Spend(session string, round, attempt uint32, eps float64) error {
	if err := l.Ledger.Spend(session, round, attempt, eps); err != nil {
		return err
	}
	l.m.SetBudgetSpent(l.Ledger.Spent())
	return nil
}
