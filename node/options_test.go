package node

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ppboost/ppboost/node/netem"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// TestEmulatedLinks puts two real hosts behind 30 ms one-way links, over
// TCP and over QUIC: a message reaches the peer's handler no sooner than
// 30 ms after Send starts, and Send (which waits for the receiver's
// close) takes a round trip. Control: the same hosts on a 0 ms link
// deliver in under 30 ms.
func TestEmulatedLinks(t *testing.T) {
	const d = 30 * time.Millisecond
	for _, tr := range []string{"tcp", "quic"} {
		t.Run(tr, func(t *testing.T) {
			oneHop := func(delay time.Duration) (hop, send time.Duration) {
				em, err := netem.New(7, netem.Link{Delay: delay})
				if err != nil {
					t.Fatal(err)
				}
				mk := func(name string) *Host {
					cfg := testConfig(t)
					cfg.Logger = testLogger(t, name)
					if tr == "tcp" {
						cfg.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0"}
					} else {
						cfg.ListenAddrs = []string{"/ip4/127.0.0.1/udp/0/quic-v1"}
					}
					n := em.Node(name)
					h, err := New(context.Background(), cfg, Emulated(n)...)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { h.Close() })
					n.Register(h.NetAddrs()...)
					return h
				}
				a, b := mk("a"), mk("b")
				got := make(chan time.Time, 16)
				b.SetHandler(func(protocol.Message) { got <- time.Now() })
				a.SetHandler(func(protocol.Message) {})
				connect(t, a, b)
				ctx := context.Background()
				if err := a.Send(ctx, b.ID(), wire.ProtoSession, []byte("warm")); err != nil {
					t.Fatal(err)
				}
				<-got
				var hops, sends []time.Duration
				for range 5 {
					start := time.Now()
					if err := a.Send(ctx, b.ID(), wire.ProtoSession, []byte("x")); err != nil {
						t.Fatal(err)
					}
					sends = append(sends, time.Since(start))
					hops = append(hops, (<-got).Sub(start))
				}
				slices.Sort(hops)
				slices.Sort(sends)
				if em.Node("a").Sent() == 0 || em.Node("b").Sent() == 0 {
					t.Errorf("no wire bytes counted: a %d, b %d", em.Node("a").Sent(), em.Node("b").Sent())
				}
				return hops[0], sends[0]
			}
			hop, send := oneHop(d)
			if hop < d || send < 2*d {
				t.Errorf("one hop %v (want >= %v), Send %v (want >= %v)", hop, d, send, 2*d)
			}
			if hop, _ := oneHop(0); hop >= d {
				t.Errorf("control: one hop on a 0 ms link took %v", hop)
			}
		})
	}
}
