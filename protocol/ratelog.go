package protocol

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// LogEvery is how often a repeated warning of one cause is logged.
const LogEvery = time.Minute

// RateLog logs each cause at most once per interval of its Clock: the first
// occurrence at once, later ones counted and folded into the next line as
// "suppressed_since_last". State machines put every warning that a peer or
// a repeated announcement can trigger through it, so no peer can fill the
// log; counters still see every occurrence. It holds at most maxRateCauses
// causes (then starts over), so peer input in a cause cannot grow it.
type RateLog struct {
	Log   hclog.Logger
	Clock Clock
	Every time.Duration // 0 means LogEvery

	mu     sync.Mutex
	causes map[string]*rateEntry
}

type rateEntry struct {
	last       time.Time
	suppressed int
}

const maxRateCauses = 1024

// Logf writes msg at level unless cause was logged within the interval, and
// reports whether it wrote.
func (r *RateLog) Logf(level hclog.Level, cause, msg string, args ...any) bool {
	every := r.Every
	if every <= 0 {
		every = LogEvery
	}
	var now time.Time
	if r.Clock != nil {
		now = r.Clock.Now()
	} else {
		now = time.Now()
	}
	r.mu.Lock()
	if r.causes == nil || len(r.causes) >= maxRateCauses {
		r.causes = map[string]*rateEntry{}
	}
	e := r.causes[cause]
	if e == nil {
		e = &rateEntry{}
		r.causes[cause] = e
	} else if now.Sub(e.last) < every {
		e.suppressed++
		r.mu.Unlock()
		return false
	}
	suppressed := e.suppressed
	e.last, e.suppressed = now, 0
	r.mu.Unlock()
	if suppressed > 0 {
		args = append(args, "suppressed_since_last", suppressed)
	}
	if r.Log != nil {
		r.Log.Log(level, msg, args...)
	}
	return true
}
