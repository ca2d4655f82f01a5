package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/protocol"
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
func (n *netFlags) start(ctx context.Context, cfg node.Config, metrics *node.Metrics, log hclog.Logger) (*node.Host, *protocol.Outbox, func(), error) {
	if n.metrics != "" {
		// Bind before anything else starts: an address that cannot be bound
		// is a usage error, not a log line on a node that runs blind.
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", n.metrics)
		if err != nil {
			return nil, nil, nil, usagef("--metrics %q: %v", n.metrics, err)
		}
		go func() {
			if err := metrics.ServeListener(ctx, ln); err != nil {
				log.Error("metrics server", "err", err)
			}
		}()
	}
	h, err := node.New(ctx, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	post := protocol.NewOutbox(h, 10*time.Second, log.Named("outbox"))
	return h, post, func() { post.Close(); h.Close() }, nil
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

func runOwner(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("owner", "owner --data FILE --key FILE --bootstrap ADDR --user PEERID --eps E --budget B --state DIR  (or --config FILE)", errOut)
	var nf netFlags
	nf.register(fs, "/ip4/0.0.0.0/tcp/0,/ip4/0.0.0.0/udp/0/quic-v1")
	var lf logFlags
	lf.register(fs)
	data := fs.String("data", "", "the owner's private data, CSV (required)")
	schema := fs.String("schema", "", "public feature schema (default: schema.json next to --data)")
	var ldf loadFlags
	ldf.register(fs)
	user := fs.String("user", "", "peer id of the data user this owner works for (required)")
	// The defaults fit a data user's defaults (--eps 5): an owner with
	// default flags can give one share of a default session.
	eps := fs.Float64("eps", 5, "largest epsilon this owner spends on one share (sessions asking for more are not joined)")
	budget := fs.Float64("budget", 5, "lifetime privacy budget, enforced by the ledger across sessions and restarts")
	expectPeers := fs.Int("expect-peers", 256, "peers this owner may talk to (the session's owners): sizes connection and stream limits")
	stay := fs.Bool("stay", false, "keep running after a session ends (final model, abort or idle timeout), after a refused session and without announcements, and serve further sessions")
	wait := fs.Duration("wait", 2*time.Minute, "exit with status 4, saying why, when no announcement from the data user arrives within this time (bootstrap unreachable, not admitted, wrong --user); 0 waits forever")
	noRing := fs.Bool("no-ring", false, "refuse sessions whose secure sums are masked rings (a ring hides a value from one peer but not from its two ring neighbours together; choose Shamir when owners may collude)")
	colluders := colludersFlag{n: boost.ColludersAll, min: 1}
	fs.Var(&colluders, "colluders", "how many co-dealers of a noisy sum this owner assumes may share what they see with the data user: all (default: whatever it deals is DP on its own, safe against sybils) or N >= 1 (closed deployments with --allow: noise sized for max(1, dealer floor - N) honest dealers); sessions assuming fewer are refused")
	var sf statusFlags
	sf.register(fs)
	allowNone := fs.Bool("allow-none", false, "take part in sessions that ask for shares without noise (mechanism none: tests and baselines); each such share is charged --eps")
	config := fs.String(configFlag, "", "JSON object of flag values, keys are flag names (see README); flags given on the command line override it")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *config != "" {
		if err := applyConfigFile(fs, *config); err != nil {
			return err
		}
	}
	if *data == "" || *user == "" {
		return usagef("--data and --user are required")
	}
	if err := node.CheckPeerID(*user); err != nil {
		return usagef("--user %q is not a peer id (ppboost keygen prints the user's, 12D3KooW...): %v", *user, err)
	}
	if !(*eps > 0) || !(*budget > 0) {
		return usagef("--eps and --budget must be positive")
	}
	log, err := lf.logger("owner", errOut)
	if err != nil {
		return err
	}
	if err := sf.bind(context.Background()); err != nil {
		return err
	}
	defer sf.closeUnused()
	d, err := loadOwnerData(*data, *schema, ldf, func(w string) { log.Warn(w) })
	if err != nil {
		return err
	}
	metrics := node.NewMetrics()
	// A Shamir committee member receives a stream from every owner of the
	// roster: size the node's limits for a few hundred peers.
	cfg, err := nf.config(*expectPeers, log.Named("node"), metrics)
	if err != nil {
		return err
	}
	cfg.AllowList = appendIfMissing(cfg.AllowList, *user)
	ledger, err := store.OpenLedger(filepath.Join(nf.state, "ledger.jsonl"), *budget, log.Named("ledger"))
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	h, post, stopNode, err := nf.start(ctx, cfg, metrics, log)
	if err != nil {
		return err
	}
	defer stopNode()
	outcomes := make(chan protocol.Outcome, 16)
	refusals := make(chan string, 16)
	var o *session.Owner
	board := status.NewOwnerBoard(string(h.ID()), func() session.OwnerSnapshot { return o.Snapshot() })
	o, err = session.NewOwner(h.ID(), post, session.OwnerConfig{
		User: protocol.PeerID(*user), Data: d, Ledger: metered{ledger, metrics}, MaxEpsilon: *eps,
		AllowNone: *allowNone, NoneCharge: *eps, Admit: admit(cfg.AllowList), NoRing: *noRing,
		Colluders: max(0, colluders.n), Observe: board.OwnerEvent,
		Log: log,
		OnOutcome: func(_ string, out protocol.Outcome) {
			select {
			case outcomes <- out:
			default:
			}
		},
		OnRefuse: func(s, reason string) {
			select {
			case refusals <- fmt.Sprintf("refused session %s: %s", s, reason):
			default:
			}
		},
	})
	if err != nil {
		return err
	}
	o.Stats().SetHook(func(reason string) { metrics.Dropped("owner", reason) })
	defer o.Close() // after the status page's last render (deferred below), before the node
	stopStatus := sf.serve(ctx, board, log)
	sessionEnded := false
	defer func() { stopStatus(sessionEnded) }()
	if err := o.Attach(h); err != nil {
		return err
	}
	log.Info("owner running", "peer", string(h.ID()), "addrs", strings.Join(h.Addrs(), " "), "samples", d.Len(),
		"budget", *budget, "spent", ledger.Spent())
	// An owner that hears no announcement within --wait says why and exits
	// 4 (with --stay it keeps trying and says why once a minute).
	var waitC <-chan time.Time
	if *wait > 0 {
		waitC = time.After(*wait)
	}
	var every <-chan time.Time
	heard := false
	silent := func() error {
		if err := h.BootstrapErr(); err != nil {
			return fmt.Errorf("no announcement from the data user %s within %v: %w", *user, *wait, err)
		}
		if nf.bootstrap == "" && !nf.mdns {
			return fmt.Errorf("no announcement from the data user %s within %v: no --bootstrap address and no --mdns, so this node knows no peer", *user, *wait)
		}
		return fmt.Errorf("no announcement from the data user %s within %v, though this node reaches %d peers: is --user right, is the data user running and announcing, or did its session start without this owner?", *user, *wait, h.ConnectedPeers())
	}
	for {
		select {
		case <-ctx.Done():
			sessionEnded = false // interrupted: no linger
			log.Info("stopping", "dropped", o.Stats().String())
			return nil
		case <-waitC:
			waitC = nil
			if st, _ := o.State(); heard || st != session.OwnerIdle {
				continue
			}
			err := silent()
			if !*stay {
				return refusedError{err}
			}
			log.Warn(err.Error() + "; still trying (--stay), said again once a minute")
			every = time.Tick(time.Minute)
		case <-every:
			if st, _ := o.State(); heard || st != session.OwnerIdle {
				every = nil
				continue
			}
			log.Warn(silent().Error() + "; still trying (--stay)")
		case why := <-refusals:
			heard = true
			if !*stay {
				sessionEnded = true // the status page shows the refusal
				// The Refuse to the data user is queued: let it leave.
				dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				post.Drain(dctx)
				cancel()
				return refusedError{errors.New(why)}
			}
			log.Info("waiting for another session (--stay)", "last", why)
		case out := <-outcomes:
			// The session logged its outcome in the data user's words.
			heard, sessionEnded = true, true
			if *stay {
				log.Info("waiting for another session (--stay)", "dropped", o.Stats().String())
				continue
			}
			log.Info("leaving", "dropped", o.Stats().String())
			return out.Err() // complete 0, partial 3, failed 1
		}
	}
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
