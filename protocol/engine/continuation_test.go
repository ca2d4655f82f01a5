package engine

import (
	"context"
	"sync"
	"testing"
	"time"
)

// What protocol.Loop's tests checked, now on the Driver every role and
// secure-sum harness uses directly.

func TestDriverRunsContinuationsAfterTheCurrentEvent(t *testing.T) {
	d := NewDriver(Config{Clock: &handClock{}}) // inline: runs on this goroutine
	var order []string
	d.Do(func() {
		order = append(order, "a")
		d.Do(func() { order = append(order, "c") })
		order = append(order, "b")
	})
	if got := len(order); got != 3 || order[0] != "a" || order[1] != "b" || order[2] != "c" {
		t.Fatalf("order %v, want [a b c]", order)
	}
}

// A timer's transition, and what it queues, run without any inbound
// message: the failure mode of the old run-after-unlock queues.
func TestDriverTimerEventsDrainTheirContinuations(t *testing.T) {
	c := &handClock{}
	d := NewDriver(Config{Clock: c})
	done := false
	d.AfterFunc(time.Second, func() { d.Do(func() { done = true }) })
	c.advance(time.Second, false)
	if !done {
		t.Fatal("continuation queued by a timer event did not run")
	}
}

func TestDriverSerializesConcurrentCallers(t *testing.T) {
	d := NewDriver(Config{}) // the real clock: events on the driver's worker
	defer d.Close()
	counter, inside := 0, 0
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				d.Call(context.Background(), func() {
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
	d.Call(context.Background(), func() { got = counter })
	if got != 8000 {
		t.Fatalf("counter %d, want 8000", got)
	}
}

// A callback queued with Notify runs on the worker; a Call from it (an
// accessor reading state) runs at once instead of waiting for itself.
func TestDriverWorkerNotifyMayCall(t *testing.T) {
	d := NewDriver(Config{})
	defer d.Close()
	state := 0
	seen := make(chan int, 1)
	d.Do(func() {
		state = 7
		d.Notify(func() {
			var v int
			d.Call(context.Background(), func() { v = state })
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

// On the real clock a message's handling runs on the driver's worker, not
// on the transport goroutine that delivered it: Deliver returns while a
// long event runs, and Close then waits for it.
func TestDriverDeliverDoesNotRunOnTheCaller(t *testing.T) {
	d := NewDriver(Config{})
	release := make(chan struct{})
	started := make(chan struct{})
	if !d.Deliver(func() { close(started); <-release }) {
		t.Fatal("deliver refused on an empty inbox")
	}
	<-started // the event is running on another goroutine, and Deliver has returned
	ran := false
	d.Deliver(func() { ran = true })
	close(release)
	d.Call(context.Background(), func() {})
	if !ran {
		t.Fatal("the second event did not run before a later Call")
	}
	d.Close()
	if d.Deliver(func() { ran = false }) || !ran {
		t.Fatal("an event was accepted after Close")
	}
}
