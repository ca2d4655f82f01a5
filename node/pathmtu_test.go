package node

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// sizeConn is a UDP socket that records the largest datagram written to
// it in the range of quic-go's path-MTU probes (withoutPathMTU), whichever
// write method quic-go uses (WriteTo on a plain PacketConn, WriteMsgUDP on
// an OOB-capable one; GSO batches of full 1,252-byte packets are larger
// and not counted).
type sizeConn struct {
	*net.UDPConn
	probes *atomic.Int64
}

func (c sizeConn) note(n int) {
	if n >= 1300 && n <= 1500 {
		c.probes.Add(1)
	}
}

func (c sizeConn) WriteTo(b []byte, a net.Addr) (int, error) {
	c.note(len(b))
	return c.UDPConn.WriteTo(b, a)
}

func (c sizeConn) WriteMsgUDP(b, oob []byte, a *net.UDPAddr) (int, int, error) {
	c.note(len(b))
	return c.UDPConn.WriteMsgUDP(b, oob, a)
}

func (c sizeConn) WriteMsgUDPAddrPort(b, oob []byte, a netip.AddrPort) (int, int, error) {
	c.note(len(b))
	return c.UDPConn.WriteMsgUDPAddrPort(b, oob, a)
}

// TestQUICSendsNoPathMTUProbes: two real QUIC hosts on loopback exchange
// 60 small messages, one at a time, 10 ms apart; no datagram of 1,300-1,500
// bytes (quic-go's path-MTU probes are 1,352 bytes and up) leaves either
// socket, where the messages' packets are under 200 bytes. Negative
// control: with path-MTU discovery left on (withPathMTU), the probes are
// there.
func TestQUICSendsNoPathMTUProbes(t *testing.T) {
	for _, on := range []bool{false, true} {
		var probes atomic.Int64
		listen := func(network string, laddr *net.UDPAddr) (net.PacketConn, error) {
			c, err := net.ListenUDP(network, laddr)
			if err != nil {
				return nil, err
			}
			return sizeConn{UDPConn: c, probes: &probes}, nil
		}
		mk := func() *Host {
			cfg := testConfig(t)
			cfg.ListenAddrs = []string{"/ip4/127.0.0.1/udp/0/quic-v1"}
			cfg.Logger = testLogger(t, "host")
			opts := []Option{WithPacketConnWrapper(listen)}
			if on {
				opts = append(opts, func(o *options) error { o.pathMTU = true; return nil })
			}
			h, err := New(context.Background(), cfg, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close() })
			return h
		}
		x, y := mk(), mk()
		connect(t, x, y)
		got := make(chan struct{}, 1)
		y.SetHandler(func(protocol.Message) { got <- struct{}{} })
		for i := 0; i < 60; i++ {
			if err := x.Send(context.Background(), y.ID(), wire.ProtoShamir, make([]byte, 48)); err != nil {
				t.Fatal(err)
			}
			select {
			case <-got:
			case <-time.After(5 * time.Second):
				t.Fatalf("message %d not delivered", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
		switch n := probes.Load(); {
		case !on && n > 0:
			t.Fatalf("%d datagrams of 1,300-1,500 bytes: path-MTU probes were sent", n)
		case on && n == 0:
			t.Fatal("negative control: path-MTU discovery on, yet no probe-sized datagram was seen")
		default:
			t.Logf("path-MTU discovery %v: %d probe-sized datagrams", on, n)
		}
	}
}
