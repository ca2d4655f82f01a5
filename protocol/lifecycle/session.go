package lifecycle

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/release"
)

// Timer names the lifecycle arms (a role's own timers use other names).
const (
	TimerIdle = "idle" // an owner heard nothing from its data user for the idle timeout
	TimerStep = "step" // a data user's step deadline (joins, a round's phase)
)

// Session is the lifecycle a role embeds: see the package documentation.
// Its zero value is an Idle session with no ledger; set Ledger, Drops and
// Log before use. Not safe for concurrent use: it is part of a machine.
type Session struct {
	// ID is the current session's identifier ("" when Idle).
	ID string
	// Ledger records every release (spend, fsync) before it leaves.
	Ledger protocol.Ledger
	// Values is the release gate (an owner's): the one maker of values
	// that leave it. Its Ledger defaults to Ledger.
	Values *release.Values
	// Drops counts refused inputs by reason (for /metrics).
	Drops *protocol.Counters
	// Log is where drops and ends are logged; Drop logs the first of each
	// reason at warn level, later ones at debug.
	Log hclog.Logger

	Out engine.Out

	phase   Phase
	now     time.Time
	heard   time.Time // when the data user last spoke (Heard)
	idle    time.Duration
	outcome protocol.Outcome
	ended   bool
}

// Begin starts a transition at now; the role then decides, and returns
// Take().
func (s *Session) Begin(now time.Time) { s.now = now }

// Now is the time of the current input.
func (s *Session) Now() time.Time { return s.now }

// Take returns the transition's effects (engine.Out.Take).
func (s *Session) Take() []engine.Effect { return s.Out.Take() }

// Phase is where the role stands.
func (s *Session) Phase() Phase { return s.phase }

// Go moves to phase to; an invalid move is a bug in the role and is
// refused with an error naming both phases.
func (s *Session) Go(to Phase) error {
	if s.phase == to {
		return nil
	}
	if !s.phase.CanGo(to) {
		return fmt.Errorf("lifecycle: %s → %s is not a valid move", s.phase, to)
	}
	s.phase = to
	return nil
}

// Join enters session id (Admitting, or Running on a resume) and arms the
// idle timer for d: an owner leaves a session whose data user stays silent
// for d. d ≤ 0 arms none (a data user).
func (s *Session) Join(id string, to Phase, d time.Duration) error {
	if err := s.Go(to); err != nil {
		return err
	}
	s.ID, s.idle, s.ended = id, d, false
	s.heard = s.now
	if d > 0 {
		s.Out.SetTimer(TimerIdle, d)
	}
	return nil
}

// Heard records that the data user spoke now. It arms nothing: the idle
// timer armed by Join runs on, and IdleExpired re-arms it for what is left
// of the timeout after the last word, so a session costs one timer per
// timeout rather than one per control message.
func (s *Session) Heard() { s.heard = s.now }

// LastHeard is when the data user last spoke (Join or Heard).
func (s *Session) LastHeard() time.Time { return s.heard }

// IdleExpired is the idle timer's expiry, called from the role's Fire: it
// reports whether the data user has been silent for the whole timeout (the
// role then ends the session); otherwise it re-arms the timer for the rest
// of the timeout after the user's last word and reports false. Outside a
// joined session it reports false and arms nothing.
func (s *Session) IdleExpired() bool {
	if s.idle <= 0 || s.phase.Ended() || s.phase == Idle {
		return false
	}
	if rest := s.idle - s.now.Sub(s.heard); rest > 0 {
		s.Out.SetTimer(TimerIdle, rest)
		return false
	}
	return true
}

// IdleTimeout is the idle timeout armed by Join.
func (s *Session) IdleTimeout() time.Duration { return s.idle }

// Step arms the step timer for d.
func (s *Session) Step(d time.Duration) { s.Out.SetTimer(TimerStep, d) }

// StopStep cancels the step timer.
func (s *Session) StopStep() { s.Out.CancelTimer(TimerStep) }

// Release hands out the value named n (release.Values.Value): charged
// under c (spend and fsync) before make runs, made once from n's noise
// stream and the same ever after, bound to input's digest. It is the one
// gate every owner-derived value passes: the caller sends what it returns,
// and nothing when it returns an error. eps is what this call charged
// (0: covered by an earlier charge); fresh whether the value was made now.
func (s *Session) Release(n release.Name, c release.Charge, input []byte, make func(noise *rand.Rand) (any, error)) (v any, eps float64, fresh bool, err error) {
	if s.Values == nil {
		if s.Ledger == nil {
			return nil, 0, false, fmt.Errorf("lifecycle: release %s of session %s: no ledger", n, s.ID)
		}
		return nil, 0, false, fmt.Errorf("lifecycle: release %s of session %s: no release gate", n, s.ID)
	}
	if s.Values.Ledger == nil {
		s.Values.Ledger = s.Ledger
	}
	return s.Values.Value(n, c, input, make)
}

// Drop counts a refused input under reason and logs it (the first of each
// reason at warn level).
func (s *Session) Drop(reason string, kv ...any) {
	level := hclog.Debug
	if s.Drops != nil && s.Drops.Inc(reason) {
		level = hclog.Warn
	}
	if s.Log != nil {
		s.Log.Log(level, "dropped", append([]any{"reason", reason}, kv...)...)
	}
}

// End finishes the session: Done when out carries a result (complete or
// partial), Aborted when it failed. It cancels the idle and step timers,
// logs the outcome and notifies the application with out as the Value
// (engine.EventFinal or engine.EventAborted). Ending twice is a no-op.
func (s *Session) End(out protocol.Outcome) {
	if s.ended {
		return
	}
	to := Done
	ev := engine.EventFinal
	if out.Kind == protocol.OutcomeFailed {
		to, ev = Aborted, engine.EventAborted
	}
	if s.phase == Idle || s.phase == Admitting {
		to, ev = Aborted, engine.EventAborted // nothing ran: no result
	}
	s.phase, s.ended, s.outcome = to, true, out
	s.Out.CancelTimer(TimerIdle)
	s.Out.CancelTimer(TimerStep)
	if s.Log != nil {
		protocol.LogOutcome(s.Log.With("session", s.ID), out)
	}
	s.Out.Notify(engine.Notify{Event: ev, Round: out.Rounds, Reason: out.Reason, Value: out})
}

// Outcome is how the last session ended (the zero Outcome before any).
func (s *Session) Outcome() protocol.Outcome { return s.outcome }

// Leave returns to Idle after an end or a refusal while admitting, ready
// for the next announcement; the idle timer is cancelled. Leaving a
// running session without End is refused (a bug in the role).
func (s *Session) Leave() error {
	if err := s.Go(Idle); err != nil {
		return err
	}
	s.Out.CancelTimer(TimerIdle)
	s.ID, s.idle = "", 0
	return nil
}
