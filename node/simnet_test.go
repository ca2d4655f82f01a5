package node

import (
	"context"
	"fmt"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/marcopolo/simnet"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// simNet is a simulated internet for node.Hosts (go-libp2p's x/simlibp2p
// approach, github.com/marcopolo/simnet): every host listens on QUIC at
// a public-looking address that exists only in this process, its UDP
// socket is a simnet endpoint with the link's latency and bandwidth, and
// inside synctest.Test time is virtual, so a latency figure is exact
// whatever the machine's load.
type simNet struct {
	t    testing.TB
	net  *simnet.Simnet
	link simnet.NodeBiDiLinkSettings
	n    int
}

// newSimNet starts a simulated network with oneWay latency on every path.
// Call it inside synctest.Test; t's cleanup closes it.
func newSimNet(t testing.TB, oneWay time.Duration) *simNet {
	s := &simNet{t: t, net: &simnet.Simnet{LatencyFunc: simnet.StaticLatency(oneWay)},
		link: simnet.NodeBiDiLinkSettings{
			Downlink: simnet.LinkSettings{BitsPerSecond: 100_000_000},
			Uplink:   simnet.LinkSettings{BitsPerSecond: 100_000_000},
		}}
	s.net.Start()
	t.Cleanup(s.net.Close)
	return s
}

// host starts host i at 1.0.i/256.i%256 (QUIC on port 4001).
func (s *simNet) host(tweak func(*Config)) *Host {
	s.n++
	ip := net.IPv4(1, 0, byte(s.n/256), byte(s.n%256))
	cfg := testConfig(s.t)
	cfg.ListenAddrs = []string{fmt.Sprintf("/ip4/%s/udp/4001/quic-v1", ip)}
	cfg.Logger = testLogger(s.t, fmt.Sprintf("sim-%d", s.n))
	if tweak != nil {
		tweak(&cfg)
	}
	h, err := New(context.Background(), cfg,
		WithPacketConnWrapper(func(_ string, laddr *net.UDPAddr) (net.PacketConn, error) {
			return s.net.NewEndpoint(laddr, s.link), nil
		}),
		WithQUICSourceIP(func(*net.UDPAddr) (net.IP, error) { return ip, nil }))
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { h.Close() })
	return h
}

// TestSimnetSendLatency: two hosts 100 ms apart on the simulated internet
// connect (QUIC: one round trip for the handshake, then identify) and a
// frame sent on an open stream arrives exactly one one-way delay later in
// virtual time.
func TestSimnetSendLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const oneWay = 100 * time.Millisecond
		s := newSimNet(t, oneWay)
		a, b := s.host(nil), s.host(nil)
		got := make(chan time.Time, 4)
		b.SetHandler(func(m protocol.Message) { got <- time.Now() })
		t0 := time.Now()
		ctx := context.Background()
		if err := a.Connect(ctx, b.Addrs()[0]); err != nil {
			t.Fatal(err)
		}
		t.Logf("connected after %v", time.Since(t0))
		if err := a.Send(ctx, b.ID(), wire.ProtoShamir, []byte("warm")); err != nil {
			t.Fatal(err)
		}
		<-got
		t1 := time.Now()
		if err := a.Send(ctx, b.ID(), wire.ProtoShamir, []byte("hello")); err != nil {
			t.Fatal(err)
		}
		at := <-got
		t.Logf("first frame %v after connecting, second %v after sending", t1.Sub(t0), at.Sub(t1))
		if d := at.Sub(t1); d < oneWay || d > oneWay+time.Millisecond {
			t.Fatalf("a frame on an open stream took %v, want one one-way delay %v", d, oneWay)
		}
	})
}
