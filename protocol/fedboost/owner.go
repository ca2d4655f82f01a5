package fedboost

import (
	"errors"
	"fmt"
	"github.com/ppboost/ppboost/boost"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/dpnoise"
	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/lifecycle"
	"github.com/ppboost/ppboost/protocol/release"
	"github.com/ppboost/ppboost/protocol/role"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// OwnerState is where an owner is: lifecycle.OwnerState, the owner's
// phase folded into idle, joined and done.
type OwnerState = lifecycle.OwnerState

const (
	OwnerIdle   = lifecycle.OwnerIdle
	OwnerJoined = lifecycle.OwnerJoined
	OwnerDone   = lifecycle.OwnerDone
)

// OwnerConfig configures a data owner of federated DPBoost.
type OwnerConfig struct {
	User   protocol.PeerID  // the pinned data user
	Data   *dataset.Dataset // private rows, features scaled to [-1, 1]
	Ledger protocol.Ledger
	// MaxEpsilon is the most this owner spends per ensemble (its tree's eps_t).
	MaxEpsilon float64
	// AllowNoNoise lets the owner take part in a session without noise
	// (np: baselines and tests), charged NoneCharge per ensemble.
	AllowNoNoise bool
	NoneCharge   float64
	// MinParties is the smallest dealer set this owner helps reveal; a
	// session announcing less is refused.
	MinParties int
	// Admit, if set, must accept every roster member.
	Admit func(protocol.PeerID) bool
	// Colluders is the most co-dealers this owner assumes may share what
	// they see with the data user; 0 means all (the default: its shares
	// must be DP on their own). A session whose shares are sized for more
	// honest dealers than this bound leaves is refused.
	Colluders int
	// NoiseSecret keys this owner's noise shares: the release gate draws
	// the noise of each named value from HMAC(secret, name), so the same
	// name gets the same noise whatever the data user sends and across
	// restarts (empty: 32 random bytes, this process only). SumRand masks
	// and Shamir coefficients (nil: rng.Secure).
	NoiseSecret []byte
	SumRand     *rand.Rand
	// SessionMaxEpsilon is the most this owner spends in one session (0:
	// no cap below the lifetime budget): a session whose plan costs more is
	// refused at join, and a charge past it is refused while running.
	SessionMaxEpsilon float64
	// SessionCapAuto, when SessionMaxEpsilon is 0, caps each session at
	// its own plan's cost (every ensemble's charge, or the Newton charge).
	SessionCapAuto bool
	// OnGate, if set, is called once with the owner's release gate (tests:
	// negative controls switch its memory off).
	OnGate  func(*release.Values)
	Clock   protocol.Clock
	Log     hclog.Logger
	OnFinal func(*dpboost.Model)
	// OnOutcome, if set, is told how every session this owner leaves ended
	// (the data user's outcome from Final or Abort; its own on the idle
	// timeout), after OnFinal.
	OnOutcome func(protocol.Outcome)
}

// Owner is an owner's side of a federated DPBoost session: an
// engine.Machine (Receive, Fire) run by an engine.Runner on its own
// engine.Driver. The machine keeps only fed's round logic — the trees it
// applies, the sums it deals into — and leaves the session's lifecycle to
// its lifecycle.Session: the phase (Idle → Admitting → Running → Done, or
// Aborted then Idle), the idle timer (lifecycle.TimerIdle, re-armed
// whenever the data user speaks), the reorder buffer for SumStarts and
// trees that overtake what they depend on, the release gate every ledger
// charge goes through, drops and the end. Its secure-sum party writes into
// the same Out. OwnerState is derived from the phase.
type Owner struct {
	cfg      OwnerConfig
	self     protocol.PeerID
	log      hclog.Logger
	run      *engine.Runner
	rolePost *role.Post // what Start made (nil from New…): closed after the driver
	// book, when the transport has one (StartOwner), is told where the
	// roster's members listen (Public.RosterAddrs) as the owner joins.
	book protocol.AddressBook
	// tr is the transport (StartOwner), asked to prepare and expect the
	// sums' connections (prepare.go); prepared are the peers it was asked
	// to dial, released when the session ends. Both are the runner's.
	tr       protocol.Transport
	prepared []protocol.PeerID
	stats    protocol.Counters
	life     lifecycle.Session

	pub     *Public
	binning *dpboost.Binning
	data    *dpboost.Binned
	y, F    []float64        // F: the scores, row-major, boosters per row
	labels  []int            // class indices (the softmax gradients of K > 2 classes)
	boost   int              // boosters: 1, or K for a Newton session of K > 2 classes
	party   *securesum.Party // the current tree's (each tree has its own dealer floor)
	partyT  int
	dealing *dealing // the charged value of the sum being begun (read by the Env.Noise hook)
	trees   map[int]*partial
	applied int // trees whose leaves are in F
	spent   map[int]int
	pending lifecycle.Reorder[*wire.Envelope]
	heard   bool // the data user spoke in this transition: re-arm the idle timer once
	// The configuration tree (cfgtree.go): the digest the user's latest
	// head names and its session, forwarded configurations held for a
	// head, and the digests this owner forwarded.
	head        []byte
	headSession string
	held        []heldConfig
	forwarded   map[string]bool
	asked       string // the session whose configuration this owner asked the user for
	asks        int    // how often it asked (maxConfigAsks)
	have        string // the session whose configuration it took last
	acked       string // the session whose configuration it told the user it holds (ackConfig)
	ackAfter    string // the session whose ack waits for its prepared connections (inputPrepared)
	moves       moves
	final       *dpboost.Model

	status atomic.Pointer[ownerStatus] // status.go
}

var _ engine.Machine = (*Owner)(nil)

// maxPending bounds the SumStarts and trees kept until what they depend on
// arrives (gossip does not preserve order).
const maxPending = 1024

// NewOwner prepares an owner; Attach connects it.
func NewOwner(self protocol.PeerID, post protocol.Poster, cfg OwnerConfig) (*Owner, error) {
	cfg = cfg.withRuntimeDefaults() // defaults.go
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &Owner{cfg: cfg, self: self, log: cfg.Log.With("peer", string(self))}
	o.life = lifecycle.Session{Ledger: cfg.Ledger, Drops: &o.stats, Log: o.log,
		Values: role.NewValues(cfg.Ledger, cfg.NoiseSecret, cfg.SessionMaxEpsilon)}
	if cfg.OnGate != nil {
		cfg.OnGate(o.life.Values)
	}
	o.pending.Max = maxPending
	o.run = engine.NewRunner(newDriver(cfg.Clock, &o.stats, o.publishStatus), o, post,
		engine.RunnerOptions{OnNotify: o.notify})
	o.publishStatus()
	return o, nil
}

// notify maps the machine's notifications to the configured callbacks:
// the final model (OnFinal), then how the session ended (OnOutcome).
func (o *Owner) notify(n engine.Notify) {
	switch v := n.Value.(type) {
	case *dpboost.Model:
		if o.cfg.OnFinal != nil {
			o.cfg.OnFinal(v)
		}
	case sumPeers:
		o.applySumPeers(v)
	case protocol.Outcome:
		if u, ok := o.tr.(protocol.Unpreparer); ok && len(o.prepared) > 0 {
			// The session's connections may be trimmed again.
			u.Unprepare(o.prepared)
			o.prepared = nil
		}
		if o.cfg.OnOutcome != nil {
			o.cfg.OnOutcome(v)
		}
	}
}

// Attach installs the owner as tr's handler and joins the control topic
// (validated: only the pinned user's messages).
func (o *Owner) Attach(tr protocol.Transport) error {
	tr.SetHandler(o.Handle)
	if v, ok := tr.(protocol.Validating); ok {
		user := o.cfg.User
		if err := v.SetTopicValidator(wire.TopicFedControl, func(from protocol.PeerID, data []byte) protocol.Verdict {
			if from != user {
				o.stats.Inc("validator: control not from user")
				return protocol.Reject
			}
			return protocol.Accept
		}); err != nil {
			return err
		}
	}
	return tr.Join(wire.TopicFedControl)
}

// Handle queues one inbound message on the owner's driver.
// It returns at once (a full inbox drops, "loop: inbox full").
func (o *Owner) Handle(m protocol.Message) { o.run.Deliver(m) }

// Stats are the owner's drop counters.
func (o *Owner) Stats() *protocol.Counters { return &o.stats }

// DriverStats is the saturation of the role's driver (engine.Stats).
func (o *Owner) DriverStats() engine.Stats { return o.run.Driver().Stats() }

// state is the owner's OwnerState, derived from its phase: joined from the
// announcement to the end, done once the Final arrived, idle otherwise
// (an abort or the idle timeout leaves at once).
func (o *Owner) state() OwnerState { return lifecycle.OwnerStateOf(o.life.Phase()) }

// drop counts and logs a refused input and returns err (Receive's error).
func (o *Owner) drop(reason string, err error) error {
	o.life.Drop(reason, "err", err)
	return err
}

// Receive applies one inbound message (engine.Machine). A refused message
// is counted under its reason (Stats) and returned as the error; a control
// message that waits for one it depends on is held (no error). A message
// of the joined session from the data user re-arms the idle timer even when
// its content is refused: the user is alive.
func (o *Owner) Receive(now time.Time, m engine.Message) ([]engine.Effect, error) {
	o.life.Begin(now)
	o.moves.begin(&o.life)
	err := o.handle(m)
	return o.life.Take(), err
}

// Fire applies the expiry of the owner's idle timer (engine.Machine): an
// owner that heard nothing from the data user for the session's
// IdleTimeout ends the session with its own failed outcome and leaves.
func (o *Owner) Fire(now time.Time, name string) ([]engine.Effect, error) {
	o.life.Begin(now)
	o.moves.begin(&o.life)
	if name == timerConfig {
		// The head came and the configuration did not, or a request's
		// answer did not (cfgtree.go).
		o.configTimer()
		return o.life.Take(), nil
	}
	if name != lifecycle.TimerIdle {
		return nil, fmt.Errorf("fed owner: %w %q", errUnknownTimer, name)
	}
	// Heard arms nothing: IdleExpired re-arms the timer for what is left
	// after the user's last word, and reports a whole timeout of silence.
	if o.life.Phase() == lifecycle.Running && o.life.IdleExpired() {
		out := protocol.Failed(0, o.pub.Boost.Trees, OutcomeUnit, fmt.Errorf("no message from the data user for %v", o.pub.IdleTimeout))
		out.Own = true
		o.end(out)
		o.leave()
	}
	return o.life.Take(), nil
}

func (o *Owner) handle(m engine.Message) error {
	if m.Protocol == inputPrepared && m.From == o.self {
		o.onPrepared(string(m.Data))
		return nil
	}
	max, big := wire.MaxControlBytes, false
	if m.Protocol == wire.ProtoFedShamir {
		max = wire.MaxSumFrameBytes
		if len(m.Data) > max {
			// Only a configuration (the user's, or forwarded down its
			// tree: cfgtree.go) may exceed a sum frame on the sum stream.
			max, big = wire.MaxControlBytes, true
		}
	}
	env, err := wire.Unmarshal(m.Data, max)
	if err == nil && big && env.GetFedConfig() == nil {
		err = fmt.Errorf("%w: a %d-byte %T on the sum stream (cap %d)", protocol.ErrUnexpected, len(m.Data), env.GetBody(), wire.MaxSumFrameBytes)
	}
	if err != nil {
		return o.drop("malformed", err)
	}
	switch {
	case m.Topic == wire.TopicFedControl:
		if m.From != o.cfg.User {
			return o.drop(protocol.ErrNotUser.Error(), protocol.ErrNotUser)
		}
		if env.GetRosterHead() != nil {
			return o.onConfigHead(env)
		}
		return o.control(env)
	case m.Protocol == wire.ProtoFedShamir && env.GetFedConfig() != nil:
		// The configuration down its tree (cfgtree.go).
		return o.onConfig(m.From, m.Data, env)
	case m.Protocol == wire.ProtoFedShamir && (env.GetSumStart() != nil || env.GetSumResult() != nil || env.GetFedTree() != nil):
		// The coordinator's SumStart and SumResult come on the sum
		// stream, and the trees the next sum needs ahead of its SumStart
		// (User.publishTo): they go through the same checks as control
		// messages.
		if m.From != o.cfg.User {
			return o.drop(protocol.ErrNotUser.Error(), protocol.ErrNotUser)
		}
		return o.control(env)
	case m.Protocol == wire.ProtoFedShamir:
		if o.life.Phase() != lifecycle.Running || env.GetHeader().GetSession() != o.pub.Session || env.GetSum() == nil {
			return o.drop(protocol.ErrWrongSession.Error(), protocol.ErrWrongSession)
		}
		party, err := o.partyFor(int(env.GetHeader().GetRound()))
		if err != nil {
			return o.drop(protocol.ErrWrongRound.Error(), fmt.Errorf("%w: %v", protocol.ErrWrongRound, err))
		}
		party.Handle(m.From, env)
		return nil
	}
	return o.drop(protocol.ErrUnexpected.Error(), protocol.ErrUnexpected)
}

// control applies one message of the data user through the reorder
// buffer: held when it comes too early, and what was held retried after
// it applies.
func (o *Owner) control(env *wire.Envelope) error {
	err := o.pending.Apply(env, o.apply, func(err error) { o.drop(reason(err), err) })
	if o.life.Phase() == lifecycle.Idle && (env.GetSumStart() != nil || env.GetFedTree() != nil) {
		o.askConfig(env.GetHeader().GetSession(), false)
	}
	if o.heard {
		o.heard = false
		o.life.Heard() // nothing once the session ended
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lifecycle.ErrReorderFull):
		return o.drop("pending buffer full", err)
	}
	return o.drop(reason(err), err)
}

func reason(err error) string {
	switch {
	case errors.Is(err, protocol.ErrBadConfig):
		return "config refused"
	case errors.Is(err, protocol.ErrWrongSession):
		return protocol.ErrWrongSession.Error()
	case errors.Is(err, protocol.ErrAlreadyContributed), errors.Is(err, protocol.ErrBudgetExceeded):
		return "budget"
	case errors.Is(err, securesum.ErrRefused):
		return "sum: request refused"
	case errors.Is(err, securesum.ErrDuplicate):
		return "sum: duplicate" // a SumStart re-published for a stalled instance
	case errors.Is(err, errNotInGroup):
		return "not in the tree's group"
	case errors.Is(err, ErrOutsidePlan):
		return "outside the plan"
	case errors.Is(err, protocol.ErrRebound):
		return "release: another value under a name"
	case errors.Is(err, release.ErrSessionCap):
		return "budget: session cap"
	}
	return "malformed"
}

// ErrOutsidePlan refuses a request for a value the session's plan does
// not have (an attempt other than 0, a purpose that is not canonical, a
// tree past T, a chunk past the layout), before anything is charged.
var ErrOutsidePlan = errors.New("fedboost: request outside the session's plan")

var errNotInGroup = errors.New("owner is not in the tree's group")

func (o *Owner) apply(env *wire.Envelope) error {
	h := env.GetHeader()
	if fc := env.GetFedConfig(); fc != nil {
		return o.join(h, fc)
	}
	if o.life.Phase() != lifecycle.Running {
		if o.life.Phase() == lifecycle.Idle && (env.GetSumStart() != nil || env.GetFedTree() != nil) {
			return lifecycle.ErrEarly // the FedConfig may follow
		}
		return fmt.Errorf("%w: no session joined", protocol.ErrWrongSession)
	}
	if h.GetSession() != o.pub.Session {
		return fmt.Errorf("%w: %s", protocol.ErrWrongSession, h.GetSession())
	}
	o.heard = true
	t := int(h.GetRound())
	switch {
	case env.GetFedTree() != nil:
		return o.tree(t, env.GetFedTree())
	case env.GetSumStart() != nil:
		return o.sum(h, env.GetSumStart())
	case env.GetFinal() != nil:
		m, err := env.GetFinal().ToDPBoostModel()
		if err != nil {
			return err
		}
		out := protocol.NewOutcome(o.pub.Boost.Trees, o.pub.Boost.Trees, OutcomeUnit, nil)
		if w := env.GetFinal().GetOutcome(); w != nil {
			if out, err = protocol.OutcomeFromWire(w, o.pub.Boost.Trees, OutcomeUnit); err != nil {
				return err
			}
			if out.Kind != protocol.OutcomeComplete {
				return fmt.Errorf("%w: Final with outcome %s", protocol.ErrUnexpected, out)
			}
		}
		o.final = m
		o.life.Out.Notify(engine.Notify{Event: engine.EventReport, Value: m}) // OnFinal, before OnOutcome
		o.end(out)
		return nil
	case env.GetSumResult() != nil:
		return nil // the coordinator's published total: nothing for an owner to do
	case env.GetAbort() != nil:
		out := protocol.Failed(0, o.pub.Boost.Trees, OutcomeUnit, errors.New(env.GetAbort().GetReason()))
		if w := env.GetAbort().GetOutcome(); w != nil {
			got, err := protocol.OutcomeFromWire(w, o.pub.Boost.Trees, OutcomeUnit)
			if err != nil {
				return err
			}
			if got.Kind != protocol.OutcomeFailed {
				return fmt.Errorf("%w: Abort with outcome %s", protocol.ErrUnexpected, got)
			}
			out = got
		}
		o.end(out)
		o.leave()
		return nil
	}
	return fmt.Errorf("%w: %T", protocol.ErrUnexpected, env.GetBody())
}

// join checks an announced configuration against this owner's limits.
func (o *Owner) join(h *wire.Header, fc *wire.FedConfig) error {
	if o.life.Phase() != lifecycle.Idle {
		if o.pub != nil && h.GetSession() == o.pub.Session {
			return nil // re-announcement
		}
		return fmt.Errorf("%w: busy with session %s", protocol.ErrWrongSession, o.pub.Session)
	}
	p, err := PublicFromWire(fc)
	if err != nil {
		return fmt.Errorf("%w: %v", protocol.ErrBadConfig, err)
	}
	if err := o.acceptable(h, p); err != nil {
		return err
	}
	b, err := p.Binning()
	if err != nil {
		return refuseConfig("%v", err)
	}
	data, err := b.Quantize(o.cfg.Data.X)
	if err != nil {
		return refuseConfig("%v", err)
	}
	o.pub, o.binning, o.data = p, b, data
	o.y = make([]float64, data.Rows)
	for i, c := range o.cfg.Data.Y {
		o.y[i] = -1
		if c == 1 {
			o.y[i] = 1
		}
	}
	o.labels, o.boost = o.cfg.Data.Y, p.Boosters()
	o.F = make([]float64, data.Rows*o.boost)
	o.trees, o.spent, o.applied = map[int]*partial{}, map[int]int{}, 0
	o.party, o.partyT = nil, 0
	// The announcement carries the roster: admitted and running at once.
	if err := o.life.Join(p.Session, lifecycle.Admitting, p.IdleTimeout); err != nil {
		return err
	}
	o.moves.note(&o.life)
	if err := o.life.Go(lifecycle.Running); err != nil {
		return err
	}
	o.moves.note(&o.life)
	o.learnAddrs(p)
	o.prepareSums(p)
	o.log.Info("joined", "session", p.Session, "trees", p.Boost.Trees, "columns_per_node", p.ColumnsPerNode, "noise", p.Noise)
	return nil
}

// learnAddrs adds the roster's announced addresses (other members only)
// to the transport's address book, so this owner's secure-sum streams dial
// peers it was never bootstrapped to.
func (o *Owner) learnAddrs(p *Public) {
	if o.book == nil {
		return
	}
	for i, m := range p.Roster {
		if m != o.self && i < len(p.RosterAddrs) && len(p.RosterAddrs[i]) > 0 {
			o.book.AddAddrs(m, p.RosterAddrs[i])
		}
	}
}

// refuseConfig is a refusal of an announced configuration.
func refuseConfig(format string, a ...any) error {
	return fmt.Errorf("%w: %s", protocol.ErrBadConfig, fmt.Sprintf(format, a...))
}

// acceptable checks an announced configuration against this owner's
// limits: the session and roster (membership, admission), the dealer
// floors against the colluders it assumes, its rows, and the epsilon.
func (o *Owner) acceptable(h *wire.Header, p *Public) error {
	if p.Session != h.GetSession() {
		return refuseConfig("config for session %s in a message of session %s", p.Session, h.GetSession())
	}
	if _, in := slices.BinarySearch(p.Roster, o.self); !in {
		return refuseConfig("not in the roster")
	}
	if o.cfg.Admit != nil {
		for _, m := range p.Roster {
			if !o.cfg.Admit(m) {
				return refuseConfig("roster member %s not admitted", m)
			}
		}
	}
	if err := o.withinLimits(p); err != nil {
		return err
	}
	return o.affordable(p)
}

// withinLimits checks the session's parties, dealer floors, row cap and
// noise against this owner's configuration.
func (o *Owner) withinLimits(p *Public) error {
	if p.Sum.MinParties < o.cfg.MinParties {
		return refuseConfig("min_parties %d below this owner's %d", p.Sum.MinParties, o.cfg.MinParties)
	}
	own := boost.ColludersAll
	if o.cfg.Colluders > 0 {
		own = o.cfg.Colluders
	}
	for t := 1; p.Noise && t <= p.Boost.Trees; t++ {
		if h := boost.HonestFor(p.Floor(t), own); p.Honest(t) > h {
			return refuseConfig("tree %d's shares are sized for %d honest dealers; this owner assumes colluders %s, which leaves %d",
				t, p.Honest(t), colluderText(own), h)
		}
	}
	if o.cfg.Data.Len() > p.MaxRows {
		return refuseConfig("%d rows, the session caps an owner at %d", o.cfg.Data.Len(), p.MaxRows)
	}
	if !p.Noise && !o.cfg.AllowNoNoise {
		return refuseConfig("a session without noise")
	}
	return nil
}

// affordable checks what the session costs against this owner's epsilon
// limit: the Newton release as a whole, or each tree.
func (o *Owner) affordable(p *Public) error {
	acc := dpboost.Account(p.Boost)
	if p.Newton() && p.Noise {
		m, err := p.newtonRelease()
		if err != nil {
			return refuseConfig("%v", err)
		}
		if eps := m.Epsilon(); eps > o.cfg.MaxEpsilon {
			return refuseConfig("the session costs %v, this owner's limit is %v", eps, o.cfg.MaxEpsilon)
		}
	}
	worst := 0.0 // the most this session can charge this owner
	if p.Newton() {
		worst = o.cfg.NoneCharge
		if p.Noise {
			m, _ := p.newtonRelease() // checked above
			worst = m.Epsilon()
		}
	}
	ens := map[int]float64{}
	for t := 1; !p.Newton() && t <= p.Boost.Trees; t++ {
		eps := o.cfg.NoneCharge
		if p.Noise {
			eps = acc.PerTree[t-1]
		}
		if eps > o.cfg.MaxEpsilon {
			return refuseConfig("tree %d costs %v, this owner's limit is %v", t, eps, o.cfg.MaxEpsilon)
		}
		e, _ := p.Ensemble(t)
		ens[e] = max(ens[e], eps) // one tree per ensemble: its dearest
	}
	for _, eps := range ens {
		worst += eps
	}
	if c := o.cfg.SessionMaxEpsilon; c > 0 && worst > c*(1+1e-12) {
		return refuseConfig("the session may charge this owner %.4g, above its per-session cap %.4g (--session-eps-max)", worst, c)
	}
	o.life.Values.SessionMax = o.cfg.SessionMaxEpsilon
	if o.cfg.SessionMaxEpsilon == 0 && o.cfg.SessionCapAuto {
		o.life.Values.SessionMax = worst // the plan's own cost: nothing beyond it
	}
	return nil
}

// partyFor is the secure-sum party of tree t: a new one (with the tree's
// dealer floor) when t is past the current tree; earlier trees are over.
func (o *Owner) partyFor(t int) (*securesum.Party, error) {
	switch {
	case t < 1 || t > o.pub.Boost.Trees:
		return nil, fmt.Errorf("tree %d of %d", t, o.pub.Boost.Trees)
	case t == o.partyT:
		return o.party, nil
	case t < o.partyT:
		return nil, fmt.Errorf("tree %d is over (current %d)", t, o.partyT)
	}
	env := securesum.PosterEnvFor(wire.Fed(), o.self, outPoster{&o.life.Out}, sessionClock{&o.life}, o.cfg.SumRand, o.log.Named("shamir"))
	env.Dropped = func(r string) { o.stats.Inc(r) } // the party logs its drops itself
	env.Noise = func(enc []field.Elem) error {
		d := o.dealing
		switch {
		case d == nil:
			return errUncharged
		case d.noise == nil:
			return nil // an exact release (np), charged
		case len(d.noise) != len(enc):
			return fmt.Errorf("dealing: %d noise coordinates for %d values", len(d.noise), len(enc))
		}
		for i := range enc {
			enc[i] = enc[i].Add(d.noise[i])
		}
		return nil
	}
	o.party, o.partyT = securesum.NewParty(env, o.pub.SumParams(t)), t
	o.party.SetRoster(o.pub.Group(t))
	return o.party, nil
}

// charge is what one ensemble's group membership costs this owner.
// treeRelease is everything this owner releases of tree t (PROTOCOL.md's
// release inventory): per level the node vectors (a row is in one node of a
// level: parallel), the levels and the leaves in sequence, each a DLap
// design computed from its layout. It equals TreeEpsilon(t) when the
// designs are right (TestPrivateRunSpendsOncePerEnsemble checks the ledgers).
func (o *Owner) treeRelease(t int) (release.Mechanism, error) {
	if !o.pub.Noise || !o.pub.Boost.Private() {
		return release.Exact{Charge: o.cfg.NoneCharge}, nil
	}
	if o.pub.Newton() {
		return o.pub.newtonRelease()
	}
	codec, err := field.NewCodec(o.pub.Sum.ScaleBits)
	if err != nil {
		return nil, err
	}
	dlap := func(l Layout) (release.Mechanism, error) {
		np, _, err := o.pub.NoiseFor(t, l)
		if err != nil {
			return nil, err
		}
		return release.DLap{Noise: np, IntSensitivity: dpnoise.IntSensitivity(l.Delta, codec, l.Coords)}, nil
	}
	var tree release.Sequential
	for d := 0; d < o.pub.Boost.Depth; d++ {
		var level release.Parallel
		for node := 1<<d - 1; node < 2<<d-1; node++ {
			m, err := dlap(o.pub.NodeLayout(o.binning, t, node))
			if err != nil {
				return nil, err
			}
			level = append(level, m)
		}
		tree = append(tree, level)
	}
	m, err := dlap(o.pub.LeafLayout(t))
	if err != nil {
		return nil, err
	}
	return append(tree, m), nil
}

func (o *Owner) tree(t int, w *wire.FedTree) error {
	if t < 1 || t > o.pub.Boost.Trees {
		return fmt.Errorf("%w: tree %d", protocol.ErrWrongRound, t)
	}
	if t <= o.applied {
		return nil // a re-publication of a tree already applied
	}
	p, err := parseTree(w, o.binning, o.pub.Boost.Depth, o.boost)
	if err != nil {
		return fmt.Errorf("%w: tree %d: %v", wire.ErrMalformed, t, err)
	}
	if o.pub.Newton() {
		want := o.pub.NewtonTree(o.binning, t)
		if p.levels != want.levels || !slices.Equal(p.feature, want.feature) || !slices.Equal(p.bin, want.bin) {
			return fmt.Errorf("%w: tree %d's splits are not the beacon's", protocol.ErrBadConfig, t)
		}
	}
	if old := o.trees[t]; old == nil || p.levels > old.levels || (p.complete && !old.complete) {
		o.trees[t] = p
	}
	for o.applied < o.pub.Boost.Trees {
		next := o.trees[o.applied+1]
		if next == nil || !next.complete {
			break
		}
		// Every owner updates its predictions with every tree (boosting
		// is over all the data; only the tree's histograms came from its
		// group).
		Fd, B := o.data.Features, o.boost
		for k := range B {
			c := next.class(k)
			for i := range o.data.Rows {
				o.F[i*B+k] += c.leaf[c.nodeOf(o.data.Idx[i*Fd:(i+1)*Fd], o.pub.Boost.Depth)]
			}
		}
		o.applied++
		delete(o.trees, o.applied)
	}
	return nil
}

// sum answers a SumStart: the node's (or leaves') vector of this owner's
// rows, with its noise share, if this owner is in the tree's group.
func (o *Owner) sum(h *wire.Header, s *wire.SumStart) error {
	t := int(h.GetRound())
	if t < 1 || t > o.pub.Boost.Trees {
		return fmt.Errorf("%w: %w: tree %d of %d", ErrOutsidePlan, protocol.ErrWrongRound, t, o.pub.Boost.Trees)
	}
	if t <= o.applied {
		return fmt.Errorf("%w: tree %d is complete", protocol.ErrWrongRound, t)
	}
	// The header's attempt is not part of what is released: a federated
	// sum is one value whatever attempt number a request carries (the
	// release gate hands every attempt the same value).
	node, chunk, err := parsePurpose(s.GetPurpose())
	if err != nil {
		return fmt.Errorf("%w: %w: %v", ErrOutsidePlan, wire.ErrMalformed, err)
	}
	if err := o.ready(t, node); err != nil {
		return err
	}
	group := o.pub.Group(t)
	if _, in := slices.BinarySearch(group, o.self); !in {
		return nil // a SumStart for another group (the user sends it to the group only)
	}
	var l Layout
	if node >= 0 {
		l = o.pub.NodeLayout(o.binning, t, node)
	} else {
		l = o.pub.LeafLayout(t)
	}
	if chunk >= l.Chunks {
		return fmt.Errorf("%w: %w: chunk %d of %d", ErrOutsidePlan, wire.ErrMalformed, chunk, l.Chunks)
	}
	party, err := o.partyFor(t)
	if err != nil {
		return err
	}
	// The party's own checks first: a request it would refuse is not paid for.
	if err := party.Check(h, s, group, o.pub.Beacon); err != nil {
		return err
	}
	np, noisy, err := o.pub.NoiseFor(t, l)
	if err != nil {
		return err
	}
	vec := o.vector(t, node)
	lo, hi := Chunk(len(vec), chunk)
	kind := "leaves"
	if node >= 0 {
		kind = "node"
	}
	// The value is named by what it is (tree, node or leaves, chunk),
	// never by the attempt or the spelling the data user sent: every
	// request for it gets the same noise share.
	name := release.Name{System: "fed", Session: o.pub.Session, Kind: kind, Round: t, Node: max(node, 0), Chunk: chunk}
	d, err := o.release(t, name, vec[lo:hi], func(r *rand.Rand) (any, error) {
		if !noisy {
			return &dealing{}, nil
		}
		noise := make([]field.Elem, hi-lo)
		if err := np.Noise(r)(noise); err != nil {
			return nil, err
		}
		return &dealing{noise: noise}, nil
	})
	if err != nil {
		return err
	}
	o.dealing = d
	o.expectSum(group, securesum.Committee(group, o.pub.SumParams(t).Committee, o.pub.Beacon, h, s.GetPurpose(), s.GetInstance()))
	err = party.Begin(h, s, group, o.pub.Beacon, o.cfg.User, vec[lo:hi])
	o.dealing = nil
	return err
}

// dealing is the charged value of one named sum: this owner's noise share
// (nil for an exact release).
type dealing struct{ noise []field.Elem }

// errUncharged refuses a dealing the release gate did not hand out: the
// party's noise hook returns it, so that no value of this owner's enters a
// sum but through the gate.
var errUncharged = errors.New("no charged release for this dealing")

// ready says whether this owner holds what a sum of tree t at node (-1:
// the leaves) needs: the earlier trees applied and, for a node sum, the
// tree grown to the node's level (lifecycle.ErrEarly: not yet; the sum is kept).
func (o *Owner) ready(t, node int) error {
	need := o.pub.Boost.Depth // the leaves need every level
	if node >= 0 {
		if node >= 1<<o.pub.Boost.Depth-1 {
			return fmt.Errorf("%w: node %d beyond depth %d", wire.ErrMalformed, node, o.pub.Boost.Depth)
		}
		need = levelOf(node)
	}
	if o.pub.Newton() {
		if node >= 0 {
			return fmt.Errorf("%w: node %d: a newton tree has no node sums", wire.ErrMalformed, node)
		}
		if o.applied < t-1 {
			return lifecycle.ErrEarly
		}
		if o.trees[t] == nil {
			o.trees[t] = o.pub.NewtonTree(o.binning, t)
		}
		return nil
	}
	if o.applied < t-1 || (need > 0 && (o.trees[t] == nil || o.trees[t].levels < need)) {
		return lifecycle.ErrEarly
	}
	return nil
}

// release asks the release gate for the value called name (a sum of tree
// t) computed from input: the first value of tree t's ensemble charges the
// ledger for everything this owner releases of the tree (treeRelease)
// before anything of its data leaves; later names of the same tree are
// made under that charge; a name asked again (another attempt number, a
// re-formed sum, a restart) gets the value made for it, never new noise. A
// second tree of the same ensemble is refused: groups of one ensemble are
// disjoint, which is what lets them compose in parallel. A Newton session
// is charged once, before its first value: its trees compose in Renyi DP,
// not ensemble by ensemble.
func (o *Owner) release(t int, name release.Name, input []float64, make func(*rand.Rand) (any, error)) (*dealing, error) {
	e, _ := o.pub.Ensemble(t)
	key := ledgerKey(o.pub.Session, e)
	round := uint32(t)
	if o.pub.Newton() {
		e, key, round = 0, newtonLedgerKey(o.pub.Session), 0
	} else if tree, ok := o.spent[e]; ok && tree != t {
		return nil, fmt.Errorf("%w: ensemble %d already spent on tree %d, asked for tree %d", protocol.ErrAlreadyContributed, e, tree, t)
	}
	mech, err := o.treeRelease(t)
	if err != nil {
		return nil, err
	}
	v, _, _, err := o.life.Release(name, release.Charge{Key: key, Round: round, Mech: mech}, release.Floats(nil, input...), make)
	if err != nil {
		return nil, err
	}
	o.spent[e] = t
	return v.(*dealing), nil
}

// vector is this owner's contribution for node (or the leaves, node < 0)
// of tree t: gradient sums then counts.
func (o *Owner) vector(t, node int) []float64 {
	if o.pub.Newton() {
		return o.newtonVector(t)
	}
	cfg := o.pub.Boost
	grad := make([]float64, len(o.F))
	rows := make([]int32, 0, len(o.F))
	for i := range o.F {
		g := o.F[i] - o.y[i]
		if cfg.Private() {
			if cfg.ClipGradients {
				g = max(-dpboost.GStar, min(dpboost.GStar, g))
			} else if math.Abs(g) > dpboost.GStar {
				continue // gradient-based data filtering
			}
		}
		grad[i] = g
		rows = append(rows, int32(i))
	}
	Fd := o.data.Features
	row := func(r int32) []uint8 { return o.data.Idx[int(r)*Fd : int(r)*Fd+Fd] }
	tr := o.trees[t]
	if node < 0 {
		L := 1 << cfg.Depth
		v := make([]float64, 2*L)
		for _, r := range rows {
			j := tr.nodeOf(row(r), cfg.Depth)
			v[j] += grad[r]
			v[L+j]++
		}
		return v
	}
	d := levelOf(node)
	at := node - (1<<d - 1)
	mine := rows[:0:0]
	for _, r := range rows {
		if d == 0 || tr.nodeOf(row(r), d) == at {
			mine = append(mine, r)
		}
	}
	cols := columnsOf(o.pub.Schema, o.binning)
	chosen := o.pub.NodeColumns(t, node, len(cols))
	C := 0
	for _, c := range chosen {
		C += cols[c].cells(o.binning)
	}
	v := make([]float64, 2*C)
	for _, r := range mine {
		off := 0
		for _, ci := range chosen {
			c := cols[ci]
			if k := c.cell(row(r)); k >= 0 {
				v[off+k] += grad[r]
				v[C+off+k]++
			}
			off += c.cells(o.binning)
		}
	}
	return v
}

// newtonVector is this owner's leaf sums of Newton tree t: logistic
// gradients, then kappa times the hessians, per leaf of the beacon's tree.
func (o *Owner) newtonVector(t int) []float64 {
	depth, Fd := o.pub.Boost.Depth, o.data.Features
	L := 1 << depth
	d, _ := o.pub.NewtonDesign() // validated at join
	tr := o.trees[t]
	if B := o.boost; B > 1 {
		return o.softmaxVector(tr, d.Kappa)
	}
	v := make([]float64, 2*L)
	for i := range o.F {
		j := tr.nodeOf(o.data.Idx[i*Fd:(i+1)*Fd], depth)
		g, h := dpboost.LogisticGH(o.F[i], o.y[i] > 0)
		v[j] += g
		v[L+j] += d.Kappa * h
	}
	return v
}

// softmaxVector is this owner's leaf sums of a Newton round of K > 2
// classes: for class k's tree, the softmax gradients p_k - [y = k] per leaf,
// then kappa times the hessians p_k (1 - p_k), class-major (LeafLayout).
func (o *Owner) softmaxVector(tr *partial, kappa float64) []float64 {
	depth, Fd, B := o.pub.Boost.Depth, o.data.Features, o.boost
	L := 1 << depth
	v := make([]float64, 2*B*L)
	p := make([]float64, B)
	for i := range o.data.Rows {
		dpboost.Softmax(o.F[i*B:(i+1)*B], p)
		row := o.data.Idx[i*Fd : (i+1)*Fd]
		for k, q := range p {
			g := q
			if o.labels[i] == k {
				g = q - 1
			}
			j := k*L + tr.class(k).nodeOf(row, depth)
			v[j] += g
			v[B*L+j] += kappa * q * (1 - q)
		}
	}
	return v
}

// end ends the session with out (lifecycle End: Done with a result,
// Aborted without).
func (o *Owner) end(out protocol.Outcome) {
	o.life.End(out)
	o.moves.note(&o.life)
}

// leave returns to Idle after the session ended (an abort, the idle
// timeout), ready for the next announcement.
func (o *Owner) leave() {
	if err := o.life.Leave(); err != nil {
		o.log.Error("leave", "err", err) // a bug: leave follows End
	}
	o.moves.note(&o.life)
	o.pending.Reset()
	if o.pub != nil {
		o.life.Values.EndSession(o.pub.Session) // the ledger keeps the binds
	}
	o.party = nil
	o.pub = nil
}

// colluderText prints a colluder bound ("all" for boost.ColludersAll).
func colluderText(c int) string {
	if c < 0 {
		return "all"
	}
	return fmt.Sprint(c)
}
