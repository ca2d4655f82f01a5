package node

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// logEvery is how often one cause of dropped outsider traffic is logged.
const logEvery = time.Minute

// rateLog logs each cause at most once per interval: the first occurrence
// at once, later ones folded into the next line as "suppressed". What an
// outsider can trigger at line rate (refused peers, reset streams, dropped
// messages) goes through it, so no peer can fill the log; the metrics still
// count every occurrence.
type rateLog struct {
	log   hclog.Logger
	every time.Duration
	now   func() time.Time

	mu     sync.Mutex
	causes map[string]*rateEntry
}

type rateEntry struct {
	last       time.Time
	suppressed int
}

func newRateLog(log hclog.Logger, every time.Duration) *rateLog {
	return &rateLog{log: log, every: every, now: time.Now, causes: map[string]*rateEntry{}}
}

// Log writes msg at level unless cause was logged within the interval; it
// reports whether it wrote. The line carries how many were suppressed
// since the last one.
func (r *rateLog) Log(level hclog.Level, cause, msg string, args ...any) bool {
	now := r.now()
	r.mu.Lock()
	e := r.causes[cause]
	if e == nil {
		if len(r.causes) >= maxLogCauses {
			// Causes are a fixed set of strings in this package; the cap
			// only guards against a caller that puts peer input in one.
			r.causes = map[string]*rateEntry{}
		}
		e = &rateEntry{}
		r.causes[cause] = e
	} else if now.Sub(e.last) < r.every {
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
	r.log.Log(level, msg, append(args, "cause", cause, "next_after", r.every)...)
	return true
}

const maxLogCauses = 1024
