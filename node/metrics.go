package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/ppboost/ppboost/internal/httpserve"
	"github.com/ppboost/ppboost/protocol/engine"
)

// Metrics are a node's Prometheus series, on a registry of their own (not
// the process-wide default one, so several nodes in one process do not
// collide). Every method is safe on a nil *Metrics and does nothing, so
// callers need not check whether metrics are on.
//
// Series:
//
//	ppboost_rounds_total{outcome}                  round attempts seen by the data user (accepted, dropped)
//	ppboost_shares_received_total                  perturbed shares aggregated by the data user
//	ppboost_securesum_seconds{method}              secure-sum latency (ring, shamir)
//	ppboost_rejected_messages_total{topic,reason}  messages dropped by validators, stream readers and the gater
//	ppboost_dropped_messages_total{role,reason}    messages the protocol dropped after delivery (session and secure sums)
//	ppboost_budget_spent                           epsilon recorded in this owner's ledger
//	ppboost_messages_sent_total{kind}              publications and direct messages sent (kind: topic or protocol id)
//	ppboost_messages_received_total{kind}          messages handed to the protocol
//	ppboost_inbound_bytes                          frame-buffer bytes held for unfinished inbound frames (InboundLimits)
//	ppboost_connections{kind}                      open connections, kind direct or relayed (through a circuit relay)
//	ppboost_connections_opened_total{kind,direction} connections opened (direction inbound or outbound)
//	ppboost_holepunch_total{result}                DCUtR hole punches (success, failure; counted at both ends, the initiator retries up to 3 times)
//	ppboost_relay_reservations                     relay slots this node holds (its circuit addresses)
//	ppboost_relay_bytes_total                      bytes this node's relay service carried for others (both directions)
//	ppboost_relay_reservation_failures_total       refused or failed relay reservations
//	ppboost_dial_failures_total                    direct-message dials that reached none of the peer's addresses
//	ppboost_driver_queue_depth{role}               events queued on a role's driver now (WatchDriver)
//	ppboost_driver_queue_high_water{role}          the largest queue the role's driver has held
//	ppboost_driver_events_total{role}              events the role's driver has run
//	ppboost_driver_dropped_total{role,reason}      network messages the driver dropped (inbox full, closed)
//	ppboost_driver_busy_seconds_total{role}        time the role's worker spent running events
//
// Streams reset by InboundLimits count in ppboost_rejected_messages_total
// under their protocol id with reason "too many streams", "peer byte
// budget", "node byte budget", "too slow" or "rate limited".
type Metrics struct {
	reg               *prometheus.Registry
	rounds            *prometheus.CounterVec
	shares            prometheus.Counter
	sumSeconds        *prometheus.HistogramVec
	rejected, dropped *prometheus.CounterVec
	budgetSpent       prometheus.Gauge
	sent              *prometheus.CounterVec
	received          *prometheus.CounterVec
	inboundBytes      prometheus.Gauge
	conns             *prometheus.GaugeVec
	connsOpened       *prometheus.CounterVec
	holePunches       *prometheus.CounterVec
	reservations      prometheus.Gauge
	relayed           prometheus.Counter
	// what HolePunches and RelayedBytes read (a Prometheus counter has no
	// cheap read)
	punchOK, punchFailed, relayedBytes atomic.Int64
	reserveFailures                    prometheus.Counter
	dialFailures                       prometheus.Counter
}

// NewMetrics creates the series on a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.rounds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ppboost_rounds_total", Help: "Round attempts seen by the data user, by outcome (accepted, dropped).",
	}, []string{"outcome"})
	m.shares = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ppboost_shares_received_total", Help: "Perturbed shares aggregated by the data user.",
	})
	m.sumSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "ppboost_securesum_seconds", Help: "Secure-sum latency, by method (ring, shamir).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16), // 1 ms .. 33 s
	}, []string{"method"})
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ppboost_rejected_messages_total",
		Help: "Messages dropped by topic validators, stream readers and the connection gater, by topic (or protocol id) and reason.",
	}, []string{"topic", "reason"})
	m.budgetSpent = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ppboost_budget_spent", Help: "Privacy budget (epsilon) recorded in this owner's ledger.",
	})
	m.sent = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ppboost_messages_sent_total", Help: "Publications and direct messages sent, by kind (topic or protocol id).",
	}, []string{"kind"})
	m.received = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ppboost_messages_received_total", Help: "Messages delivered to the protocol, by kind (topic or protocol id).",
	}, []string{"kind"})
	m.dropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ppboost_dropped_messages_total",
		Help: "Messages the protocol state machines dropped after delivery (malformed, another session, stale, not expected, refused requests, full buffers), by role and reason.",
	}, []string{"role", "reason"})
	m.inboundBytes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ppboost_inbound_bytes", Help: "Frame-buffer bytes held for unfinished inbound frames on direct streams.",
	})
	m.conns = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ppboost_connections", Help: "Open connections, by kind (direct, or relayed through a circuit relay).",
	}, []string{"kind"})
	m.connsOpened = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ppboost_connections_opened_total", Help: "Connections opened, by kind (direct, relayed) and direction (inbound, outbound).",
	}, []string{"kind", "direction"})
	m.holePunches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ppboost_holepunch_total", Help: "DCUtR hole punches (a relayed connection upgraded to a direct one), by result (success, failure), counted at both ends; the initiator makes up to 3 attempts per relayed connection.",
	}, []string{"result"})
	m.reservations = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ppboost_relay_reservations", Help: "Circuit relay slots this node holds (its addresses through a relay).",
	})
	m.relayed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ppboost_relay_bytes_total", Help: "Bytes this node's relay service carried for other peers over circuits (both directions).",
	})
	m.reserveFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ppboost_relay_reservation_failures_total", Help: "Relay reservations refused or failed.",
	})
	m.dialFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ppboost_dial_failures_total", Help: "Direct-message dials that reached none of the peer's addresses.",
	})
	for _, k := range []string{"direct", "relayed"} {
		m.conns.WithLabelValues(k)
		for _, d := range []string{"inbound", "outbound"} {
			m.connsOpened.WithLabelValues(k, d)
		}
	}
	m.holePunches.WithLabelValues("success")
	m.holePunches.WithLabelValues("failure")
	m.reg.MustRegister(m.rounds, m.shares, m.sumSeconds, m.rejected, m.budgetSpent, m.sent, m.received, m.dropped, m.inboundBytes,
		m.conns, m.connsOpened, m.holePunches, m.reservations, m.relayed, m.reserveFailures, m.dialFailures)
	// The Go runtime's and the process's own figures (go_goroutines,
	// go_memstats_*, process_resident_memory_bytes, process_cpu_seconds_total,
	// open file descriptors), as operators expect of a Go service.
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// WatchDriver exports a role's driver saturation (engine.Stats, read with
// atomics when /metrics is scraped) under the label role: the queue depth
// and its high-water mark, the events run, the network messages dropped
// (inbox full, closed) and the worker's busy time. A role name already
// watched is refused.
func (m *Metrics) WatchDriver(role string, stats func() engine.Stats) error {
	if m == nil {
		return nil
	}
	l := prometheus.Labels{"role": role}
	gauge := func(name, help string, v func(engine.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: l}, func() float64 { return v(stats()) })
	}
	counter := func(name, help string, cl prometheus.Labels, v func(engine.Stats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: cl}, func() float64 { return v(stats()) })
	}
	with := func(k, v string) prometheus.Labels { return prometheus.Labels{"role": role, k: v} }
	for _, c := range []prometheus.Collector{
		gauge("ppboost_driver_queue_depth", "Events queued on the role's driver now.", func(s engine.Stats) float64 { return float64(s.Depth) }),
		gauge("ppboost_driver_queue_high_water", "The largest queue the role's driver has held.", func(s engine.Stats) float64 { return float64(s.HighWater) }),
		counter("ppboost_driver_events_total", "Events the role's driver has run.", l, func(s engine.Stats) float64 { return float64(s.Ran) }),
		counter("ppboost_driver_dropped_total", "Network messages the role's driver dropped.", with("reason", engine.DropInboxFull), func(s engine.Stats) float64 { return float64(s.DroppedFull) }),
		counter("ppboost_driver_dropped_total", "Network messages the role's driver dropped.", with("reason", engine.DropClosed), func(s engine.Stats) float64 { return float64(s.DroppedClosed) }),
		counter("ppboost_driver_busy_seconds_total", "Time the role's worker spent running events.", l, func(s engine.Stats) float64 { return s.Busy.Seconds() }),
	} {
		if err := m.reg.Register(c); err != nil {
			return fmt.Errorf("metrics: driver of role %q: %w", role, err)
		}
	}
	return nil
}

// Registry is the registry the series live on, for adding collectors.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// RoundDone counts one round attempt by the data user.
func (m *Metrics) RoundDone(accepted bool) {
	if m == nil {
		return
	}
	outcome := "dropped"
	if accepted {
		outcome = "accepted"
	}
	m.rounds.WithLabelValues(outcome).Inc()
}

// SharesReceived adds n aggregated shares.
func (m *Metrics) SharesReceived(n int) {
	if m != nil && n > 0 {
		m.shares.Add(float64(n))
	}
}

// ObserveSecureSum records one secure sum's latency under its method.
func (m *Metrics) ObserveSecureSum(method string, d time.Duration) {
	if m != nil {
		m.sumSeconds.WithLabelValues(method).Observe(d.Seconds())
	}
}

// ObserveRound records a round attempt by the data user: its outcome, the
// shares it aggregated and, for an accepted round with sum > 0, the
// latency of its secure sums under method ("ring" or "shamir").
func (m *Metrics) ObserveRound(method string, accepted bool, shares int, sum time.Duration) {
	if m == nil {
		return
	}
	m.RoundDone(accepted)
	m.SharesReceived(shares)
	if accepted && sum > 0 {
		m.ObserveSecureSum(method, sum)
	}
}

// Rejected counts a dropped message on topic (a topic name, a protocol id,
// or "gater") for reason.
func (m *Metrics) Rejected(topic, reason string) {
	if m != nil {
		m.rejected.WithLabelValues(topic, reason).Inc()
	}
}

// Dropped counts a message a protocol state machine dropped.
func (m *Metrics) Dropped(role, reason string) {
	if m != nil {
		m.dropped.WithLabelValues(role, reason).Inc()
	}
}

// setInboundBytes sets the inbound buffer gauge.
func (m *Metrics) setInboundBytes(n int) {
	if m != nil {
		m.inboundBytes.Set(float64(n))
	}
}

// connOpened counts a new connection of kind (direct, relayed).
func (m *Metrics) connOpened(kind string, inbound bool) {
	if m == nil {
		return
	}
	dir := "outbound"
	if inbound {
		dir = "inbound"
	}
	m.conns.WithLabelValues(kind).Inc()
	m.connsOpened.WithLabelValues(kind, dir).Inc()
}

// connClosed counts a closed connection of kind.
func (m *Metrics) connClosed(kind string) {
	if m != nil {
		m.conns.WithLabelValues(kind).Dec()
	}
}

// holePunch counts a finished hole punch.
func (m *Metrics) holePunch(ok bool) {
	if m == nil {
		return
	}
	result := "failure"
	if ok {
		result = "success"
		m.punchOK.Add(1)
	} else {
		m.punchFailed.Add(1)
	}
	m.holePunches.WithLabelValues(result).Inc()
}

func (m *Metrics) setRelayReservations(n int) {
	if m != nil {
		m.reservations.Set(float64(n))
	}
}

func (m *Metrics) relayBytes(n int) {
	if m != nil && n > 0 {
		m.relayed.Add(float64(n))
		m.relayedBytes.Add(int64(n))
	}
}

// HolePunches are the DCUtR hole punches counted so far
// (ppboost_holepunch_total): successes and failures.
func (m *Metrics) HolePunches() (ok, failed int64) {
	if m == nil {
		return 0, 0
	}
	return m.punchOK.Load(), m.punchFailed.Load()
}

// Drops are the messages this node dropped so far
// (ppboost_dropped_messages_total), by "role: reason" (the node's own under
// role "wire": a failed write, a full queue).
func (m *Metrics) Drops() map[string]int64 {
	out := map[string]int64{}
	if m == nil {
		return out
	}
	ch := make(chan prometheus.Metric)
	go func() {
		m.dropped.Collect(ch)
		close(ch)
	}()
	for mt := range ch {
		var d dto.Metric
		if mt.Write(&d) != nil {
			continue
		}
		var role, reason string
		for _, l := range d.GetLabel() {
			switch l.GetName() {
			case "role":
				role = l.GetValue()
			case "reason":
				reason = l.GetValue()
			}
		}
		out[role+": "+reason] += int64(d.GetCounter().GetValue())
	}
	return out
}

// RelayedBytes is what this node's relay service has carried for others
// (ppboost_relay_bytes_total).
func (m *Metrics) RelayedBytes() int64 {
	if m == nil {
		return 0
	}
	return m.relayedBytes.Load()
}

func (m *Metrics) relayReserveFailed() {
	if m != nil {
		m.reserveFailures.Inc()
	}
}

func (m *Metrics) dialFailed() {
	if m != nil {
		m.dialFailures.Inc()
	}
}

// SetBudgetSpent sets the ledger gauge.
func (m *Metrics) SetBudgetSpent(eps float64) {
	if m != nil {
		m.budgetSpent.Set(eps)
	}
}

// MessageSent counts an outbound publication or direct message.
func (m *Metrics) MessageSent(kind string) {
	if m != nil {
		m.sent.WithLabelValues(kind).Inc()
	}
}

// MessageReceived counts a message delivered to the protocol.
func (m *Metrics) MessageReceived(kind string) {
	if m != nil {
		m.received.WithLabelValues(kind).Inc()
	}
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Serve serves /metrics on addr (host:port) until ctx ends, then shuts the
// server down. It returns nil after ctx ends and an error if it could not
// listen or the server failed.
func (m *Metrics) Serve(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics: listen on %q: %w", addr, err)
	}
	return m.ServeListener(ctx, ln)
}

// ServeListener is Serve on an open listener, which it closes; it has the
// status page's limits (internal/httpserve: at most 32 connections at once,
// header, read, write and idle timeouts).
func (m *Metrics) ServeListener(ctx context.Context, ln net.Listener) error {
	if m == nil {
		ln.Close()
		return errors.New("metrics: nil *Metrics")
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	return httpserve.Serve(ctx, "metrics", ln, mux)
}
