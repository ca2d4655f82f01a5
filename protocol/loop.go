package protocol

import (
	"sync"
	"time"
)

// Loop runs one node's protocol logic: every inbound message, timer and
// continuation is an event, and events run one at a time, in the order they
// were queued. State machines driven by a Loop need no locks of their own,
// and a transition caused by a timer runs as soon as the timer fires, not
// when the next message happens to arrive.
//
// A Loop has no goroutine of its own. Do queues an event and, if no other
// goroutine is running events, runs the queue on the caller's goroutine until
// it is empty. On the in-memory network's virtual clock every event therefore
// runs inline on the network's single event loop, deterministically; on a
// real transport the first handler goroutine to arrive runs the queue and the
// others return at once (what go-libp2p-pubsub's processLoop does with a
// goroutine and channels, without the goroutine to stop).
//
// Loop implements Clock: its AfterFunc fires as an event of the loop, so
// state machines arm timers on the Loop and never see a concurrent callback.
type Loop struct {
	clock Clock

	mu      sync.Mutex // guards queue and running
	queue   []loopEvent
	running bool

	exec sync.Mutex // held while a protocol event runs; Read takes it
}

type loopEvent struct {
	f        func()
	external bool // runs without exec: it calls code outside the state machine
}

// NewLoop returns a loop whose timers use clock (RealClock if nil).
func NewLoop(clock Clock) *Loop {
	if clock == nil {
		clock = RealClock{}
	}
	return &Loop{clock: clock}
}

// Do queues f as an event. Called from inside an event, f runs after the
// current event (and after everything queued before it).
func (l *Loop) Do(f func()) { l.push(loopEvent{f: f}) }

// Notify queues f, which calls out of the protocol (a callback such as
// OnRound or OnDone), in order with the events but without holding the
// state: f may call Read.
func (l *Loop) Notify(f func()) { l.push(loopEvent{f: f, external: true}) }

func (l *Loop) push(e loopEvent) {
	l.mu.Lock()
	l.queue = append(l.queue, e)
	if l.running {
		l.mu.Unlock()
		return
	}
	l.running = true
	for len(l.queue) > 0 {
		ev := l.queue[0]
		l.queue[0] = loopEvent{}
		l.queue = l.queue[1:]
		l.mu.Unlock()
		if ev.external {
			ev.f()
		} else {
			l.exec.Lock()
			ev.f()
			l.exec.Unlock()
		}
		l.mu.Lock()
	}
	l.queue = nil
	l.running = false
	l.mu.Unlock()
}

// Call runs f as an event and returns once it has run: how code outside
// the loop (a command, a test) starts something on it. Like Read, it must not
// be called from inside an event.
func (l *Loop) Call(f func()) {
	done := make(chan struct{})
	l.Do(func() { f(); close(done) })
	<-done
}

// Read runs f with the state machine's state held, from outside the loop
// (accessors for tests, logs and metrics). It must not be called from inside
// an event: it would wait for itself.
func (l *Loop) Read(f func()) {
	l.exec.Lock()
	defer l.exec.Unlock()
	f()
}

// Now is the clock's time.
func (l *Loop) Now() time.Time { return l.clock.Now() }

// AfterFunc runs f as an event of the loop after d.
func (l *Loop) AfterFunc(d time.Duration, f func()) Timer {
	return l.clock.AfterFunc(d, func() { l.Do(f) })
}
