package node

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// BenchmarkSecureSumLibp2p runs whole secure sums over real libp2p hosts on
// loopback TCP in one process: n owner hosts plus the coordinating user.
// Compare ring ns/op with 2n one-hop latencies (BenchmarkOneHop).
func BenchmarkSecureSumLibp2p(b *testing.B) {
	for _, method := range []string{securesum.Ring, securesum.Shamir} {
		for _, n := range []int{10, 50, 100} {
			b.Run(fmt.Sprintf("%s/n=%d", method, n), func(b *testing.B) { benchLibp2pSum(b, method, n) })
		}
	}
}

func benchLibp2pSum(b *testing.B, method string, n int) {
	log := hclog.NewNullLogger()
	p := securesum.DefaultParams()
	p.Method = method
	mk := func(name string, expected int) *Host {
		key := filepath.Join(b.TempDir(), name)
		if _, err := GenerateKey(key); err != nil {
			b.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.KeyFile, cfg.ListenAddrs, cfg.ExpectedPeers = key, []string{"/ip4/127.0.0.1/tcp/0"}, expected
		h, err := New(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { h.Close() })
		return h
	}
	// Every node runs its sum logic on its own loop, as session.User and
	// session.Owner do.
	env := func(h *Host, loop *engine.Driver, seed uint64) securesum.Env {
		post := protocol.NewOutbox(h, 10*time.Second, log)
		b.Cleanup(post.Close)
		return securesum.PosterEnv(h.ID(), post, loop, rng.Seeded(seed), log)
	}
	user := mk("user", n+8)
	userLoop := engine.NewDriver(engine.Config{})
	coord := securesum.NewCoordinator(env(user, userLoop, 1<<40), p)
	user.SetHandler(func(m protocol.Message) {
		if e, err := wire.Unmarshal(m.Data, wire.MaxSumFrameBytes); err == nil {
			userLoop.Do(func() { coord.Handle(m.From, e) })
		}
	})
	hosts := make([]*Host, n)
	for i := range hosts {
		hosts[i] = mk(fmt.Sprint("o", i), n+8)
		connect(b, hosts[i], user)
	}
	roster := make([]protocol.PeerID, n)
	for i, h := range hosts {
		roster[i] = h.ID()
	}
	slices.Sort(roster)
	want := 0.0
	for i, h := range hosts {
		for _, o := range hosts {
			h.AddAddrs(o.ID(), o.Addrs())
		}
		loop := engine.NewDriver(engine.Config{})
		party := securesum.NewParty(env(h, loop, uint64(i)), p)
		party.SetRoster(roster)
		v := []float64{float64(i%7) / 8, 1}
		want += v[0]
		h.SetHandler(func(m protocol.Message) {
			e, err := wire.Unmarshal(m.Data, wire.MaxControlBytes)
			if err != nil {
				return
			}
			loop.Do(func() {
				if s := e.GetSumStart(); s != nil {
					party.Begin(e.GetHeader(), s, roster, []byte("beacon"), user.ID(), v)
					return
				}
				party.Handle(m.From, e)
			})
		})
		if err := h.Join(wire.TopicControl); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := user.WaitTopicPeers(ctx, wire.TopicControl, n); err != nil {
		b.Fatal(err)
	}
	// Warm up: the first sum opens the owner-to-owner connections.
	run := func(round int) {
		done := make(chan []float64, 1)
		h := &wire.Header{Version: wire.Version, Session: "bench", Round: uint32(round)}
		var err error
		userLoop.Call(context.Background(), func() {
			err = coord.Sum(securesum.Request{Header: h, Purpose: "err", Roster: roster, Length: 2, Beacon: []byte("beacon")}, func(v []float64, _ int, err error) {
				if err != nil {
					b.Error(err)
				}
				done <- v
			})
		})
		if err != nil {
			b.Fatal(err)
		}
		select {
		case v := <-done:
			if v == nil || math.Abs(v[0]-want) > float64(n)/(1<<24) {
				b.Fatalf("total %v, want %v", v, want)
			}
		case <-time.After(60 * time.Second):
			b.Fatal("sum timed out")
		}
	}
	run(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run(i + 2)
	}
}

// BenchmarkOneHop measures Send-to-handler latency over loopback TCP on an
// open connection: each message is one frame on the long-lived stream to
// the peer; ns/op runs from Send's call to the receiving handler.
func BenchmarkOneHop(b *testing.B) {
	for _, size := range []int{64, 4 << 10} {
		b.Run(fmt.Sprintf("bytes=%d", size), func(b *testing.B) {
			x, y := newHost(b, nil), newHost(b, nil)
			connect(b, x, y)
			done := make(chan struct{}, 1)
			y.SetHandler(func(protocol.Message) { done <- struct{}{} })
			ctx := context.Background()
			payload := make([]byte, size)
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := x.Send(ctx, y.ID(), wire.ProtoRing, payload); err != nil {
					b.Fatal(err)
				}
				<-done
			}
		})
	}
}

// BenchmarkRequestResponse measures a request and its reply between two
// hosts on an open connection: two one-hop messages, the reply sent by a
// goroutine fed from the handler (handlers must not block).
func BenchmarkRequestResponse(b *testing.B) {
	x, y := newHost(b, nil), newHost(b, nil)
	connect(b, x, y)
	ctx := context.Background()
	requests := make(chan protocol.Message, 1)
	y.SetHandler(func(m protocol.Message) { requests <- m })
	replies := make(chan struct{}, 1)
	x.SetHandler(func(protocol.Message) { replies <- struct{}{} })
	stop := make(chan struct{})
	served := make(chan struct{})
	go func() {
		defer close(served)
		for {
			select {
			case m := <-requests:
				if err := y.Send(ctx, m.From, wire.ProtoSession, m.Data); err != nil {
					b.Error(err)
				}
			case <-stop:
				return
			}
		}
	}()
	payload := make([]byte, 64)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := x.Send(ctx, y.ID(), wire.ProtoSession, payload); err != nil {
			b.Fatal(err)
		}
		<-replies
	}
	b.StopTimer()
	close(stop)
	<-served
}

// BenchmarkMessageCPU measures the CPU time one small message costs on
// real hosts over loopback (issue 31: a figure, not a goal): a 48-byte
// frame (a Shamir share's size) sent on the long-lived stream to a peer
// and handed to its handler, both hosts in this process, so cpu-us/msg is
// the sender's and the receiver's CPU together (user + system time of the
// process over b.N messages, from getrusage). pipelined sends b.N
// messages back to back (a dealer's shares: the writer puts what is queued
// in one write); serial waits for each delivery before the next send
// (one message per packet and acknowledgement, a sum's chain).
//
//	go test -run XXX -bench MessageCPU -benchtime 20000x ./node
func BenchmarkMessageCPU(b *testing.B) {
	for _, tr := range []string{"tcp", "quic"} {
		for _, mode := range []string{"pipelined", "serial"} {
			b.Run("transport="+tr+"/"+mode, func(b *testing.B) {
				tweak := func(c *Config) {
					if tr == "quic" {
						c.ListenAddrs = []string{"/ip4/127.0.0.1/udp/0/quic-v1"}
					}
				}
				x, y := newHost(b, tweak), newHost(b, tweak)
				connect(b, x, y)
				var got atomic.Int64
				all, each := make(chan struct{}), make(chan struct{}, 1)
				y.SetHandler(func(protocol.Message) {
					if got.Add(1) == int64(b.N)+1 { // the opening message, then b.N
						close(all)
					}
					select {
					case each <- struct{}{}:
					default:
					}
				})
				ctx := context.Background()
				payload := make([]byte, 48)
				if err := x.Send(ctx, y.ID(), wire.ProtoShamir, payload); err != nil { // opens the stream
					b.Fatal(err)
				}
				<-each
				cpu0 := processCPU()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := x.Send(ctx, y.ID(), wire.ProtoShamir, payload); err != nil {
						b.Fatal(err)
					}
					if mode == "serial" {
						<-each
					}
				}
				<-all
				b.StopTimer()
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N)/1e3, "cpu-us/msg")
			})
		}
	}
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
