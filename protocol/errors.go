package protocol

import (
	"errors"
	"sort"
	"strings"
	"sync"
)

// Rule violations. Messages that break a rule are dropped and counted
// (Counters), never acted on.
var (
	ErrWrongSession   = errors.New("message for another session")
	ErrWrongRound     = errors.New("message for another round or attempt")
	ErrNotUser        = errors.New("control message not from the session's data user")
	ErrNotSelected    = errors.New("share from an owner not selected for this round")
	ErrDuplicateShare = errors.New("second share from the same owner")
	ErrUnexpected     = errors.New("message kind not expected here")
	ErrBadShare       = errors.New("share does not fit the session")
	ErrBadConfig      = errors.New("session configuration refused")
	ErrSessionFailed  = errors.New("session failed")
)

// Counters counts dropped and handled messages by reason. Safe for
// concurrent use.
type Counters struct {
	mu   sync.Mutex
	m    map[string]int
	hook func(reason string)
}

// SetHook makes every Inc also call f (outside the lock): how /metrics
// learns of the drops.
func (c *Counters) SetHook(f func(reason string)) {
	c.mu.Lock()
	c.hook = f
	c.mu.Unlock()
}

// Inc adds one to reason and reports whether it is the reason's first count
// (callers log the first at warn level and the rest at debug).
func (c *Counters) Inc(reason string) (first bool) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[reason]++
	first = c.m[reason] == 1
	hook := c.hook
	c.mu.Unlock()
	if hook != nil {
		hook(reason)
	}
	return first
}

// Get returns the count of reason.
func (c *Counters) Get(reason string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[reason]
}

// Snapshot returns a copy of all counts.
func (c *Counters) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.m))
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

// String lists the counts sorted by reason ("none" when nothing was dropped).
func (c *Counters) String() string {
	s := c.Snapshot()
	if len(s) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(k)
		b.WriteString("=")
		b.WriteString(itoa(s[k]))
	}
	return b.String()
}

func itoa(v int) string {
	if v == 0 {
		return "0"
	}
	var buf [20]byte
	i := len(buf)
	neg := v < 0
	if neg {
		v = -v
	}
	for v > 0 {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	if neg {
		i--
		buf[i] = '-'
	}
	return string(buf[i:])
}
