package cli

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/role"
	"github.com/ppboost/ppboost/protocol/wire"
)

// One host, several roles: `ppboost owner --fed --pfds` runs a Wang & Chang
// owner, a federated DPBoost owner and a PFDS agent on the same libp2p host
// through a protocol.Mux (each role gets a port claiming its system's topics
// and protocol IDs, wire.WC, wire.Fed and wire.PFDS). The roles use the
// owner's one identity, its --data and its one ledger: the ledger records
// every spend under a key that names the session (W&C `<session>` and
// `<session>/err/<r>/<a>`, federated `<session>/ensemble-<e>` or
// `<session>/newton`, PFDS `<session>`), refuses a key twice and holds the
// owner's lifetime budget across the systems, so two sessions can never spend the same
// record, and one whose key collides with another's is refused, not
// released uncharged (TestOneLedgerForTwoSystems).

// fedOwnerFlags are `ppboost owner`'s flags for the federated role.
type fedOwnerFlags struct {
	on   bool
	user string
	eps  float64
}

func (f *fedOwnerFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "fed", false, "also serve federated DPBoost sessions (ppboost fed-user) on the same libp2p host, with the same identity, --data, ledger and --budget; the owner exits once both roles' sessions ended")
	fs.StringVar(&f.user, "fed-user", "", "peer id of the federated DPBoost data user (default: --user)")
	epsVar(fs, &f.eps, "fed-eps", 0, "largest epsilon the federated role spends per ensemble (its tree's eps_t) (default: --eps)")
}

// build is the federated role's configuration from the flags (nil without
// --fed), before the runner adds data, ledger and hooks. Errors name the
// flag.
func (f *fedOwnerFlags) build(fs *flag.FlagSet, of *ownerFlags) (*fedboost.OwnerConfig, error) {
	if !f.on {
		for _, name := range []string{"fed-user", "fed-eps"} {
			if isFlagSet(fs, name) {
				return nil, usagef("--%s needs --fed", name)
			}
		}
		return nil, nil
	}
	user, eps := f.user, f.eps
	if user == "" {
		user = of.user
	}
	if err := node.CheckPeerID(user); err != nil {
		return nil, usagef("--fed-user %q is not a peer id: %v", user, err)
	}
	if !isFlagSet(fs, "fed-eps") {
		eps = of.eps
	}
	if !(eps > 0) {
		return nil, usagef("--fed-eps must be positive, got %v", eps)
	}
	cfg := fedboost.DefaultOwnerConfig()
	cfg.User, cfg.MaxEpsilon = protocol.PeerID(user), eps
	cfg.AllowNoNoise, cfg.NoneCharge = of.allowNon, eps
	cfg.Colluders = max(0, of.colluders.n)
	cfg.SessionMaxEpsilon, cfg.SessionCapAuto = of.sessionMax, of.sessionMax == 0
	return &cfg, nil
}

// roleEnd is how one extra role's session ended: its name and its exit
// error (nil: complete).
type roleEnd struct {
	name string
	err  error
}

// extraRoles are the roles an owner serves besides W&C.
type extraRoles struct {
	mux  *protocol.Mux
	fed  *fedboost.Owner
	user protocol.PeerID // the federated role's data user
	pfds *pfdsRole
	ends chan roleEnd
	wait time.Duration
	log  hclog.Logger
}

// startRoles returns the transport the W&C owner runs on: h itself when the
// owner serves W&C alone, else a mux port, with the federated owner (--fed)
// and the PFDS agent (--pfds) started on their sibling ports (same data,
// ledger, admission and drop metrics).
func (s *ownerSetup) startRoles(h *node.Host, d *dataset.Dataset, ledger protocol.Ledger, admit func(protocol.PeerID) bool,
	metrics *node.Metrics, log hclog.Logger) (protocol.Transport, *extraRoles, error) {
	x := &extraRoles{ends: make(chan roleEnd, 8), wait: s.wait, log: log}
	if s.fed == nil && s.pfds == nil {
		return h, x, nil
	}
	x.mux = protocol.NewMux(h)
	wc, err := x.mux.System(wire.WC())
	if err != nil {
		return nil, nil, err
	}
	if s.fed != nil {
		if err := x.startFed(s, d, ledger, admit, metrics, log); err != nil {
			return nil, nil, err
		}
	}
	if s.pfds != nil {
		port, err := x.mux.System(wire.PFDS())
		if err != nil {
			x.close()
			return nil, nil, err
		}
		if x.pfds, err = startPFDS(port, *s.pfds, d, ledger, admit, metrics, s.stay, x.ends, log.Named("pfds")); err != nil {
			x.close()
			return nil, nil, err
		}
	}
	var systems []any
	if !s.noWC {
		systems = append(systems, "wc_user", string(s.cfg.User))
	}
	if s.fed != nil {
		systems = append(systems, "fed_user", string(x.user))
	}
	if s.pfds != nil {
		systems = append(systems, "pfds_announcer", string(s.pfds.announcer))
	}
	log.Info(fmt.Sprintf("serving %d systems on one host", len(systems)/2), systems...)
	return wc, x, nil
}

// startFed starts the federated owner on its port.
func (x *extraRoles) startFed(s *ownerSetup, d *dataset.Dataset, ledger protocol.Ledger, admit func(protocol.PeerID) bool,
	metrics *node.Metrics, log hclog.Logger) error {
	fedPort, err := x.mux.System(wire.Fed())
	if err != nil {
		return err
	}
	cfg := *s.fed
	x.user = cfg.User
	cfg.Data, cfg.Ledger, cfg.Admit, cfg.Log = d, ledger, admit, log.Named("fed")
	if cfg.NoiseSecret, err = node.NoiseSecret(s.net.key); err != nil {
		return err
	}
	cfg.OnOutcome = func(out protocol.Outcome) {
		select {
		case x.ends <- roleEnd{"fed", out.Err()}:
		default:
		}
	}
	x.fed, err = fedboost.StartOwner(fedPort, cfg, role.WithDropHook(func(reason string) { metrics.Dropped("fed owner", reason) }))
	if err != nil {
		return err
	}
	if err := metrics.WatchDriver("fed owner", x.fed.DriverStats); err != nil {
		x.fed.Close()
		x.fed = nil
		return err
	}
	return nil
}

// idle reports whether the extra role name has heard no announcement.
func (x *extraRoles) idle(name string) bool {
	switch name {
	case "fed":
		return x.fed.State() == fedboost.OwnerIdle
	case "pfds":
		return x.pfds.idle()
	}
	return false
}

// from names the peer an extra role waits for.
func (x *extraRoles) from(name string) string {
	switch name {
	case "fed":
		return fmt.Sprintf("no federated session from %s", x.user)
	case "pfds":
		return fmt.Sprintf("no PFDS announcement from %s", x.pfds.opt.announcer)
	}
	return "no session"
}

// finish waits for the extra roles' sessions to end (each bounded by --wait
// until it hears an announcement, then by its session's own timeouts; --stay
// or an interrupt: until ctx ends), logs each role's end and returns the
// owner's exit error: the W&C role's wcErr combined with theirs, the worst
// first (failed 1, then refused or silent 4, then partial 3).
func (x *extraRoles) finish(ctx context.Context, wcErr error, stay bool) error {
	pending := map[string]bool{}
	if x.fed != nil {
		pending["fed"] = true
	}
	if x.pfds != nil {
		pending["pfds"] = true
	}
	worst := wcErr
	if len(pending) == 0 || ctx.Err() != nil || stay {
		return worst // interrupted (with --stay, the only way out)
	}
	var waitC <-chan time.Time
	if x.wait > 0 {
		waitC = time.After(x.wait)
	}
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			return worst
		case <-waitC:
			waitC = nil
			for _, name := range []string{"fed", "pfds"} {
				if !pending[name] || !x.idle(name) {
					continue // in a session: its own timeouts end it
				}
				err := refusedError{fmt.Errorf("%s: %s within %v", name, x.from(name), x.wait)}
				x.log.Warn(err.Error())
				worst = worse(worst, err)
				delete(pending, name)
			}
		case end := <-x.ends:
			if !pending[end.name] {
				continue
			}
			delete(pending, end.name)
			code := exitOK
			if end.err != nil {
				code, end.err = exitCode(end.err), fmt.Errorf("%s: %w", end.name, end.err)
			}
			x.log.Info("role finished", "role", end.name, "exit", code)
			worst = worse(worst, end.err)
		}
	}
	return worst
}

// close stops the extra roles (before the host closes). Idempotent.
func (x *extraRoles) close() {
	if x.fed != nil {
		x.fed.Close()
	}
	if x.pfds != nil {
		x.pfds.close()
	}
}

// worse is the error with the worse exit status: failed (1) over refused
// (4) over partial (3) over complete (nil).
func worse(a, b error) error {
	rank := func(err error) int {
		if err == nil {
			return 0
		}
		switch exitCode(err) {
		case exitError:
			return 3
		case exitRefused:
			return 2
		case exitPartial:
			return 1
		}
		return 0
	}
	if a == nil || (b != nil && rank(b) > rank(a)) {
		return b
	}
	return a
}
