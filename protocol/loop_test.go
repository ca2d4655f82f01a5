package protocol

import (
	"sync"
	"testing"
	"time"
)

// manualClock fires timers only when Advance is called, on the caller's goroutine.
type manualClock struct {
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (t *manualTimer) Stop() bool { was := !t.stopped; t.stopped = true; return was }

func (c *manualClock) Now() time.Time { return c.now }
func (c *manualClock) AfterFunc(d time.Duration, f func()) Timer {
	t := &manualTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}
func (c *manualClock) Advance(d time.Duration) {
	c.now = c.now.Add(d)
	for _, t := range c.timers {
		if !t.stopped && !t.at.After(c.now) {
			t.stopped = true
			t.f()
		}
	}
}

func TestLoopRunsContinuationsAfterTheCurrentEvent(t *testing.T) {
	l := NewLoop(nil)
	var order []string
	l.Do(func() {
		order = append(order, "a")
		l.Do(func() { order = append(order, "c") })
		order = append(order, "b")
	})
	if got := len(order); got != 3 || order[0] != "a" || order[1] != "b" || order[2] != "c" {
		t.Fatalf("order %v, want [a b c]", order)
	}
}

// A timer's transition, and what it queues, run without any inbound message:
// the failure mode of the old run-after-unlock queues.
func TestLoopTimerEventsDrainTheirContinuations(t *testing.T) {
	c := &manualClock{}
	l := NewLoop(c)
	done := false
	l.AfterFunc(time.Second, func() { l.Do(func() { done = true }) })
	c.Advance(time.Second)
	if !done {
		t.Fatal("continuation queued by a timer event did not run")
	}
}

func TestLoopSerializesConcurrentCallers(t *testing.T) {
	l := NewLoop(nil)
	counter, inside := 0, 0
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				l.Do(func() {
					inside++
					if inside != 1 {
						panic("two events ran at once")
					}
					counter++
					inside--
				})
			}
		}()
	}
	wg.Wait()
	var got int
	l.Read(func() { got = counter })
	if got != 8000 {
		t.Fatalf("counter %d, want 8000", got)
	}
}

func TestLoopNotifyMayRead(t *testing.T) {
	l := NewLoop(nil)
	state := 0
	var seen int
	l.Do(func() {
		state = 7
		l.Notify(func() { l.Read(func() { seen = state }) })
	})
	if seen != 7 {
		t.Fatalf("notify read %d, want 7", seen)
	}
}
