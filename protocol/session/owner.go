package session

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/crypto/dpnoise"
	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/ldp"
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

// OwnerConfig configures a data owner.
type OwnerConfig struct {
	// User is the pinned data user: control messages from anyone else are dropped.
	User protocol.PeerID
	// Data is the owner's private data.
	Data *dataset.Dataset
	// Ledger records every privacy spend durably before a share leaves.
	Ledger protocol.Ledger
	// MaxEpsilon is the largest epsilon this owner spends on one share.
	MaxEpsilon float64
	// AllowNone lets a session ask for a share without noise (mechanism
	// none: tests and baselines). It is then charged NoneCharge, which must
	// be positive: an exact release is never free.
	AllowNone  bool
	NoneCharge float64
	// MinParties is the smallest aggregate this owner helps reveal; sessions
	// announcing less are refused (default securesum.DefaultMinParties).
	MinParties int
	// Colluders is the most co-dealers of a noisy sum (the err sum, a
	// distributed share sum) this owner assumes may share what they see
	// with the data user. 0 means all of them (boost.ColludersAll), the
	// default: whatever this owner deals is DP on its own. The owner never
	// sizes its noise for fewer colluders, and refuses a session whose
	// announcement assumes fewer (a data user cannot talk it out of its
	// noise). A positive value belongs to closed deployments whose owners
	// know each other (an allow-list).
	Colluders int
	// NoRing refuses sessions whose secure sums are masked rings: a ring
	// hides a value from any single peer but not from its two ring
	// neighbours together (PROTOCOL.md, Masked ring).
	NoRing bool
	// Admit, if set, is the owners' allow-list: a roster with a member it
	// rejects is refused (no share of this owner enters its sums).
	Admit func(protocol.PeerID) bool
	// NoiseSecret keys the release gate's noise: each named value's noise
	// is drawn from HMAC(secret, name), so the same name gets the same
	// noise (empty: 32 random bytes, this process only; the CLI derives it
	// from the node's identity key).
	NoiseSecret []byte
	// SessionMaxEpsilon is the most this owner spends in one session (0:
	// no cap below the lifetime budget): a session whose least cost (its
	// share and one err dealing per round) exceeds it is refused at join,
	// and any charge past it (err attempts) is refused while running.
	SessionMaxEpsilon float64
	// SessionCapAuto, when SessionMaxEpsilon is 0, caps each session at
	// its own plan's cost: the share and AutoErrAttempts err dealings per
	// round (a data user that retries rounds more often than that, or
	// invents attempts, finds this owner's err dealings refused).
	SessionCapAuto bool
	// OnGate, if set, is called once with the owner's release gate (tests:
	// negative controls switch its memory off).
	OnGate func(*release.Values)
	// Noise, if set, replaces the gate's noise stream of a share (the
	// stream of the name); reproducible simulations inject
	// boost.NoiseStream, a function of (round, attempt), so that a run
	// equals boost.Train's.
	Noise func(round, attempt int) *rand.Rand
	// ErrNoise is the same for the err dealings (boost.ErrNoiseStream).
	ErrNoise func(round, attempt int) *rand.Rand
	// SumRand supplies masks and polynomial coefficients; nil means rng.Secure.
	SumRand *rand.Rand
	Clock   protocol.Clock
	Log     hclog.Logger

	// NonceRand, if set, draws the owner's join nonces (the roster's beacon,
	// which picks committees); nil means crypto/rand. Simulations seed it so
	// that a run, committees and timings included, is a function of its seed.
	NonceRand *rand.Rand

	// OnFinal, if set, receives the published final model.
	OnFinal func(*boost.Model)
	// OnEnd, if set, is told when the owner leaves a session (final model,
	// abort, idle timeout) with the reason.
	OnEnd func(session string, reason string)
	// OnRefuse, if set, is told when the owner does not join an announced
	// session, with the reason (at most once a minute per session and
	// reason: the user re-announces every interval).
	OnRefuse func(session, reason string)
	// OnOutcome, if set, is told the outcome of every session the owner
	// leaves (the data user's, from its Final or Abort; the owner's own on
	// the idle timeout), after OnFinal.
	OnOutcome func(session string, out protocol.Outcome)
	// OnErrDealing, if set, sees every err dealing this owner begins: the
	// exact clipped pair and the noisy value it deals (decoded), after the
	// ledger charge. Audits and attack tests compare them with what the
	// data user recovers; it runs on the owner's loop and must not block.
	OnErrDealing func(session string, round, attempt int, exact, noisy []float64)
	// Share, if set, shares decoded messages, rosters and participant lists
	// between the owners of one process (a simulator's; see Sharing). Nil in
	// production: an owner shares no state with any other.
	Share Sharing
	// Observe, if set, sees what the owner does (observe.go): joins,
	// refusals, selections, charges, leaving. It runs through the driver's
	// Notify and must not block.
	Observe func(OwnerEvent)
}

// ownerRound is everything an owner holds about one attempt of one round.
type ownerRound struct {
	base      *boost.Base
	werr, wsz float64 // sum w_i I(miss), sum w_i of the evaluated learner, before the update
	alpha     float64 // accepted alpha (0 until the Alpha arrived)
	updated   bool    // the SAMME update was applied and the weights renormalized
	// dealt is this attempt's err dealing: the noise share drawn once and
	// added again to every instance of the sum (retransmissions, re-formed
	// rings), so a dealing is one release however often it is sent.
	dealt *errDealing
}

// errDealing is one charged err dealing.
type errDealing struct {
	noise []field.Elem // the noise share per coordinate (nil without noise)
}

// noisy is the dealt value in real units: the pair plus the decoded noise.
func (d *errDealing) noisy(pair []float64, scaleBits uint) []float64 {
	out := slices.Clone(pair)
	if d.noise == nil {
		return out
	}
	codec, err := field.NewCodec(scaleBits)
	if err != nil {
		return out
	}
	for i := range out {
		out[i] += codec.Decode(d.noise[i])
	}
	return out
}

// Owner is a data owner's side of a session: an engine.Machine (Receive,
// Fire) whose session lifecycle (phase, idle timer, reorder buffers, the
// release gate, drops, the end) is a lifecycle.Session, run by an
// engine.Runner on its own engine.Driver. Handle queues a message for it;
// what it wants done (sends, publications, the idle timer, the
// application's callbacks) leaves as effects (owner_run.go).
type Owner struct {
	cfg      OwnerConfig
	self     protocol.PeerID
	log      hclog.Logger
	stats    protocol.Counters
	run      *engine.Runner
	rolePost *role.Post // what Start made (nil from New…): closed after the driver
	// lc is the session lifecycle: a named field, not embedded, so that
	// its methods (Release, End, …) are not the Owner's public API.
	lc    lifecycle.Session
	party *securesum.Party
	// shareParty deals distributed-privacy share sums (nil with LDP). It
	// lives for the whole session, resumes included, so that it remembers
	// every sum it dealt in (securesum.Params.SingleInstance).
	shareParty *securesum.Party
	share      *ownerShare // the distributed share of the attempt this owner was selected for
	dealing    *errDealing // the err dealing being begun (read by the noise hook)
	selKey     roundKey    // the newest attempt whose Select this owner processed
	// selDealers are selKey's selected owners, sorted: the dealers of its
	// share sum, which a committee member that was not selected serves.
	selDealers []protocol.PeerID

	// session is the newest session this owner joined (kept after it
	// ended: State reports it); lc.ID is the one it is in.
	session string
	spec    boost.Spec
	wcfg    *wire.SessionConfig
	model   *boost.Owner
	env     envelopes
	nonce   []byte
	current roundKey // newest round seen
	rounds  map[roundKey]*ownerRound
	// pending holds SumStarts whose inputs (learner, roster, selection)
	// are not here yet: ErrEarly from startSum.
	pending lifecycle.Reorder[pendingSum]
	asm     rosterAssembly
	want    *wire.Select // newest Select: the roster version it names
	// held is the newest Select that names its owners by index into a
	// roster version not here yet: applied when the roster is (tryRoster).
	held *heldSelect
	// rosterAsk: the roster timer runs (rosterGrace), for a Select of
	// rosterKey.
	rosterAsk bool
	rosterKey roundKey
	// acked is the newest roster version whose chunks this owner told the
	// user it holds (RosterAck); prepared the one it opened the sums'
	// connections for (prepareSums; o.prepared are the peers).
	acked, preparedFor uint32
	// ackAfter is the roster version whose RosterAck waits for the dials
	// prepareSums started (inputPrepared; 0: none).
	ackAfter uint32
	// head is the newest RosterHead from the user (rostertree.go): the
	// digests that let a chunk from another owner in; forwarded is the
	// newest version this owner sent its tree children.
	head      *wire.RosterHead
	forwarded uint32
	roster    *Roster
	inRoster  bool
	// heldFor is the roster version the data user's LiveCheck said it
	// holds this owner's Join for (0: no check yet; 1: the first roster;
	// more: the owner joined after the rounds started and waits for a
	// later version, liveness.go).
	heldFor uint32
	// early holds control messages that overtook what they depend on
	// (an Alpha before its Learner, a Select of round m+1 before round m's
	// renormalization).
	early lifecycle.Reorder[*wire.Envelope]
	// settled is the newest round whose accepted learner this owner has
	// applied and renormalized. A Select or Learner of a later round than
	// settled+1 waits for it, so that shares and evaluations use the
	// renormalized weights, as in boost.Train.
	settled uint32
	snaps   map[uint32][]float64 // weights after the renormalization of a round (last two)
	final   *boost.Model
	book    protocol.AddressBook
	prep    protocol.Preparer // opens the sums' connections at roster time (prepare.go)
	// prepared are the peers Prepare was given for the session, released
	// (protocol.Unpreparer) when it ends; read and written in notify only.
	prepared []protocol.PeerID
	warnRate *protocol.RateLog // repeated warnings, at most once a minute each (of input time)

	// sumLast and sumLastB cache the last secure-sum envelope marshalled
	// (a SumStart's reply sent to several peers is marshalled once).
	sumLast  *wire.Envelope
	sumLastB []byte

	// raw is the bytes of the message being handled: a roster chunk is
	// forwarded down the tree as it came (forward).
	raw []byte

	// seen holds the digests of the latest control messages applied: a
	// copy of one that comes again (a retransmission, or the gossiped copy
	// of a user that also published it) is ignored.
	seen recentDigests

	// status is what other goroutines read (status.go): published by the driver.
	status atomic.Pointer[ownerStatus]
}

// ownerShare is a distributed round's contribution: the clipped statistic
// and the noise design of its one dealing (the share party deals a value in
// one instance only: SingleInstance; retransmissions re-send those shares).
type ownerShare struct {
	key    roundKey
	roster []protocol.PeerID // the attempt's selected owners, sorted
	vec    []float64
	noise  *dpnoise.Params // nil without noise
	rand   *rand.Rand
}

type pendingSum struct {
	h     *wire.Header
	start *wire.SumStart
}

// NewOwner prepares an owner on its own engine.Driver (cfg.Clock: a worker
// goroutine on the real clock, inline on the in-memory network's); its
// effects leave through post. Call Attach to connect it to its transport.
func NewOwner(self protocol.PeerID, post protocol.Poster, cfg OwnerConfig) (*Owner, error) {
	cfg = cfg.withRuntimeDefaults() // config.go
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("owner: %w", err)
	}
	m, err := boost.NewOwner(cfg.Data)
	if err != nil {
		return nil, err
	}
	o := &Owner{cfg: cfg, self: self, log: cfg.Log.With("peer", string(self)), model: m}
	o.lc.Ledger, o.lc.Drops, o.lc.Log = cfg.Ledger, &o.stats, o.log
	o.lc.Values = role.NewValues(cfg.Ledger, cfg.NoiseSecret, cfg.SessionMaxEpsilon)
	if cfg.OnGate != nil {
		cfg.OnGate(o.lc.Values)
	}
	o.early.Max, o.pending.Max = maxEarly, maxPending
	// Rate-limited warnings decide what is sent (a refusal once a minute),
	// so they count in input time, not the clock's.
	o.warnRate = &protocol.RateLog{Log: o.log, Clock: inputClock{&o.lc}}
	o.run = o.newRunner(cfg.Clock, post) // owner_run.go
	o.reset()
	o.publishStatus()
	return o, nil
}

func (o *Owner) reset() {
	o.rounds = map[roundKey]*ownerRound{}
	o.pending.Reset()
	o.early.Reset()
	o.settled = 0
	o.current = roundKey{}
	o.asm, o.want, o.roster, o.inRoster = rosterAssembly{}, nil, nil, false
	o.held, o.rosterAsk, o.acked, o.preparedFor = nil, false, 0, 0
	o.head, o.forwarded = nil, 0
	o.heldFor = 0
}

// Attach installs the owner as tr's handler and subscribes to the control
// topic, with a validator that accepts only the pinned user's messages.
func (o *Owner) Attach(tr protocol.Transport) error {
	o.call(func() { o.book, _ = tr.(protocol.AddressBook); o.prep, _ = tr.(protocol.Preparer) })
	tr.SetHandler(o.Handle)
	if v, ok := tr.(protocol.Validating); ok {
		user := o.cfg.User
		if err := v.SetTopicValidator(wire.TopicControl, func(from protocol.PeerID, data []byte) protocol.Verdict {
			if from != user {
				if o.stats.Inc("validator: control not from user") {
					o.log.Warn("control messages from a peer that is not this owner's data user (is --user right?)", "from", string(from), "user", string(user))
				}
				return protocol.Reject
			}
			if len(data) > wire.MaxControlBytes {
				o.stats.Inc("validator: oversized")
				return protocol.Reject
			}
			return protocol.Accept
		}); err != nil {
			return err
		}
	}
	return tr.Join(wire.TopicControl)
}

// Stats returns the owner's message counters (dropped messages by reason).
func (o *Owner) Stats() *protocol.Counters { return &o.stats }

// Handle queues one inbound message as an event of the owner's driver.
// Malformed, unauthorized, stale and duplicate messages are dropped and
// counted; it returns at once (a full inbox drops, "loop: inbox full").
func (o *Owner) Handle(m protocol.Message) { o.run.Deliver(m) }

// Receive applies one inbound message (engine.Machine). A refused message
// is counted under its reason and its error returned (errors.Is against
// the protocol's sentinels); effects may come with it (a Refuse to the
// data user).
func (o *Owner) Receive(now time.Time, m engine.Message) ([]engine.Effect, error) {
	o.lc.Begin(now)
	err := o.handle(m)
	return o.lc.Take(), err
}

// Fire applies the expiry of one of the owner's timers (engine.Machine):
// lifecycle.TimerIdle, the data user's silence.
func (o *Owner) Fire(now time.Time, timer string) ([]engine.Effect, error) {
	o.lc.Begin(now)
	var err error
	switch timer {
	case timerRoster:
		o.askRoster()
	case lifecycle.TimerIdle:
		// The timer is not re-armed per message (a timer and its effect
		// on every control message, 10^5 owners in a simulation):
		// IdleExpired re-arms it for what is left after the user's last
		// word, and reports a whole timeout of silence.
		if o.joined() && o.lc.IdleExpired() {
			d := o.lc.IdleTimeout()
			out := protocol.Failed(int(o.settled), o.planned(), "", fmt.Errorf("no message from the data user for %v", d))
			out.Own = true
			o.end(out)
		}
	default:
		err = fmt.Errorf("%w: timer %q", protocol.ErrUnexpected, timer)
	}
	return o.lc.Take(), err
}

// joined reports whether the owner is in a session (admitting or running).
func (o *Owner) joined() bool {
	p := o.lc.Phase()
	return p == lifecycle.Admitting || p == lifecycle.Running
}

// state is the public OwnerState of the lifecycle's phase.
func (o *Owner) state() OwnerState { return lifecycle.OwnerStateOf(o.lc.Phase()) }

// drop counts and logs a refused message under reason and returns err,
// Receive's error.
func (o *Owner) drop(reason string, m protocol.Message, err error) error {
	o.lc.Drop(reason, "from", string(m.From), "topic", m.Topic, "protocol", m.Protocol, "err", err)
	return err
}

// warnOnce logs a refusal at warn level, at most once a minute for the same
// text (a refused session is re-announced every second), and reports
// whether it did.
func (o *Owner) warnOnce(msg string, args ...any) bool {
	key := fmt.Sprint(append([]any{msg}, args...)...)
	return o.warnRate.Logf(hclog.Warn, key, msg, args...)
}

func (o *Owner) handle(m protocol.Message) error {
	if m.Protocol == inputPrepared && m.From == o.self {
		o.onPrepared(m.Data)
		return nil
	}
	max := wire.MaxControlBytes
	if m.Protocol == wire.ProtoRing || m.Protocol == wire.ProtoShamir {
		max = wire.MaxSumFrameBytes
	}
	var env *wire.Envelope
	var err error
	o.raw = m.Data
	defer func() { o.raw = nil }()
	if o.cfg.Share != nil && (m.Topic == wire.TopicControl || m.Protocol == wire.ProtoSession) {
		// The user's control messages, the same bytes to every owner
		// (published, or sent to each directly: Select, Learner, Alpha),
		// and the roster chunks its members forward unchanged.
		env, err = o.cfg.Share.Envelope(m.Data, max)
	} else {
		env, err = wire.Unmarshal(m.Data, max)
	}
	if err != nil {
		return o.drop("malformed", m, err)
	}
	switch {
	case m.Protocol == wire.ProtoSession && m.From != o.cfg.User && env.GetRoster() != nil:
		// A roster chunk forwarded down the tree (rostertree.go): taken
		// only if the user's head names it.
		if err := o.onForwarded(env); err != nil {
			return o.drop(reasonOf(err), m, err)
		}
	case m.Topic == wire.TopicControl || m.Protocol == wire.ProtoSession,
		// The coordinator's SumStart and SumResult come on the sum
		// stream, and go through the same checks as control messages.
		(m.Protocol == wire.ProtoRing || m.Protocol == wire.ProtoShamir) && (env.GetSumStart() != nil || env.GetSumResult() != nil):
		if m.From != o.cfg.User {
			return o.drop(protocol.ErrNotUser.Error(), m, protocol.ErrNotUser)
		}
		d, copied := digestOf(m.Data), sentTwice(env)
		if copied && o.seen.has(d) {
			o.stats.Inc("second copy") // the direct or the gossiped copy of one message: expected
			return nil
		}
		if err := o.control(env); err != nil {
			return o.drop(reasonOf(err), m, err)
		}
		if copied {
			o.seen.add(d)
		}
	case m.Protocol == wire.ProtoRing || m.Protocol == wire.ProtoShamir:
		if o.party == nil || env.GetHeader().GetSession() != o.session || env.GetSum() == nil {
			return o.drop(protocol.ErrWrongSession.Error(), m, protocol.ErrWrongSession)
		}
		if o.shareParty != nil && env.GetSum().GetPurpose() == PurposeShare {
			o.shareParty.Handle(m.From, env)
			return nil
		}
		o.party.Handle(m.From, env)
	default:
		return o.drop(protocol.ErrUnexpected.Error(), m, protocol.ErrUnexpected)
	}
	return nil
}

// maxEarly bounds the early control messages held; maxPending the
// SumStarts waiting for their inputs.
const (
	maxEarly   = 64
	maxPending = 64
)

// control applies a control message through the early buffer: one that
// overtook what it depends on (lifecycle.ErrEarly) is held and retried
// after the next one that applies (gossip does not preserve order).
func (o *Owner) control(env *wire.Envelope) error {
	err := o.early.Apply(env, o.controlOnce, o.lateControl)
	if errors.Is(err, lifecycle.ErrReorderFull) {
		return fmt.Errorf("%w: %w", protocol.ErrWrongRound, err)
	}
	return err
}

// lateControl counts a held control message that failed once retried.
func (o *Owner) lateControl(err error) { o.stats.Inc(reasonOf(err)) }

func (o *Owner) controlOnce(env *wire.Envelope) error {
	h := env.GetHeader()
	if a := env.GetAnnounce(); a != nil {
		return o.onAnnounce(h, a)
	}
	if h.GetSession() != o.session || !o.joined() {
		return protocol.ErrWrongSession
	}
	o.lc.Heard() // the data user spoke (the idle timer: Fire)
	k := roundKey{h.GetRound(), h.GetAttempt()}
	switch b := env.GetBody().(type) {
	case *wire.Envelope_Roster:
		return o.onRoster(b.Roster)
	case *wire.Envelope_RosterHead:
		return o.onRosterHead(b.RosterHead)
	case *wire.Envelope_LiveCheck:
		return o.onLiveCheck(b.LiveCheck) // liveness_owner.go
	case *wire.Envelope_Select:
		return o.onSelect(k, b.Select)
	case *wire.Envelope_Learner:
		return o.onLearner(k, b.Learner)
	case *wire.Envelope_Alpha:
		return o.onAlpha(k, b.Alpha)
	case *wire.Envelope_SumStart:
		err := o.pending.Apply(pendingSum{h, b.SumStart}, o.startSum, o.lateSum)
		if errors.Is(err, lifecycle.ErrReorderFull) {
			return fmt.Errorf("%w: %w", protocol.ErrWrongRound, err)
		}
		o.lateSum(err) // a SumStart refused for a reason of its own is counted, not dropped as a message
		return nil
	case *wire.Envelope_SumResult:
		return nil // totals are the data user's; owners renormalize from alpha
	case *wire.Envelope_Final:
		return o.onFinal(b.Final)
	case *wire.Envelope_Abort:
		out := protocol.Failed(int(o.settled), o.planned(), "", errors.New(b.Abort.GetReason()))
		if w := b.Abort.GetOutcome(); w != nil {
			got, err := protocol.OutcomeFromWire(w, o.planned(), "")
			if err != nil {
				return err
			}
			if got.Kind != protocol.OutcomeFailed {
				return fmt.Errorf("%w: Abort with outcome %s", protocol.ErrUnexpected, got)
			}
			out = got
		}
		o.end(out)
		return nil
	}
	return protocol.ErrUnexpected
}

// end leaves the session with its outcome (the data user's words when it
// said how the session ended): Done with a result, else Aborted and back
// to Idle; the owner takes the next announced session.
func (o *Owner) end(out protocol.Outcome) {
	o.observe(OwnerEvent{Kind: OwnerEventLeft, Detail: out.String()})
	if o.cfg.OnEnd != nil || o.cfg.OnOutcome != nil {
		o.lc.Out.Notify(engine.Notify{Event: engine.EventReport, Value: ownerLeft{session: o.session, out: out}})
	}
	o.lc.End(out)
	o.lc.Values.EndSession(o.session) // the ledger keeps the binds
	if o.lc.Phase() == lifecycle.Aborted {
		if err := o.lc.Leave(); err != nil {
			o.log.Error("leaving an aborted session", "err", err)
		}
	}
}

// planned is the joined session's planned rounds.
func (o *Owner) planned() int { return int(o.wcfg.GetRounds()) }

// checkConfig decides whether this owner takes part in an announced session:
// what it would release must be within its own limits.
func (o *Owner) checkConfig(w *wire.SessionConfig, spec boost.Spec, p securesum.Params) error {
	d := o.cfg.Data
	if spec.Features != d.Dim() || spec.Classes != d.NumClasses() {
		return fmt.Errorf("%w: session wants %d features and %d classes, data has %d and %d",
			protocol.ErrBadConfig, spec.Features, spec.Classes, d.Dim(), d.NumClasses())
	}
	if have := schemaDigest(d); have != "" && w.GetSchemaDigest() != have {
		return schemaMismatch(w, d.Schema)
	}
	if spec.Mechanism == ldp.None && !o.cfg.AllowNone {
		return fmt.Errorf("%w: the session asks for shares without noise (mechanism none); this owner does not release them", protocol.ErrBadConfig)
	}
	if spec.Mechanism != ldp.None && spec.Epsilon > o.cfg.MaxEpsilon {
		return fmt.Errorf("%w: epsilon %g above this owner's limit %g", protocol.ErrBadConfig, spec.Epsilon, o.cfg.MaxEpsilon)
	}
	if o.cfg.NoRing && p.Method == securesum.Ring {
		return fmt.Errorf("%w: the session's secure sums are rings, this owner takes part in Shamir sums only", protocol.ErrBadConfig)
	}
	if p.MinParties < o.cfg.MinParties {
		return fmt.Errorf("%w: the session reveals sums over %d owners, this owner needs at least %d", protocol.ErrBadConfig, p.MinParties, o.cfg.MinParties)
	}
	if err := o.checkTrust(w, spec, p); err != nil {
		return err
	}
	share, err := o.shareRelease(&spec)
	if err != nil {
		return fmt.Errorf("%w: %v", protocol.ErrBadConfig, err)
	}
	cost := share.Epsilon()
	if w.GetAlphaMode() == string(boost.AlphaSecureSum) {
		dealing, _, err := o.errRelease(&spec)
		if err != nil {
			return fmt.Errorf("%w: %v", protocol.ErrBadConfig, err)
		}
		if spec.Mechanism != ldp.None && dealing.Epsilon() > o.cfg.MaxEpsilon {
			return fmt.Errorf("%w: err dealings of epsilon %g above this owner's limit %g", protocol.ErrBadConfig, dealing.Epsilon(), o.cfg.MaxEpsilon)
		}
		cost += dealing.Epsilon()
		if c := o.cfg.SessionMaxEpsilon; c > 0 && spec.Mechanism != ldp.None {
			// Every owner deals into every round's err sum: the least this
			// session charges is the share and one dealing per round.
			if least := share.Epsilon() + float64(w.GetRounds())*dealing.Epsilon(); least > c*(1+1e-12) {
				return fmt.Errorf("%w: the session charges at least %g (a share and %d err dealings), above this owner's per-session cap %g (--session-eps-max)",
					protocol.ErrBadConfig, least, w.GetRounds(), c)
			}
		}
	}
	if c := o.cfg.SessionMaxEpsilon; c > 0 && share.Epsilon() > c*(1+1e-12) {
		return fmt.Errorf("%w: a share costs %g, above this owner's per-session cap %g (--session-eps-max)", protocol.ErrBadConfig, share.Epsilon(), c)
	}
	// The cap the gate enforces while this session runs: the configured
	// one, or (SessionCapAuto) the plan's own cost with AutoErrAttempts
	// err dealings per round.
	o.lc.Values.SessionMax = o.cfg.SessionMaxEpsilon
	if o.cfg.SessionMaxEpsilon == 0 && o.cfg.SessionCapAuto {
		o.lc.Values.SessionMax = share.Epsilon()
		if w.GetAlphaMode() == string(boost.AlphaSecureSum) {
			dealing, _, _ := o.errRelease(&spec) // checked above
			o.lc.Values.SessionMax += AutoErrAttempts * float64(w.GetRounds()) * dealing.Epsilon()
		}
	}
	if left := o.cfg.Ledger.Budget() - o.cfg.Ledger.Spent(); cost > left+1e-9 {
		return fmt.Errorf("%w: a share and one err dealing cost %g, %g of this owner's budget is left", protocol.ErrBadConfig, cost, left)
	}
	return nil
}

// ownColluders is the colluder bound this owner sizes its noise for.
func (o *Owner) ownColluders() int {
	if o.cfg.Colluders <= 0 {
		return boost.ColludersAll
	}
	return o.cfg.Colluders
}

// checkTrust refuses a session whose noisy sums are sized for more honest
// dealers than this owner's own colluder bound guarantees: the data user's
// colluder count is its word, the owner's is its configuration.
func (o *Owner) checkTrust(w *wire.SessionConfig, spec boost.Spec, p securesum.Params) error {
	own := o.ownColluders()
	describe := func(c int) string {
		if c < 0 {
			return "all"
		}
		return fmt.Sprint(c)
	}
	if spec.Distributed() && spec.Mechanism != ldp.None {
		if h := boost.HonestFor(spec.Floor, own); spec.Honest > h {
			return fmt.Errorf("%w: the share sum's noise is sized for %d honest dealers (colluders %s); this owner assumes colluders %s, which leaves %d",
				protocol.ErrBadConfig, spec.Honest, describe(spec.Colluders), describe(own), h)
		}
	}
	if w.GetAlphaMode() == string(boost.AlphaSecureSum) && spec.Mechanism != ldp.None {
		if h := boost.HonestFor(p.MinParties, own); spec.ErrHonest > h {
			return fmt.Errorf("%w: the err sum's noise is sized for %d honest dealers (colluders %s); this owner assumes colluders %s, which leaves %d",
				protocol.ErrBadConfig, spec.ErrHonest, describe(spec.Colluders), describe(own), h)
		}
	}
	return nil
}

// AutoErrAttempts is how many err dealings per round an owner with
// SessionCapAuto pays for in one session: a round and two retries.
const AutoErrAttempts = 3

// errLedgerKey is the ledger key of the err dealing of round attempt k: one
// dealing per key, across Announces and restarts.
func errLedgerKey(session string, k roundKey) string {
	return fmt.Sprintf("%s/err/%d/%d", session, k.round, k.attempt)
}

// dealErr deals this owner's pair into the err sum instance p of attempt
// k. The first instance charges the dealing through the release gate
// (Session.Release), whose send draws the dealing's noise and begins the
// instance; later instances (re-formed rings, a SumStart for a stalled
// instance) re-use that charged dealing, its noise included: a dealing is
// one release however often it is sent. The err party's noise hook deals
// nothing without a charged dealing (errEnv).
func (o *Owner) dealErr(k roundKey, r *ownerRound, p pendingSum) {
	pair := o.spec.ErrPair(r.werr, r.wsz)
	key := errLedgerKey(o.session, k)
	name := release.Name{System: "wc", Session: o.session, Kind: "err", Round: int(k.round), Attempt: int(k.attempt)}
	if !o.lc.Values.Remembered(name) && o.cfg.Ledger.Contributed(key) {
		// Dealt before this incarnation (a restart, or a data user that
		// re-announced the session): this owner deals a name once per
		// incarnation that made it, and never again after it forgot it.
		o.stats.Inc("err sum: dealt already")
		o.warnOnce("not dealing into the err sum", "session", o.session, "round", k.round, "attempt", k.attempt,
			"reason", "the ledger records this owner's err dealing of this round attempt already")
		return
	}
	mech, np, err := o.errRelease(&o.spec)
	if err != nil {
		o.log.Error("err noise design", "err", err)
		return
	}
	v, eps, fresh, err := o.lc.Release(name, release.Charge{Key: key, Round: k.round, Attempt: k.attempt, Mech: mech},
		release.Floats(nil, pair...), func(noise *rand.Rand) (any, error) {
			d := &errDealing{}
			if np != nil {
				if o.cfg.ErrNoise != nil {
					noise = o.cfg.ErrNoise(int(k.round), int(k.attempt))
				}
				d.noise = make([]field.Elem, 2)
				if err := np.Noise(noise)(d.noise); err != nil {
					return nil, fmt.Errorf("err noise: %w", err)
				}
			}
			return d, nil
		})
	if err != nil {
		o.stats.Inc("err sum: ledger refused")
		o.warnOnce("not dealing into the err sum", "session", o.session, "round", k.round, "attempt", k.attempt, "reason", err)
		return
	}
	d := v.(*errDealing)
	r.dealt = d
	o.beginErr(k, p, pair, d)
	if !fresh {
		return
	}
	o.observe(OwnerEvent{Kind: OwnerEventErrCharged, Round: int(k.round), Attempt: int(k.attempt), Eps: eps})
	o.log.Debug("err dealing charged", "session", o.session, "round", k.round, "attempt", k.attempt, "eps", eps,
		"spent", o.cfg.Ledger.Spent(), "budget", o.cfg.Ledger.Budget())
}

// beginErr begins err sum instance p with the charged dealing d: the err
// party's noise hook adds d's noise share to the encoded pair.
func (o *Owner) beginErr(k roundKey, p pendingSum, pair []float64, d *errDealing) {
	o.dealing = d
	err := o.party.Begin(p.h, p.start, o.roster.IDs, o.roster.Beacon, o.cfg.User, pair)
	o.dealing = nil
	if err == nil && o.cfg.OnErrDealing != nil {
		o.lc.Out.Notify(engine.Notify{Event: engine.EventReport, Value: errDealt{session: o.session, round: int(k.round), attempt: int(k.attempt),
			exact: pair, noisy: d.noisy(pair, o.spec.ScaleBits)}})
	}
	o.beginFailed(k, p, err)
}

func (o *Owner) onAnnounce(h *wire.Header, a *wire.Announce) error {
	if o.joined() && h.GetSession() == o.session {
		o.lc.Heard()
		if a.GetConfig().GetResume() {
			return o.resume(a.GetConfig().GetResumeAfterRound())
		}
		if o.roster == nil && (o.current.round == 0 || o.heldFor == 0) {
			o.sendJoin() // the earlier Join (or the user's LiveCheck) may have been lost
		}
		return nil
	}
	if o.joined() {
		return fmt.Errorf("%w: busy with session %s", protocol.ErrWrongSession, o.session)
	}
	if o.cfg.Ledger.Contributed(h.GetSession()) {
		err := fmt.Errorf("%w: session %s already has this owner's share", protocol.ErrWrongSession, h.GetSession())
		if o.warnOnce("not joining session", "session", h.GetSession(), "reason", err) {
			o.refused(h.GetSession(), err.Error())
		}
		return err
	}
	spec, params, err := ParseWireConfig(a.GetConfig())
	if err == nil {
		spec.SetColumns(o.cfg.Data.Schema)
		err = o.checkConfig(a.GetConfig(), spec, params)
	}
	if err != nil {
		// Say why, here and to the user (once a minute per session), so
		// that a session nobody joins explains itself on both sides. What
		// is sent names no value of this owner's own schema (its bounds
		// may have been inferred from its data); the local line does.
		local := err.Error()
		var sm *schemaError
		if errors.As(err, &sm) {
			local = sm.local
		}
		if o.warnOnce("not joining session", "session", h.GetSession(), "reason", local) {
			o.env = envelopes{session: h.GetSession()}
			o.sendUser(&wire.Envelope{Header: o.env.header(roundKey{}), Body: &wire.Envelope_Refuse{Refuse: &wire.Refuse{Reason: err.Error()}}})
			o.refused(h.GetSession(), local)
			o.observe(OwnerEvent{Kind: OwnerEventNotJoined, Session: h.GetSession(), Detail: err.Error()})
		}
		return err
	}
	o.reset()
	o.session, o.spec, o.wcfg = h.GetSession(), spec, a.GetConfig()
	o.env = envelopes{session: o.session}
	o.snaps = map[uint32][]float64{}
	o.nonce = make([]byte, NonceBytes)
	if r := o.cfg.NonceRand; r != nil {
		for i := 0; i < NonceBytes; i += 8 {
			binary.LittleEndian.PutUint64(o.nonce[i:], r.Uint64())
		}
	} else if _, err := crand.Read(o.nonce); err != nil {
		return fmt.Errorf("owner: nonce: %w", err)
	}
	if err := o.model.Reset(); err != nil {
		return err
	}
	o.snaps[0] = slices.Clone(o.model.W)
	o.party = securesum.NewParty(o.errEnv(), pairSumParams(&spec, params))
	o.shareParty, o.share = nil, nil
	if spec.Distributed() {
		o.shareParty = securesum.NewParty(o.shareEnv(), shareSumParams(&spec, params))
	}
	o.log.Info("joining session", "session", o.session, "learner", spec.Learner, "mechanism", spec.Mechanism, "eps", spec.Epsilon)
	idle := time.Duration(o.wcfg.GetIdleTimeoutMs()) * time.Millisecond
	if idle <= 0 {
		idle = DefaultTiming().IdleTimeout
	}
	if err := o.lc.Join(o.session, lifecycle.Admitting, idle); err != nil { // arms the idle timer
		return err
	}
	o.observe(OwnerEvent{Kind: OwnerEventJoined})
	o.sendJoin()
	return nil
}

// resume follows a restarted data user back to the end of round r: the
// weights of that round, no state of later rounds.
// The owner re-joins so that the user counts it.
func (o *Owner) resume(r uint32) error {
	w, ok := o.snaps[r]
	if !ok && o.awaitsAlpha(r) {
		// The user stopped before round r's Alpha left: it sends the
		// Learner and the Alpha again, directly, and the announcement
		// (gossiped) may overtake them. Held until the Alpha settles r.
		return lifecycle.ErrEarly
	}
	if !ok {
		out := protocol.Failed(int(o.settled), o.planned(), "", fmt.Errorf("the data user resumes after round %d, this owner no longer has that round's weights", r))
		out.Own = true
		o.end(out)
		return nil
	}
	if err := o.lc.Go(lifecycle.Running); err != nil { // the resumed user's roster is its checkpoint's
		return err
	}
	copy(o.model.W, w)
	roster := o.roster
	o.reset()
	o.roster = roster // the resumed user republishes it; keep it for sums that start first
	o.inRoster = roster != nil && slices.Contains(roster.IDs, o.self)
	o.current, o.settled = roundKey{round: r}, r
	// The secure-sum parties stay: they remember every sum they dealt in,
	// so a resumed user (or one that only says so) cannot re-open a sum of
	// the earlier incarnation and subtract the totals. The resumed user
	// continues with a fresh attempt (Checkpoint.Attempt).
	o.log.Info("data user resumed the session", "session", o.session, "after_round", r)
	return nil
}

// awaitsAlpha reports whether the owner holds a learner of round r whose
// Alpha has not come.
func (o *Owner) awaitsAlpha(r uint32) bool {
	for k, st := range o.rounds {
		if k.round == r && st.base != nil && !st.updated && st.alpha == 0 {
			return true
		}
	}
	return false
}

// sumEnv binds a secure-sum party of the owner: its messages go into the
// owner's Out (sumSend), its drops to the owner's counters. No clock: a
// party has no timers.
func (o *Owner) sumEnv() securesum.Env {
	return securesum.Env{Self: o.self, Send: o.sumSend, Rand: o.cfg.SumRand, Log: o.log.Named("sum"),
		Dropped: func(reason string) { o.stats.Inc(reason) }, Share: o.cfg.Share}
}

// sumSend marshals a party's message (once for an envelope sent to several
// peers in a row: the parties never change one they sent) and adds it to
// the transition's effects.
func (o *Owner) sumSend(to protocol.PeerID, protocolID string, env *wire.Envelope) {
	if env != o.sumLast {
		b, err := wire.Marshal(env, wire.MaxSumFrameBytes)
		if err != nil {
			o.log.Error("secure-sum message too large", "err", err)
			return
		}
		o.sumLast, o.sumLastB = env, b
	}
	o.lc.Out.Send(to, protocolID, o.sumLastB)
}

// errUncharged refuses a dealing whose release the ledger does not hold:
// the parties' noise hooks return it, so that no value of this owner's
// enters a sum but through Session.Release.
var errUncharged = errors.New("no charged release for this dealing")

// errEnv is sumEnv plus the err dealing's noise hook: the noise share of
// the dealing being begun (o.dealing, set around Begin) is added to the
// encoded pair.
func (o *Owner) errEnv() securesum.Env {
	env := o.sumEnv()
	env.Noise = func(enc []field.Elem) error {
		d := o.dealing
		if d == nil {
			return errUncharged
		}
		if d.noise == nil {
			return nil // an exact release (mechanism none), charged
		}
		if len(d.noise) != len(enc) {
			return fmt.Errorf("err dealing: %d noise coordinates for %d values", len(d.noise), len(enc))
		}
		for i := range enc {
			enc[i] = enc[i].Add(d.noise[i])
		}
		return nil
	}
	return env
}

// shareEnv is sumEnv plus the noise hook of distributed share sums: the
// encoded statistic gets this owner's noise share before it is shared.
func (o *Owner) shareEnv() securesum.Env {
	env := o.sumEnv()
	env.Noise = func(enc []field.Elem) error {
		sh := o.share
		if sh == nil {
			return errUncharged
		}
		if sh.noise != nil {
			return sh.noise.Noise(sh.rand)(enc)
		}
		return nil
	}
	return env
}

func schemaDigest(d *dataset.Dataset) string {
	if d == nil || d.Schema == nil {
		return ""
	}
	return d.Schema.Digest()
}

func (o *Owner) sendJoin() {
	join := &wire.Join{SchemaDigest: schemaDigest(o.cfg.Data), Nonce: o.nonce}
	if o.book != nil {
		join.Addrs = o.book.ListenAddrs()
		if len(join.Addrs) > maxJoinAddrs {
			join.Addrs = join.Addrs[:maxJoinAddrs]
		}
	}
	o.sendUser(&wire.Envelope{Header: o.env.header(roundKey{}), Body: &wire.Envelope_Join{Join: join}})
}

func (o *Owner) sendUser(env *wire.Envelope) {
	b, err := wire.Marshal(env, wire.MaxControlBytes)
	if err != nil {
		o.log.Error("message to user too large", "err", err)
		return
	}
	o.lc.Out.Send(o.cfg.User, wire.ProtoSession, b)
}

func (o *Owner) advance(k roundKey) error {
	if k.less(o.current) {
		return fmt.Errorf("%w: round %d attempt %d after %d/%d", protocol.ErrWrongRound, k.round, k.attempt, o.current.round, o.current.attempt)
	}
	o.current = k
	return nil
}

func (o *Owner) round(k roundKey) *ownerRound {
	r := o.rounds[k]
	if r == nil {
		r = &ownerRound{}
		o.rounds[k] = r
	}
	return r
}

// onRoster collects a roster chunk; the roster is installed when every chunk
// of the version the newest Select names is here and matches its digest.
func (o *Owner) onRoster(c *wire.Roster) error {
	if o.roster != nil && c.GetVersion() <= o.roster.Version {
		return nil // already have it (a chunk re-sent on request)
	}
	done, err := o.asm.add(c, o.raw)
	if err != nil || !done {
		return err
	}
	v := o.asm.version
	o.forward(v, o.asm.chunks, o.asm.raw)
	err = o.tryRoster()
	if err == nil && o.roster == nil && o.prep != nil && o.cfg.Share == nil {
		// No Select names the version yet (the first one follows the
		// acks): open the sums' connections from the chunks as they are.
		// The Select's digest checks them before the roster is installed.
		// Not with nothing to dial, nor in a simulation whose owners share
		// one decoded roster (Sharing, keyed by the Select's digest): 10^5
		// owners would each decode the 10^5-entry chunks; they prepare
		// when the roster is installed.
		if r, perr := o.asm.provisional(o.session); perr == nil {
			o.prepareSums(r)
		}
	}
	// Every chunk of the version is here: tell the user, whose first
	// selection waits for its owners to hold the roster (after the
	// connections just prepared, if any: ackRoster).
	o.ackRoster(v)
	return err
}

// ackRoster tells the user that this owner holds every chunk of roster
// version v (RosterAck), once per version and only for a version newer
// than the last it acked. An owner that opens connections for its sums at
// version v (prepareSums) says so once those dials have ended
// (onPrepared), so that the first selection does not race every owner's
// handshakes: at 1,000 owners on the simulated internet the first attempt
// began while about 31,000 committee connections were being opened, and
// took 7-20 one-way delays against 5.
func (o *Owner) ackRoster(v uint32) {
	if !o.ackDue(v) || o.ackAfter == v {
		return
	}
	o.acked = v
	o.sendUser(&wire.Envelope{Header: o.env.header(roundKey{}), Body: &wire.Envelope_RosterAck{
		RosterAck: &wire.RosterAck{Version: v}}})
}

// ackDue reports whether roster version v's RosterAck is still to be sent:
// newer than the last one acked, in a session this owner joined.
func (o *Owner) ackDue(v uint32) bool { return v > o.acked && o.joined() }

// onPrepared is the end of the dials roster version v's ack waited for
// (the runner's inputPrepared): the ack goes now.
func (o *Owner) onPrepared(data []byte) {
	if len(data) != 4 {
		return
	}
	v := binary.BigEndian.Uint32(data)
	if v == 0 || o.ackAfter != v {
		return
	}
	o.ackAfter = 0
	o.ackRoster(v)
}

func (o *Owner) tryRoster() error {
	s := o.want
	if s == nil || o.asm.chunks == nil || o.asm.version != s.GetRosterVersion() || o.asm.have != len(o.asm.chunks) {
		return nil
	}
	r, err := o.asm.assemble(o.session, s.GetRosterSize(), s.GetRosterDigest(), o.cfg.Share)
	if err != nil {
		return err
	}
	o.asm = rosterAssembly{}
	if o.cfg.Admit != nil {
		for _, id := range r.IDs {
			if !o.cfg.Admit(id) {
				o.warnOnce("roster has a member this owner does not admit; taking no part in the session's sums", "member", string(id))
				o.roster, o.inRoster = nil, false
				return fmt.Errorf("%w: roster member %s not admitted", protocol.ErrBadConfig, id)
			}
		}
	}
	o.roster = r
	_, o.inRoster = slices.BinarySearch(r.IDs, o.self)
	if !o.inRoster && o.waitsForLaterRoster() {
		// Joined after the rounds started: the user holds the Join for a
		// later version (liveness_owner.go).
		o.roster = nil
		return nil
	}
	if !o.inRoster && o.joined() {
		// Nothing of this session is this owner's: leave it now rather
		// than wait out the idle timeout.
		why := fmt.Sprintf("the data user's roster (version %d, %d owners) does not name this owner: it joined after the rounds started, was not drawn, or was not admitted",
			r.Version, len(r.IDs))
		o.warnOnce("leaving a session whose roster does not name this owner", "session", o.session, "reason", why)
		o.refused(o.session, why)
		if o.lc.Phase() == lifecycle.Running {
			// A later roster (a resumed user's) leaves it out: the
			// session ends here for this owner.
			out := protocol.Failed(int(o.settled), o.planned(), "", errors.New(why))
			out.Own = true
			o.end(out)
			return nil
		}
		o.observe(OwnerEvent{Kind: OwnerEventLeft, Detail: why})
		return o.lc.Leave()
	}
	if err := o.lc.Go(lifecycle.Running); err != nil { // the roster is fixed
		return err
	}
	o.party.SetRoster(r.IDs)
	if o.shareParty != nil {
		// The share sums' committee comes from the roster (the user's
		// Request.Pool): one set for the session, prepared below.
		o.shareParty.SetRoster(r.IDs)
	}
	o.prepareSums(r)
	if h := o.held; h != nil && h.s.GetRosterVersion() == r.Version {
		o.held = nil
		if err := o.onSelect(h.k, h.s); err != nil {
			return err
		}
	}
	o.runPending()
	return nil
}

func (o *Owner) onSelect(k roundKey, s *wire.Select) error {
	if k.round == 0 {
		return fmt.Errorf("%w: select for round 0", protocol.ErrWrongRound)
	}
	if k.round > o.settled+1 {
		return lifecycle.ErrEarly
	}
	if err := o.advance(k); err != nil {
		return err
	}
	if o.roster == nil || o.roster.Version != s.GetRosterVersion() {
		o.want = s
		if err := o.tryRoster(); err != nil {
			return err
		}
		if (o.roster == nil || o.roster.Version != s.GetRosterVersion()) && !o.waitsForLaterRoster() && !o.rosterAsk {
			// The chunks may be late or lost: ask the user directly if
			// they are not here after a grace (askRoster).
			o.rosterAsk, o.rosterKey = true, k
			o.lc.Out.SetTimer(timerRoster, rosterGrace(o.lc.Now(), s))
		}
	}
	sel, err := selectedIDs(s, o.roster)
	if errors.Is(err, errNoRoster) {
		o.held = &heldSelect{k: k, s: s}
		return nil
	}
	if err != nil {
		return err
	}
	o.held = nil
	o.selKey = k
	o.selDealers = peers(sel)
	slices.Sort(o.selDealers)
	if !slices.Contains(sel, string(o.self)) {
		o.runPending() // a share sum of this attempt is not this owner's
		return nil
	}
	o.log.Info("selected", "session", o.session, "round", k.round, "attempt", k.attempt)
	o.observe(OwnerEvent{Kind: OwnerEventSelected, Round: int(k.round), Attempt: int(k.attempt)})
	if dl := s.GetDeadlineUnixMs(); dl > 0 && o.lc.Now().UnixMilli() > dl {
		// A stale Select (this owner was paused, or the message was slow):
		// the user has moved on and would drop the share. Spend nothing.
		o.refuse(k, fmt.Sprintf("selection arrived after its deadline (%s)", time.UnixMilli(dl).UTC().Format(time.RFC3339Nano)))
		return nil
	}
	o.contribute(k, sel)
	return nil
}

// timerRoster is the owner's wait for the roster chunks of a Select that
// came before them.
const timerRoster = "roster"

// rosterGrace is how long an owner whose Select came before the roster
// waits for the chunks before it asks the data user for them
// (RosterRequest). They left with the Select on the control topic, but a
// roster of n owners is about 160 n bytes, and the user floods it to each of
// its n owners while the Select's direct copies go out at once: at 1,000
// owners on a 100 Mbit/s uplink the last chunk leaves 13 s after the first
// Select (issue 31). An owner that asked at once made the user send the
// roster a second time to every selected owner, behind the flood. Half of
// what is left before the Select's deadline (5 s of the default 10-s share
// window) leaves the other half for the request and its answer;
// minRosterGrace without a deadline or past it.
func rosterGrace(now time.Time, s *wire.Select) time.Duration {
	if dl := s.GetDeadlineUnixMs(); dl > 0 {
		if left := time.UnixMilli(dl).Sub(now); left/2 > minRosterGrace {
			return left / 2
		}
	}
	return minRosterGrace
}

const minRosterGrace = 500 * time.Millisecond

// askRoster asks the data user for the roster version the newest Select
// names, if it is still not here.
func (o *Owner) askRoster() {
	o.rosterAsk = false
	s := o.want
	if s == nil || (o.roster != nil && o.roster.Version == s.GetRosterVersion()) || o.waitsForLaterRoster() || !o.joined() {
		return
	}
	o.stats.Inc("roster requested")
	o.sendUser(&wire.Envelope{Header: o.env.header(o.rosterKey), Body: &wire.Envelope_RosterRequest{
		RosterRequest: &wire.RosterRequest{Version: s.GetRosterVersion()}}})
}

// heldSelect is a Select waiting for the roster its indices refer to.
type heldSelect struct {
	k roundKey
	s *wire.Select
}

func (o *Owner) refuse(k roundKey, reason string) {
	o.stats.Inc("refused")
	// A deviating user can select this owner over and over: the reason
	// goes to the user every time, to the log once a minute.
	o.warnRate.Logf(hclog.Warn, "refusing to contribute", "refusing to contribute", "session", o.session, "round", k.round, "attempt", k.attempt, "reason", reason)
	o.observe(OwnerEvent{Kind: OwnerEventRefused, Round: int(k.round), Attempt: int(k.attempt), Detail: reason})
	o.sendUser(&wire.Envelope{Header: o.env.header(k), Body: &wire.Envelope_Refuse{Refuse: &wire.Refuse{Reason: reason}}})
}

// contribute records the spend durably through the release gate
// (Session.Release), whose send then builds, perturbs and publishes the
// share (or prepares it for the share sum). It refuses when the ledger says
// no (second request, budget).
func (o *Owner) contribute(k roundKey, selected []string) {
	if o.spec.Distributed() && o.share != nil {
		// Selected again (a deviating user; an honest resumed one selects
		// fresh owners): this owner dealt its statistic once already and
		// never deals it in a second sum.
		o.refuse(k, fmt.Sprintf("%v: this owner dealt its share in round %d attempt %d already", protocol.ErrAlreadyContributed, o.share.key.round, o.share.key.attempt))
		return
	}
	mech, err := o.shareRelease(&o.spec)
	if err != nil {
		o.refuse(k, err.Error())
		return
	}
	if eps := mech.Epsilon(); o.spec.Mechanism != ldp.None && eps > o.cfg.MaxEpsilon {
		o.refuse(k, fmt.Sprintf("epsilon %g above this owner's limit %g", eps, o.cfg.MaxEpsilon))
		return
	}
	if o.cfg.Ledger.Contributed(o.session) {
		o.refuse(k, protocol.ErrAlreadyContributed.Error())
		return
	}
	// The release gate: the ledger holds the charge before the share is
	// built and published (LDP), or prepared for the share sum, whose
	// noise hook deals only a charged share (distributed).
	// The owner's share of this session: one value, whatever round or
	// attempt selects it (an owner contributes once per session), bound to
	// the weights it is computed from.
	name := release.Name{System: "wc", Session: o.session, Kind: "share"}
	_, eps, _, err := o.lc.Release(name, release.Charge{Key: o.session, Round: k.round, Attempt: k.attempt, Mech: mech},
		release.Floats(nil, o.model.W...), func(r *rand.Rand) (any, error) {
			if o.cfg.Noise != nil {
				r = o.cfg.Noise(int(k.round), int(k.attempt))
			}
			if o.spec.Distributed() {
				o.contributeDistributed(k, selected, r)
				return struct{}{}, nil
			}
			o.publishShare(k, r)
			return struct{}{}, nil
		})
	if err != nil {
		o.refuse(k, err.Error())
		return
	}
	o.observe(OwnerEvent{Kind: OwnerEventCharged, Round: int(k.round), Attempt: int(k.attempt), Eps: eps})
	if o.spec.Distributed() {
		return // logged when prepared
	}
	o.log.Info("share released", "session", o.session, "round", k.round, "attempt", k.attempt, "eps", eps,
		"spent", o.cfg.Ledger.Spent(), "budget", o.cfg.Ledger.Budget())
}

// publishShare builds the LDP share of attempt k and publishes it (inside
// the release gate's send).
func (o *Owner) publishShare(k roundKey, r *rand.Rand) {
	sh, err := o.model.LocalShare(&o.spec, r)
	if err != nil {
		o.log.Error("building share failed", "err", err)
		return
	}
	labels := make([]uint32, len(sh.Labels))
	for i, y := range sh.Labels {
		labels[i] = uint32(y)
	}
	env := &wire.Envelope{Header: o.env.header(k), Body: &wire.Envelope_Share{Share: &wire.Share{Values: sh.Values, Labels: labels}}}
	b, err := wire.Marshal(env, wire.MaxShareBytes)
	if err != nil {
		o.log.Error("share too large for the shares topic", "err", err)
		return
	}
	o.lc.Out.Publish(wire.TopicShares, b)
}

// shareRelease is the mechanism of this session's share (PROTOCOL.md's
// release inventory): the LDP mechanism itself, the share sum's noise
// design, or an exact release charged the owner's none charge.
func (o *Owner) shareRelease(spec *boost.Spec) (release.Mechanism, error) {
	switch {
	case spec.Mechanism == ldp.None:
		return release.Exact{Charge: o.cfg.NoneCharge}, nil
	case spec.Distributed():
		np, _, err := spec.DistributedNoise()
		if err != nil {
			return nil, err
		}
		codec, err := field.NewCodec(spec.ScaleBits)
		if err != nil {
			return nil, err
		}
		return release.DLap{Noise: np, IntSensitivity: dpnoise.IntSensitivity(spec.DistributedSensitivity(), codec, spec.DistributedLen())}, nil
	}
	m, err := ldp.New(spec.Mechanism, spec.Epsilon, spec.ShareDim(o.cfg.Data.Len()), ldp.Clip)
	if err != nil {
		return nil, err
	}
	return release.LDP{M: m}, nil
}

// errRelease is the mechanism of one err dealing: its noise design, or an
// exact release charged the owner's none charge.
func (o *Owner) errRelease(spec *boost.Spec) (release.Mechanism, *dpnoise.Params, error) {
	np, noisy, err := spec.ErrNoise()
	if err != nil {
		return nil, nil, err
	}
	if !noisy {
		return release.Exact{Charge: o.cfg.NoneCharge}, nil, nil
	}
	codec, err := field.NewCodec(spec.ScaleBits)
	if err != nil {
		return nil, nil, err
	}
	return release.DLap{Noise: np, IntSensitivity: dpnoise.IntSensitivity(spec.ErrSensitivity(), codec, 2)}, &np, nil
}

// contributeDistributed prepares the owner's clipped statistic for the
// attempt's share sum, inside the release gate's send (the spend is in the
// ledger): the share party's noise hook deals only this charged share; the
// sum starts when the user's SumStart is here (runPending).
func (o *Owner) contributeDistributed(k roundKey, selected []string, r *rand.Rand) {
	vec, err := o.model.DistributedShare(&o.spec)
	if err != nil {
		o.log.Error("building share failed", "err", err)
		return
	}
	sh := &ownerShare{key: k, roster: peers(selected), vec: vec, rand: r}
	slices.Sort(sh.roster)
	np, noisy, err := o.spec.DistributedNoise()
	if err != nil {
		o.log.Error("noise design", "err", err)
		return
	}
	if noisy {
		sh.noise = &np
	}
	o.share = sh
	o.log.Info("share prepared for the share sum", "session", o.session, "round", k.round, "attempt", k.attempt,
		"spent", o.cfg.Ledger.Spent(), "budget", o.cfg.Ledger.Budget())
	o.runPending()
}

func (o *Owner) onLearner(k roundKey, l *wire.Learner) error {
	if k.round > o.settled+1 {
		// The previous round's weights are not renormalized yet (gossip
		// does not keep order): evaluate the new learner on renormalized
		// weights, as the reference trainer does, once they are.
		return lifecycle.ErrEarly
	}
	if err := o.advance(k); err != nil {
		return err
	}
	r := o.round(k)
	if r.base != nil {
		return fmt.Errorf("%w: second learner for round %d attempt %d", protocol.ErrWrongRound, k.round, k.attempt)
	}
	b, err := o.decodeLearner(l, o.spec.Classes, o.spec.Features)
	if err != nil {
		return err
	}
	r.base = b
	r.werr, r.wsz = o.model.Evaluate(b)
	o.runPending()
	return nil
}

// decodeLearner parses and checks a published learner (once per shared
// decoded message in a simulation that shares them); owners only read a Base.
func (o *Owner) decodeLearner(l *wire.Learner, classes, features int) (*boost.Base, error) {
	decode := func() (*boost.Base, error) {
		b, err := l.ToBase(classes, features) // wire/model.go: shape, K, d, finite
		if err != nil {
			return nil, fmt.Errorf("%w: learner: %v", protocol.ErrUnexpected, err)
		}
		return b, nil
	}
	if o.cfg.Share == nil {
		return decode()
	}
	return o.cfg.Share.Learner(l, classes, features, decode)
}

func (o *Owner) onAlpha(k roundKey, a *wire.Alpha) error {
	r := o.rounds[k]
	if r == nil || r.base == nil {
		if k.less(o.current) {
			return fmt.Errorf("%w: alpha for round %d attempt %d without its learner", protocol.ErrWrongRound, k.round, k.attempt)
		}
		return lifecycle.ErrEarly
	}
	if r.updated || r.alpha != 0 {
		return fmt.Errorf("%w: second alpha", protocol.ErrWrongRound)
	}
	if !a.GetAccepted() {
		r.alpha = math.NaN() // dropped: nothing to update
		return nil
	}
	alpha := a.GetAlpha()
	if !(alpha > 0) || alpha > 1e3 {
		return fmt.Errorf("%w: alpha %v", protocol.ErrUnexpected, alpha)
	}
	if _, err := o.model.Update(r.base, alpha); err != nil {
		return err
	}
	// Renormalize by the public growth factor (boost.GrowthFactor): no sum
	// of weights is needed, and none is revealed.
	if err := o.model.RenormalizeBy(boost.GrowthFactor(alpha, o.spec.Classes)); err != nil {
		return fmt.Errorf("%w: %v", protocol.ErrUnexpected, err)
	}
	r.alpha, r.updated = alpha, true
	o.settled = k.round
	o.snaps[k.round] = slices.Clone(o.model.W)
	delete(o.snaps, k.round-2)
	if o.waitsForLaterRoster() {
		// A round was accepted before a roster named this late joiner:
		// the session takes no more owners (liveness_owner.go).
		return o.leaveUnrostered(fmt.Sprintf("round %d was accepted before a roster named this owner (it joined after the rounds started)", k.round))
	}
	o.runPending()
	return nil
}

// runPending starts the pending secure sums whose inputs and roster are
// ready now (after a learner, an alpha, a roster, a Select or a prepared
// share). An err sum carries the pair (sum w_i I(miss), sum w_i) of the
// round's learner on the weights before its update: each coordinate is at
// most the owner's weight total, which renormalization keeps at most the
// roster size.
func (o *Owner) runPending() { o.pending.Retry(o.startSum, o.lateSum) }

// SumStarts refused for a reason of their own (counted under it).
var (
	errStaleSum       = errors.New("stale sum start")
	errUnknownPurpose = errors.New("unknown sum purpose")
)

// lateSum counts a SumStart that will never start (nil: nothing).
func (o *Owner) lateSum(err error) {
	if err != nil {
		o.lc.Drop(err.Error())
	}
}

// startSum starts sum p if its inputs and roster are here; ErrEarly keeps
// it pending, nil is done with it (begun, or not this owner's to deal in).
func (o *Owner) startSum(p pendingSum) error {
	k := roundKey{p.h.GetRound(), p.h.GetAttempt()}
	if k.less(o.current) && k != o.current {
		return errStaleSum
	}
	if p.start.GetPurpose() == PurposeShare {
		if !o.beginShare(k, p) {
			return lifecycle.ErrEarly
		}
		return nil
	}
	r := o.rounds[k]
	if p.start.GetPurpose() != PurposeErr || o.wcfg.GetAlphaMode() != string(boost.AlphaSecureSum) {
		return errUnknownPurpose
	}
	if r == nil || r.base == nil || o.roster == nil || o.roster.Version != p.start.GetRosterVersion() {
		return lifecycle.ErrEarly
	}
	if !o.inRoster {
		return nil
	}
	if err := o.party.Check(p.h, p.start, o.roster.IDs, o.roster.Beacon); err != nil {
		// Refused before anything is charged: nothing would be sent.
		o.beginFailed(k, p, err)
		return nil
	}
	o.dealErr(k, r, p)
	return nil
}

// beginFailed counts and logs a refused Begin (nil: nothing to do).
func (o *Owner) beginFailed(k roundKey, p pendingSum, err error) {
	switch {
	case err == nil:
	case errors.Is(err, securesum.ErrNotParticipant), errors.Is(err, securesum.ErrDuplicate):
		// Left out of this instance (excluded after a silence), or a
		// SumStart published again for a stalled instance.
	default:
		o.stats.Inc("sum start refused")
		o.warnRate.Logf(hclog.Warn, "secure sum refused", "secure sum refused", "purpose", p.start.GetPurpose(), "round", k.round, "err", err)
	}
}

// beginShare deals this owner's share in the attempt's share sum; false
// keeps the SumStart pending (its Select or the roster is not here yet).
func (o *Owner) beginShare(k roundKey, p pendingSum) bool {
	if o.shareParty == nil {
		o.lc.Drop(errUnknownPurpose.Error())
		return true
	}
	sh := o.share
	if sh == nil || sh.key != k {
		// Not (yet) selected for this attempt: wait for its Select, and
		// forget the SumStart once the Select named other owners, after
		// serving it as a committee member if the committee comes from the
		// roster and names this owner.
		if o.selKey == k && p.start.GetCommitteeFromRoster() {
			if o.roster == nil || o.roster.Version != p.start.GetRosterVersion() {
				return false // the committee is the roster's: wait for it
			}
			o.serveShare(k, p)
			return true
		}
		return o.selKey == k || k.less(o.selKey)
	}
	if o.roster == nil || o.roster.Version != p.start.GetRosterVersion() {
		return false
	}
	err := o.shareParty.Begin(p.h, p.start, sh.roster, o.roster.Beacon, o.cfg.User, sh.vec)
	switch {
	case err == nil:
		o.log.Info("share dealt", "session", o.session, "round", k.round, "attempt", k.attempt, "instance", p.start.GetInstance())
	case errors.Is(err, securesum.ErrDuplicate):
		// The SumStart again, for a stalled instance.
	default:
		o.stats.Inc("sum start refused")
		o.warnRate.Logf(hclog.Warn, "share sum refused", "share sum refused", "round", k.round, "attempt", k.attempt, "err", err)
	}
	return true
}

// serveShare joins attempt k's share sum as a committee member that deals
// nothing (securesum.Party.Serve): it holds the selected owners' shares and
// reveals one partial sum. Nothing it sends depends on its data, so nothing
// is charged.
func (o *Owner) serveShare(k roundKey, p pendingSum) {
	err := o.shareParty.Serve(p.h, p.start, o.selDealers, o.roster.Beacon, o.cfg.User)
	switch {
	case err == nil:
		o.log.Debug("serving a share sum", "session", o.session, "round", k.round, "attempt", k.attempt)
	case errors.Is(err, securesum.ErrDuplicate):
	default:
		o.stats.Inc("sum start refused")
		o.warnRate.Logf(hclog.Warn, "share sum refused", "share sum refused", "round", k.round, "attempt", k.attempt, "err", err)
	}
}

func (o *Owner) onFinal(f *wire.Final) error {
	m, err := f.ToBoostModel()
	if err != nil {
		return fmt.Errorf("%w: %v", protocol.ErrUnexpected, err)
	}
	out := protocol.NewOutcome(len(m.Rounds), o.planned(), "", nil) // a user that does not say: the model says
	if w := f.GetOutcome(); w != nil {
		if out, err = protocol.OutcomeFromWire(w, o.planned(), ""); err != nil {
			return err
		}
		if out.Kind == protocol.OutcomeFailed || out.Rounds != len(m.Rounds) {
			return fmt.Errorf("%w: Final of %d rounds with outcome %s", protocol.ErrUnexpected, len(m.Rounds), out)
		}
	}
	o.final = m
	if o.cfg.OnFinal != nil { // before OnEnd: a listener that sees the end has the model
		o.lc.Out.Notify(engine.Notify{Event: engine.EventReport, Value: m})
	}
	o.end(out)
	return nil
}

// refused reports a refused announcement to OnRefuse.
func (o *Owner) refused(session, reason string) {
	if o.cfg.OnRefuse != nil {
		o.lc.Out.Notify(engine.Notify{Event: engine.EventReport, Value: ownerRefusal{session: session, reason: reason}})
	}
}

// schemaError is a schema that differs from the announced one: Error names
// the columns that differ (what the Refuse tells the data user), local
// adds this owner's values (its own log).
type schemaError struct{ brief, local string }

func (e *schemaError) Error() string { return e.brief }
func (e *schemaError) Unwrap() error { return protocol.ErrBadConfig }

// maxSchemaDiffs is how many differences a refusal names.
const maxSchemaDiffs = 8

// schemaMismatch explains a schema digest that is not the announced one,
// column by column when the announcement carries the schema (and it is the
// one its digest names).
func schemaMismatch(w *wire.SessionConfig, own *dataset.Schema) error {
	theirs, err := w.GetSchema().ToDataset()
	if err != nil || theirs.Digest() != w.GetSchemaDigest() {
		msg := fmt.Sprintf("%v: the schema differs from the data user's (digest %.12s, ours %.12s; the announcement does not carry its schema)",
			protocol.ErrBadConfig, w.GetSchemaDigest(), own.Digest())
		return &schemaError{brief: msg, local: msg}
	}
	if err := theirs.Validate(); err != nil {
		msg := fmt.Sprintf("%v: the schema differs from the data user's, whose announced schema is invalid: %v", protocol.ErrBadConfig, err)
		return &schemaError{brief: msg, local: msg}
	}
	d := dataset.DiffSchemas(own, theirs)
	if len(d) == 0 {
		msg := fmt.Sprintf("%v: the schema differs from the data user's (same columns, different encoding)", protocol.ErrBadConfig)
		return &schemaError{brief: msg, local: msg}
	}
	return &schemaError{
		brief: fmt.Sprintf("%v: the schema differs from the data user's: %s", protocol.ErrBadConfig, dataset.JoinDiffs(d, maxSchemaDiffs, true)),
		local: fmt.Sprintf("%v: the schema differs from the data user's (here: this owner's; there: the announced one): %s",
			protocol.ErrBadConfig, dataset.JoinDiffs(d, maxSchemaDiffs, false)),
	}
}
