package memnet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
)

const benchPeers = 10000

func benchNet(b *testing.B, opts memnet.Options) (*memnet.Network, []*memnet.Endpoint) {
	b.Helper()
	opts.Deterministic = true
	net := memnet.New(opts)
	b.Cleanup(func() { net.Close() })
	eps := make([]*memnet.Endpoint, benchPeers)
	for i := range eps {
		e, err := net.Join(protocol.PeerID(fmt.Sprintf("p%05d", i)))
		if err != nil {
			b.Fatal(err)
		}
		eps[i] = e
	}
	return net, eps
}

// BenchmarkDirect: one op is one direct message sent and delivered through
// the deterministic loop among 10^4 endpoints (run with -benchtime
// 1000000x for the million-message figure).
//
// inflight: every peer keeps one message in flight and forwards it on
// receipt (a queue of 10^4 events, sends from inside handlers, as in a
// session). backlog: all b.N messages are queued first, then drained (a
// queue of b.N events).
func BenchmarkDirect(b *testing.B) {
	payload := make([]byte, 64)
	b.Run("inflight", func(b *testing.B) {
		net, eps := benchNet(b, memnet.Options{Delay: time.Millisecond, Jitter: time.Millisecond})
		sent, delivered := 0, 0
		for i, e := range eps {
			e.SetHandler(func(m protocol.Message) {
				delivered++
				if sent < b.N {
					sent++
					to := eps[(i*7919+delivered)%benchPeers].ID()
					if err := e.Send(ctx, to, "/bench", m.Data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < min(b.N, benchPeers); i++ {
			sent++
			if err := eps[i].Send(ctx, eps[(i+1)%benchPeers].ID(), "/bench", payload); err != nil {
				b.Fatal(err)
			}
		}
		if err := net.RunUntil(func() bool { return delivered == b.N }, 24*time.Hour); err != nil {
			b.Fatalf("%d of %d delivered: %v", delivered, b.N, err)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
	b.Run("backlog", func(b *testing.B) {
		net, eps := benchNet(b, memnet.Options{Delay: time.Millisecond, Jitter: time.Millisecond})
		delivered := 0
		for _, e := range eps {
			e.SetHandler(func(protocol.Message) { delivered++ })
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := eps[i%benchPeers].Send(ctx, eps[(i*7919+1)%benchPeers].ID(), "/bench", payload); err != nil {
				b.Fatal(err)
			}
		}
		if err := net.RunUntil(func() bool { return delivered == b.N }, 24*time.Hour); err != nil {
			b.Fatalf("%d of %d delivered: %v", delivered, b.N, err)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
}

// BenchmarkPublish: one op is one 1 KiB publication fanned out to 10^4
// subscribers and delivered through the deterministic loop.
func BenchmarkPublish(b *testing.B) {
	net, eps := benchNet(b, memnet.Options{Delay: time.Millisecond, Jitter: time.Millisecond})
	delivered := 0
	for _, e := range eps {
		e.SetHandler(func(protocol.Message) { delivered++ })
		if err := e.Join("t"); err != nil {
			b.Fatal(err)
		}
	}
	payload := make([]byte, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := eps[i%benchPeers].Publish(ctx, "t", payload); err != nil {
			b.Fatal(err)
		}
		if err := net.RunUntil(func() bool { return delivered == (i+1)*(benchPeers-1) }, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(delivered)/b.Elapsed().Seconds(), "deliveries/s")
}
