package protocol

import "time"

// ManualClock is a Clock whose time moves only when its owner moves it: the
// clock of hand-driven state-machine tests (protocol/session, this package).
// It is not safe for concurrent use.
type ManualClock struct {
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (t *manualTimer) Stop() bool { was := !t.stopped; t.stopped = true; return was }

// NewManualClock starts at start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

// Now is the clock's time.
func (c *ManualClock) Now() time.Time { return c.now }

// AfterFunc arms a timer that fires when the clock passes now+d.
func (c *ManualClock) AfterFunc(d time.Duration, f func()) Timer {
	t := &manualTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// NextDue returns the time of the earliest pending timer due by limit.
func (c *ManualClock) NextDue(limit time.Time) (time.Time, bool) {
	var best *manualTimer
	for _, t := range c.timers {
		if !t.stopped && !t.at.After(limit) && (best == nil || t.at.Before(best.at)) {
			best = t
		}
	}
	if best == nil {
		return time.Time{}, false
	}
	return best.at, true
}

// Set moves the clock to t (never backwards) without firing anything.
func (c *ManualClock) Set(t time.Time) {
	if t.After(c.now) {
		c.now = t
	}
}

// FireDue fires the earliest pending timer due at Now and reports whether
// there was one.
func (c *ManualClock) FireDue() bool {
	at, ok := c.NextDue(c.now)
	if !ok {
		return false
	}
	for i, t := range c.timers {
		if !t.stopped && t.at.Equal(at) {
			t.stopped = true
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			t.f()
			return true
		}
	}
	return false
}

// Advance moves the clock forward by d, firing the timers that fall due in
// time order (timers armed by a firing one included).
func (c *ManualClock) Advance(d time.Duration) {
	limit := c.now.Add(d)
	for {
		at, ok := c.NextDue(limit)
		if !ok {
			break
		}
		c.Set(at)
		c.FireDue()
	}
	c.Set(limit)
}
