package engine

import (
	"fmt"
	"time"
)

// Machine is one role's protocol logic as a state machine: it takes an
// input at a time and returns what it wants done, as Effects. It does no
// I/O, starts no goroutine and reads no clock: now is passed in. An error
// means the input was refused (malformed, unauthorized, stale: the state is
// unchanged) and says why; errors are sentinel values tested with errors.Is.
// A Machine is not safe for concurrent use: its driver serializes the calls.
type Machine interface {
	// Receive applies one inbound message.
	Receive(now time.Time, m Message) ([]Effect, error)
	// Fire applies the expiry of the timer the machine named in SetTimer.
	Fire(now time.Time, timer string) ([]Effect, error)
}

// Input is what Step feeds a Machine: a Message or a TimerFired.
type Input interface{ isInput() }

func (Message) isInput() {}

// TimerFired is the expiry of a named timer.
type TimerFired struct{ Name string }

func (TimerFired) isInput() {}

// Step feeds one input to m at now and returns its effects: the helper of
// table tests, no driver and no goroutine involved.
func Step(m Machine, now time.Time, in Input) ([]Effect, error) {
	switch in := in.(type) {
	case Message:
		return m.Receive(now, in)
	case TimerFired:
		return m.Fire(now, in.Name)
	}
	return nil, fmt.Errorf("engine: unknown input %T", in)
}

// Effect is one thing a transition asks its driver to do. The effect types
// are plain values: a table test compares them with reflect.DeepEqual.
type Effect interface{ isEffect() }

// Send delivers Data to one peer on a direct stream speaking Protocol.
type Send struct {
	To       PeerID
	Protocol string
	Data     []byte
}

// Publish publishes Data on Topic.
type Publish struct {
	Topic string
	Data  []byte
}

// SetTimer arms the timer Name to fire After from now, replacing a pending
// timer of that name.
type SetTimer struct {
	Name  string
	After time.Duration
}

// CancelTimer stops the timer Name if it is pending.
type CancelTimer struct{ Name string }

// Notify tells the application something happened. Value carries the
// role's own report (an outcome, a round's report, a model): a plain value,
// so that table tests compare it too.
type Notify struct {
	Event  Event
	Round  int    // for EventRoundDone
	Reason string // for EventAborted: why
	Value  any
}

func (Send) isEffect()        {}
func (Publish) isEffect()     {}
func (SetTimer) isEffect()    {}
func (CancelTimer) isEffect() {}
func (Notify) isEffect()      {}

// Event is what a Notify reports.
type Event int

const (
	EventRoundDone Event = iota + 1 // a round finished; more follow
	EventFinal                      // the session finished: its result is final
	EventAborted                    // the session ended without a result (refused, failed)
	EventReport                     // something the application asked to be told (a sum's total, a refusal): see Value
)

func (e Event) String() string {
	switch e {
	case EventRoundDone:
		return "round done"
	case EventFinal:
		return "final"
	case EventAborted:
		return "aborted"
	case EventReport:
		return "report"
	}
	return fmt.Sprintf("event(%d)", int(e))
}
