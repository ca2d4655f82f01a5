package protocol

import (
	"sync"
	"testing"
	"time"
)

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
