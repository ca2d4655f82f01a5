package node

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
)

func TestMetricsExposition(t *testing.T) {
	m := NewMetrics()
	m.RoundDone(true)
	m.RoundDone(false)
	m.SharesReceived(7)
	m.ObserveSecureSum("shamir", 30*time.Millisecond)
	m.ObserveRound("ring", true, 3, 10*time.Millisecond)
	m.Rejected("/ppboost/control/1.0.0", "rejected")
	m.SetBudgetSpent(2.5)
	m.MessageSent("/ppboost/session/1.0.0")
	m.MessageReceived("/ppboost/shares/1.0.0")
	m.MessageReceived("/ppboost/shares/1.0.0")
	// A session's drop counter feeds the series through its hook.
	var c protocol.Counters
	c.SetHook(func(r string) { m.Dropped("owner", r) })
	c.Inc("sum: buffer full")
	c.Inc("sum: buffer full")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`ppboost_rounds_total{outcome="accepted"} 2`,
		`ppboost_rounds_total{outcome="dropped"} 1`,
		`ppboost_shares_received_total 10`,
		`ppboost_securesum_seconds_count{method="shamir"} 1`,
		`ppboost_securesum_seconds_count{method="ring"} 1`,
		`ppboost_rejected_messages_total{reason="rejected",topic="/ppboost/control/1.0.0"} 1`,
		`ppboost_budget_spent 2.5`,
		`ppboost_messages_sent_total{kind="/ppboost/session/1.0.0"} 1`,
		`ppboost_messages_received_total{kind="/ppboost/shares/1.0.0"} 2`,
		`ppboost_dropped_messages_total{reason="sum: buffer full",role="owner"} 2`,
		// The Go runtime's and the process's collectors.
		"go_goroutines ",
		"go_memstats_heap_alloc_bytes ",
		"process_resident_memory_bytes ",
		"process_cpu_seconds_total ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}

func TestNilMetricsAreNoops(t *testing.T) {
	var m *Metrics
	m.RoundDone(true)
	m.SharesReceived(1)
	m.ObserveSecureSum("ring", time.Second)
	m.ObserveRound("ring", true, 1, time.Second)
	m.Rejected("t", "r")
	m.SetBudgetSpent(1)
	m.MessageSent("k")
	m.MessageReceived("k")
	m.Dropped("owner", "r")
	m.connOpened("relayed", true)
	m.connClosed("relayed")
	m.holePunch(true)
	m.setRelayReservations(1)
	m.relayReserveFailed()
	m.dialFailed()
	if m.Registry() != nil {
		t.Fatal("nil metrics have a registry")
	}
	if d := m.Drops(); len(d) != 0 {
		t.Fatalf("nil metrics dropped %v", d)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("nil metrics handler: status %d", rec.Code)
	}
}

// Drops reads back what Dropped counted, by role and reason.
func TestMetricsDrops(t *testing.T) {
	m := NewMetrics()
	m.Dropped("wire", "write failed")
	m.Dropped("wire", "write failed")
	m.Dropped("owner", "late")
	got := m.Drops()
	if len(got) != 2 || got["wire: write failed"] != 2 || got["owner: late"] != 1 {
		t.Fatalf("drops %v, want wire: write failed 2, owner: late 1", got)
	}
}

func TestMetricsServe(t *testing.T) {
	m := NewMetrics()
	m.SetBudgetSpent(1.5)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- m.ServeListener(ctx, ln) }()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "ppboost_budget_spent 1.5") {
		t.Fatalf("served body lacks the gauge:\n%s", body)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if err := m.Serve(context.Background(), "256.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "256.0.0.1:1") {
		t.Fatalf("Serve on a bad address: %v", err)
	}
}

// A role's driver saturation is on /metrics: the series read the driver's
// Stats when scraped, so a flood that overflows its inbox shows as drops
// and a high-water mark; a second driver under the same role is refused.
func TestMetricsWatchDriver(t *testing.T) {
	m := NewMetrics()
	block := make(chan struct{})
	d := engine.NewDriver(engine.Config{Inbox: 4, Mode: engine.ModeWorker})
	defer d.Close()
	if err := m.WatchDriver("owner", d.Stats); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	d.Deliver(func() { close(started); <-block })
	<-started
	for range 10 {
		d.Deliver(func() {})
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	// The running event left the queue: 4 of the 10 fit the inbox, 6 are dropped.
	for _, want := range []string{
		`ppboost_driver_queue_depth{role="owner"} 4`,
		`ppboost_driver_dropped_total{reason="inbox full",role="owner"} 6`,
		`ppboost_driver_dropped_total{reason="closed",role="owner"} 0`,
		`ppboost_driver_events_total{role="owner"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
	if !strings.Contains(body, `ppboost_driver_queue_high_water{role="owner"}`) || !strings.Contains(body, `ppboost_driver_busy_seconds_total{role="owner"}`) {
		t.Error("no high-water or busy series")
	}
	close(block)
	if err := m.WatchDriver("owner", d.Stats); err == nil {
		t.Error("a second driver under role owner was accepted")
	}
	if t.Failed() {
		t.Log(body)
	}
}
