package session

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/protobuf/proto"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/lifecycle"
	"github.com/ppboost/ppboost/protocol/role"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// UserState is where the data user is in a session: the round logic's
// own steps, alongside the lifecycle phase (User.Phase) they refine.
// Joining is lifecycle.Admitting (before the start: Idle; resuming, whose
// roster comes from the checkpoint: Running); Shares and ErrSum are
// Running; Done is Done; Failed is Aborted, or Done when the session
// stopped early with a partial model.
type UserState int

const (
	UserJoining UserState = iota // announcing, collecting joins (or, resuming, telling owners where to resume)
	UserShares                   // waiting for the selected owners' shares
	UserErrSum                   // err_m secure sum running
	UserDone                     // final model published
	UserFailed                   // stopped with an error; Abort published
	UserRoster                   // the roster is out: waiting for its owners to hold it (RosterAck) before the first selection
)

func (s UserState) String() string {
	switch s {
	case UserJoining:
		return "joining"
	case UserShares:
		return "shares"
	case UserErrSum:
		return "err-sum"
	case UserDone:
		return "done"
	case UserFailed:
		return "failed"
	case UserRoster:
		return "roster"
	}
	return fmt.Sprintf("UserState(%d)", int(s))
}

// UserConfig configures the data user.
type UserConfig struct {
	Session string // session id; empty means NewSessionID() (or the checkpoint's when resuming)
	Boost   boost.Config
	Sum     securesum.Params
	Timing  Timing
	// Own is the user's own labelled data (thresholds, validation alpha);
	// Test, optional, is used only for progress reports.
	Own, Test *dataset.Dataset
	// ExpectedOwners starts the first round as soon as that many owners
	// joined (in an open session, not before the join window closes);
	// otherwise the user waits for Timing.JoinTimeout.
	ExpectedOwners int
	// Admit, if set, decides which joining peers enter the roster; nil
	// makes the session open: every peer whose Join is well-formed is
	// admitted (owners check the roster against their own allow-list, see
	// OwnerConfig.Admit). See JoinWindow for what an open session
	// guarantees.
	Admit func(protocol.PeerID) bool
	// JoinWindow is how long an open session (Admit nil) collects joins
	// before ExpectedOwners may start it; 0 means DefaultJoinWindows
	// announce intervals (at most Timing.JoinTimeout). First-come would
	// let anyone who reads the public Announce fill the roster before the
	// owners it was meant for had heard it; with the window, every owner
	// whose Join arrives within it is in the roster (or, over MaxRoster,
	// in the lot), however many ids others join with.
	JoinWindow time.Duration
	// MaxRoster, if > 0, caps the roster: when more owners joined, the
	// roster is drawn by lot among all of them (uniformly, from SumRand),
	// not taken first-come.
	MaxRoster int
	SumRand   *rand.Rand // nil means rng.Secure
	Clock     protocol.Clock
	Log       hclog.Logger
	// OnRound sees every attempt; OnDone is called once at the end.
	OnRound func(RoundReport)
	// OnSum, if set, sees every secure-sum total this user receives (what
	// the data user learns from the owners' dealings; attack tests).
	OnSum  func(purpose string, round, attempt int, total []float64, parties int)
	OnDone func(*boost.Model, error)
	// OnOutcome, if set, is told how the session ended (after OnDone).
	OnOutcome func(protocol.Outcome)
	// Checkpoint, if set, is called with the state needed to resume: when
	// the roster is fixed, before every attempt's selection is published,
	// and after every accepted round; node/ writes it to a file.
	Checkpoint func(Checkpoint)
	// Resume, if set, continues the session of this checkpoint: no accepted
	// round is redone and the owners restore their weights of that round.
	Resume *Checkpoint
	// Unchecked skips boost.Config.CheckPlan (attack tests play a data user
	// that runs plans an honest one refuses).
	Unchecked bool
}

// RoundReport is one attempt of one round as seen by the data user.
type RoundReport struct {
	boost.RoundInfo
	Selected  int            `json:"selected"`
	Answered  int            `json:"answered"` // shares + refusals received
	Refused   int            `json:"refused"`
	Refusals  map[string]int `json:"refusals,omitempty"` // refusal reason -> owners
	SumTime   time.Duration  `json:"sum_ns"`             // secure-sum latency of the round
	SumCovers int            `json:"sum_parties"`
	Why       string         `json:"why,omitempty"` // why a dropped attempt was dropped
	// Took is the attempt's own time, from its selection to its verdict
	// (RoundInfo.Elapsed counts from the session's start, join wait
	// included).
	Took time.Duration `json:"took_ns"`
	// ErrDealers is how many roster owners the attempt's err sum asked to
	// deal (alpha mode securesum; each pays one err dealing), 0 when no
	// err sum ran.
	ErrDealers int `json:"err_dealers,omitempty"`
	// Silent (distributed privacy) are the selected owners that neither
	// dealt into the attempt's share sum nor refused, sorted: dead, cut
	// off, or too slow for the sum's cap. A sum over at least its dealer
	// floor completes without them (boost.DealerPlan).
	Silent []string `json:"silent,omitempty"`
}

// Absent says which selected owners did not deal ("" when none).
func (r RoundReport) Absent() string {
	if len(r.Silent) == 0 {
		return ""
	}
	return "did not deal: " + strings.Join(r.Silent, ", ")
}

// SumTotal is a secure-sum total the data user received: what OnSum is
// given, and the Value of the engine.EventReport notification that carries
// it to the runner.
type SumTotal struct {
	Purpose        string
	Round, Attempt int
	Total          []float64
	Parties        int
}

// Checkpoint is the user's durable state after an accepted round.
type Checkpoint struct {
	Session      string `json:"session"`
	ConfigDigest string `json:"config_digest"` // the announced configuration it belongs to
	Round        int    `json:"round"`         // last accepted round
	// Attempt is the attempt of round Round+1 a resumed user starts with:
	// every earlier attempt was started (its owners are in Used), and no
	// sum of it is ever run again, so no owner deals a value twice.
	Attempt int `json:"attempt,omitempty"`
	// AcceptedAttempt is the attempt of round Round whose learner was
	// accepted: a resumed user sends that attempt's Learner and Alpha
	// again, for owners that never got the Alpha (the user stopped after
	// this checkpoint, before the Alpha left).
	AcceptedAttempt int          `json:"accepted_attempt,omitempty"`
	Used            []string     `json:"used"` // owners selected so far (shares, refusals, silence)
	Roster          []string     `json:"roster"`
	RosterAddrs     [][]string   `json:"roster_addrs"`
	RosterNonces    [][]byte     `json:"roster_nonces"`
	RosterVersion   uint32       `json:"roster_version"`
	Model           *boost.Model `json:"model"`
}

// User is the data user's side of a session: an engine.Machine (its
// Receive and Fire are in user_machine.go) run by an engine.Runner on its
// own engine.Driver. Inbound messages, its named timers (the step timer,
// the secure-sum coordinators' instance timers) and the local commands
// (start, abort) are inputs of the machine; what it wants done leaves as
// effects collected in its lifecycle Session's Out. The fields below are
// touched only by the machine, on the driver.
type User struct {
	cfg UserConfig
	// life is the session's lifecycle: phase, step timer, drops, end. A
	// named field rather than an embedded one: User's Session method (the
	// session id) and its accessors keep their names.
	life     lifecycle.Session
	self     protocol.PeerID
	log      hclog.Logger
	stats    protocol.Counters
	run      *engine.Runner
	rolePost *role.Post // what Start made (nil from New…): closed after the driver
	coord    *securesum.Coordinator
	// shareCoord runs the distributed-privacy share sums (nil with LDP).
	shareCoord *securesum.Coordinator
	us         *boost.UserState
	wcfg       *wire.SessionConfig

	state UserState
	// step is what the pending step timer (lifecycle.TimerStep) does when
	// it fires; stepNone when none is pending.
	step userStep
	env  envelopes
	// errAsked is how many roster owners the attempt's err sum asked to
	// deal (each pays one err dealing; RoundReport.Charged).
	errAsked int
	// shareDealt (distributed) is how many selected owners dealt into the
	// attempt's share sum, each charged its share: those in the total, or
	// when the sum failed, those whose shares reached a member.
	shareDealt int
	joined     map[protocol.PeerID]joinInfo
	// notJoined holds why owners that heard the announcement stayed out.
	notJoined map[protocol.PeerID]string
	roster    *Roster
	chunks    []*wire.Roster
	served    map[protocol.PeerID]served // the roster version last sent to an owner on request, and how often
	acks      map[protocol.PeerID]bool   // UserRoster: the owners that hold the first roster (RosterAck)
	ackWait   map[protocol.PeerID]bool   // UserRoster: members that may answer (mayAnswer) and have not acked
	rosterAt  time.Time                  // UserRoster: when the roster went out (the wait: rosterQuiet, Timing.JoinTimeout)
	used      map[protocol.PeerID]bool
	key       roundKey
	selected  map[protocol.PeerID]bool
	shares    map[protocol.PeerID]boost.Share
	refusals  map[string]int
	attempts  []string // what went wrong in each dropped attempt of the current round
	base      *boost.Base
	errM      float64
	alpha     float64
	started   time.Time
	ended     time.Time // when the session's outcome was stated
	attemptAt time.Time // when the attempt in flight selected its owners
	sumStart  time.Time
	report    RoundReport
	err       error
	// outcome is how the session ended (zero while it runs).
	outcome protocol.Outcome
	// bug is an internal inconsistency found during the current input (an
	// invalid phase move): the input's Receive or Fire returns it.
	bug error
	// sumRefused is why a coordinator dropped the current input ("" when
	// it did not).
	sumRefused string
	// warnRate logs what peers can repeat at most once a minute per cause.
	warnRate *protocol.RateLog
	// resumeAttempt is the attempt a resumed session continues with.
	resumeAttempt uint32
	// rtt is the round-trip estimator both coordinators read their
	// deadlines from; joins answering an announcement feed it too.
	rtt         *securesum.RTTs
	announcedAt time.Time // the last Announce (RTT samples from joins)
	// acceptedAttempt is the attempt of the last accepted round
	// (checkpointed; resendAccepted).
	acceptedAttempt uint32
	// runningAnnounces counts the running re-announcements so far
	// (announceRunning: each waits twice as long as the last).
	runningAnnounces int

	// Read by other goroutines (status.go): published by the driver.
	status atomic.Pointer[userStatus]
	admit  atomic.Pointer[admitted]
}

type joinInfo struct {
	addrs []string
	nonce []byte
	// check is the LiveCheck nonce sent to the joiner (nil before the
	// first), checkedAt when the first was sent (a repeated Join gets the
	// same nonce again and does not move it), live whether the joiner
	// echoed it (liveness.go).
	check     []byte
	checkedAt time.Time
	checks    int
	live      bool
	late      bool // joined after the rounds started
}

// NewUser prepares the data user; Attach connects it and starts announcing.
func NewUser(self protocol.PeerID, post protocol.Poster, cfg UserConfig) (*User, error) {
	cfg = cfg.withRuntimeDefaults() // config.go
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("user: %w", err)
	}
	us, err := boost.NewUserState(cfg.Boost, cfg.Own, cfg.Test)
	if err != nil {
		return nil, fmt.Errorf("user: %w", err)
	}
	u := &User{cfg: cfg, self: self, log: cfg.Log.With("session", cfg.Session), us: us,
		joined: map[protocol.PeerID]joinInfo{}, notJoined: map[protocol.PeerID]string{}, used: map[protocol.PeerID]bool{}, served: map[protocol.PeerID]served{}}
	u.life = lifecycle.Session{ID: cfg.Session, Drops: &u.stats, Log: cfg.Log}
	u.env = envelopes{session: cfg.Session}
	u.warnRate = &protocol.RateLog{Log: u.log, Clock: userClock{u}}
	if c := cfg.Sum.Cap(); cfg.Timing.IdleTimeout < 2*c {
		// A dealing may be extended to the cap without a word to the
		// dealers outside the committee, and its reveal takes a few steps.
		u.log.Warn("the owners' idle timeout is shorter than twice the secure sums' cap: owners may leave a session whose sum is still progressing",
			"idle_timeout", cfg.Timing.IdleTimeout, "sum_max_wait", c)
	}
	if err := us.Spec.WithSum(cfg.Sum.MinParties, cfg.Sum.ScaleBits); err != nil {
		return nil, fmt.Errorf("user: %w", err)
	}
	u.wcfg = WireConfig(cfg.Boost, us.Spec, cfg.Sum, cfg.Timing, schemaDigest(cfg.Own))
	u.wcfg.Schema = schemaWire(cfg.Own)
	if _, _, err := ParseWireConfig(u.wcfg); err != nil {
		// What owners would refuse (a ring with distributed noise, say).
		return nil, fmt.Errorf("user: %w", err)
	}
	// The coordinators are sub-machines: they send into the user's Out,
	// arm their instance timers as named timers of the user (Fire hands
	// them back by prefix) and read the input's time.
	u.rtt = securesum.NewRTTs()
	u.coord = securesum.NewCoordinator(u.sumEnv(timerPrefixErr), pairSumParams(&us.Spec, cfg.Sum))
	if us.Spec.Distributed() {
		if _, _, err := us.Spec.DistributedNoise(); err != nil {
			return nil, fmt.Errorf("user: distributed noise: %w", err)
		}
		u.shareCoord = securesum.NewCoordinator(u.sumEnv(timerPrefixShare), shareSumParams(&us.Spec, cfg.Sum))
	}
	if r := cfg.Resume; r != nil {
		if err := u.restore(r); err != nil {
			return nil, fmt.Errorf("user: resume: %w", err)
		}
	}
	u.run = u.newRunner(cfg.Clock, post) // user_machine.go
	u.publishStatus()
	u.publishAdmitted()
	return u, nil
}

// ConfigDigest names an announced configuration (checkpoints record it).
func ConfigDigest(w *wire.SessionConfig) string {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(w)
	return fmt.Sprintf("%x", hashBytes(b))
}

// restore loads a checkpoint: the roster, the owners used and the accepted
// rounds (replayed into the user's validation weights and test votes).
func (u *User) restore(c *Checkpoint) error {
	if c.ConfigDigest != ConfigDigest(u.wcfg) {
		return errors.New("the checkpoint belongs to another configuration (flags or data changed)")
	}
	if len(c.Roster) != len(c.RosterAddrs) || len(c.Roster) != len(c.RosterNonces) || c.Model == nil {
		return errors.New("checkpoint roster or model incomplete")
	}
	if c.Round != len(c.Model.Rounds) || c.Round >= u.cfg.Boost.Rounds || c.Round < 0 {
		return fmt.Errorf("checkpoint at round %d with %d model rounds, session has %d", c.Round, len(c.Model.Rounds), u.cfg.Boost.Rounds)
	}
	for _, r := range c.Model.Rounds {
		b := r.Base
		u.us.Accept(&b, r.Err, r.Alpha)
	}
	ids := peers(c.Roster)
	if !slices.IsSorted(ids) {
		return errors.New("checkpoint roster not sorted")
	}
	u.roster = newRoster(u.cfg.Session, c.RosterVersion+1, ids, c.RosterAddrs, c.RosterNonces)
	for _, p := range c.Used {
		u.used[protocol.PeerID(p)] = true
	}
	if c.Attempt < 0 || c.Attempt > u.cfg.Boost.MaxAttempts {
		return fmt.Errorf("checkpoint resumes at attempt %d, the session allows %d", c.Attempt, u.cfg.Boost.MaxAttempts)
	}
	if c.AcceptedAttempt < 0 || c.AcceptedAttempt >= u.cfg.Boost.MaxAttempts {
		return fmt.Errorf("checkpoint's round %d was accepted at attempt %d, the session allows %d", c.Round, c.AcceptedAttempt, u.cfg.Boost.MaxAttempts)
	}
	u.key = roundKey{round: uint32(c.Round)}
	u.resumeAttempt, u.acceptedAttempt = uint32(c.Attempt), uint32(c.AcceptedAttempt)
	return nil
}

// Session is the session id.
func (u *User) Session() string { return u.cfg.Session }

// Stats returns the dropped-message counters.
func (u *User) Stats() *protocol.Counters { return &u.stats }

// validateShare runs before a share is forwarded or delivered.
func (u *User) validateShare(from protocol.PeerID, data []byte) protocol.Verdict {
	if len(data) > wire.MaxShareBytes {
		u.stats.Inc("validator: oversized")
		return protocol.Reject
	}
	verdict := protocol.Reject
	// The admitted set, not the driver: a validator never waits on events.
	switch a := u.admit.Load(); {
	case a.selected[from]:
		verdict = protocol.Accept
	case a.used[from]:
		u.stats.Inc("validator: stale share")
		verdict = protocol.Ignore
	default:
		u.stats.Inc("validator: share from unselected peer")
	}
	return verdict
}

func (u *User) publish(k roundKey, body proto.Message) {
	if data := u.control(k, body); data != nil {
		u.life.Out.Publish(wire.TopicControl, data)
	}
}

// toAudience sends an attempt's control message (its Learner, its Alpha)
// to each owner of the session's audience directly, once: a roster owner
// applies it before its next dealing, and the direct stream keeps it ahead
// of the next message the user sends that owner (the next Select, the err
// sum's SumStart). The control topic does not carry it: flooded there it
// went to every owner again, doubling what an attempt costs the user's
// uplink (issue 31), and only the audience needs it.
func (u *User) toAudience(k roundKey, body proto.Message) { u.sendEach(u.audience(), k, body) }

// audience are the owners an attempt's messages concern: the roster's,
// then those that joined, answered the liveness check and are not in it (a
// late joiner waits for a later version and leaves when a round is
// accepted without it; one the roster left out leaves when a Select names
// a roster without it). A joiner that never answered gets nothing: an
// outsider's Join costs the user no attempt's messages.
func (u *User) audience() []protocol.PeerID {
	out := slices.Clone(u.roster.IDs)
	var rest []protocol.PeerID
	for p, j := range u.joined {
		if _, in := slices.BinarySearch(u.roster.IDs, p); !in && j.live {
			rest = append(rest, p)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// control is a control message's bytes (nil after failing the session
// when it cannot be encoded).
func (u *User) control(k roundKey, body proto.Message) []byte {
	env, err := wire.Wrap(u.env.header(k), body)
	if err != nil {
		u.fail(err)
		return nil
	}
	data, err := wire.Marshal(env, wire.MaxControlBytes)
	if err != nil {
		u.fail(fmt.Errorf("control message: %w", err))
		return nil
	}
	return data
}

func (u *User) send(to protocol.PeerID, k roundKey, body proto.Message) {
	u.sendEach([]protocol.PeerID{to}, k, body)
}

// sendEach sends one message, the same bytes, to each of to directly (a
// message that cannot be encoded fails the session, as control does).
func (u *User) sendEach(to []protocol.PeerID, k roundKey, body proto.Message) {
	if data := u.control(k, body); data != nil {
		for _, p := range to {
			u.life.Out.Send(p, wire.ProtoSession, data)
		}
	}
}

// announce publishes the session and arms the step timer for the next
// announce tick (announceTick) until the rounds start.
func (u *User) announce() {
	if u.state != UserJoining {
		return
	}
	u.publish(roundKey{}, &wire.Announce{Config: u.wcfg})
	u.announcedAt = u.life.Now()
	u.setStep(stepAnnounce, u.cfg.Timing.AnnounceInterval)
}

// announceTick is the step timer while joining: start the rounds if the
// owners are in, fail or start with who joined once the join timeout has
// passed, or announce again.
func (u *User) announceTick() {
	if u.state != UserJoining {
		return
	}
	if u.maybeStart(); u.state != UserJoining || u.roster != nil {
		return
	}
	elapsed := u.life.Now().Sub(u.started)
	if elapsed >= u.cfg.Timing.JoinTimeout {
		if len(u.joined) < u.minRoster() {
			why := map[string]int{}
			for _, r := range u.notJoined {
				why[r]++
			}
			u.fail(fmt.Errorf("%w: %d owners joined within %v, need at least %d; %d refused (%s); owners that said nothing may pin another --user or not reach this node",
				protocol.ErrSessionFailed, len(u.joined), u.cfg.Timing.JoinTimeout, u.minRoster(), len(u.notJoined), refusalSummary(why)))
			return
		}
		u.startRounds()
		return
	}
	u.announce()
}

// minRoster is the fewest owners a session can start with: one round's
// owners, and enough parties for a secure sum.
func (u *User) minRoster() int { return max(u.cfg.Boost.OwnersPerRound, u.cfg.Sum.MinParties) }

// resume re-announces the checkpointed session with the round to resume
// after; owners restore that round's weights. Rounds continue one announce
// interval later (resumeTick).
func (u *User) resume() {
	u.resendAccepted()
	w := proto.Clone(u.wcfg).(*wire.SessionConfig)
	w.Resume, w.ResumeAfterRound = true, uint32(u.cfg.Resume.Round)
	u.publish(roundKey{}, &wire.Announce{Config: w})
	u.log.Info("resuming session", "after_round", u.cfg.Resume.Round, "owners", len(u.roster.IDs), "used", len(u.used))
	u.setStep(stepResume, u.cfg.Timing.AnnounceInterval)
}

// resendAccepted sends the last accepted round's Learner and Alpha again,
// to each owner of the roster, ahead of the resume announcement. The
// checkpoint of an accepted round is written in the step whose effects
// carry its Alpha, so a user that stops in between resumes after a round
// whose Alpha never left: without it every owner would lack the round's
// weights and leave the session. An owner that has them drops the copies
// (an earlier round, counted); one that holds the announcement for the
// Alpha (Owner.resume) settles the round and follows.
func (u *User) resendAccepted() {
	r := len(u.us.Model.Rounds)
	if r == 0 {
		return
	}
	last := u.us.Model.Rounds[r-1]
	learner, err := wire.LearnerOf(&last.Base)
	if err != nil {
		u.fail(err)
		return
	}
	k := roundKey{round: uint32(r), attempt: u.acceptedAttempt}
	u.toAudience(k, learner)
	u.toAudience(k, &wire.Alpha{Alpha: last.Alpha, Accepted: true, Err: last.Err})
}

// resumeTick publishes the checkpoint's roster and selects the owners of
// the resumed round's next attempt.
func (u *User) resumeTick() {
	if u.state != UserJoining {
		return
	}
	u.publishRoster()
	// A fresh attempt: the attempts the earlier incarnation started are
	// spent, and their sums are never opened again (an owner deals a
	// value in one instance of one sum only).
	u.key = roundKey{round: u.key.round + 1, attempt: u.resumeAttempt}
	if int(u.key.attempt) >= u.cfg.Boost.MaxAttempts {
		u.fail(fmt.Errorf("round %d: the earlier incarnation used all %d attempts: %w", u.key.round, u.cfg.Boost.MaxAttempts, boost.ErrNoProgress))
		return
	}
	u.selectOwners()
}

// served is a roster version the user sent an owner on request, and how
// often.
type served struct {
	version uint32
	times   int
}

// maxRosterAnswers bounds how often the user sends one roster version to
// one owner on request: an answer can be lost (the owner asks again at the
// next Select naming the version), and a deviating owner that asks at every
// Select costs the user's uplink at most this many rosters.
const maxRosterAnswers = 3

func (u *User) onDirect(from protocol.PeerID, env *wire.Envelope) error {
	switch b := env.GetBody().(type) {
	case *wire.Envelope_Join:
		return u.onJoin(from, b.Join)
	case *wire.Envelope_LiveEcho:
		return u.onLiveEcho(from, b.LiveEcho) // liveness.go
	case *wire.Envelope_RosterAck:
		return u.onRosterAck(from, b.RosterAck)
	case *wire.Envelope_RosterRequest:
		r := u.roster
		if r == nil || b.RosterRequest.GetVersion() != r.Version || !slices.Contains(r.IDs, from) {
			return fmt.Errorf("%w: roster request for version %d", protocol.ErrWrongRound, b.RosterRequest.GetVersion())
		}
		sv := u.served[from]
		if sv.version != r.Version {
			sv = served{version: r.Version}
		}
		if sv.times >= maxRosterAnswers {
			return fmt.Errorf("%w: roster request %d for version %d", protocol.ErrDuplicateShare, sv.times+1, r.Version)
		}
		sv.times++
		u.served[from] = sv
		for _, c := range u.chunks {
			u.send(from, roundKey{}, c)
		}
		return nil
	case *wire.Envelope_Refuse:
		if u.state == UserJoining && env.GetHeader().GetRound() == 0 {
			// An owner that will not join says why.
			if _, seen := u.notJoined[from]; !seen {
				// At warn for the first few: in an open session anyone
				// can refuse, with as many ids as it likes.
				level := hclog.Warn
				if len(u.notJoined) >= maxLoggedRefusals {
					level = hclog.Debug
				}
				u.log.Log(level, "owner will not join", "owner", string(from), "reason", b.Refuse.GetReason(), "refused_so_far", len(u.notJoined)+1)
			}
			if _, seen := u.notJoined[from]; !seen && len(u.notJoined) >= maxJoiners {
				return fmt.Errorf("%w: %d refusals held already", protocol.ErrBadConfig, len(u.notJoined))
			}
			u.notJoined[from] = b.Refuse.GetReason()
			return nil
		}
		k := roundKey{env.GetHeader().GetRound(), env.GetHeader().GetAttempt()}
		if u.state != UserShares || k != u.key || !u.selected[from] {
			return fmt.Errorf("%w: refusal", protocol.ErrWrongRound)
		}
		if _, dup := u.shares[from]; dup {
			return protocol.ErrDuplicateShare
		}
		delete(u.selected, from)
		u.publishAdmitted()
		reason := b.Refuse.GetReason()
		u.refusals[reason]++
		// One line a minute (with the count suppressed): the round's report
		// sums up every refusal by reason.
		u.warnRate.Logf(hclog.Info, "owner refused", "owner refused", "owner", string(from), "round", k.round, "attempt", k.attempt, "reason", reason)
		if u.shareCoord == nil {
			u.maybeAggregate()
		}
		return nil
	}
	return protocol.ErrUnexpected
}

// onJoin admits a joining owner into the next roster, after checking what it
// claims: the agreed schema, a nonce, a bounded address list.
func (u *User) onJoin(from protocol.PeerID, j *wire.Join) error {
	late := u.roster != nil
	if late && !u.growing() || !late && u.state != UserJoining {
		return fmt.Errorf("%w: join after the rounds started", protocol.ErrWrongRound)
	}
	if want := u.wcfg.GetSchemaDigest(); want != "" && j.GetSchemaDigest() != want {
		// Anyone can send Joins: logged once a minute, counted always.
		u.warnRate.Logf(hclog.Warn, "join refused: schema differs", "join refused: schema differs", "owner", string(from), "theirs", j.GetSchemaDigest(), "ours", want)
		return fmt.Errorf("%w: owner schema digest %q, want %q", protocol.ErrBadConfig, j.GetSchemaDigest(), want)
	}
	if len(j.GetNonce()) != NonceBytes {
		return fmt.Errorf("%w: join nonce of %d bytes", protocol.ErrBadConfig, len(j.GetNonce()))
	}
	addrs := j.GetAddrs()
	if len(addrs) > maxJoinAddrs {
		return fmt.Errorf("%w: %d addresses in a join (at most %d)", protocol.ErrBadConfig, len(addrs), maxJoinAddrs)
	}
	for _, a := range addrs {
		if len(a) > maxAddrBytes || strings.ContainsAny(a, " \t\n") {
			return fmt.Errorf("%w: join address of %d bytes", protocol.ErrBadConfig, len(a))
		}
	}
	if u.cfg.Admit != nil && !u.cfg.Admit(from) {
		return fmt.Errorf("%w: %s is not admitted", protocol.ErrBadConfig, from)
	}
	if _, ok := u.joined[from]; !ok {
		u.log.Debug("owner joined", "owner", string(from), "joined", len(u.joined)+1)
	}
	if _, ok := u.joined[from]; !ok && len(u.joined) >= maxJoiners {
		return fmt.Errorf("%w: %d owners joined already (at most %d are held)", protocol.ErrBadConfig, len(u.joined), maxJoiners)
	}
	info, had := u.joined[from]
	if !had {
		info.late = late // held for a later roster version
	}
	info.addrs, info.nonce = slices.Clone(addrs), slices.Clone(j.GetNonce())
	if !info.live {
		u.challenge(from, &info) // liveness.go
	}
	u.joined[from] = info
	// An owner answers every Announce with a Join while it has no roster:
	// the time since the last Announce is a round trip to it, with its
	// queueing and processing (a Join that answers an earlier Announce gives
	// a sample that is too short; the estimator's deviation absorbs it).
	if rtt := u.life.Now().Sub(u.announcedAt); !u.announcedAt.IsZero() && rtt <= u.cfg.Timing.AnnounceInterval {
		u.rtt.Observe(from, rtt)
	}
	if !late {
		u.maybeStart()
	}
	return nil
}

// DefaultJoinWindows is an open session's default join window in announce
// intervals: an owner subscribed to the control topic hears an Announce
// within one interval (the first may be lost while the mesh forms, so two),
// and its Join takes one more hop.
const DefaultJoinWindows = 3

// maxLoggedRefusals is how many owners' refusals to join the user logs at
// warn level; later ones go to debug (the failure message summarizes them).
const maxLoggedRefusals = 32

// maxJoiners bounds the joins (and the refusals) a user holds (each at most maxJoinAddrs
// addresses of maxAddrBytes): sybils can join, but not without bound.
const maxJoiners = 1 << 17

// joinWindow is how long an open session collects joins before
// ExpectedOwners may start it; a session with an admission rule has none.
func (u *User) joinWindow() time.Duration {
	if u.cfg.Admit != nil {
		return 0
	}
	w := u.cfg.JoinWindow
	if w <= 0 {
		w = DefaultJoinWindows * u.cfg.Timing.AnnounceInterval
	}
	return min(w, u.cfg.Timing.JoinTimeout)
}

// maybeStart starts the rounds once ExpectedOwners joined and the join
// window is over.
func (u *User) maybeStart() {
	if u.cfg.ExpectedOwners > 0 && len(u.joined) >= u.cfg.ExpectedOwners &&
		u.life.Now().Sub(u.started) >= u.joinWindow() {
		u.startRounds()
	}
}

func (u *User) startRounds() {
	if u.state != UserJoining || u.roster != nil {
		return
	}
	ids := make([]protocol.PeerID, 0, len(u.joined))
	for p := range u.joined {
		ids = append(ids, p)
	}
	slices.Sort(ids)
	if m := u.cfg.MaxRoster; m > 0 && len(ids) > m {
		// By lot among everyone who joined, not first-come.
		u.cfg.SumRand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		u.log.Info("roster drawn by lot", "joined", len(ids), "roster", m)
		ids = ids[:m]
		slices.Sort(ids)
	}
	addrs, nonces := make([][]string, len(ids)), make([][]byte, len(ids))
	for i, p := range ids {
		addrs[i], nonces[i] = u.joined[p].addrs, u.joined[p].nonce
	}
	if !u.cfg.Unchecked {
		// Before anyone spends: enough owners for the rounds and the
		// dropped attempts, and an err sum that can rank learners.
		if err := u.cfg.Boost.CheckPlan(&u.us.Spec, len(ids)); err != nil {
			u.fail(err)
			return
		}
	}
	if err := u.checkRingBound(ids); err != nil {
		u.fail(err)
		return
	}
	u.roster = newRoster(u.cfg.Session, 1, ids, addrs, nonces)
	u.goPhase(lifecycle.Running)
	if u.step == stepAnnounce {
		u.stopStep() // no more announcements
	}
	u.log.Info("starting rounds", "owners", len(ids))
	u.publishRoster()
	if u.growable() {
		// Owners that arrive after the start hear the session and enter a
		// later roster version (liveness.go).
		u.life.Out.SetTimer(timerAnnounce, u.runningAnnounceAfter())
	}
	if u.cfg.Checkpoint != nil {
		u.cfg.Checkpoint(u.checkpoint()) // round 0: a restart before the first accepted round resumes too
	}
	u.key = roundKey{round: 1}
	u.awaitRoster()
}

// awaitRoster waits, before the first selection, until the roster's owners
// hold it (RosterAck): every one of them, or none more for rosterQuiet
// after the last, or Timing.JoinTimeout in all. The user floods the roster
// to each of its n owners (n chunks' worth on its uplink: 200 KB to 1,000
// owners, 16 s at 100 Mbit/s), while a Select's direct copies arrive after
// one delay: a first attempt that did not wait ran out its share deadline
// while its owners held the Select for the roster (issue 31), and spent
// owners for nothing.
//
// Silent ids (outsiders that joined and answer nothing) never ack: the wait
// is for the members that may answer (mayAnswer: echoed their liveness
// check, or still within its grace), and ends when each of them acked. A
// roster without one (every member silent) waits one announce interval. Before, it waited for every member: 20 silent outsiders held
// the first selection for the whole join timeout (40 s in
// TestOpenSessionOutlivesSilentOutsiderProcesses).
func (u *User) awaitRoster() {
	u.state = UserRoster
	u.acks = make(map[protocol.PeerID]bool, len(u.roster.IDs))
	u.ackWait = make(map[protocol.PeerID]bool, len(u.roster.IDs))
	for _, p := range u.roster.IDs {
		if u.mayAnswer(p) {
			u.ackWait[p] = true
		}
	}
	u.rosterAt = u.life.Now()
	if len(u.ackWait) == 0 {
		u.setStep(stepRoster, min(u.cfg.Timing.AnnounceInterval, u.cfg.Timing.JoinTimeout))
		return
	}
	u.setStep(stepRoster, u.cfg.Timing.JoinTimeout)
}

// rosterQuiet is how long the user waits for more RosterAcks after the
// last one before it selects: as long again as the roster has been out (at
// least an announce interval). The flood's copies do not arrive together:
// at 1,000 owners on the simulated internet two owners acked within 3 s and
// the rest over the next 13, so a fixed quiet interval (300 ms) started the
// first attempt after 2 acks. Owners that never ack (silent joiners) cost
// at most as long as the roster's transfer again, within the join timeout.
func (u *User) rosterQuiet() time.Duration {
	return max(u.cfg.Timing.AnnounceInterval, u.life.Now().Sub(u.rosterAt))
}

// onRosterAck counts an owner that holds the first roster; the first
// selection starts when every member has it, or rosterQuiet after the last.
func (u *User) onRosterAck(from protocol.PeerID, a *wire.RosterAck) error {
	if u.state != UserRoster || u.roster == nil || a.GetVersion() != u.roster.Version {
		return nil // late, or for a later version (no selection waits for it)
	}
	if _, ok := slices.BinarySearch(u.roster.IDs, from); !ok {
		return fmt.Errorf("%w: roster ack from a peer outside the roster", protocol.ErrUnexpected)
	}
	if u.acks[from] {
		return nil
	}
	u.acks[from] = true
	delete(u.ackWait, from)
	if n := len(u.acks); u.log.IsDebug() && (n&(n-1) == 0 || n > len(u.roster.IDs)-10) {
		// The roster tree's progress: who acks last, and when (its index
		// names its parent: rostertree.go).
		i, _ := slices.BinarySearch(u.roster.IDs, from)
		u.log.Debug("roster acks", "acked", n, "owners", len(u.roster.IDs), "index", i,
			"since_roster", u.life.Now().Sub(u.rosterAt))
	}
	if len(u.ackWait) == 0 {
		// Every member that may answer holds it.
		u.stopStep()
		u.rosterHeld()
		return nil
	}
	u.setStep(stepRoster, min(u.rosterQuiet(), u.rosterAt.Add(u.cfg.Timing.JoinTimeout).Sub(u.life.Now())))
	return nil
}

// mayAnswer reports whether the first selection waits for member p's
// RosterAck: p echoed its liveness check, or its check is still within its
// grace (an owner that joined just before the roster), or p was never
// checked (a resumed roster's members). A member whose check went
// unanswered past its grace is silent so far, and not waited for.
func (u *User) mayAnswer(p protocol.PeerID) bool {
	j, ok := u.joined[p]
	if !ok || j.live || j.check == nil {
		return true
	}
	return u.life.Now().Before(j.checkedAt.Add(u.liveGrace()))
}

// rosterHeld ends UserRoster: the first selection.
func (u *User) rosterHeld() {
	if u.state != UserRoster {
		return
	}
	u.log.Debug("owners hold the roster", "acked", len(u.acks), "owners", len(u.roster.IDs))
	u.acks, u.ackWait = nil, nil
	u.selectOwners()
}

// checkRingBound refuses, before anyone spends, a ring whose latency bound
// cannot fit in the sum's cap, and warns when it exceeds the sum's step: a
// ring pass is 2n+1 sequential messages (securesum.RingBound), each taking
// the one-way delay measured from the owners' joins (half the largest
// smoothed RTT), so its time grows with the roster whatever the timeouts.
func (u *User) checkRingBound(ids []protocol.PeerID) error {
	if u.cfg.Sum.Method != securesum.Ring || u.cfg.Boost.Alpha != boost.AlphaSecureSum {
		return nil
	}
	srtt, measured := u.rtt.MaxSRTT(ids)
	if measured == 0 {
		return nil
	}
	bound := securesum.RingBound(len(ids), srtt/2)
	if c := u.cfg.Sum.Cap(); bound > c {
		return fmt.Errorf("%w: a ring of %d owners needs %d sequential messages of up to %v one way (measured from %d joins): its latency bound %v exceeds the sum's cap of %v (--sum-max-wait, sum.max_wait); use Shamir sums (--securesum shamir) or raise the cap",
			protocol.ErrBadConfig, len(ids), 2*len(ids)+1, srtt/2, measured, bound.Round(time.Millisecond), c)
	}
	if bound > u.cfg.Sum.Timeout {
		u.log.Warn("the ring's latency bound exceeds the sum step; each ring pass waits for it (up to the cap)",
			"owners", len(ids), "one_way", srtt/2, "bound", bound.Round(time.Millisecond), "sum_timeout", u.cfg.Sum.Timeout, "cap", u.cfg.Sum.Cap())
	}
	return nil
}

// publishRoster publishes the roster's head on the control topic and sends
// its chunks down the roster tree (rostertree.go): to the first k members,
// which forward them. Joiners the version leaves out (not drawn by lot,
// dropped for silence) get the chunks straight from the user, as a flood
// gave them before, so that they learn it (at most maxJoiners).
func (u *User) publishRoster() {
	r := u.roster
	u.chunks = r.chunks()
	head := rosterHead(r.Version, len(r.IDs), u.chunks)
	u.publish(roundKey{}, head)
	_, hi := treeChildren(-1, len(r.IDs), int(head.GetFanout()))
	to := slices.Clone(r.IDs[:hi])
	for p := range u.joined {
		if _, in := slices.BinarySearch(r.IDs, p); !in && !u.joined[p].late {
			to = append(to, p)
		}
	}
	slices.Sort(to[hi:]) // a map's order: the effects must not depend on it
	for _, c := range u.chunks {
		u.sendEach(to, roundKey{}, c)
	}
	if u.log.IsDebug() {
		size := 0
		for _, c := range u.chunks {
			size += proto.Size(c)
		}
		u.log.Debug("published the roster", "version", r.Version, "owners", len(r.IDs), "chunks", len(u.chunks),
			"bytes", size, "fanout", head.GetFanout(), "sent_to", len(to))
	}
}

// selectOwners picks H unused owners on the public selection stream and
// publishes the selection; the ledger of each owner enforces once-only.
func (u *User) selectOwners() {
	u.growRoster() // liveness.go: owners that joined late and answered
	h := u.cfg.Boost.OwnersPerRound
	var avail []protocol.PeerID
	for _, p := range u.roster.IDs {
		if !u.used[p] {
			avail = append(avail, p)
		}
	}
	if len(avail) < h {
		u.fail(fmt.Errorf("round %d attempt %d: %d unused owners, need %d: %w",
			u.key.round, u.key.attempt, len(avail), h, boost.ErrOutOfOwners))
		return
	}
	// A distributed round selects spares too (boost.DealerPlan): its share
	// sum completes with the dealer floor of them.
	h = u.us.Spec.Selected(len(avail))
	picked := u.pick(avail, h) // liveness.go: owners that answered first
	u.selected = make(map[protocol.PeerID]bool, h)
	sel := make([]string, len(picked))
	for i, p := range picked {
		u.selected[p], u.used[p] = true, true
		sel[i] = string(p)
	}
	u.publishAdmitted()
	u.shares = make(map[protocol.PeerID]boost.Share, h)
	u.refusals = map[string]int{}
	u.state = UserShares
	u.report = RoundReport{RoundInfo: boost.RoundInfo{Round: int(u.key.round), Attempt: int(u.key.attempt)}, Selected: h}
	u.errAsked, u.shareDealt = 0, 0
	u.attemptAt = u.life.Now()
	if u.cfg.Checkpoint != nil {
		// Durable before the selection leaves: a restarted user continues
		// with the next attempt and fresh owners.
		cp := u.checkpoint()
		cp.Round, cp.Attempt = int(u.key.round)-1, int(u.key.attempt)+1
		u.cfg.Checkpoint(cp)
	}
	wait := u.shareWait(sel)
	deadline := u.life.Now().Add(wait)
	u.sendSelect(&wire.Select{SelectedIndex: u.roster.indices(picked), RosterVersion: u.roster.Version, RosterSize: uint32(len(u.roster.IDs)),
		RosterDigest: u.roster.Digest, DeadlineUnixMs: deadline.UnixMilli()}, u.selectTo(sel))
	if u.shareCoord != nil {
		u.shareSum(sel)
		return
	}
	u.setStep(stepShares, wait)
}

// sendSelect sends the attempt's Select to its audience directly:
// first to to, whose next step waits for it (the selected owners and the
// share sum's committee), then, after everything else of the transition
// (the share sum's SumStarts: Out.SendLast), to the others, which only
// learn that the attempt began and which roster version it names (a
// version they lack they ask for: onSelect). On a busy uplink the
// waiting owners' copies leave first.
func (u *User) sendSelect(sel *wire.Select, to []protocol.PeerID) {
	data := u.control(u.key, sel)
	if data == nil {
		return
	}
	first := make(map[protocol.PeerID]bool, len(to))
	for _, p := range to {
		u.life.Out.Send(p, wire.ProtoSession, data)
		first[p] = true
	}
	for _, p := range u.audience() {
		if !first[p] {
			u.life.Out.SendLast(p, wire.ProtoSession, data)
		}
	}
}

// selectTo are the owners a Select goes to first: the selected owners,
// and in a distributed session the members of its share sum's committee
// (drawn from the roster: Request.Pool), which serve the sum once they
// know its dealers.
func (u *User) selectTo(sel []string) []protocol.PeerID {
	to := peers(sel)
	if u.shareCoord == nil || u.cfg.Sum.Method != securesum.Shamir {
		return to
	}
	p := shareSumParams(&u.us.Spec, u.cfg.Sum)
	return protocol.AppendNew(to, securesum.PoolCommittee(u.roster.IDs, len(sel), p, u.roster.Beacon, &wire.Header{Session: u.cfg.Session}, PurposeShare))
}

// shareWait is how long the selected owners have for their shares: the
// Select and the share are two one-way delays (half an RTO each, from the
// owners' measured round trips) plus the owner's ledger fsync and
// perturbation; twice the slowest selected owner's RTO leaves room for that
// work, and the wait is never shorter than Timing.ShareTimeout.
func (u *User) shareWait(sel []string) time.Duration {
	return max(u.cfg.Timing.ShareTimeout, 2*u.rtt.MaxRTO(peers(sel), 0))
}

// shareSum runs a distributed round's share sum over the selected owners:
// the user receives only the noisy total of at least the dealer floor of
// them. A sum that fails (too many selected owners silent or refusing)
// fails the attempt, not the session: the next attempt selects fresh owners.
func (u *User) shareSum(sel []string) {
	ids := peers(sel)
	slices.Sort(ids)
	k := u.key
	u.sumStart = u.life.Now()
	// The committee comes from the roster (Request.Pool): one set for the
	// session, whose connections the owners open at roster time, whichever
	// owners each attempt selects.
	req := securesum.Request{Header: u.env.header(k), Purpose: PurposeShare, Roster: ids,
		RosterVersion: u.roster.Version, Length: u.us.Spec.DistributedLen(), Beacon: u.roster.Beacon}
	if u.cfg.Sum.Method == securesum.Shamir {
		req.Pool = u.roster.IDs
	}
	err := u.shareCoord.Sum(req, func(total []float64, parties int, err error) {
		// After the coordinator's own bookkeeping, in the same input.
		u.life.Out.Later(func() {
			if u.state != UserShares || u.key != k {
				return
			}
			refused := u.refused()
			u.report.Refused, u.report.Refusals = refused, u.refusals
			u.report.Owners, u.report.Answered = parties, parties+refused
			u.report.Silent = u.silentDealers(req, err == nil)
			u.shareDealt = len(u.selected) - len(u.report.Silent)
			if err == nil {
				u.shareDealt = parties
			}
			if err != nil {
				u.log.Warn("share sum failed; retrying with fresh owners", "round", k.round, "attempt", k.attempt, "err", err,
					"refusals", refusalSummary(u.refusals), "silent", u.report.Silent)
				absent := ""
				if a := u.report.Absent(); a != "" {
					absent = "; " + a
				}
				u.attempts = append(u.attempts, fmt.Sprintf("attempt %d: share sum failed (%v; %d refused: %s%s)", k.attempt, err, refused, refusalSummary(u.refusals), absent))
				u.emitRound()
				u.nextAttempt()
				return
			}
			if len(u.report.Silent) > 0 {
				u.log.Warn("selected owners did not deal; the share sum completed without them", "round", k.round, "attempt", k.attempt,
					"silent", u.report.Silent, "dealers", parties, "floor", u.us.Spec.Floor)
			}
			base, err := boost.AggregateSum(&u.us.Spec, total, parties)
			if err != nil {
				u.fail(err)
				return
			}
			u.learner(base)
		})
	})
	if err != nil {
		u.fail(fmt.Errorf("round %d share sum: %w", k.round, err))
	}
}

// silentDealers are the attempt's selected owners (refusers are no longer
// selected) outside the share sum's total: with a total, those not in its
// dealer set; without one, those whose shares reached no committee member
// (the coordinator's dead parties).
func (u *User) silentDealers(req securesum.Request, done bool) []string {
	in := map[protocol.PeerID]bool{}
	if dealt, ok := u.shareCoord.Dealt(req.Header, req.Purpose); done && ok {
		for _, p := range dealt {
			in[p] = true
		}
	} else {
		for _, p := range req.Roster {
			in[p] = true
		}
		for _, p := range u.shareCoord.Dead() {
			delete(in, p)
		}
	}
	var out []string
	for _, p := range req.Roster {
		if u.selected[p] && !in[p] {
			out = append(out, string(p))
		}
	}
	return out
}

func (u *User) onShare(from protocol.PeerID, env *wire.Envelope) error {
	sh := env.GetShare()
	if sh == nil || u.shareCoord != nil {
		return protocol.ErrUnexpected // distributed rounds take no shares in the clear
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
	u.stopStep()
	refused := u.refused()
	u.report.Answered = len(u.shares) + refused
	u.report.Refused, u.report.Refusals = refused, u.refusals
	u.report.Owners = len(u.shares)
	if len(u.shares) == 0 {
		u.log.Warn("no shares arrived; retrying with fresh owners", "round", u.key.round, "attempt", u.key.attempt,
			"selected", u.report.Selected, "refused", refused, "refusals", refusalSummary(u.refusals))
		u.attempts = append(u.attempts, fmt.Sprintf("attempt %d: no shares (%d of %d refused: %s)", u.key.attempt, refused, u.report.Selected, refusalSummary(u.refusals)))
		u.emitRound()
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
	u.learner(base)
}

// learner publishes the round's learner T_m and moves on to err_m.
func (u *User) learner(base *boost.Base) {
	u.base = base
	model, err := wire.LearnerOf(base)
	if err != nil {
		u.fail(err)
		return
	}
	u.sumStart = u.life.Now()
	// Every owner of the roster evaluates it (its weights after an
	// accepted round, its err dealing when an err sum follows).
	u.toAudience(u.key, model)
	if u.cfg.Boost.Alpha == boost.AlphaValidation {
		u.decide(u.us.ValidationError(base))
		return
	}
	u.state = UserErrSum
	u.errAsked = len(u.roster.IDs)
	k := u.key
	u.sum(PurposeErr, func(total []float64, parties int) {
		if u.state != UserErrSum || u.key != k {
			return
		}
		u.report.SumCovers = parties
		u.report.SumTime = u.life.Now().Sub(u.sumStart)
		// The total carries every dealer's noise: a weight total the noise
		// made non-positive gives err 1/2 (boost.ErrFromTotal), and the
		// significance test decides.
		u.decide(boost.ErrFromTotal(total))
	})
}

// refused is how many selected owners of the attempt refused.
func (u *User) refused() (n int) {
	for _, c := range u.refusals {
		n += c
	}
	return n
}

func refusalSummary(r map[string]int) string {
	return protocol.FormatCounts(r, "; ", func(k string, n int) string { return fmt.Sprintf("%d: %s", n, k) })
}

// sum starts a secure sum of every owner's (sum w_i I(miss), sum w_i);
// done runs at the end of the input that completed it (a message or a
// timer), after the coordinator's own bookkeeping (Out.Later).
func (u *User) sum(purpose string, done func(total []float64, parties int)) {
	k := u.key
	req := securesum.Request{Header: u.env.header(u.key), Purpose: purpose, Roster: u.roster.IDs,
		RosterVersion: u.roster.Version, Length: 2, Beacon: u.roster.Beacon}
	err := u.coord.Sum(req, func(total []float64, parties int, err error) {
		u.life.Out.Later(func() {
			if err != nil {
				u.fail(fmt.Errorf("round %d %s sum: %w", u.key.round, purpose, err))
				return
			}
			u.life.Out.Notify(engine.Notify{Event: engine.EventReport, Round: int(k.round),
				Value: SumTotal{Purpose: purpose, Round: int(k.round), Attempt: int(k.attempt), Total: slices.Clone(total), Parties: parties}})
			done(total, parties)
		})
	})
	if err != nil {
		u.fail(fmt.Errorf("round %d %s sum: %w", u.key.round, purpose, err))
	}
}

// decide computes alpha_m and either accepts T_m or drops it and retries
// with fresh owners. Owners renormalize their weights from alpha alone
// (boost.GrowthFactor), so no sum of weights is needed in either alpha mode.
func (u *User) decide(errM float64) {
	alpha := boost.Alpha(errM, u.us.Spec.Classes)
	u.errM, u.alpha = errM, alpha
	u.report.Err, u.report.Alpha = errM, alpha
	// A learner is accepted only if alpha > 0 and it is significantly better
	// than chance on the user's own validation data (boost.Significant), so
	// that a null learner does not take a round (its owners stay spent).
	z, sig := u.us.Significant(u.base)
	u.report.Z = z
	accepted := alpha > 0 && sig
	// Every owner renormalizes its weights with an accepted one before its
	// next share or err dealing, and a dropped one ends the attempt of its
	// owners: it goes to each directly, on the stream the next Select
	// takes, so that it arrives before that Select.
	u.toAudience(u.key, &wire.Alpha{Alpha: alpha, Accepted: accepted, Err: errM})
	if !accepted {
		why := fmt.Sprintf("alpha %.3g <= 0", alpha)
		if alpha > 0 {
			why = fmt.Sprintf("not significantly better than chance on the validation data (z = %.2f)", z)
		}
		u.log.Info("learner dropped", "round", u.key.round, "attempt", u.key.attempt, "err", errM, "why", why)
		u.attempts = append(u.attempts, fmt.Sprintf("attempt %d: %s (err %.3g from %d owners)", u.key.attempt, why, errM, u.report.Owners))
		u.emitRound()
		u.nextAttempt()
		return
	}
	u.accept()
}

// accept adds the round's learner to the model, checkpoints, and moves on.
func (u *User) accept() {
	u.report.Accepted = true
	u.acceptedAttempt = u.key.attempt
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
	u.attempts = nil
	u.selectOwners()
}

func (u *User) checkpoint() Checkpoint {
	used := make([]string, 0, len(u.used))
	for p := range u.used {
		used = append(used, string(p))
	}
	sort.Strings(used)
	return Checkpoint{Session: u.cfg.Session, ConfigDigest: ConfigDigest(u.wcfg), Round: int(u.key.round), Used: used,
		Roster: strs(u.roster.IDs), RosterAddrs: u.roster.Addrs, RosterNonces: u.roster.Nonces,
		RosterVersion: u.roster.Version, Model: u.us.Model, AcceptedAttempt: int(u.acceptedAttempt)}
}

func (u *User) emitRound() {
	u.report.Elapsed = u.life.Now().Sub(u.started)
	u.report.Took = u.life.Now().Sub(u.attemptAt)
	u.report.ErrDealers = u.errAsked
	shares := u.report.Owners
	if u.shareCoord != nil {
		shares = u.shareDealt // a failed share sum charged its dealers too
	}
	u.report.Charged = boost.AttemptCharge(u.cfg.Boost, shares, u.errAsked)
	u.report.Why = u.roundWhy()
	u.life.Out.Notify(engine.Notify{Event: engine.EventRoundDone, Round: u.report.Round, Value: u.report})
}

func (u *User) nextAttempt() {
	if int(u.key.attempt)+1 >= u.cfg.Boost.MaxAttempts {
		u.fail(fmt.Errorf("round %d: no learner accepted in %d attempts (%s): %w", u.key.round, u.cfg.Boost.MaxAttempts,
			strings.Join(u.attempts, "; "), boost.ErrNoProgress))
		return
	}
	u.key.attempt++
	u.selectOwners()
}

func (u *User) finish() {
	u.end(protocol.NewOutcome(len(u.us.Model.Rounds), u.cfg.Boost.Rounds, "", nil), nil)
}

// fail ends the session with err: with accepted rounds the outcome is
// partial and their model is published in Final (labelled partial), without
// any it is failed and Abort tells the owners to go back to idle. The model
// trained so far is handed to OnDone with the error.
func (u *User) fail(err error) {
	u.end(protocol.NewOutcome(len(u.us.Model.Rounds), u.cfg.Boost.Rounds, "", err), err)
}

// interrupt ends the session from outside (a signal): failed whatever the
// rounds, since a restarted user resumes from its checkpoint.
func (u *User) interrupt(err error) {
	u.end(protocol.Failed(len(u.us.Model.Rounds), u.cfg.Boost.Rounds, "", err), err)
}

// end publishes the outcome (Final with the model, or Abort) and ends the
// session's lifecycle with it (which logs its one line and reports it).
func (u *User) end(out protocol.Outcome, err error) {
	if u.state == UserDone || u.state == UserFailed {
		return
	}
	u.step = stepNone // End cancels the step timer
	u.outcome, u.ended = out, u.life.Now()
	// No sum outlives the session: a stalled instance would otherwise send
	// its SumStart again to owners that have left.
	u.coord.Stop()
	if u.shareCoord != nil {
		u.shareCoord.Stop()
	}
	if out.Kind == protocol.OutcomePartial {
		u.us.Model.Partial = &boost.Partial{Rounds: out.Rounds, Planned: out.Planned, Reason: out.Reason}
	}
	if out.Kind == protocol.OutcomeFailed {
		u.state, u.err = UserFailed, err
		if err != nil && err.Error() != out.Reason {
			u.log.Debug("session failure in full", "err", err) // the outcome's reason is cut to wire.MaxTextBytes
		}
		u.publishEnd(&wire.Abort{Reason: out.Reason, Outcome: out.Wire()})
	} else {
		if final, werr := wire.FinalWC(u.us.Model, out.Wire()); werr != nil {
			out = protocol.Failed(out.Rounds, out.Planned, "", werr)
			u.outcome, u.us.Model.Partial = out, nil
			u.state, u.err = UserFailed, werr
			u.publishEnd(&wire.Abort{Reason: out.Reason, Outcome: out.Wire()})
		} else {
			u.state, u.err = UserDone, err
			if err != nil {
				u.state = UserFailed // partial: State reports why it stopped
			}
			u.publishEnd(final)
		}
	}
	// Done with a model (complete or partial), Aborted without; the
	// lifecycle logs the outcome's one line and notifies it, and the
	// runner's OnNotify hands it to OnDone and OnOutcome.
	u.life.End(out)
}

// publishEnd publishes the session's last control message.
func (u *User) publishEnd(body proto.Message) {
	env, err := wire.Wrap(u.env.header(u.key), body)
	if err != nil {
		return
	}
	data, err := wire.Marshal(env, wire.MaxControlBytes)
	if err != nil {
		u.log.Error("final message too large", "err", err)
		return
	}
	u.life.Out.Publish(wire.TopicControl, data)
}

// schemaJSON is the public schema an Announce carries (its SHA-256 is the
// announced digest), or nil when there is none or it is over
// wire.MaxSchemaBytes.
func schemaWire(d *dataset.Dataset) *wire.Schema {
	if d == nil || d.Schema == nil {
		return nil
	}
	w := wire.SchemaOf(d.Schema)
	if proto.Size(w) > wire.MaxSchemaBytes {
		return nil
	}
	return w
}
