package node

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/protocol"
)

// TestRateLogOncePerInterval: a cause is logged at once, then not again
// within the interval; the next line carries how many were suppressed.
// Causes are independent.
func TestRateLogOncePerInterval(t *testing.T) {
	var buf syncBuffer
	r := newRateLog(hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Debug}), time.Minute)
	clock := protocol.NewManualClock(time.Unix(1_700_000_000, 0))
	r.r.Clock = clock
	for i := 0; i < 100; i++ {
		r.Log(hclog.Warn, "a", "dropped", "i", i)
	}
	if !r.Log(hclog.Warn, "b", "other cause") {
		t.Fatal("a second cause was suppressed by the first")
	}
	clock.Advance(59 * time.Second)
	if r.Log(hclog.Warn, "a", "dropped") {
		t.Fatal("logged again within the interval")
	}
	clock.Advance(time.Second)
	if !r.Log(hclog.Warn, "a", "dropped") {
		t.Fatal("not logged after the interval")
	}
	out := buf.String()
	if n := strings.Count(out, "dropped"); n != 2 {
		t.Fatalf("%d lines for cause a, want 2:\n%s", n, out)
	}
	if !strings.Contains(out, "suppressed_since_last=100") {
		t.Fatalf("the second line does not count the 100 suppressed:\n%s", out)
	}
}
