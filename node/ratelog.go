package node

import (
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/protocol"
)

// logEvery is how often one cause of dropped outsider traffic is logged.
const logEvery = protocol.LogEvery

// rateLog is protocol.RateLog for what an outsider can trigger at line rate
// (refused peers, reset streams, dropped messages), so no peer can fill the
// log while the metrics still count every occurrence. Its lines also name
// the cause and when the next one may come.
type rateLog struct {
	r     protocol.RateLog
	every time.Duration
}

func newRateLog(log hclog.Logger, every time.Duration) *rateLog {
	return &rateLog{r: protocol.RateLog{Log: log, Every: every}, every: every}
}

// Log writes msg at level unless cause was logged within the interval; it
// reports whether it wrote. The line carries how many were suppressed
// since the last one.
func (r *rateLog) Log(level hclog.Level, cause, msg string, args ...any) bool {
	return r.r.Logf(level, cause, msg, append(args, "cause", cause, "next_after", r.every)...)
}
