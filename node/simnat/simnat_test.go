package simnat

import (
	"net"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/marcopolo/simnet"
)

func newTestInternet(t *testing.T) *Internet {
	in := New(simnet.StaticLatency(10*time.Millisecond), simnet.NodeBiDiLinkSettings{
		Downlink: simnet.LinkSettings{BitsPerSecond: 100_000_000},
		Uplink:   simnet.LinkSettings{BitsPerSecond: 100_000_000},
	})
	t.Cleanup(in.Close)
	return in
}

func listen(t *testing.T, h *Host, port int) net.PacketConn {
	c, err := h.ListenUDP("udp4", &net.UDPAddr{IP: h.IP(), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// recv reads one datagram within a second.
func recv(t *testing.T, c net.PacketConn) (string, net.Addr, bool) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 100)
	n, from, err := c.ReadFrom(buf)
	if err != nil {
		return "", nil, false
	}
	return string(buf[:n]), from, true
}

func send(t *testing.T, c net.PacketConn, to net.Addr, s string) {
	t.Helper()
	if _, err := c.WriteTo([]byte(s), to); err != nil {
		t.Fatal(err)
	}
}

// TestNATMapping: a LAN socket that sent to a public server is seen at
// the NAT's public address; the server's reply comes in; a stranger's
// datagram to the same public port is filtered until the socket has sent
// to the stranger (a punch), and with endpoint-independent mapping the
// port the stranger sees is the one the server saw.
func TestNATMapping(t *testing.T) {
	for _, m := range []Mapping{EndpointIndependent, Symmetric} {
		t.Run(m.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				in := newTestInternet(t)
				server := listen(t, in.PublicHost(net.IPv4(1, 0, 0, 1)), 4001)
				stranger := listen(t, in.PublicHost(net.IPv4(1, 0, 0, 2)), 4001)
				nat := in.NewNAT(net.IPv4(2, 0, 0, 1), netip.MustParsePrefix("10.0.0.0/16"), m)
				lh, err := nat.Host(net.IPv4(10, 0, 0, 1))
				if err != nil {
					t.Fatal(err)
				}
				owner := listen(t, lh, 4001)
				send(t, owner, server.LocalAddr(), "hello")
				got, seen, ok := recv(t, server)
				if !ok || got != "hello" || !seen.(*net.UDPAddr).IP.Equal(nat.Public()) {
					t.Fatalf("server got %q from %v (%v), want hello from the NAT's address", got, seen, ok)
				}
				send(t, server, seen, "reply")
				if got, _, ok := recv(t, owner); !ok || got != "reply" {
					t.Fatalf("owner got %q (%v), want the reply", got, ok)
				}
				send(t, stranger, seen, "unsolicited")
				if got, _, ok := recv(t, owner); ok {
					t.Fatalf("owner got %q from a stranger it never sent to", got)
				}
				send(t, owner, stranger.LocalAddr(), "punch")
				got, from, ok := recv(t, stranger)
				if !ok || got != "punch" {
					t.Fatalf("stranger got %q (%v)", got, ok)
				}
				if same := from.String() == seen.String(); same != (m == EndpointIndependent) {
					t.Fatalf("%s: stranger sees %v, server saw %v", m, from, seen)
				}
				send(t, stranger, seen, "through")
				got, _, ok = recv(t, owner)
				if ok != (m == EndpointIndependent) {
					t.Fatalf("%s: datagram to the port the server saw after the punch: got %q (%v)", m, got, ok)
				}
			})
		})
	}
}

// TestLANRouting: two hosts on one NAT's LAN reach each other at their
// private addresses; a host on another LAN and a public host cannot reach
// those addresses (no route), and an address outside the LAN is refused.
func TestLANRouting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := newTestInternet(t)
		nat := in.NewNAT(net.IPv4(2, 0, 0, 1), netip.MustParsePrefix("10.0.0.0/24"), EndpointIndependent)
		other := in.NewNAT(net.IPv4(2, 0, 1, 1), netip.MustParsePrefix("10.0.1.0/24"), EndpointIndependent)
		host := func(n *NAT, ip net.IP) *Host {
			h, err := n.Host(ip)
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		a := listen(t, host(nat, net.IPv4(10, 0, 0, 1)), 4001)
		b := listen(t, host(nat, net.IPv4(10, 0, 0, 2)), 4001)
		c := listen(t, host(other, net.IPv4(10, 0, 1, 1)), 4001)
		pub := listen(t, in.PublicHost(net.IPv4(1, 0, 0, 1)), 4001)
		send(t, a, b.LocalAddr(), "lan")
		if got, from, ok := recv(t, b); !ok || got != "lan" || from.String() != a.LocalAddr().String() {
			t.Fatalf("b got %q from %v (%v), want lan from a's private address", got, from, ok)
		}
		send(t, c, b.LocalAddr(), "other lan")
		send(t, pub, b.LocalAddr(), "public")
		if got, _, ok := recv(t, b); ok {
			t.Fatalf("b got %q at its private address from outside its LAN", got)
		}
		if _, err := nat.Host(net.IPv4(10, 0, 1, 9)); err == nil {
			t.Fatal("a host outside the NAT's LAN prefix was accepted")
		}
	})
}
