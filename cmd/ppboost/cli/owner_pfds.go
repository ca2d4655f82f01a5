package cli

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/go-hclog"

	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/pfds"
	"github.com/ppboost/ppboost/protocol/role"
)

// The PFDS role of `ppboost owner --pfds`: a PFDS agent (protocol/pfds) on
// the owner's host, beside the W&C owner and, with --fed, the federated
// owner, through the same protocol.Mux (wire.PFDS(): the PFDS topic). It
// uses the owner's identity, its --data (all rows: the owner's shard is
// its data), its ledger (the agent charges `<session>` of the PFDS
// announcement, once) and its metrics; the announcer is pinned like the
// data users (--pfds-announcer, default --user) and added to an --allow
// list. Each announcement is one session: the agent joins it, publishes
// its tree and data share, and when the session ends trains its final
// predictor on its own rows and the shares it received (the learner from
// the announcement, --pfds-lambda), writes it to --pfds-model and reports
// the session's end to the owner (extraRoles). With --stay a fresh agent
// then waits for the next announcement.
//
// PFDS agents need no address of one another: every message travels on
// gossipsub, which the announcer (subscribed to the topic) relays to the
// agents connected to it, and the announcement relays where the agents
// listen (roster_addrs), so each agent also connects to the others.

// pfdsOwnerFlags are `ppboost owner`'s flags for the PFDS role.
type pfdsOwnerFlags struct {
	on        bool
	announcer string
	eps       float64
	lambda    float64
	model     string
}

func (f *pfdsOwnerFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "pfds", false, "also serve PFDS sessions (ppboost pfds announce) as an agent on the same libp2p host, with the same identity, --data, ledger and --budget; the owner exits once every enabled role's session ended")
	fs.StringVar(&f.announcer, "pfds-announcer", "", "peer id of the PFDS announcer whose sessions this owner joins (default: --user)")
	epsVar(fs, &f.eps, "pfds-eps", 0, "largest epsilon the PFDS role spends in one session (a PFDS session charges its announced eps once) (default: --eps)")
	fs.Float64Var(&f.lambda, "pfds-lambda", 1e-3, "L2 weight of the PFDS role's final ERM on its own rows and the shares (the learner, logreg or svm, comes from the announcement)")
	fs.StringVar(&f.model, "pfds-model", "", "write the PFDS role's final predictor to this file after each session (ppboost predict reads it)")
}

// pfdsOwner is the PFDS role's configuration from the flags.
type pfdsOwner struct {
	announcer protocol.PeerID
	maxEps    float64 // the agent's SessionMaxEpsilon
	lambda    float64
	model     string
}

// build is the PFDS role's configuration (nil without --pfds). Errors name
// the flag.
func (f *pfdsOwnerFlags) build(fs *flag.FlagSet, of *ownerFlags) (*pfdsOwner, error) {
	if !f.on {
		for _, name := range []string{"pfds-announcer", "pfds-eps", "pfds-lambda", "pfds-model"} {
			if isFlagSet(fs, name) {
				return nil, usagef("--%s needs --pfds", name)
			}
		}
		return nil, nil
	}
	ann := f.announcer
	if ann == "" {
		ann = of.user
	}
	if err := node.CheckPeerID(ann); err != nil {
		return nil, usagef("--pfds-announcer %q is not a peer id: %v", ann, err)
	}
	eps := f.eps
	if !isFlagSet(fs, "pfds-eps") {
		eps = of.eps
	}
	if of.sessionMax > 0 {
		eps = min(eps, of.sessionMax)
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, usagef("--pfds-eps must be positive and finite, got %v", eps)
	}
	if !(f.lambda >= 0) || math.IsInf(f.lambda, 0) {
		return nil, usagef("--pfds-lambda must be >= 0 and finite, got %v", f.lambda)
	}
	if f.model != "" {
		if st, err := os.Stat(filepath.Dir(f.model)); err != nil || !st.IsDir() {
			return nil, usagef("--pfds-model %s: directory %s does not exist", f.model, filepath.Dir(f.model))
		}
	}
	return &pfdsOwner{announcer: protocol.PeerID(ann), maxEps: eps, lambda: f.lambda, model: f.model}, nil
}

// pfdsRole runs the owner's PFDS agents, one per session, on the PFDS port.
type pfdsRole struct {
	opt    pfdsOwner
	port   protocol.Transport
	self   protocol.PeerID
	data   *dataset.Dataset
	cfg    pfds.Config // the next agent's configuration
	onDrop func(string)
	stay   bool
	ends   chan<- roleEnd
	log    hclog.Logger

	mu      sync.Mutex
	drv     *pfds.Driver // the current session's
	closing chan struct{}
	stopped chan struct{}
	once    sync.Once
}

// startPFDS starts the PFDS role on port: data d, the owner's ledger,
// metrics and log. Errors name the flag.
func startPFDS(port protocol.Transport, opt pfdsOwner, d *dataset.Dataset, ledger protocol.Ledger, admit func(protocol.PeerID) bool, metrics *node.Metrics,
	stay bool, ends chan<- roleEnd, log hclog.Logger) (*pfdsRole, error) {
	dom, err := bp.NewDomain(d)
	if err != nil {
		return nil, usagef("--pfds: --data cannot be a PFDS agent's data: %v", err)
	}
	r := &pfdsRole{opt: opt, port: port, self: port.ID(), data: d, stay: stay, ends: ends, log: log,
		closing: make(chan struct{}), stopped: make(chan struct{}),
		onDrop: func(reason string) { metrics.Dropped("pfds agent", reason) }}
	r.cfg = pfds.Config{ID: port.ID(), Announcer: opt.announcer, Domain: dom, Schema: d.Schema.Digest(),
		Data: bp.Local{X: d.X, Y: d.Y}, Ledger: ledger, Admit: admit, SessionMaxEpsilon: opt.maxEps, Log: log}
	drv, err := r.newAgent()
	if err != nil {
		return nil, err
	}
	r.drv = drv
	if err := metrics.WatchDriver("pfds agent", func() engine.Stats { return r.current().Stats() }); err != nil {
		drv.Close()
		return nil, err
	}
	go r.loop(drv)
	return r, nil
}

// newAgent starts an idle agent on the port (its handler, validator and
// topic replace the previous agent's).
func (r *pfdsRole) newAgent() (*pfds.Driver, error) {
	cfg := r.cfg
	cfg.Rand = rng.Secure()
	a, err := pfds.NewAgent(cfg)
	if err != nil {
		return nil, fmt.Errorf("pfds: %w", err)
	}
	drv, err := pfds.Start(r.port, a, r.log, role.WithDropHook(r.onDrop))
	if err != nil {
		return nil, fmt.Errorf("pfds: %w", err)
	}
	return drv, nil
}

func (r *pfdsRole) current() *pfds.Driver {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.drv
}

// loop waits for each session's end, finishes it and reports it; with
// --stay it first starts the next agent, so an announcement that follows
// the report finds an agent listening.
func (r *pfdsRole) loop(drv *pfds.Driver) {
	defer close(r.stopped)
	for {
		select {
		case <-r.closing:
			return
		case <-drv.Done():
		}
		end := roleEnd{"pfds", r.finishSession(drv)}
		var next *pfds.Driver
		if r.stay {
			var err error
			if next, err = r.newAgent(); err != nil {
				r.log.Error("cannot wait for another PFDS session", "err", err)
			} else {
				r.mu.Lock()
				r.drv = next
				r.mu.Unlock()
				drv.Close()
				r.log.Info("waiting for another PFDS session (--stay)")
			}
		}
		select {
		case r.ends <- end:
		default:
		}
		if next == nil {
			return
		}
		drv = next
	}
}

// finishSession trains the predictor of an ended session, writes it to
// --pfds-model and returns the session's exit error: refused 4, failed 1,
// partial 3 (trained on what arrived), complete nil. The agent's lifecycle
// has logged the outcome ("owner.pfds: session ended: ...").
func (r *pfdsRole) finishSession(drv *pfds.Driver) error {
	var (
		oc             protocol.Outcome
		ann            *pfds.Announce
		m              *bp.Model
		refused, train error
		shares         int
	)
	drv.Agent(func(a *pfds.Agent) {
		oc, ann = a.Outcome(), a.Announcement()
		if a.State() == pfds.StateFailed {
			if a.Refused {
				refused = a.Err
			}
			return
		}
		shares = len(a.Shares())
		m, train = a.Train(r.opt.lambda)
	})
	session := "?"
	if ann != nil {
		session = ann.Session
	}
	switch {
	case refused != nil:
		err := fmt.Errorf("refused session %s: %w", session, refused)
		r.log.Warn(err.Error())
		return refusedError{err}
	case oc.Kind == protocol.OutcomeFailed:
		return oc.Err()
	case train != nil:
		return fmt.Errorf("session %s: training the final predictor: %w", session, train)
	}
	own := testError(r.cfg.Data, m.Class)
	r.log.Info("predictor trained", "session", session, "learner", ann.Learner.String(), "shares", shares,
		"roster", len(ann.Roster), "train_error_own", own, "lambda", r.opt.lambda)
	if r.opt.model != "" {
		agent := 0
		for i, id := range ann.Roster {
			if id == r.self {
				agent = i
			}
		}
		// The fill values are this owner's own, as the file is.
		if err := bp.NewModelFile(m, agent, r.data, dataset.FillOf(r.data)).Save(r.opt.model); err != nil {
			return fmt.Errorf("--pfds-model: %w", err)
		}
		r.log.Info("predictor written", "file", r.opt.model)
	}
	return oc.Err() // complete nil, partial 3
}

// idle reports whether the current agent has heard no announcement.
func (r *pfdsRole) idle() bool {
	idle := false
	r.current().Agent(func(a *pfds.Agent) { idle = a.State() == pfds.StateIdle })
	return idle
}

// close stops the loop and the current agent. Idempotent.
func (r *pfdsRole) close() {
	r.once.Do(func() {
		close(r.closing)
		<-r.stopped
		r.current().Close()
	})
}
