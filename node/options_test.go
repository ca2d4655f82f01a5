package node

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"

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
			// Send returns once the frame is queued on the long-lived
			// stream (node/outbound.go), so only the hop carries the delay.
			hop, send := oneHop(d)
			if hop < d {
				t.Errorf("one hop %v (want >= %v; Send returned after %v)", hop, d, send)
			}
			if hop, _ := oneHop(0); hop >= d {
				t.Errorf("control: one hop on a 0 ms link took %v", hop)
			}
		})
	}
}

// TestTCPListenWrapper: a host with a listen wrapper sees every inbound
// TCP connection through it, and messages still arrive over them.
// Control: the dialling host, without one, wraps nothing.
func TestTCPListenWrapper(t *testing.T) {
	var wrapped atomic.Int32
	tcpOnly := func(c *Config) { c.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0"} }
	a := newHost(t, tcpOnly)
	cfg := testConfig(t)
	tcpOnly(&cfg)
	cfg.Logger = testLogger(t, "b")
	b, err := New(context.Background(), cfg, WithTCPListenWrapper(func(c net.Conn) net.Conn { wrapped.Add(1); return c }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	var box inbox
	b.SetHandler(box.handle)
	connect(t, a, b)
	if err := a.Send(context.Background(), b.ID(), wire.ProtoSession, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the message over the wrapped connection", func() bool { return box.count() == 1 })
	if wrapped.Load() != 1 {
		t.Fatalf("%d connections wrapped; want 1", wrapped.Load())
	}
	// Control: b dialling a uses a's plain listener.
	a.Host().Network().ClosePeer(b.Host().ID())
	connect(t, b, a)
	if wrapped.Load() != 1 {
		t.Fatalf("an outbound connection went through the listen wrapper")
	}
	if _, err := New(context.Background(), cfg, WithTCPListenWrapper(nil)); err == nil {
		t.Fatal("a nil wrapper was accepted")
	}
}

// TestLibp2pOptionsApplied: raw libp2p options reach libp2p.New (one that
// fails fails New, naming it); bad options are refused before anything
// starts.
func TestLibp2pOptionsApplied(t *testing.T) {
	cfg := testConfig(t)
	boom := errors.New("option applied")
	_, err := New(context.Background(), cfg, WithLibp2pOptions(func(*libp2p.Config) error { return boom }))
	if !errors.Is(err, boom) {
		t.Fatalf("New with a failing libp2p option: %v", err)
	}
	for name, o := range map[string]Option{"dialer": WithTCPDialer(nil), "packet": WithPacketConnWrapper(nil)} {
		if _, err := New(context.Background(), cfg, o); err == nil {
			t.Errorf("%s: a nil value was accepted", name)
		}
	}
	// Control: no options, a working host.
	h, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
}
