package engine

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultInbox is how many inbound network messages a driver holds queued
// before it drops new ones.
const DefaultInbox = 4096

// Drop reasons, passed to Config.OnDrop and counted in Stats.
const (
	DropInboxFull = "inbox full" // a network message found the inbox at capacity
	DropClosed    = "closed"     // an input arrived after Close
)

// ErrClosed is returned by Submit and Call on a closed driver.
var ErrClosed = errors.New("engine: driver closed")

// Mode says where a driver runs its events.
type Mode int

const (
	// ModeAuto runs inline on every clock but RealClock (the in-memory
	// network's, ManualClock: clocks whose callbacks are serialized with
	// the transport's deliveries), on a worker goroutine on RealClock.
	ModeAuto Mode = iota
	// ModeInline runs events on the goroutine that queues them, as long as
	// no other goroutine is running the queue: deterministic on a
	// single-threaded event loop such as memnet's.
	ModeInline
	// ModeWorker runs events on the driver's own worker goroutine.
	ModeWorker
)

// Config configures a Driver.
type Config struct {
	Clock Clock // RealClock if nil
	Mode  Mode
	// Inbox is the capacity for queued network messages (Deliver);
	// DefaultInbox if 0. Continuations and timers (Do, AfterFunc) are
	// never refused: the node makes them itself, a peer cannot. A Submit
	// or Call from outside waits while the whole queue holds Inbox events.
	Inbox int
	// OnDrop, if set, is told each dropped network message's reason
	// (DropInboxFull, DropClosed): what a peer sent that the node did not
	// run. A continuation or a timer that fires after Close is counted in
	// Stats.DroppedClosed only (a timer in flight while Close stops it is
	// not the peer's doing, and a drop hook feeding protocol counters must
	// not see it). It runs on the caller's goroutine (a transport's): it
	// must not block; count and rate-limit logging there.
	OnDrop func(reason string)
	// AfterEvent, if set, runs on the driver after every event: where a
	// closure-style machine publishes the snapshot its accessors read.
	AfterEvent func()
}

// Stats is a driver's saturation, read with atomics.
type Stats struct {
	Depth         int           // events queued now (network and local)
	HighWater     int           // the largest Depth seen
	Inbox         int           // capacity for network messages
	Ran           uint64        // events run
	DroppedFull   uint64        // network messages dropped: inbox full
	DroppedClosed uint64        // inputs dropped: driver closed
	Busy          time.Duration // wall time spent running events (worker mode only)
}

// Driver runs one node's events one at a time, in the order they were
// queued; see the package documentation. Its methods are safe for
// concurrent use.
type Driver struct {
	clock  Clock
	inline bool
	inbox  int
	onDrop func(string)
	after  func()

	mu      sync.Mutex
	queue   []event // queue[head:] is waiting; the prefix is consumed
	head    int
	net     int  // network events in queue
	running bool // an event loop (inline caller or worker) is draining the queue
	readers int  // inline: Calls running f beside the queue (see callInline)
	closed  bool
	timers  timer         // sentinel of the ring of pending timers (guarded by mu)
	space   chan struct{} // closed when a waiting Submit may find room
	worker  sync.WaitGroup

	gid atomic.Uint64 // the worker's goroutine id while one runs (worker mode)

	// exec is held, inline, while a protocol event runs (not a Notify
	// callback): a Call made while the queue is being run takes it to run
	// its f between two events.
	exec sync.Mutex

	depth, high               atomic.Int64
	ran, dropFull, dropClosed atomic.Uint64
	busy                      atomic.Int64
	closeOnce                 sync.Once
	closedCh                  chan struct{}
}

type event struct {
	f      func()
	net    bool
	notify bool   // calls out of the protocol: inline, runs without exec
	t      *timer // a timer's event: runs only if t was not stopped
}

// NewDriver returns a driver. In worker mode the worker goroutine starts
// when an event is queued and ends when the queue is empty, so an idle
// driver holds no goroutine; Close waits for a running one.
func NewDriver(cfg Config) *Driver {
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	if cfg.Inbox <= 0 {
		cfg.Inbox = DefaultInbox
	}
	inline := cfg.Mode == ModeInline
	if cfg.Mode == ModeAuto {
		_, real := cfg.Clock.(RealClock)
		inline = !real
	}
	d := &Driver{clock: cfg.Clock, inline: inline, inbox: cfg.Inbox, onDrop: cfg.OnDrop, after: cfg.AfterEvent,
		closedCh: make(chan struct{})}
	d.timers.prev, d.timers.next = &d.timers, &d.timers
	return d
}

// Inline reports whether events run on the callers' goroutines.
func (d *Driver) Inline() bool { return d.inline }

// Now is the clock's time.
func (d *Driver) Now() time.Time { return d.clock.Now() }

// Clock is the driver's clock (timers armed on it directly bypass the
// queue: use AfterFunc).
func (d *Driver) Clock() Clock { return d.clock }

// Deliver queues f, the handling of one inbound network message, and
// returns at once: when the inbox holds Config.Inbox network messages
// already, or the driver is closed, f is dropped, counted and reported to
// OnDrop, and Deliver returns false. Transport handlers and validators call
// only this.
func (d *Driver) Deliver(f func()) bool { return d.push(event{f: f, net: true}) }

// Do queues f as a local event and never blocks. Called from inside an
// event, f runs after the current event (and after everything queued before
// it): how a machine continues after a step. After Close, f is dropped.
func (d *Driver) Do(f func()) { d.push(event{f: f}) }

// Notify queues f, which calls out of the protocol (an application
// callback), as a local event. Inline, it runs without the lock events
// hold, so f may use Call to read the state; on the worker, Call from f
// runs at once.
func (d *Driver) Notify(f func()) { d.push(event{f: f, notify: true}) }

// Submit queues f as a local event from outside the driver, waiting while
// the queue is at capacity, until ctx ends (its error) or the driver closes
// (ErrClosed).
func (d *Driver) Submit(ctx context.Context, f func()) error {
	for {
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			d.drop(DropClosed, false)
			return ErrClosed
		}
		if d.queued() < d.inbox || d.onWorker() {
			d.mu.Unlock()
			d.push(event{f: f})
			return nil
		}
		if d.space == nil {
			d.space = make(chan struct{})
		}
		space := d.space
		d.mu.Unlock()
		select {
		case <-space:
		case <-d.closedCh:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Call runs f serialized with the events and returns once it has run: how
// code outside the driver (a command, a test, an accessor) reads or changes
// the state. On the worker (from an event or a Notify callback) it runs f
// at once. Inline, it runs f as an event on the caller's goroutine when
// nobody runs the queue, and otherwise between two events (from a Notify
// callback, or while another goroutine runs the queue); from inside a
// protocol event it would wait for itself: do not. It returns ErrClosed,
// without running f, on a closed driver, and ctx's error if ctx ends first
// (f may still run).
func (d *Driver) Call(ctx context.Context, f func()) error {
	if d.onWorker() {
		f()
		return nil
	}
	if d.inline {
		return d.callInline(ctx, f)
	}
	done := make(chan struct{})
	if err := d.Submit(ctx, func() { f(); close(done) }); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-d.closedCh:
		// f may be the event Close is waiting for: let it finish, so that
		// the caller never reads what f is still writing.
		if !d.inline {
			d.worker.Wait()
		}
		select {
		case <-done: // ran before Close
			return nil
		default:
			return ErrClosed
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *Driver) callInline(ctx context.Context, f func()) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		d.drop(DropClosed, false)
		return ErrClosed
	}
	if d.running || d.readers > 0 {
		// The queue is being run, by this goroutine (a Notify callback)
		// or another: run f between two events, under exec. Meanwhile
		// push only queues (readers > 0), so that an event f causes does
		// not run inside f; the last reader runs what was queued.
		d.readers++
		d.mu.Unlock()
		d.exec.Lock()
		f()
		d.exec.Unlock()
		d.mu.Lock()
		d.readers--
		if d.readers == 0 && !d.running && d.queued() > 0 && !d.closed {
			d.running = true
			d.drain(false) // unlocks
			return nil
		}
		d.mu.Unlock()
		return nil
	}
	d.mu.Unlock()
	done := make(chan struct{})
	if !d.push(event{f: func() { f(); close(done) }}) {
		return ErrClosed
	}
	select { // at once, unless another goroutine started the queue first
	case <-done:
		return nil
	case <-d.closedCh:
		select {
		case <-done:
			return nil
		default:
			return ErrClosed
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *Driver) drop(reason string, net bool) {
	if reason == DropClosed {
		d.dropClosed.Add(1)
	} else {
		d.dropFull.Add(1)
	}
	if net && d.onDrop != nil {
		d.onDrop(reason)
	}
}

func (d *Driver) push(ev event) bool {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		d.drop(DropClosed, ev.net)
		return false
	}
	if ev.net {
		if d.net >= d.inbox {
			d.mu.Unlock()
			d.drop(DropInboxFull, true)
			return false
		}
		d.net++
	}
	d.queue = append(d.queue, ev)
	n := int64(d.queued())
	if n > d.high.Load() {
		d.high.Store(n) // under mu: no lost update
	}
	d.depth.Store(n)
	if d.running || d.readers > 0 {
		d.mu.Unlock()
		return true
	}
	d.running = true
	if d.inline {
		d.drain(false) // unlocks
		return true
	}
	d.worker.Add(1)
	d.mu.Unlock()
	go d.work()
	return true
}

func (d *Driver) queued() int { return len(d.queue) - d.head }

// pop takes the first waiting event (mu held). The array is reused: reset
// when the queue empties, compacted when the consumed prefix is the larger
// half, so a queue that never empties does not grow without bound.
func (d *Driver) pop() event {
	ev := d.queue[d.head]
	d.queue[d.head] = event{}
	d.head++
	switch {
	case d.head == len(d.queue):
		d.queue, d.head = d.queue[:0], 0
	case d.head >= 64 && 2*d.head >= len(d.queue):
		n := copy(d.queue, d.queue[d.head:])
		clear(d.queue[n:])
		d.queue, d.head = d.queue[:n], 0
	}
	return ev
}

// drain runs the queue until it is empty or the driver closes, on the
// worker (worker true: timed, and its goroutine id published for Call and
// Close) or inline. Called with mu held; returns with it released.
func (d *Driver) drain(worker bool) {
	for d.queued() > 0 && !d.closed {
		ev := d.pop()
		if ev.net {
			d.net--
		}
		d.depth.Store(int64(d.queued()))
		if d.space != nil {
			close(d.space)
			d.space = nil
		}
		d.mu.Unlock()
		switch {
		case worker:
			start := time.Now()
			d.run(ev)
			d.busy.Add(int64(time.Since(start)))
		case ev.notify:
			d.run(ev)
		default:
			d.exec.Lock()
			d.run(ev)
			d.exec.Unlock()
		}
		d.mu.Lock()
	}
	if cap(d.queue) > 1024 && d.queued() == 0 {
		d.queue, d.head = nil, 0 // a burst is over: let its array go
	}
	if worker {
		// Before running goes false: a new worker may then start and
		// publish its own id.
		d.gid.Store(0)
	}
	d.running = false
	d.mu.Unlock()
}

func (d *Driver) work() {
	defer d.worker.Done()
	d.gid.Store(goid())
	d.mu.Lock()
	d.drain(true)
}

func (d *Driver) run(ev event) {
	if t := ev.t; t != nil {
		if !t.state.CompareAndSwap(timerPending, timerFired) {
			return // stopped after its clock fired
		}
		d.mu.Lock()
		t.unlink()
		d.mu.Unlock()
	}
	ev.f()
	if d.after != nil {
		d.after()
	}
	d.ran.Add(1)
}

// onWorker reports whether the caller is this driver's worker goroutine.
func (d *Driver) onWorker() bool {
	g := d.gid.Load()
	return g != 0 && g == goid()
}

// goid is the calling goroutine's id, from the first line of its stack
// ("goroutine 18 [running]:"). Only Close, Submit and Call ask for it.
func goid() uint64 {
	var b [32]byte
	n := runtime.Stack(b[:], false)
	var id uint64
	for _, c := range b[len("goroutine "):n] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

const (
	timerPending int32 = iota
	timerFired
	timerStopped
)

type timer struct {
	d          *Driver
	state      atomic.Int32
	mu         sync.Mutex
	inner      Timer
	prev, next *timer // in the driver's ring while pending (guarded by d.mu)
}

// unlink removes t from the driver's ring, if it is in it; with d.mu held.
func (t *timer) unlink() {
	if t.next == nil {
		return
	}
	t.prev.next, t.next.prev = t.next, t.prev
	t.prev, t.next = nil, nil
}

// Stop prevents the call if it has not run yet (its clock may have fired
// already: the queued event is then skipped) and reports whether it did.
func (t *timer) Stop() bool {
	if !t.state.CompareAndSwap(timerPending, timerStopped) {
		return false
	}
	t.d.mu.Lock()
	t.unlink()
	t.d.mu.Unlock()
	t.mu.Lock()
	in := t.inner
	t.mu.Unlock()
	if in != nil {
		in.Stop()
	}
	return true
}

// AfterFunc runs f as an event of the driver after d, through the clock.
// On the worker, Close stops every pending timer and a timer stopped after
// its clock fired does not run; inline (the in-memory network), the clock's
// own timer is returned, as light as the network's thousands of owners
// need, and a timer that fires after Close is dropped like any input.
func (d *Driver) AfterFunc(after time.Duration, f func()) Timer {
	if d.inline {
		return d.clock.AfterFunc(after, func() { d.push(event{f: f}) })
	}
	t := &timer{d: d}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		t.state.Store(timerStopped)
		return t
	}
	t.prev, t.next = d.timers.prev, &d.timers // append to the ring
	d.timers.prev.next = t
	d.timers.prev = t
	d.mu.Unlock()
	in := d.clock.AfterFunc(after, func() { d.push(event{f: f, t: t}) })
	t.mu.Lock()
	t.inner = in
	t.mu.Unlock()
	if t.state.Load() == timerStopped { // stopped before inner was set
		in.Stop()
	}
	return t
}

// Close stops the driver: queued events are dropped, pending timers
// stopped (inline: their events dropped when they fire), later inputs
// dropped (DropClosed), and in worker mode it waits
// for the worker to finish the event it is running, so no event runs after
// Close returns. Called from inside an event it does not wait for itself.
// Inline, an event another goroutine is running at the time finishes after
// Close returns. Idempotent.
func (d *Driver) Close() error {
	d.closeOnce.Do(func() {
		d.mu.Lock()
		d.closed = true
		d.queue, d.head, d.net = nil, 0, 0
		d.depth.Store(0)
		var timers []*timer
		for t := d.timers.next; t != &d.timers; t = t.next {
			timers = append(timers, t)
		}
		d.mu.Unlock()
		close(d.closedCh)
		for _, t := range timers {
			t.Stop()
		}
	})
	if !d.inline && !d.onWorker() {
		d.worker.Wait()
	}
	return nil
}

// Done is closed by Close.
func (d *Driver) Done() <-chan struct{} { return d.closedCh }

// Stats is the driver's saturation; cheap, from any goroutine.
func (d *Driver) Stats() Stats {
	return Stats{
		Depth:         int(d.depth.Load()),
		HighWater:     int(d.high.Load()),
		Inbox:         d.inbox,
		Ran:           d.ran.Load(),
		DroppedFull:   d.dropFull.Load(),
		DroppedClosed: d.dropClosed.Load(),
		Busy:          time.Duration(d.busy.Load()),
	}
}
