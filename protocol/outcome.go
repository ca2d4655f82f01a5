package protocol

import (
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/protocol/wire"
)

// OutcomeKind is how a session ended.
type OutcomeKind int

const (
	// OutcomeComplete: every planned round (tree, share) was accepted.
	OutcomeComplete OutcomeKind = iota + 1
	// OutcomePartial: fewer than planned, at least one; the model keeps
	// what was accepted and is labelled partial.
	OutcomePartial
	// OutcomeFailed: no model.
	OutcomeFailed
)

func (k OutcomeKind) String() string {
	switch k {
	case OutcomeComplete:
		return "complete"
	case OutcomePartial:
		return "partial"
	case OutcomeFailed:
		return "failed"
	}
	return fmt.Sprintf("OutcomeKind(%d)", int(k))
}

// Outcome is how a session ended, as its coordinator (the data user) states
// it. The user and every owner log String() as the one line that says so,
// and the command-line nodes exit with the code of Kind, so that every node
// of a session reports the same outcome in the same words.
type Outcome struct {
	Kind    OutcomeKind
	Rounds  int    // accepted
	Planned int    // asked for
	Unit    string // "rounds" (the default), "trees", "shares"
	Reason  string // why it stopped early; empty when complete. At most wire.MaxTextBytes.
	// Own marks an owner's own statement, made when the data user's never
	// reached it (the idle timeout, a resume it cannot follow); never sent.
	Own bool
}

// NewOutcome states the end of a session that accepted rounds of planned:
// complete when err is nil and every round is in, partial when some are,
// failed otherwise. The reason is err's text cut to wire.MaxTextBytes, as
// every receiver's decoder would cut it.
func NewOutcome(rounds, planned int, unit string, err error) Outcome {
	o := Outcome{Kind: OutcomeComplete, Rounds: rounds, Planned: planned, Unit: unit}
	if err != nil {
		o.Reason = wire.Truncate(err.Error(), wire.MaxTextBytes)
	}
	switch {
	case err == nil && rounds >= planned:
	case rounds > 0:
		o.Kind = OutcomePartial
		if o.Reason == "" {
			o.Reason = "stopped early"
		}
	default:
		o.Kind = OutcomeFailed
		if o.Reason == "" {
			o.Reason = "no model"
		}
	}
	return o
}

// Failed is the outcome of a session that ended without a model, whatever
// it had accepted (an interrupted data user keeps its rounds in a checkpoint
// to resume from, but publishes no model).
func Failed(rounds, planned int, unit string, err error) Outcome {
	o := NewOutcome(0, planned, unit, err)
	o.Kind, o.Rounds = OutcomeFailed, rounds
	return o
}

// String is the outcome's one text form, e.g. "partial: 2 of 3 rounds
// (round 3: no learner accepted in 5 attempts ...)".
func (o Outcome) String() string {
	unit := o.Unit
	if unit == "" {
		unit = "rounds"
	}
	s := fmt.Sprintf("%s: %d of %d %s", o.Kind, o.Rounds, o.Planned, unit)
	if o.Reason != "" {
		s += " (" + o.Reason + ")"
	}
	return s
}

// Err is the outcome as an error (nil when complete).
func (o Outcome) Err() error {
	if o.Kind == OutcomeComplete {
		return nil
	}
	return OutcomeError{o}
}

// OutcomeError carries an incomplete outcome through an error return.
type OutcomeError struct{ Outcome Outcome }

func (e OutcomeError) Error() string { return e.Outcome.String() }

// OutcomeOf finds the outcome an error carries.
func OutcomeOf(err error) (Outcome, bool) {
	var oe OutcomeError
	if errors.As(err, &oe) {
		return oe.Outcome, true
	}
	return Outcome{}, false
}

// Wire is the outcome's message form.
func (o Outcome) Wire() *wire.Outcome {
	k := wire.Outcome_KIND_UNSPECIFIED
	switch o.Kind {
	case OutcomeComplete:
		k = wire.Outcome_COMPLETE
	case OutcomePartial:
		k = wire.Outcome_PARTIAL
	case OutcomeFailed:
		k = wire.Outcome_FAILED
	}
	return &wire.Outcome{Kind: k, Rounds: uint32(max(0, o.Rounds)), Planned: uint32(max(0, o.Planned)), Reason: o.Reason}
}

// OutcomeFromWire checks a received outcome against what the receiver
// knows: the planned count it joined for. Errors wrap ErrUnexpected.
func OutcomeFromWire(w *wire.Outcome, planned int, unit string) (Outcome, error) {
	o := Outcome{Rounds: int(w.GetRounds()), Planned: int(w.GetPlanned()), Unit: unit,
		Reason: wire.Truncate(w.GetReason(), wire.MaxTextBytes)}
	switch w.GetKind() {
	case wire.Outcome_COMPLETE:
		o.Kind = OutcomeComplete
	case wire.Outcome_PARTIAL:
		o.Kind = OutcomePartial
	case wire.Outcome_FAILED:
		o.Kind = OutcomeFailed
	default:
		return Outcome{}, fmt.Errorf("%w: outcome kind %v", ErrUnexpected, w.GetKind())
	}
	bad := o.Planned != planned || o.Rounds > o.Planned ||
		(o.Kind == OutcomeComplete && o.Rounds != o.Planned) ||
		(o.Kind == OutcomePartial && (o.Rounds == 0 || o.Rounds == o.Planned))
	if bad {
		return Outcome{}, fmt.Errorf("%w: outcome %s of a session of %d %s", ErrUnexpected, o, planned, unit)
	}
	return o, nil
}

// LogOutcome writes a session's outcome line: the data user and every owner
// write the same words (Outcome.String), at info when complete, warn
// when partial and error when failed.
func LogOutcome(log hclog.Logger, out Outcome) {
	level := hclog.Info
	switch out.Kind {
	case OutcomePartial:
		level = hclog.Warn
	case OutcomeFailed:
		level = hclog.Error
	}
	log.Log(level, "session ended: "+out.String(), "outcome", out.Kind.String(), "rounds", out.Rounds, "planned", out.Planned)
}
