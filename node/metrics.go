package node

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the node's Prometheus series, on their own registry.
type Metrics struct {
	reg         *prometheus.Registry
	rounds      *prometheus.CounterVec
	shares      prometheus.Counter
	sumSeconds  prometheus.Histogram
	rejected    *prometheus.CounterVec
	budgetSpent prometheus.Gauge
	messages    *prometheus.CounterVec
}

// NewMetrics registers the series.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.rounds = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ppboost_rounds_total", Help: "Round attempts by outcome."}, []string{"outcome"})
	m.shares = prometheus.NewCounter(prometheus.CounterOpts{Name: "ppboost_shares_received_total", Help: "Perturbed shares aggregated by the data user."})
	m.sumSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ppboost_securesum_seconds", Help: "Secure-sum latency per round (both sums).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)})
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ppboost_rejected_messages_total", Help: "Messages dropped by validators and stream readers."}, []string{"where", "reason"})
	m.budgetSpent = prometheus.NewGauge(prometheus.GaugeOpts{Name: "ppboost_budget_spent", Help: "Privacy budget recorded in this owner's ledger."})
	m.messages = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ppboost_messages_total", Help: "Messages by direction and channel."}, []string{"direction", "channel"})
	m.reg.MustRegister(m.rounds, m.shares, m.sumSeconds, m.rejected, m.budgetSpent, m.messages)
	return m
}

// ObserveRound records one round attempt as seen by the data user.
func (m *Metrics) ObserveRound(accepted bool, shares int, sum time.Duration) {
	if m == nil {
		return
	}
	outcome := "dropped"
	if accepted {
		outcome = "accepted"
		m.sumSeconds.Observe(sum.Seconds())
	}
	m.rounds.WithLabelValues(outcome).Inc()
	m.shares.Add(float64(shares))
}

// Rejected counts a dropped message.
func (m *Metrics) Rejected(where, reason string) {
	if m != nil {
		m.rejected.WithLabelValues(where, reason).Inc()
	}
}

// SetBudgetSpent sets the ledger gauge.
func (m *Metrics) SetBudgetSpent(v float64) {
	if m != nil {
		m.budgetSpent.Set(v)
	}
}

// Message counts traffic.
func (m *Metrics) Message(direction, channel string) {
	if m != nil {
		m.messages.WithLabelValues(direction, channel).Inc()
	}
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler { return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}) }

// Serve serves /metrics on addr until ctx ends.
func (m *Metrics) Serve(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
