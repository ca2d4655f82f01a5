package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/lifecycle"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// The data user as an engine.Machine: its inputs (network messages, the
// local start and abort commands, named timers), the runner that drives it
// on a node, and the adapters that make its secure-sum coordinators
// sub-machines. The round logic is in user.go.
//
// Inside the machine there is no poster, no clock and no callback to the
// application: messages, timers and notifications are effects collected in
// u.life.Out and returned by Receive and Fire; the time is the input's
// (u.life.Now). Two calls leave it synchronously, on purpose: Checkpoint,
// which must be durable before the selection it covers is published (as the
// ledger's charge before a release), and Admit, a pure predicate of the
// configuration.

// Local commands: messages the user's own node injects (Runner.Inject). The
// machine accepts them only with the user's own id as author and on no
// topic; a peer's message is always authored by that peer.
const (
	localStart = "/ppboost/local/wc-user/start"
	localAbort = "/ppboost/local/wc-user/abort" // Data: the reason
)

// Timer prefixes of the user's two coordinators (securesum.Env.TimerPrefix):
// their instance timers are named <prefix>sum/<purpose>/<round>/<attempt>.
const (
	timerPrefixErr   = "pairs/"  // u.coord: the err sums
	timerPrefixShare = "shares/" // u.shareCoord: the distributed share sums
)

// userStep is what the step timer (lifecycle.TimerStep) does when it fires.
type userStep int

const (
	stepNone     userStep = iota
	stepAnnounce          // joining: announce again, or start, or fail (announceTick)
	stepResume            // resuming: publish the roster and select (resumeTick)
	stepShares            // the selected owners' share deadline (aggregate)
	stepRoster            // the owners' RosterAcks: select (rosterHeld)
)

func (s userStep) String() string {
	switch s {
	case stepNone:
		return "none"
	case stepAnnounce:
		return "announce"
	case stepResume:
		return "resume"
	case stepShares:
		return "shares"
	case stepRoster:
		return "roster"
	}
	return fmt.Sprintf("userStep(%d)", int(s))
}

// Refusals of the user's own (the sentinels of protocol and wire name the
// rest).
var (
	// errUserTimer refuses a timer the user never armed.
	errUserTimer = errors.New("user: no such timer")
	// errSumRefused is a secure-sum message a coordinator dropped (its
	// counter, "sum: <reason>", says why).
	errSumRefused = errors.New("user: secure-sum message refused")
)

// Receive applies one inbound message (or local command).
func (u *User) Receive(now time.Time, m engine.Message) ([]engine.Effect, error) {
	u.life.Begin(now)
	return u.take(u.receive(m))
}

// Fire applies the expiry of a named timer: the step timer, or one of a
// coordinator's instance timers, routed by its prefix.
func (u *User) Fire(now time.Time, timer string) ([]engine.Effect, error) {
	u.life.Begin(now)
	var err error
	switch {
	case timer == lifecycle.TimerStep:
		u.onStep()
	case timer == timerAnnounce:
		u.announceRunning() // liveness.go
	case u.coord.Fire(timer):
	case u.shareCoord != nil && u.shareCoord.Fire(timer):
	default:
		err = fmt.Errorf("%w: %q", errUserTimer, timer)
	}
	return u.take(err)
}

// take ends an input: the effects it decided (running the work it left
// for later), and its refusal or the inconsistency it found.
func (u *User) take(err error) ([]engine.Effect, error) {
	effects := u.life.Take()
	if u.bug != nil {
		err = errors.Join(err, u.bug)
		u.bug = nil
	}
	return effects, err
}

func (u *User) receive(m engine.Message) error {
	if m.Protocol == localStart || m.Protocol == localAbort {
		if m.From != u.self || m.Topic != "" {
			u.drop(protocol.ErrUnexpected.Error(), m, nil)
			return fmt.Errorf("%w: local command from %s", protocol.ErrUnexpected, m.From)
		}
		if m.Protocol == localStart {
			return u.start()
		}
		reason := string(m.Data)
		if reason == "" {
			reason = "aborted"
		}
		u.interrupt(errors.New(reason))
		return nil
	}
	max := wire.MaxControlBytes
	switch m.Protocol {
	case wire.ProtoRing, wire.ProtoShamir:
		max = wire.MaxSumFrameBytes
	}
	env, err := wire.Unmarshal(m.Data, max)
	if err != nil {
		u.drop("malformed", m, err)
		return err
	}
	if env.GetHeader().GetSession() != u.cfg.Session {
		u.drop(protocol.ErrWrongSession.Error(), m, nil)
		return protocol.ErrWrongSession
	}
	switch {
	case m.Topic == wire.TopicShares:
		err = u.onShare(m.From, env)
	case m.Protocol == wire.ProtoSession:
		err = u.onDirect(m.From, env)
	case m.Protocol == wire.ProtoRing || m.Protocol == wire.ProtoShamir:
		// The coordinators count and log what they refuse themselves
		// (sumEnv's Dropped); the input returns the refusal.
		u.sumRefused = ""
		if u.shareCoord != nil && env.GetSum().GetPurpose() == PurposeShare {
			u.shareCoord.Handle(m.From, env)
		} else {
			u.coord.Handle(m.From, env)
		}
		if r := u.sumRefused; r != "" {
			return fmt.Errorf("%w: %s", errSumRefused, r)
		}
		return nil
	default:
		err = protocol.ErrUnexpected
	}
	if err != nil {
		u.drop(reasonOf(err), m, err)
	}
	return err
}

// drop counts a refused message under reason (the counter names /metrics
// and the tests read) and logs it.
func (u *User) drop(reason string, m engine.Message, err error) {
	u.life.Drop(reason, "session", u.cfg.Session, "from", string(m.From), "topic", m.Topic, "protocol", m.Protocol, "err", err)
}

// start begins the session: announce it and collect joins (Admitting), or,
// resuming, re-announce it with the checkpoint's roster (Running).
func (u *User) start() error {
	if u.life.Phase() != lifecycle.Idle || !u.started.IsZero() {
		return fmt.Errorf("%w: the user has started already (phase %s)", protocol.ErrUnexpected, u.life.Phase())
	}
	u.started = u.life.Now()
	if u.cfg.Resume != nil {
		u.join(lifecycle.Running)
		u.resume()
		return nil
	}
	u.join(lifecycle.Admitting)
	u.announce()
	return nil
}

// onStep runs the step timer's expiry.
func (u *User) onStep() {
	s := u.step
	u.step = stepNone
	switch s {
	case stepAnnounce:
		u.announceTick()
	case stepResume:
		u.resumeTick()
	case stepShares:
		u.aggregate()
	case stepRoster:
		u.rosterHeld()
	}
}

// setStep arms the step timer for d, to do s.
func (u *User) setStep(s userStep, d time.Duration) {
	u.step = s
	u.life.Step(d)
}

// stopStep cancels the step timer if one is pending.
func (u *User) stopStep() {
	if u.step != stepNone {
		u.step = stepNone
		u.life.StopStep()
	}
}

// join enters the session (the user arms no idle timer: it is the one
// that speaks).
func (u *User) join(p lifecycle.Phase) {
	if err := u.life.Join(u.cfg.Session, p, 0); err != nil {
		u.inconsistent(err)
	}
}

// goPhase moves the lifecycle to p.
func (u *User) goPhase(p lifecycle.Phase) {
	if err := u.life.Go(p); err != nil {
		u.inconsistent(err)
	}
}

// inconsistent records a bug of the machine: the input returns it.
func (u *User) inconsistent(err error) {
	u.log.Error("user state machine inconsistent", "state", u.state, "phase", u.life.Phase(), "err", err)
	u.bug = errors.Join(u.bug, err)
}

// newRunner binds the user to its own driver on clock; effects leave
// through post, notifications reach the configuration's callbacks.
func (u *User) newRunner(clock protocol.Clock, post protocol.Poster) *engine.Runner {
	d := engine.NewDriver(engine.Config{Clock: clock, OnDrop: func(reason string) { u.stats.Inc("loop: " + reason) },
		AfterEvent: u.publishStatus})
	return engine.NewRunner(d, u, post, engine.RunnerOptions{OnNotify: u.notify})
}

// notify hands a notification to the configuration's callbacks, between
// two events: they may call the user's accessors (Snapshot, State). The end
// of the session reaches OnDone (with the model and error the status
// published after the ending event) and then OnOutcome.
func (u *User) notify(n engine.Notify) {
	switch n.Event {
	case engine.EventRoundDone:
		if r, ok := n.Value.(RoundReport); ok && u.cfg.OnRound != nil {
			u.cfg.OnRound(r)
		}
	case engine.EventReport:
		if s, ok := n.Value.(SumTotal); ok && u.cfg.OnSum != nil {
			u.cfg.OnSum(s.Purpose, s.Round, s.Attempt, s.Total, s.Parties)
		}
	case engine.EventFinal, engine.EventAborted:
		if u.cfg.OnDone != nil {
			st := u.status.Load()
			u.cfg.OnDone(st.model, st.err)
		}
		if out, ok := n.Value.(protocol.Outcome); ok && u.cfg.OnOutcome != nil {
			u.cfg.OnOutcome(out)
		}
	}
}

// Attach installs the user as tr's handler, subscribes to the shares topic
// with a validator that admits only the selected owners' shares, and starts
// the session (announcing it, or, resuming, telling the owners where to
// resume). It returns once the start has run.
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
	u.command(localStart, nil)
	return nil
}

// Abort stops the session from outside (a signal): the owners are told and
// the user fails with err's text. It returns once the abort has run (or
// the user is closed).
func (u *User) Abort(err error) {
	var reason []byte
	if err != nil {
		reason = []byte(err.Error())
	}
	u.command(localAbort, reason)
}

// command injects a local command and waits until it has run (events run
// in order: the empty Call after it returns once it has). Not from inside
// one of the user's events on the in-memory network.
func (u *User) command(cmd string, data []byte) {
	u.run.Inject(engine.Message{From: u.self, Protocol: cmd, Data: data})
	_ = u.run.Call(context.Background(), func() {})
}

// Handle queues one inbound message as an input of the user's driver and
// returns at once (a full inbox drops it, counted as "loop: inbox full").
func (u *User) Handle(m protocol.Message) { u.run.Deliver(m) }

// sumEnv is a coordinator's environment: it sends into the user's Out,
// arms its timers as the user's named timers under prefix, reads the
// input's time and counts its drops in the user's counters.
func (u *User) sumEnv(prefix string) securesum.Env {
	env := securesum.PosterEnv(u.self, userPoster{u}, userClock{u}, u.cfg.SumRand, u.log.Named("sum"))
	env.Dropped = func(reason string) {
		u.stats.Inc(reason)
		u.sumRefused = reason
	}
	env.RTT = u.rtt
	env.Timers = &u.life.Out
	env.TimerPrefix = prefix
	return env
}

// userPoster writes a sub-machine's messages into the user's Out.
type userPoster struct{ u *User }

func (p userPoster) Send(to protocol.PeerID, protocolID string, data []byte) {
	p.u.life.Out.Send(to, protocolID, data)
}
func (p userPoster) Publish(topic string, data []byte) { p.u.life.Out.Publish(topic, data) }

// userClock is the time of the input being applied, for the sub-machines
// and the log rate limiter. Nothing arms a timer on it: the coordinators
// arm theirs through Env.Timers.
type userClock struct{ u *User }

func (c userClock) Now() time.Time { return c.u.life.Now() }

func (c userClock) AfterFunc(d time.Duration, _ func()) protocol.Timer {
	c.u.inconsistent(fmt.Errorf("user: a sub-machine armed a clock timer of %v instead of a named timer", d))
	return noTimer{}
}

type noTimer struct{}

func (noTimer) Stop() bool { return false }
