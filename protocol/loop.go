package protocol

import (
	"context"
	"time"

	"github.com/ppboost/ppboost/protocol/engine"
)

// Loop runs one node's closure-style protocol logic (the Wang & Chang and
// fedboost roles, the secure-sum parties and coordinators) on an
// engine.Driver: every inbound message, timer and continuation is an event,
// and events run one at a time, in the order they were queued. State
// machines driven by a Loop need no locks of their own, and a transition
// caused by a timer runs as soon as the timer fires, not when the next
// message happens to arrive.
//
// On the real clock the events run on the driver's worker goroutine, never
// on a transport's: Deliver returns at once and drops (and counts) a
// message when the inbox is full. On the in-memory network's clock (and
// ManualClock) they run inline on the caller's goroutine, deterministically
// on the network's single event loop. See engine.Driver.
//
// Nothing outside the loop reads the machines' state while they run: they
// publish snapshots (atomic values) after their events, or callers use Call.
//
// Loop implements Clock: its AfterFunc fires as an event of the loop, so
// state machines arm timers on the Loop and never see a concurrent callback.
type Loop struct {
	d *engine.Driver
}

// NewLoop returns a loop whose timers use clock (RealClock if nil), with the
// default inbox.
func NewLoop(clock Clock) *Loop { return NewLoopConfig(engine.Config{Clock: clock}) }

// NewLoopConfig returns a loop on a driver configured by cfg.
func NewLoopConfig(cfg engine.Config) *Loop { return &Loop{d: engine.NewDriver(cfg)} }

// Driver is the loop's driver (Stats, Done).
func (l *Loop) Driver() *engine.Driver { return l.d }

// Do queues f as an event; it never blocks. Called from inside an event, f
// runs after the current event (and after everything queued before it).
func (l *Loop) Do(f func()) { l.d.Do(f) }

// Notify queues f, which calls out of the protocol (a callback such as
// OnRound or OnDone), in order with the events. f may use Call (an
// accessor such as Snapshot): it then runs between two events.
func (l *Loop) Notify(f func()) { l.d.Notify(f) }

// Deliver queues the handling of one inbound network message and returns at
// once; false if it was dropped (inbox full, loop closed), which the driver
// counts in Stats. Transport handlers use it.
func (l *Loop) Deliver(f func()) bool { return l.d.Deliver(f) }

// Call runs f serialized with the events and returns once it has run: how
// code outside the loop (a command, a test, a Notify callback) starts
// something on it or reads its state (engine.Driver.Call). After Close it
// returns without running f. Inline, it must not be called from inside a
// protocol event (it would wait for itself).
func (l *Loop) Call(f func()) { _ = l.d.Call(context.Background(), f) }

// CallContext is Call bounded by ctx; it returns ctx's error or
// engine.ErrClosed when f did not run (or may not have run yet).
func (l *Loop) CallContext(ctx context.Context, f func()) error { return l.d.Call(ctx, f) }

// Now is the clock's time.
func (l *Loop) Now() time.Time { return l.d.Now() }

// AfterFunc runs f as an event of the loop after d.
func (l *Loop) AfterFunc(d time.Duration, f func()) Timer { return l.d.AfterFunc(d, f) }

// Close stops the loop: pending timers are stopped, queued and later events
// dropped, and it waits for a running event to finish. Idempotent.
func (l *Loop) Close() error { return l.d.Close() }

// Stats is the loop's saturation (engine.Stats).
func (l *Loop) Stats() engine.Stats { return l.d.Stats() }
