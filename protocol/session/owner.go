package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dataset"
	"github.com/ppboost/ppboost/crypto/ldp"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// OwnerState is where an owner is in a session.
type OwnerState int

const (
	OwnerIdle   OwnerState = iota // waiting for an announcement
	OwnerJoined                   // joined a session, taking part in its rounds
	OwnerDone                     // the session ended (final model received)
)

func (s OwnerState) String() string {
	switch s {
	case OwnerIdle:
		return "idle"
	case OwnerJoined:
		return "joined"
	case OwnerDone:
		return "done"
	}
	return fmt.Sprintf("OwnerState(%d)", int(s))
}

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
	// Noise returns the privacy-noise source for a share; nil means rng.Secure.
	// Reproducible simulations inject boost.NoiseStream.
	Noise func(round, attempt int) *rand.Rand
	// SumRand supplies masks and polynomial coefficients; nil means rng.Secure.
	SumRand *rand.Rand
	Clock   protocol.Clock
	Log     hclog.Logger
	// OnFinal, if set, receives the published final model.
	OnFinal func(*boost.Model)
}

// Owner is a data owner's side of a session, as an event-driven state
// machine: feed it messages with Handle; it posts what it wants sent. It is
// safe for concurrent use.
type Owner struct {
	cfg   OwnerConfig
	self  protocol.PeerID
	post  protocol.Poster
	log   hclog.Logger
	stats protocol.Counters
	loop  *protocol.Loop
	party *securesum.Party

	state    OwnerState
	session  string
	spec     boost.Spec
	model    *boost.Owner
	env      envelopes
	current  roundKey // newest round seen
	roster   []protocol.PeerID
	rosterV  uint32
	inRoster bool
	bases    map[roundKey]*boost.Base
	evals    map[roundKey][2]float64 // (werr, wsum) of the evaluated learner
	updated  map[roundKey]float64    // weight sum after the accepted update
	renorm   map[roundKey]bool
	pending  []pendingSum
	// early holds control messages that overtook what they depend on
	// (an Alpha before its Learner, a weight total before its Alpha).
	early []*wire.Envelope
	// unnormalized is the accepted round whose weight total has not arrived
	// yet; a selection in the meantime waits for it (queuedSelect), so that
	// the share is built from renormalized weights, as in boost.Train.
	unnormalized *roundKey
	queuedSelect *roundKey
	final        *boost.Model
	book         protocol.AddressBook
	lastErr      error
}

type pendingSum struct {
	h     *wire.Header
	start *wire.SumStart
}

// NewOwner prepares an owner. Call Start to attach it to its transport.
func NewOwner(self protocol.PeerID, post protocol.Poster, cfg OwnerConfig) (*Owner, error) {
	if cfg.User == "" {
		return nil, errors.New("owner: the data user's peer id is required")
	}
	if cfg.Data == nil || cfg.Data.Len() == 0 {
		return nil, errors.New("owner: no data")
	}
	if cfg.Ledger == nil {
		return nil, errors.New("owner: a budget ledger is required")
	}
	if !(cfg.MaxEpsilon > 0) {
		return nil, fmt.Errorf("owner: max epsilon must be positive, got %v", cfg.MaxEpsilon)
	}
	if cfg.Clock == nil {
		cfg.Clock = protocol.RealClock{}
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.SumRand == nil {
		cfg.SumRand = rng.Secure()
	}
	m, err := boost.NewOwner(cfg.Data)
	if err != nil {
		return nil, err
	}
	o := &Owner{cfg: cfg, self: self, post: post, log: cfg.Log.With("peer", string(self)), model: m, loop: protocol.NewLoop(cfg.Clock)}
	o.reset()
	return o, nil
}

func (o *Owner) reset() {
	o.bases = map[roundKey]*boost.Base{}
	o.evals = map[roundKey][2]float64{}
	o.updated = map[roundKey]float64{}
	o.renorm = map[roundKey]bool{}
	o.pending = nil
	o.early = nil
	o.unnormalized, o.queuedSelect = nil, nil
	o.current = roundKey{}
	o.roster, o.rosterV, o.inRoster = nil, 0, false
}

// Attach installs the owner as tr's handler and subscribes to the control
// topic, with a validator that accepts only the pinned user's messages.
func (o *Owner) Attach(tr protocol.Transport) error {
	o.loop.Call(func() { o.book, _ = tr.(protocol.AddressBook) })
	tr.SetHandler(o.Handle)
	if v, ok := tr.(protocol.Validating); ok {
		user := o.cfg.User
		if err := v.SetTopicValidator(wire.TopicControl, func(from protocol.PeerID, data []byte) protocol.Verdict {
			if from != user {
				o.stats.Inc("validator: control not from user")
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

// State reports the owner's state and session.
func (o *Owner) State() (s OwnerState, session string) {
	o.loop.Read(func() { s, session = o.state, o.session })
	return s, session
}

// Weights returns a copy of the owner's current sample weights (tests).
func (o *Owner) Weights() (w []float64) {
	o.loop.Read(func() { w = slices.Clone(o.model.W) })
	return w
}

// Final returns the final model once received.
func (o *Owner) Final() (m *boost.Model) {
	o.loop.Read(func() { m = o.final })
	return m
}

// Handle queues one inbound message as an event of the owner's loop.
// Malformed, unauthorized, stale and duplicate messages are dropped and
// counted.
func (o *Owner) Handle(m protocol.Message) {
	o.loop.Do(func() { o.handle(m) })
}

func (o *Owner) drop(reason string, m protocol.Message, err error) {
	o.stats.Inc(reason)
	o.log.Debug("dropped message", "reason", reason, "from", string(m.From), "topic", m.Topic, "protocol", m.Protocol, "err", err)
}

func (o *Owner) handle(m protocol.Message) {
	max := wire.MaxControlBytes
	if m.Protocol == wire.ProtoRing || m.Protocol == wire.ProtoShamir {
		max = wire.MaxSumFrameBytes
	}
	env, err := wire.Unmarshal(m.Data, max)
	if err != nil {
		o.drop("malformed", m, err)
		return
	}
	switch {
	case m.Topic == wire.TopicControl:
		if m.From != o.cfg.User {
			o.drop(protocol.ErrNotUser.Error(), m, nil)
			return
		}
		if err := o.control(env); err != nil {
			o.drop(reasonOf(err), m, err)
		}
	case m.Protocol == wire.ProtoRing || m.Protocol == wire.ProtoShamir:
		if o.party == nil || env.GetHeader().GetSession() != o.session || env.GetSum() == nil {
			o.drop(protocol.ErrWrongSession.Error(), m, nil)
			return
		}
		o.party.Handle(m.From, env)
	default:
		o.drop(protocol.ErrUnexpected.Error(), m, nil)
	}
}

// errEarly marks a control message that arrived before one it depends on;
// it is kept and retried (gossip does not preserve order).
var errEarly = errors.New("early")

// maxEarly bounds the early messages kept.
const maxEarly = 64

func (o *Owner) control(env *wire.Envelope) error {
	err := o.controlOnce(env)
	if errors.Is(err, errEarly) {
		if len(o.early) >= maxEarly {
			return fmt.Errorf("%w: too many early messages", protocol.ErrWrongRound)
		}
		o.early = append(o.early, env)
		return nil
	}
	if err == nil && len(o.early) > 0 {
		// Something was applied: retry what waited for it.
		for progress := true; progress; {
			progress = false
			early := o.early
			o.early = nil
			for _, e := range early {
				switch err := o.controlOnce(e); {
				case errors.Is(err, errEarly):
					o.early = append(o.early, e)
				case err == nil:
					progress = true
				default:
					o.stats.Inc(reasonOf(err))
				}
			}
		}
	}
	return err
}

func (o *Owner) controlOnce(env *wire.Envelope) error {
	h := env.GetHeader()
	if a := env.GetAnnounce(); a != nil {
		return o.onAnnounce(h, a)
	}
	if h.GetSession() != o.session || o.state != OwnerJoined {
		return protocol.ErrWrongSession
	}
	k := roundKey{h.GetRound(), h.GetAttempt()}
	switch b := env.GetBody().(type) {
	case *wire.Envelope_Select:
		return o.onSelect(k, b.Select)
	case *wire.Envelope_Learner:
		return o.onLearner(k, b.Learner)
	case *wire.Envelope_Alpha:
		return o.onAlpha(k, b.Alpha)
	case *wire.Envelope_SumStart:
		o.pending = append(o.pending, pendingSum{h, b.SumStart})
		o.runPending()
		return nil
	case *wire.Envelope_SumResult:
		return o.onSumResult(k, b.SumResult)
	case *wire.Envelope_Final:
		return o.onFinal(b.Final)
	}
	return protocol.ErrUnexpected
}

func (o *Owner) onAnnounce(h *wire.Header, a *wire.Announce) error {
	if o.state == OwnerJoined && h.GetSession() == o.session {
		if !o.inRoster && o.current.round == 0 {
			o.sendJoin() // the earlier Join may have been lost
		}
		return nil
	}
	if o.state == OwnerJoined {
		return fmt.Errorf("%w: busy with session %s", protocol.ErrWrongSession, o.session)
	}
	spec, params, err := ParseWireConfig(a.GetConfig())
	if err != nil {
		return err
	}
	d := o.cfg.Data
	if spec.Features != d.Dim() || spec.Classes != d.NumClasses() {
		return fmt.Errorf("%w: session wants %d features and %d classes, data has %d and %d",
			protocol.ErrBadConfig, spec.Features, spec.Classes, d.Dim(), d.NumClasses())
	}
	if want, have := a.GetConfig().GetSchemaDigest(), schemaDigest(d); want != "" && have != "" && want != have {
		return fmt.Errorf("%w: schema digest %s, ours %s", protocol.ErrBadConfig, want, have)
	}
	o.reset()
	o.session, o.spec, o.state = h.GetSession(), spec, OwnerJoined
	o.env = envelopes{session: o.session}
	if err := o.model.Reset(); err != nil {
		return err
	}
	o.party = securesum.NewParty(securesum.PosterEnv(o.self, o.post, o.loop, o.cfg.SumRand, o.log.Named("sum")), params)
	o.log.Info("joining session", "session", o.session, "learner", spec.Learner, "mechanism", spec.Mechanism, "eps", spec.Epsilon)
	o.sendJoin()
	return nil
}

func schemaDigest(d *dataset.Dataset) string {
	if d.Schema == nil {
		return ""
	}
	return d.Schema.Digest()
}

func (o *Owner) sendJoin() {
	join := &wire.Join{SchemaDigest: schemaDigest(o.cfg.Data)}
	if o.book != nil {
		join.Addrs = o.book.ListenAddrs()
	}
	env := &wire.Envelope{Header: o.env.header(roundKey{}), Body: &wire.Envelope_Join{Join: join}}
	o.sendUser(env)
}

func (o *Owner) sendUser(env *wire.Envelope) {
	b, err := wire.Marshal(env, wire.MaxControlBytes)
	if err != nil {
		o.log.Error("message to user too large", "err", err)
		return
	}
	o.post.Send(o.cfg.User, wire.ProtoSession, b)
}

func (o *Owner) advance(k roundKey) error {
	if k.less(o.current) {
		return fmt.Errorf("%w: round %d attempt %d after %d/%d", protocol.ErrWrongRound, k.round, k.attempt, o.current.round, o.current.attempt)
	}
	o.current = k
	return nil
}

func (o *Owner) onSelect(k roundKey, s *wire.Select) error {
	if k.round == 0 {
		return fmt.Errorf("%w: select for round 0", protocol.ErrWrongRound)
	}
	if err := o.advance(k); err != nil {
		return err
	}
	if v := s.GetRosterVersion(); v > o.rosterV && len(s.GetRoster()) > 0 && slices.IsSorted(s.GetRoster()) {
		o.roster, o.rosterV = internRoster(o.session, v, s.GetRoster()), v
		_, o.inRoster = slices.BinarySearch(o.roster, o.self)
		if addrs := s.GetRosterAddrs(); o.book != nil && len(addrs) == len(o.roster) {
			for i, p := range o.roster {
				if p != o.self && addrs[i] != "" {
					o.book.AddAddrs(p, strings.Fields(addrs[i]))
				}
			}
		}
	}
	if !slices.Contains(s.GetSelected(), string(o.self)) {
		return nil
	}
	if o.unnormalized != nil {
		o.queuedSelect = &k
		return nil
	}
	o.contribute(k)
	return nil
}

// contribute records the spend durably, then builds, perturbs and publishes
// the share. It refuses when the ledger says no (second request, budget).
func (o *Owner) contribute(k roundKey) {
	eps := o.spec.Epsilon
	if o.spec.Mechanism == ldp.None {
		eps = 0 // the non-private baseline spends nothing but still counts once
	}
	refuse := func(reason string) {
		o.stats.Inc("refused: " + reason)
		o.log.Warn("refusing to contribute", "session", o.session, "round", k.round, "attempt", k.attempt, "reason", reason)
		o.sendUser(&wire.Envelope{Header: o.env.header(k), Body: &wire.Envelope_Refuse{Refuse: &wire.Refuse{Reason: reason}}})
	}
	if eps > o.cfg.MaxEpsilon {
		refuse(fmt.Sprintf("epsilon %g above this owner's limit %g", eps, o.cfg.MaxEpsilon))
		return
	}
	if o.cfg.Ledger.Contributed(o.session) {
		refuse(protocol.ErrAlreadyContributed.Error())
		return
	}
	if err := o.cfg.Ledger.Spend(o.session, k.round, k.attempt, max(eps, minSpend)); err != nil {
		refuse(err.Error())
		return
	}
	noise := o.cfg.Noise
	var r *rand.Rand
	if noise != nil {
		r = noise(int(k.round), int(k.attempt))
	} else {
		r = rng.Secure()
	}
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
	o.post.Publish(wire.TopicShares, b)
	o.log.Debug("share released", "round", k.round, "attempt", k.attempt, "values", len(sh.Values))
}

// minSpend is what a contribution without noise records, so the ledger still
// marks the session as contributed.
const minSpend = 1e-12

func (o *Owner) onLearner(k roundKey, l *wire.Learner) error {
	if o.unnormalized != nil && o.unnormalized.less(k) {
		// The previous round's weight total has not arrived (gossip does
		// not keep order): evaluate the new learner on renormalized
		// weights, as the reference trainer does, once it has.
		return errEarly
	}
	if err := o.advance(k); err != nil {
		return err
	}
	if _, dup := o.bases[k]; dup {
		return fmt.Errorf("%w: second learner for round %d attempt %d", protocol.ErrWrongRound, k.round, k.attempt)
	}
	var b boost.Base
	if err := json.Unmarshal(l.GetModel(), &b); err != nil {
		return fmt.Errorf("%w: learner: %v", protocol.ErrUnexpected, err)
	}
	if err := b.Check(o.spec.Classes, o.spec.Features); err != nil {
		return fmt.Errorf("%w: learner: %v", protocol.ErrUnexpected, err)
	}
	o.bases[k] = &b
	werr, wsum := o.model.Evaluate(&b)
	o.evals[k] = [2]float64{werr, wsum}
	o.runPending()
	return nil
}

func (o *Owner) onAlpha(k roundKey, a *wire.Alpha) error {
	b, ok := o.bases[k]
	if !ok {
		if k.less(o.current) {
			return fmt.Errorf("%w: alpha for round %d attempt %d without its learner", protocol.ErrWrongRound, k.round, k.attempt)
		}
		return errEarly
	}
	if _, dup := o.updated[k]; dup {
		return fmt.Errorf("%w: second alpha", protocol.ErrWrongRound)
	}
	if !a.GetAccepted() {
		return nil
	}
	alpha := a.GetAlpha()
	if !(alpha > 0) || alpha > 1e3 {
		return fmt.Errorf("%w: alpha %v", protocol.ErrUnexpected, alpha)
	}
	s, err := o.model.Update(b, alpha)
	if err != nil {
		return err
	}
	o.updated[k] = s
	o.unnormalized = &k
	o.runPending()
	return nil
}

// runPending starts the secure sums whose inputs are ready.
func (o *Owner) runPending() {
	keep := o.pending[:0]
	for _, p := range o.pending {
		k := roundKey{p.h.GetRound(), p.h.GetAttempt()}
		if k.less(o.current) && k != o.current {
			o.stats.Inc("stale sum start")
			continue
		}
		var value []float64
		switch p.start.GetPurpose() {
		case PurposeErr:
			e, ok := o.evals[k]
			if !ok {
				keep = append(keep, p)
				continue
			}
			value = e[:]
		case PurposeWSum:
			s, ok := o.updated[k]
			if !ok {
				keep = append(keep, p)
				continue
			}
			value = []float64{s}
		default:
			o.stats.Inc("unknown sum purpose")
			continue
		}
		if !o.inRoster || slices.Contains(p.start.GetExcluded(), string(o.self)) {
			continue
		}
		if err := o.party.Begin(p.h, p.start, o.roster, o.cfg.User, value); err != nil {
			o.stats.Inc("sum start refused")
			o.log.Warn("secure sum not started", "purpose", p.start.GetPurpose(), "err", err)
		}
	}
	o.pending = keep
}

func (o *Owner) onSumResult(k roundKey, r *wire.SumResult) error {
	if r.GetPurpose() != PurposeWSum {
		return nil
	}
	if _, ok := o.updated[k]; !ok {
		if _, known := o.bases[k]; known || !k.less(o.current) {
			return errEarly
		}
		return fmt.Errorf("%w: weight total without the update of round %d attempt %d", protocol.ErrWrongRound, k.round, k.attempt)
	}
	if o.renorm[k] {
		return fmt.Errorf("%w: second weight total", protocol.ErrWrongRound)
	}
	if len(r.GetTotal()) != 1 || r.GetParties() == 0 {
		return fmt.Errorf("%w: weight total %v over %d parties", protocol.ErrUnexpected, r.GetTotal(), r.GetParties())
	}
	if err := o.model.Renormalize(r.GetTotal()[0], int(r.GetParties())); err != nil {
		return fmt.Errorf("%w: %v", protocol.ErrUnexpected, err)
	}
	o.renorm[k] = true
	if o.unnormalized != nil && *o.unnormalized == k {
		o.unnormalized = nil
		if q := o.queuedSelect; q != nil {
			o.queuedSelect = nil
			o.contribute(*q)
		}
	}
	return nil
}

func (o *Owner) onFinal(f *wire.Final) error {
	m, err := boost.ReadModel(bytes.NewReader(f.GetModel()), "final model")
	if err != nil {
		return fmt.Errorf("%w: %v", protocol.ErrUnexpected, err)
	}
	o.final, o.state = m, OwnerDone
	o.log.Info("session finished", "session", o.session, "rounds", len(m.Rounds))
	if o.cfg.OnFinal != nil {
		f := o.cfg.OnFinal
		o.loop.Notify(func() { f(m) })
	}
	return nil
}
