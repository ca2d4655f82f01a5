package protocol

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

func TestRateLogOncePerMinute(t *testing.T) {
	var buf bytes.Buffer
	clock := NewManualClock(time.Unix(1_700_000_000, 0))
	r := &RateLog{Log: hclog.New(&hclog.LoggerOptions{Output: &buf}), Clock: clock}
	logged := 0
	for i := range 600 { // a refused session re-announced every second for 10 minutes
		if r.Logf(hclog.Warn, "not joining s1", "not joining session", "i", i) {
			logged++
		}
		clock.Advance(time.Second)
	}
	if logged != 10 {
		t.Fatalf("%d lines for 600 repeats over 10 minutes, want 10", logged)
	}
	if n := strings.Count(buf.String(), "suppressed_since_last=59"); n != 9 {
		t.Fatalf("%d lines say 59 were suppressed, want 9:\n%s", n, buf.String())
	}
	// Another cause is not held back by the first (the control).
	if !r.Logf(hclog.Warn, "not joining s2", "not joining session") {
		t.Fatal("a new cause was suppressed")
	}
	// Causes are bounded: peer-chosen ones cannot grow the map without end.
	for i := range 5000 {
		r.Logf(hclog.Debug, strings.Repeat("x", i%7)+string(rune(i)), "spam")
	}
	if len(r.causes) > maxRateCauses {
		t.Fatalf("%d causes held", len(r.causes))
	}
}
