package protocol

import (
	"sync"
	"testing"
	"time"
)

func TestLoopRunsContinuationsAfterTheCurrentEvent(t *testing.T) {
	l := NewLoop(NewManualClock(time.Time{})) // inline: runs on this goroutine
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
	c := NewManualClock(time.Time{})
	l := NewLoop(c)
	done := false
	l.AfterFunc(time.Second, func() { l.Do(func() { done = true }) })
	c.Advance(time.Second)
	if !done {
		t.Fatal("continuation queued by a timer event did not run")
	}
}

func TestLoopSerializesConcurrentCallers(t *testing.T) {
	l := NewLoop(nil) // the real clock: events on the loop's worker
	defer l.Close()
	counter, inside := 0, 0
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				l.Call(func() {
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
	l.Call(func() { got = counter })
	if got != 8000 {
		t.Fatalf("counter %d, want 8000", got)
	}
}

// A callback queued with Notify runs on the worker; a Call from it (an
// accessor reading state) runs at once instead of waiting for itself.
func TestLoopNotifyMayCall(t *testing.T) {
	l := NewLoop(nil)
	defer l.Close()
	state := 0
	seen := make(chan int, 1)
	l.Do(func() {
		state = 7
		l.Notify(func() {
			var v int
			l.Call(func() { v = state })
			seen <- v
		})
	})
	select {
	case v := <-seen:
		if v != 7 {
			t.Fatalf("notify read %d, want 7", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Call from a Notify callback did not return")
	}
}

// On the real clock a message's handling runs on the loop's worker, not on
// the transport goroutine that delivered it: Deliver returns while a long
// event runs, and Close then waits for it.
func TestLoopDeliverDoesNotRunOnTheCaller(t *testing.T) {
	l := NewLoop(nil)
	release := make(chan struct{})
	started := make(chan struct{})
	if !l.Deliver(func() { close(started); <-release }) {
		t.Fatal("deliver refused on an empty inbox")
	}
	<-started // the event is running on another goroutine, and Deliver has returned
	ran := false
	l.Deliver(func() { ran = true })
	close(release)
	l.Call(func() {})
	if !ran {
		t.Fatal("the second event did not run before a later Call")
	}
	l.Close()
	if l.Deliver(func() { ran = false }) || !ran {
		t.Fatal("an event was accepted after Close")
	}
}
