package session

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/protobuf/proto"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dataset"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// UserState is where the data user is in a session.
type UserState int

const (
	UserJoining   UserState = iota // announcing, collecting joins
	UserShares                     // waiting for the selected owners' shares
	UserErrSum                     // err_m secure sum running
	UserWeightSum                  // renormalization secure sum running
	UserDone                       // final model published
	UserFailed                     // stopped with an error
)

func (s UserState) String() string {
	switch s {
	case UserJoining:
		return "joining"
	case UserShares:
		return "shares"
	case UserErrSum:
		return "err-sum"
	case UserWeightSum:
		return "weight-sum"
	case UserDone:
		return "done"
	case UserFailed:
		return "failed"
	}
	return fmt.Sprintf("UserState(%d)", int(s))
}

// UserConfig configures the data user.
type UserConfig struct {
	Session string // session id; empty means NewSessionID()
	Boost   boost.Config
	Sum     securesum.Params
	Timing  Timing
	// Own is the user's own labelled data (thresholds, validation alpha);
	// Test, optional, is used only for progress reports.
	Own, Test *dataset.Dataset
	// ExpectedOwners starts the first round as soon as that many owners
	// joined; otherwise the user waits for Timing.JoinTimeout.
	ExpectedOwners int
	SumRand        *rand.Rand // nil means rng.Secure
	Clock          protocol.Clock
	Log            hclog.Logger
	// OnRound sees every attempt; OnDone is called once at the end.
	OnRound func(RoundReport)
	OnDone  func(*boost.Model, error)
	// Checkpoint, if set, is called after every accepted round with the
	// state needed to audit or resume; node/ writes it to a file.
	Checkpoint func(Checkpoint)
}

// RoundReport is one attempt of one round as seen by the data user.
type RoundReport struct {
	boost.RoundInfo
	Selected  int           `json:"selected"`
	Answered  int           `json:"answered"` // shares + refusals received
	Refused   int           `json:"refused"`
	SumTime   time.Duration `json:"sum_ns"` // secure-sum latency of the round (both sums)
	SumCovers int           `json:"sum_parties"`
}

// Checkpoint is the user's durable per-round state.
type Checkpoint struct {
	Session string       `json:"session"`
	Round   int          `json:"round"` // last accepted round
	Used    []string     `json:"used"`  // owners that released a share (or refused)
	Roster  []string     `json:"roster"`
	Model   *boost.Model `json:"model"`
}

// User is the data user's side of a session: a state machine driven by one
// protocol.Loop. Inbound messages (Handle), timers and secure-sum completions
// are events of that loop; the fields below are touched only on it.
type User struct {
	cfg   UserConfig
	self  protocol.PeerID
	post  protocol.Poster
	log   hclog.Logger
	stats protocol.Counters
	loop  *protocol.Loop
	coord *securesum.Coordinator
	us    *boost.UserState
	wcfg  *wire.SessionConfig

	state    UserState
	env      envelopes
	joined   map[protocol.PeerID]bool
	addrs    map[protocol.PeerID][]string
	roster   []protocol.PeerID
	rosterV  uint32
	sentV    uint32
	used     map[protocol.PeerID]bool
	key      roundKey
	selected map[protocol.PeerID]bool
	shares   map[protocol.PeerID]boost.Share
	refused  int
	base     *boost.Base
	errM     float64
	alpha    float64
	timer    protocol.Timer
	started  time.Time
	sumStart time.Time
	report   RoundReport
	err      error
}

// NewUser prepares the data user; Attach connects it and starts announcing.
func NewUser(self protocol.PeerID, post protocol.Poster, cfg UserConfig) (*User, error) {
	if cfg.Session == "" {
		cfg.Session = NewSessionID()
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
	if err := cfg.Sum.Validate(); err != nil {
		return nil, fmt.Errorf("user: secure sum: %w", err)
	}
	us, err := boost.NewUserState(cfg.Boost, cfg.Own, cfg.Test)
	if err != nil {
		return nil, fmt.Errorf("user: %w", err)
	}
	u := &User{cfg: cfg, self: self, post: post, log: cfg.Log.With("session", cfg.Session), us: us, loop: protocol.NewLoop(cfg.Clock),
		joined: map[protocol.PeerID]bool{}, addrs: map[protocol.PeerID][]string{}, used: map[protocol.PeerID]bool{}}
	u.env = envelopes{session: cfg.Session}
	u.wcfg = WireConfig(cfg.Boost, us.Spec, cfg.Sum, cfg.Timing, schemaDigest(cfg.Own))
	u.coord = securesum.NewCoordinator(securesum.PosterEnv(self, post, u.loop, cfg.SumRand, u.log.Named("sum")), cfg.Sum)
	return u, nil
}

// Session is the session id.
func (u *User) Session() string { return u.cfg.Session }

// Stats returns the dropped-message counters.
func (u *User) Stats() *protocol.Counters { return &u.stats }

// SumStats returns the secure-sum coordinator's counters.
func (u *User) SumStats() (s securesum.Stats) {
	u.loop.Read(func() { s = u.coord.Stats() })
	return s
}

// State reports the user's state and its error, if it failed.
func (u *User) State() (s UserState, err error) {
	u.loop.Read(func() { s, err = u.state, u.err })
	return s, err
}

// Model returns the model trained so far.
func (u *User) Model() (m *boost.Model) {
	u.loop.Read(func() { m = u.us.Model })
	return m
}

// Joined returns how many owners have joined.
func (u *User) Joined() (n int) {
	u.loop.Read(func() { n = len(u.joined) })
	return n
}

// Attach installs the user as tr's handler, subscribes to the shares topic
// with a validator that admits only the selected owners' shares, and starts
// announcing the session.
func (u *User) Attach(tr protocol.Transport) error {
	tr.SetHandler(u.Handle)
	if v, ok := tr.(protocol.Validating); ok {
		if err := v.SetTopicValidator(wire.TopicShares, u.validateShare); err != nil {
			return err
		}
	}
	if err := tr.Join(wire.TopicShares); err != nil {
		return err
	}
	u.loop.Call(func() {
		u.started = u.cfg.Clock.Now()
		u.announce()
	})
	return nil
}

// validateShare runs before a share is forwarded or delivered.
func (u *User) validateShare(from protocol.PeerID, data []byte) protocol.Verdict {
	if len(data) > wire.MaxShareBytes {
		u.stats.Inc("validator: oversized")
		return protocol.Reject
	}
	verdict := protocol.Reject
	u.loop.Read(func() {
		switch {
		case u.selected[from]:
			verdict = protocol.Accept
		case u.used[from]:
			u.stats.Inc("validator: stale share")
			verdict = protocol.Ignore
		default:
			u.stats.Inc("validator: share from unselected peer")
		}
	})
	return verdict
}

// Handle queues one inbound message as an event of the user's loop.
func (u *User) Handle(m protocol.Message) {
	u.loop.Do(func() { u.handle(m) })
}

func (u *User) drop(reason string, m protocol.Message, err error) {
	u.stats.Inc(reason)
	u.log.Debug("dropped message", "reason", reason, "from", string(m.From), "topic", m.Topic, "protocol", m.Protocol, "err", err)
}

func (u *User) handle(m protocol.Message) {
	max := wire.MaxControlBytes
	switch m.Protocol {
	case wire.ProtoRing, wire.ProtoShamir:
		max = wire.MaxSumFrameBytes
	}
	env, err := wire.Unmarshal(m.Data, max)
	if err != nil {
		u.drop("malformed", m, err)
		return
	}
	if env.GetHeader().GetSession() != u.cfg.Session {
		u.drop(protocol.ErrWrongSession.Error(), m, nil)
		return
	}
	switch {
	case m.Topic == wire.TopicShares:
		err = u.onShare(m.From, env)
	case m.Protocol == wire.ProtoSession:
		err = u.onDirect(m.From, env)
	case m.Protocol == wire.ProtoRing || m.Protocol == wire.ProtoShamir:
		u.coord.Handle(m.From, env)
	default:
		err = protocol.ErrUnexpected
	}
	if err != nil {
		u.drop(reasonOf(err), m, err)
	}
}

func (u *User) publish(k roundKey, body proto.Message) {
	env, err := wire.Wrap(u.env.header(k), body)
	if err != nil {
		u.fail(err)
		return
	}
	data, err := wire.Marshal(env, wire.MaxControlBytes)
	if err != nil {
		u.fail(fmt.Errorf("control message: %w", err))
		return
	}
	u.post.Publish(wire.TopicControl, data)
}

// announce publishes the session and re-arms itself until rounds start.
func (u *User) announce() {
	if u.state != UserJoining {
		return
	}
	u.publish(roundKey{}, &wire.Announce{Config: u.wcfg})
	u.setTimer(u.cfg.Timing.AnnounceInterval, func() {
		if u.state != UserJoining {
			return
		}
		elapsed := u.cfg.Clock.Now().Sub(u.started)
		if elapsed >= u.cfg.Timing.JoinTimeout {
			if len(u.joined) < u.cfg.Boost.OwnersPerRound {
				u.fail(fmt.Errorf("%w: %d owners joined within %v, need at least %d",
					protocol.ErrSessionFailed, len(u.joined), u.cfg.Timing.JoinTimeout, u.cfg.Boost.OwnersPerRound))
				return
			}
			u.startRounds()
			return
		}
		u.announce()
	})
}

// setTimer replaces the pending timer; f runs as an event of the loop.
func (u *User) setTimer(d time.Duration, f func()) {
	if u.timer != nil {
		u.timer.Stop()
	}
	var t protocol.Timer
	t = u.loop.AfterFunc(d, func() {
		if u.timer == t {
			u.timer = nil
			f()
		}
	})
	u.timer = t
}

func (u *User) onDirect(from protocol.PeerID, env *wire.Envelope) error {
	switch b := env.GetBody().(type) {
	case *wire.Envelope_Join:
		if u.state != UserJoining {
			return fmt.Errorf("%w: join after the rounds started", protocol.ErrWrongRound)
		}
		if want := u.wcfg.GetSchemaDigest(); want != "" && b.Join.GetSchemaDigest() != "" && b.Join.GetSchemaDigest() != want {
			return fmt.Errorf("%w: owner schema digest differs", protocol.ErrBadConfig)
		}
		if len(b.Join.GetAddrs()) > 0 && len(b.Join.GetAddrs()) <= 16 {
			u.addrs[from] = b.Join.GetAddrs()
		}
		if !u.joined[from] {
			u.joined[from] = true
			u.log.Debug("owner joined", "owner", string(from), "joined", len(u.joined))
		}
		if u.cfg.ExpectedOwners > 0 && len(u.joined) >= u.cfg.ExpectedOwners {
			u.startRounds()
		}
		return nil
	case *wire.Envelope_Refuse:
		k := roundKey{env.GetHeader().GetRound(), env.GetHeader().GetAttempt()}
		if u.state != UserShares || k != u.key || !u.selected[from] {
			return fmt.Errorf("%w: refusal", protocol.ErrWrongRound)
		}
		if _, dup := u.shares[from]; dup {
			return protocol.ErrDuplicateShare
		}
		delete(u.selected, from)
		u.refused++
		u.log.Info("owner refused", "owner", string(from), "reason", b.Refuse.GetReason())
		u.maybeAggregate()
		return nil
	}
	return protocol.ErrUnexpected
}

func (u *User) startRounds() {
	if u.state != UserJoining {
		return
	}
	u.roster = make([]protocol.PeerID, 0, len(u.joined))
	for p := range u.joined {
		u.roster = append(u.roster, p)
	}
	slices.Sort(u.roster)
	u.rosterV = 1
	u.log.Info("starting rounds", "owners", len(u.roster))
	u.key = roundKey{round: 1}
	u.selectOwners()
}

// selectOwners picks H unused owners on the public selection stream and
// publishes the selection; the ledger of each owner enforces once-only.
func (u *User) selectOwners() {
	h := u.cfg.Boost.OwnersPerRound
	var avail []protocol.PeerID
	for _, p := range u.roster {
		if !u.used[p] {
			avail = append(avail, p)
		}
	}
	if len(avail) < h {
		u.fail(fmt.Errorf("round %d attempt %d: %d unused owners, need %d: %w",
			u.key.round, u.key.attempt, len(avail), h, boost.ErrOutOfOwners))
		return
	}
	idx := boost.SelectOwners(u.cfg.Boost.Seed, int(u.key.round), int(u.key.attempt), len(avail), h)
	u.selected = make(map[protocol.PeerID]bool, h)
	sel := make([]string, len(idx))
	for i, j := range idx {
		p := avail[j]
		u.selected[p], u.used[p] = true, true
		sel[i] = string(p)
	}
	u.shares = make(map[protocol.PeerID]boost.Share, h)
	u.refused = 0
	u.state = UserShares
	u.report = RoundReport{RoundInfo: boost.RoundInfo{Round: int(u.key.round), Attempt: int(u.key.attempt)}, Selected: h}
	msg := &wire.Select{Selected: sel, Beacon: u.beacon(), RosterVersion: u.rosterV}
	if u.sentV != u.rosterV {
		msg.Roster = strs(u.roster)
		msg.RosterAddrs = make([]string, len(u.roster))
		for i, p := range u.roster {
			msg.RosterAddrs[i] = strings.Join(u.addrs[p], " ")
		}
		u.sentV = u.rosterV
	}
	u.publish(u.key, msg)
	u.setTimer(u.cfg.Timing.ShareTimeout, u.aggregate)
}

// beacon is the round's public randomness (committee choice), derived from
// the announced seed so that every party can recompute it.
func (u *User) beacon() []byte {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint64(b, u.cfg.Boost.Seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(u.key.round))
	binary.LittleEndian.PutUint64(b[16:], uint64(u.key.attempt))
	return b
}

func (u *User) onShare(from protocol.PeerID, env *wire.Envelope) error {
	sh := env.GetShare()
	if sh == nil {
		return protocol.ErrUnexpected
	}
	k := roundKey{env.GetHeader().GetRound(), env.GetHeader().GetAttempt()}
	if u.state != UserShares || k != u.key {
		return fmt.Errorf("%w: share for round %d attempt %d", protocol.ErrWrongRound, k.round, k.attempt)
	}
	if !u.selected[from] {
		return protocol.ErrNotSelected
	}
	if _, dup := u.shares[from]; dup {
		return protocol.ErrDuplicateShare
	}
	share := boost.Share{Values: sh.GetValues(), Labels: make([]int, len(sh.GetLabels()))}
	for i, y := range sh.GetLabels() {
		share.Labels[i] = int(y)
	}
	if err := boost.CheckShare(&u.us.Spec, share); err != nil {
		return fmt.Errorf("%w: %v", protocol.ErrBadShare, err)
	}
	u.shares[from] = share
	u.maybeAggregate()
	return nil
}

func (u *User) maybeAggregate() {
	if len(u.shares) == len(u.selected) {
		u.aggregate()
	}
}

// aggregate builds T_m from the shares received (in owner order) and moves
// on to err_m.
func (u *User) aggregate() {
	if u.state != UserShares {
		return
	}
	if u.timer != nil {
		u.timer.Stop()
		u.timer = nil
	}
	u.report.Answered = len(u.shares) + u.refused
	u.report.Refused = u.refused
	u.report.Owners = len(u.shares)
	if len(u.shares) == 0 {
		u.log.Warn("no shares arrived; retrying with fresh owners", "round", u.key.round, "attempt", u.key.attempt)
		u.nextAttempt()
		return
	}
	ids := make([]protocol.PeerID, 0, len(u.shares))
	for p := range u.shares {
		ids = append(ids, p)
	}
	slices.Sort(ids)
	shares := make([]boost.Share, len(ids))
	for i, p := range ids {
		shares[i] = u.shares[p]
	}
	base, err := boost.Aggregate(&u.us.Spec, shares)
	if err != nil {
		u.fail(err)
		return
	}
	u.base = base
	model, err := json.Marshal(base)
	if err != nil {
		u.fail(err)
		return
	}
	u.publish(u.key, &wire.Learner{Model: model})
	u.sumStart = u.cfg.Clock.Now()
	if u.cfg.Boost.Alpha == boost.AlphaValidation {
		u.decide(u.us.ValidationError(base))
		return
	}
	u.state = UserErrSum
	k := u.key
	u.sum(PurposeErr, 2, func(total []float64, parties int) {
		if u.state != UserErrSum || u.key != k {
			return
		}
		if !(total[1] > 0) {
			u.fail(fmt.Errorf("round %d: weight total %v from the err sum is not positive", k.round, total[1]))
			return
		}
		u.report.SumCovers = parties
		u.decide(total[0] / total[1])
	})
}

// sum starts a secure sum; done runs as the loop's next event after the one
// that completed it (a message or a timer).
func (u *User) sum(purpose string, length int, done func(total []float64, parties int)) {
	h := u.env.header(u.key)
	err := u.coord.Sum(h, purpose, u.roster, length, u.beacon(), func(total []float64, parties int, err error) {
		u.loop.Do(func() {
			if err != nil {
				u.fail(fmt.Errorf("round %d %s sum: %w", u.key.round, purpose, err))
				return
			}
			done(total, parties)
		})
	})
	if err != nil {
		u.fail(fmt.Errorf("round %d %s sum: %w", u.key.round, purpose, err))
	}
}

// decide computes alpha_m and either accepts T_m (then renormalizes) or
// drops it and retries with fresh owners.
func (u *User) decide(errM float64) {
	alpha := boost.Alpha(errM, u.us.Spec.Classes)
	u.errM, u.alpha = errM, alpha
	u.report.Err, u.report.Alpha = errM, alpha
	accepted := alpha > 0
	u.publish(u.key, &wire.Alpha{Alpha: alpha, Accepted: accepted, Err: errM})
	if !accepted {
		u.log.Info("learner dropped (alpha <= 0)", "round", u.key.round, "attempt", u.key.attempt, "err", errM)
		u.emitRound()
		u.nextAttempt()
		return
	}
	u.state = UserWeightSum
	k := u.key
	u.sum(PurposeWSum, 1, func(total []float64, parties int) {
		if u.state != UserWeightSum || u.key != k {
			return
		}
		u.report.SumTime = u.cfg.Clock.Now().Sub(u.sumStart)
		u.report.Accepted = true
		u.report.TestAccuracy = u.us.Accept(u.base, u.errM, u.alpha)
		u.emitRound()
		if u.cfg.Checkpoint != nil {
			u.cfg.Checkpoint(u.checkpoint())
		}
		if int(u.key.round) == u.cfg.Boost.Rounds {
			u.finish()
			return
		}
		u.key = roundKey{round: u.key.round + 1}
		u.selectOwners()
	})
}

func (u *User) checkpoint() Checkpoint {
	used := make([]string, 0, len(u.used))
	for p := range u.used {
		used = append(used, string(p))
	}
	sort.Strings(used)
	return Checkpoint{Session: u.cfg.Session, Round: int(u.key.round), Used: used, Roster: strs(u.roster), Model: u.us.Model}
}

func (u *User) emitRound() {
	u.report.Elapsed = u.cfg.Clock.Now().Sub(u.started)
	if u.cfg.OnRound != nil {
		r, f := u.report, u.cfg.OnRound
		u.loop.Notify(func() { f(r) })
	}
}

func (u *User) nextAttempt() {
	if int(u.key.attempt)+1 >= u.cfg.Boost.MaxAttempts {
		u.fail(fmt.Errorf("round %d: %d attempts: %w", u.key.round, u.cfg.Boost.MaxAttempts, boost.ErrNoProgress))
		return
	}
	u.key.attempt++
	u.selectOwners()
}

func (u *User) finish() {
	var buf bytes.Buffer
	if err := u.us.Model.Write(&buf); err != nil {
		u.fail(err)
		return
	}
	u.publish(u.key, &wire.Final{Model: buf.Bytes()})
	u.state = UserDone
	u.log.Info("session finished", "rounds", len(u.us.Model.Rounds))
	if u.cfg.OnDone != nil {
		m, f := u.us.Model, u.cfg.OnDone
		u.loop.Notify(func() { f(m, nil) })
	}
}

func (u *User) fail(err error) {
	if u.state == UserDone || u.state == UserFailed {
		return
	}
	if u.timer != nil {
		u.timer.Stop()
		u.timer = nil
	}
	u.state, u.err = UserFailed, err
	u.log.Error("session failed", "err", err)
	if u.cfg.OnDone != nil {
		m, f := u.us.Model, u.cfg.OnDone
		u.loop.Notify(func() { f(m, err) })
	}
}
