package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// handClock is a clock whose timers fire when the test says so, on the
// test's goroutine: in worker mode their events still run on the worker.
type handClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*handTimer
}

type handTimer struct {
	at      time.Time
	f       func()
	stopped atomic.Bool
}

func (t *handTimer) Stop() bool { return !t.stopped.Swap(true) }

func (c *handClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *handClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &handTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// advance moves time by d and fires, in order, the timers due (stopped
// ones too when force: a clock whose callback raced with Stop).
func (c *handClock) advance(d time.Duration, force bool) int {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*handTimer
	rest := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			due = append(due, t)
		} else {
			rest = append(rest, t)
		}
	}
	c.timers = rest
	c.mu.Unlock()
	n := 0
	for _, t := range due {
		if force || !t.stopped.Load() {
			t.f()
			n++
		}
	}
	return n
}

// waitGoroutines waits (bounded) until at most want goroutines run: the
// worker of an idle or closed driver is gone.
func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), want, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}

// A flood of network messages into a driver whose event is stuck: the
// inbox takes Inbox of them, every other one is dropped at once and
// counted, and the queue (the memory) never grows past the bound.
func TestDriverFloodDropsAndCounts(t *testing.T) {
	const inbox, flood = 64, 10000
	var onDrop atomic.Int64
	d := NewDriver(Config{Mode: ModeWorker, Inbox: inbox, OnDrop: func(reason string) {
		if reason == DropInboxFull {
			onDrop.Add(1)
		}
	}})
	defer d.Close()
	release, started := make(chan struct{}), make(chan struct{})
	d.Do(func() { close(started); <-release })
	<-started
	ran := 0
	accepted := 0
	for i := 0; i < flood; i++ {
		if d.Deliver(func() { ran++ }) {
			accepted++
		}
	}
	s := d.Stats()
	if accepted != inbox || s.DroppedFull != flood-inbox || onDrop.Load() != flood-inbox {
		t.Fatalf("accepted %d, dropped %d (OnDrop %d); want %d and %d", accepted, s.DroppedFull, onDrop.Load(), inbox, flood-inbox)
	}
	// The bound on memory: the queue holds the inbox and nothing more.
	if s.Depth != inbox || s.HighWater > inbox+1 {
		t.Fatalf("depth %d, high water %d with an inbox of %d", s.Depth, s.HighWater, inbox)
	}
	// Local events are the node's own: not refused for the flood.
	local := false
	d.Do(func() { local = true })
	close(release)
	if err := d.Call(context.Background(), func() {}); err != nil {
		t.Fatal(err)
	}
	if ran != inbox || !local {
		t.Fatalf("ran %d network events (want %d), local %v", ran, inbox, local)
	}
	// Negative control: once drained, the inbox takes messages again.
	if !d.Deliver(func() {}) {
		t.Fatal("an empty inbox refused a message")
	}
}

// A transport handler returns at once while a long event runs: the event
// runs on the worker, not on the caller.
func TestDriverDeliverReturnsWhileAnEventRuns(t *testing.T) {
	d := NewDriver(Config{Mode: ModeWorker})
	defer d.Close()
	release, started := make(chan struct{}), make(chan struct{})
	caller := goid()
	var ranOn atomic.Uint64
	returned := make(chan bool)
	go func() {
		returned <- d.Deliver(func() { ranOn.Store(goid()); close(started); <-release })
	}()
	select {
	case ok := <-returned:
		if !ok {
			t.Fatal("deliver refused")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Deliver waited for its event")
	}
	<-started
	if g := ranOn.Load(); g == caller || g == 0 {
		t.Fatalf("event ran on goroutine %d, the caller is %d", g, caller)
	}
	// A second handler while the first event still runs: queued, returns.
	if !d.Deliver(func() {}) {
		t.Fatal("second deliver refused")
	}
	if s := d.Stats(); s.Depth != 1 {
		t.Fatalf("depth %d while the first event runs, want 1", s.Depth)
	}
	close(release)
}

// Close waits for the running event, stops the timers and the worker, and
// no event runs after it returns, whatever arrives later.
func TestDriverCloseStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	c := &handClock{}
	d := NewDriver(Config{Clock: c, Mode: ModeWorker})
	var after atomic.Bool
	var closed atomic.Bool
	check := func() {
		if closed.Load() {
			after.Store(true)
		}
	}
	fired := make(chan struct{}, 1)
	d.AfterFunc(time.Second, func() { check(); fired <- struct{}{} })
	tm := d.AfterFunc(2*time.Second, check)
	release, started := make(chan struct{}), make(chan struct{})
	d.Do(func() { close(started); <-release; check() })
	d.Do(check) // queued behind the running event: dropped by Close
	<-started
	closeDone := make(chan struct{})
	go func() { d.Close(); closed.Store(true); close(closeDone) }()
	select {
	case <-closeDone:
		t.Fatal("Close returned while an event was running")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-closeDone
	// Timers: the clock firing now, even past Stop (a race with Close),
	// queues nothing.
	if n := c.advance(3*time.Second, true); n != 2 {
		t.Fatalf("the clock fired %d timers, want 2", n)
	}
	if tm.Stop() {
		t.Error("a timer reported stopping after Close had stopped it")
	}
	if d.Deliver(check) {
		t.Error("Deliver accepted after Close")
	}
	d.Do(check)
	if err := d.Call(context.Background(), check); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close: %v", err)
	}
	if after.Load() {
		t.Fatal("an event ran after Close returned")
	}
	select {
	case <-fired:
		t.Fatal("a timer event ran after Close")
	default:
	}
	if s := d.Stats(); s.DroppedClosed < 3 {
		t.Errorf("dropped after close %d, want at least 3", s.DroppedClosed)
	}
	d.Close() // idempotent
	waitGoroutines(t, before)
}

// Events run one at a time in the order they were queued, a continuation
// after the event that queued it and after everything queued before it.
func TestDriverRunsEventsInOrder(t *testing.T) {
	for _, mode := range []Mode{ModeWorker, ModeInline} {
		t.Run(map[Mode]string{ModeWorker: "worker", ModeInline: "inline"}[mode], func(t *testing.T) {
			d := NewDriver(Config{Mode: mode, Clock: &handClock{}})
			defer d.Close()
			// Worker: hold the worker so that every message is queued
			// before the first runs; the continuations then follow them.
			// Inline: each message runs, with its continuation, at once.
			release := make(chan struct{})
			if mode == ModeWorker {
				d.Do(func() { <-release })
			}
			var got []int
			var inside atomic.Int32
			for i := 0; i < 1000; i++ {
				d.Deliver(func() {
					if inside.Add(1) != 1 {
						panic("two events at once")
					}
					got = append(got, 2*i)
					if i%10 == 0 {
						d.Do(func() { got = append(got, 2*i+1) })
					}
					inside.Add(-1)
				})
			}
			close(release)
			// The continuations are queued behind a Call made now: a
			// second Call comes after them.
			d.Call(context.Background(), func() {})
			var snapshot []int
			if err := d.Call(context.Background(), func() { snapshot = append(snapshot, got...) }); err != nil {
				t.Fatal(err)
			}
			var want []int
			for i := 0; i < 1000; i++ {
				want = append(want, 2*i)
				if i%10 == 0 && mode == ModeInline {
					want = append(want, 2*i+1)
				}
			}
			if mode == ModeWorker {
				for i := 0; i < 1000; i += 10 {
					want = append(want, 2*i+1)
				}
			}
			if !reflect.DeepEqual(snapshot, want) {
				t.Fatalf("order differs: %d events, want %d", len(snapshot), len(want))
			}
		})
	}
}

// Inline, every event runs on the caller's goroutine before the call
// returns, and the same inputs give the same trace: what memnet's
// deterministic mode relies on.
func TestDriverInlineIsDeterministic(t *testing.T) {
	trace := func() []string {
		c := &handClock{}
		d := NewDriver(Config{Clock: c}) // ModeAuto on a clock other than RealClock: inline
		if !d.Inline() {
			t.Fatal("auto mode on a hand clock is not inline")
		}
		var out []string
		me := goid()
		for i := 0; i < 5; i++ {
			d.AfterFunc(time.Duration(5-i)*time.Second, func() { out = append(out, fmt.Sprintf("timer %d at %v", i, c.Now().Sub(time.Time{}))) })
			d.Deliver(func() {
				if goid() != me {
					panic("inline event on another goroutine")
				}
				out = append(out, fmt.Sprintf("msg %d", i))
				d.Do(func() { out = append(out, fmt.Sprintf("cont %d", i)) })
			})
			if len(out) != 2*(i+1) {
				t.Fatalf("after Deliver %d: %d entries, the event did not run inline", i, len(out))
			}
		}
		for s := 0; s < 6; s++ {
			c.advance(time.Second, false)
		}
		d.Close()
		return out
	}
	a, b := trace(), trace()
	if !reflect.DeepEqual(a, b) || len(a) != 15 {
		t.Fatalf("two runs differ or are short:\n%v\n%v", a, b)
	}
	if a[10] != "timer 4 at 1s" || a[14] != "timer 0 at 5s" {
		t.Fatalf("timers fired out of order: %v", a[10:])
	}
}

// A local Submit waits for room (the inbox bound counts every queued
// event), and gives up with its context.
func TestDriverSubmitWaitsForRoom(t *testing.T) {
	d := NewDriver(Config{Mode: ModeWorker, Inbox: 2})
	defer d.Close()
	release, started := make(chan struct{}), make(chan struct{})
	d.Do(func() { close(started); <-release })
	<-started
	d.Do(func() {})
	d.Do(func() {}) // the queue holds 2: full
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := d.Submit(ctx, func() {}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Submit on a full queue: %v, want the deadline", err)
	}
	done := make(chan error)
	go func() { done <- d.Submit(context.Background(), func() {}) }()
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Submit after room freed: %v", err)
	}
}

// Stats: busy time accrues while events run; it is cheap and safe to read
// from any goroutine while the worker runs (the race detector checks).
func TestDriverStats(t *testing.T) {
	d := NewDriver(Config{Mode: ModeWorker})
	defer d.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				_ = d.Stats()
			}
		}
	}()
	for i := 0; i < 100; i++ {
		d.Deliver(func() { time.Sleep(100 * time.Microsecond) })
	}
	d.Call(context.Background(), func() {})
	close(stop)
	wg.Wait()
	s := d.Stats()
	if s.Ran != 101 || s.Busy < 100*100*time.Microsecond || s.Depth != 0 || s.Inbox != DefaultInbox {
		t.Fatalf("stats %+v", s)
	}
}

// Inline, a Notify callback (an application's OnRound) may Call to read
// the state: f runs between two events, and what f queues runs after it.
func TestDriverInlineCallFromNotify(t *testing.T) {
	d := NewDriver(Config{Mode: ModeInline})
	defer d.Close()
	state, seen := 0, -1
	var order []string
	d.Do(func() {
		state = 1
		d.Notify(func() {
			if err := d.Call(context.Background(), func() {
				seen = state
				d.Do(func() { order = append(order, "queued by f") })
				order = append(order, "f")
			}); err != nil {
				t.Error(err)
			}
			order = append(order, "after Call")
		})
	})
	if seen != 1 || !reflect.DeepEqual(order, []string{"f", "after Call", "queued by f"}) {
		t.Fatalf("seen %d, order %q", seen, order)
	}
	// A Call from another goroutine while this one runs the queue waits
	// for the running event and runs between events.
	release, started := make(chan struct{}), make(chan struct{})
	go d.Do(func() { close(started); <-release; state = 2 })
	<-started
	got := make(chan int)
	go func() {
		var v int
		d.Call(context.Background(), func() { v = state })
		got <- v
	}()
	select {
	case v := <-got:
		t.Fatalf("Call returned %d while an event held the state", v)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if v := <-got; v != 2 {
		t.Fatalf("Call read %d, want 2", v)
	}
}
