package securesum_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// BenchmarkSecureSum runs whole sum instances over the deterministic
// in-memory network (1 ms virtual links): n parties, vector length 2.
func BenchmarkSecureSum(b *testing.B) {
	for _, method := range []string{securesum.Ring, securesum.Shamir} {
		for _, n := range []int{100, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/n=%d", method, n), func(b *testing.B) { benchSum(b, method, n) })
		}
	}
}

func benchSum(b *testing.B, method string, n int) {
	net := memnet.New(memnet.Options{Deterministic: true, Delay: time.Millisecond})
	defer net.Close()
	log := hclog.NewNullLogger()
	p := securesum.DefaultParams()
	p.Method = method
	env := func(ep *memnet.Endpoint, seed uint64) securesum.Env {
		return securesum.PosterEnv(ep.ID(), protocol.Direct{Tr: ep, Log: log}, net.Clock(), rng.Seeded(seed), log)
	}
	uep, _ := net.Join("user")
	coord := securesum.NewCoordinator(env(uep, 1<<40), p)
	uep.SetHandler(func(m protocol.Message) {
		if e, err := wire.Unmarshal(m.Data, wire.MaxSumFrameBytes); err == nil {
			coord.Handle(m.From, e)
		}
	})
	roster := make([]protocol.PeerID, n)
	for i := range roster {
		roster[i] = protocol.PeerID(fmt.Sprintf("p%05d", i))
	}
	want := 0.0
	for i, id := range roster {
		ep, _ := net.Join(id)
		party := securesum.NewParty(env(ep, uint64(i)), p)
		party.SetRoster(roster)
		v := []float64{float64(i%7) / 8, 1}
		want += v[0]
		ep.SetHandler(func(m protocol.Message) {
			e, err := wire.Unmarshal(m.Data, wire.MaxControlBytes)
			if err != nil {
				return
			}
			if s := e.GetSumStart(); s != nil {
				party.Begin(e.GetHeader(), s, roster, []byte("beacon"), "user", v)
				return
			}
			party.Handle(m.From, e)
		})
		ep.Join(wire.TopicControl)
	}
	b.ResetTimer()
	var virtual time.Duration
	for i := 0; i < b.N; i++ {
		done := false
		var total []float64
		h := &wire.Header{Version: wire.Version, Session: "bench", Round: uint32(i + 1)}
		t0 := net.Clock().Now()
		coord.Sum(securesum.Request{Header: h, Purpose: "err", Roster: roster, Length: 2, Beacon: []byte("beacon")}, func(v []float64, _ int, err error) {
			if err != nil {
				b.Fatal(err)
			}
			total, done = v, true
		})
		if err := net.RunUntil(func() bool { return done }, time.Hour); err != nil {
			b.Fatal(err)
		}
		virtual += net.Clock().Now().Sub(t0)
		if math.Abs(total[0]-want) > float64(n)/(1<<24) || total[1] != float64(n) {
			b.Fatalf("total %v, want %v", total, want)
		}
	}
	st := net.TotalStats()
	b.ReportMetric(float64(st.MsgsSent)/float64(b.N), "msgs/sum")
	b.ReportMetric(float64(st.BytesSent)/float64(b.N), "bytes/sum")
	b.ReportMetric(float64(virtual.Milliseconds())/float64(b.N), "virtual-ms/sum")
}
