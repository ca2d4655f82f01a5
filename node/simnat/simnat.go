// Package simnat is a simulated internet with NAT routers, for node.Hosts
// in one process (tests and experiments). It owns the addressing, the NAT
// boxes and the byte counts; the datagrams travel on
// github.com/marcopolo/simnet, with its latency and bandwidth, and inside
// testing/synctest's bubble every timer is virtual.
//
// A host is public (its address is reachable by anyone) or sits on the LAN
// of a NAT. A NAT maps a LAN socket to a port of its public address when
// the socket first sends to the internet, and lets in only datagrams from
// remote endpoints that mapping has sent to (address- and port-dependent
// filtering). With EndpointIndependent mapping the socket keeps one public
// port whatever it sends to, so a peer that learnt the port from a third
// party can punch through (DCUtR); with Symmetric mapping every destination
// gets a port of its own and hole punching fails. Hosts on one LAN reach
// each other at their private addresses; a private address of another LAN
// is unreachable (the datagram is dropped, as on the internet).
//
// It must not reach outside the process: no real socket is opened.
//
// Where it sits: beside node/netem, below node's tests and the experiment
// package: it imports nothing of ppboost; a host gets its sockets through
// node.WithPacketConnWrapper (Host.ListenUDP) and node.WithQUICSourceIP.
// It may be imported by tests and experiments, never by the protocol
// packages or the CLI.
package simnat

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/marcopolo/simnet"
)

// Mapping is how a NAT picks the public port of a LAN socket.
type Mapping int

const (
	// EndpointIndependent: one public port per LAN socket, whatever the
	// destination (RFC 4787's endpoint-independent mapping). Hole punching
	// works through it.
	EndpointIndependent Mapping = iota
	// Symmetric: a public port per LAN socket and destination. The port a
	// third party observes is not the one a punch arrives from, so hole
	// punching fails.
	Symmetric
)

func (m Mapping) String() string {
	if m == Symmetric {
		return "symmetric"
	}
	return "endpoint-independent"
}

// Internet is the simulated network. Start it with New, end it with Close
// (after the hosts on it).
type Internet struct {
	net  *simnet.Simnet
	link simnet.NodeBiDiLinkSettings
	mu   sync.Mutex // simnet.Simnet.NewEndpoint is not safe for concurrent use
}

// endpoint is a new simnet endpoint at addr, with link's bandwidth (nil:
// the internet's).
func (in *Internet) endpoint(addr *net.UDPAddr, link *simnet.NodeBiDiLinkSettings) *simnet.SimConn {
	in.mu.Lock()
	defer in.mu.Unlock()
	if link == nil {
		link = &in.link
	}
	return in.net.NewEndpoint(addr, *link)
}

// New starts an internet whose datagrams take latency and whose every
// endpoint has link's bandwidth.
func New(latency func(*simnet.Packet) time.Duration, link simnet.NodeBiDiLinkSettings) *Internet {
	in := &Internet{
		net: &simnet.Simnet{LatencyFunc: latency,
			// Datagrams to addresses nobody holds (a closed socket) are
			// dropped, as on the internet, without a log line each.
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		link: link,
	}
	in.net.Start()
	return in
}

// Close stops the network; sockets still open read net.ErrClosed.
func (in *Internet) Close() { in.net.Close() }

// NAT is a NAT router: a public address and a LAN behind it.
type NAT struct {
	in      *Internet
	public  net.IP
	lan     netip.Prefix
	mapping Mapping

	mu   sync.Mutex
	next int
	used map[int]bool
}

// NewNAT adds a NAT with the public address public and the LAN prefix lan
// (a private range, distinct from every other NAT's).
func (in *Internet) NewNAT(public net.IP, lan netip.Prefix, mapping Mapping) *NAT {
	return &NAT{in: in, public: public.To16(), lan: lan, mapping: mapping, next: 40000, used: map[int]bool{}}
}

// Public is the NAT's public address.
func (n *NAT) Public() net.IP { return n.public }

// port picks a public port: want if free (port preservation), else the
// next free one.
func (n *NAT) port(want int) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if want > 0 && !n.used[want] {
		n.used[want] = true
		return want
	}
	for n.used[n.next] {
		n.next++
	}
	p := n.next
	n.used[p] = true
	n.next++
	return p
}

func (n *NAT) release(p int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.used, p)
}

// Host is one machine on the internet: public, or on a NAT's LAN.
type Host struct {
	in   *Internet
	ip   net.IP
	nat  *NAT                         // nil: public
	link *simnet.NodeBiDiLinkSettings // nil: the internet's
	sent atomic.Int64

	mu   sync.Mutex
	next int
}

// PublicHost adds a host at the public address ip.
func (in *Internet) PublicHost(ip net.IP) *Host {
	return &Host{in: in, ip: ip.To16(), next: 50000}
}

// PublicHostLink adds a host at the public address ip whose sockets have
// link's bandwidth instead of the internet's (a thin or a fat uplink).
func (in *Internet) PublicHostLink(ip net.IP, link simnet.NodeBiDiLinkSettings) *Host {
	return &Host{in: in, ip: ip.To16(), link: &link, next: 50000}
}

// Host adds a host at the private address ip of the NAT's LAN.
func (n *NAT) Host(ip net.IP) (*Host, error) {
	a, ok := netip.AddrFromSlice(ip.To4())
	if !ok || !n.lan.Contains(a) {
		return nil, fmt.Errorf("simnat: %s is not in the NAT's LAN %s", ip, n.lan)
	}
	return &Host{in: n.in, ip: ip.To16(), nat: n, next: 50000}, nil
}

// IP is the host's own address (private behind a NAT).
func (h *Host) IP() net.IP { return h.ip }

// NAT is the NAT the host sits behind, nil for a public host.
func (h *Host) NAT() *NAT { return h.nat }

// Sent is what the host has put on the wire: bytes of every datagram it
// sent (LAN ones included), with QUIC's headers and handshakes.
func (h *Host) Sent() int64 { return h.sent.Load() }

// SourceIP is the host's address whatever the destination: the function
// node.WithQUICSourceIP wants.
func (h *Host) SourceIP(*net.UDPAddr) (net.IP, error) { return h.ip, nil }

// ListenUDP opens a UDP socket of the host: the function
// node.WithPacketConnWrapper wants. An unspecified address is the host's
// own, port 0 a free one.
func (h *Host) ListenUDP(network string, laddr *net.UDPAddr) (net.PacketConn, error) {
	if network != "udp4" && network != "udp" {
		return nil, fmt.Errorf("simnat: %s: IPv4 only", network)
	}
	addr := &net.UDPAddr{IP: h.ip}
	if laddr != nil {
		if !laddr.IP.IsUnspecified() && laddr.IP != nil && !laddr.IP.Equal(h.ip) {
			return nil, fmt.Errorf("simnat: listen on %s: the host's address is %s", laddr, h.ip)
		}
		addr.Port = laddr.Port
	}
	if addr.Port == 0 {
		h.mu.Lock()
		addr.Port = h.next
		h.next++
		h.mu.Unlock()
	}
	c := newConn(h, addr)
	// The socket's own address: behind a NAT only hosts of its LAN send
	// here (the others drop datagrams to private addresses).
	c.add(h.in.endpoint(addr, h.link), nil)
	return c, nil
}

// routable reports whether a datagram from h to dst leaves h: public
// addresses are reachable from everywhere, private ones only from their
// own LAN.
func (h *Host) routable(dst netip.Addr) bool {
	if h.nat != nil && h.nat.lan.Contains(dst) {
		return true
	}
	return !(dst.IsPrivate() || dst.IsLoopback() || dst.IsUnspecified() || dst.IsLinkLocalUnicast() || dst.IsMulticast())
}

// conn is a socket of a host: a net.PacketConn over one simnet endpoint
// (its own address) and, behind a NAT, the endpoints of its mappings on
// the NAT's public address.
type conn struct {
	h     *Host
	local *net.UDPAddr
	in    chan datagram

	mu       sync.Mutex
	closed   bool
	done     chan struct{}
	deadline time.Time
	wake     chan struct{}
	eps      []*simnet.SimConn
	wanPorts []int
	mapped   map[string]*mapping // Symmetric: by destination; EndpointIndependent: under ""
}

// mapping is a NAT binding: a public endpoint and the remote endpoints it
// has sent to (the only ones let in).
type mapping struct {
	ep   *simnet.SimConn
	mu   sync.Mutex
	sent map[string]bool
}

func (m *mapping) allow(from net.Addr) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sent[from.String()]
}

type datagram struct {
	b    []byte
	from net.Addr
}

func newConn(h *Host, local *net.UDPAddr) *conn {
	return &conn{h: h, local: local, in: make(chan datagram, 64), done: make(chan struct{}), wake: make(chan struct{}, 1),
		mapped: map[string]*mapping{}}
}

// add starts reading ep; datagrams that m (if any) does not let in are
// dropped. Called with c.mu held or before c is shared.
func (c *conn) add(ep *simnet.SimConn, m *mapping) {
	c.eps = append(c.eps, ep)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, from, err := ep.ReadFrom(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			if m != nil && !m.allow(from) {
				continue // filtered by the NAT
			}
			select {
			case c.in <- datagram{b: append([]byte(nil), buf[:n]...), from: from}:
			case <-c.done:
				return
			}
		}
	}()
}

// wan is the mapping a datagram to dst leaves by, created on first use.
func (c *conn) wan(dst *net.UDPAddr) (*mapping, error) {
	key := ""
	if c.h.nat.mapping == Symmetric {
		key = dst.String()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, net.ErrClosed
	}
	if m := c.mapped[key]; m != nil {
		return m, nil
	}
	want := c.local.Port
	if c.h.nat.mapping == Symmetric {
		want = 0
	}
	port := c.h.nat.port(want)
	c.wanPorts = append(c.wanPorts, port)
	m := &mapping{ep: c.h.in.endpoint(&net.UDPAddr{IP: c.h.nat.public, Port: port}, nil), sent: map[string]bool{}}
	c.mapped[key] = m
	c.add(m.ep, m)
	return m, nil
}

func (c *conn) WriteTo(p []byte, addr net.Addr) (int, error) {
	dst, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, fmt.Errorf("simnat: write to %v: not a UDP address", addr)
	}
	da, ok := netip.AddrFromSlice(dst.IP.To4())
	if !ok {
		return len(p), nil // IPv6: no route
	}
	// simnet finds endpoints by the bytes of the address: always 16.
	dst = &net.UDPAddr{IP: dst.IP.To16(), Port: dst.Port}
	c.mu.Lock()
	closed := c.closed
	ep := c.eps[0]
	c.mu.Unlock()
	if closed {
		return 0, net.ErrClosed
	}
	c.h.sent.Add(int64(len(p)))
	if !c.h.routable(da) {
		return len(p), nil // no route: lost
	}
	if c.h.nat == nil || c.h.nat.lan.Contains(da) {
		return ep.WriteTo(p, dst)
	}
	m, err := c.wan(dst)
	if err != nil {
		return 0, err
	}
	m.mu.Lock()
	m.sent[dst.String()] = true
	m.mu.Unlock()
	return m.ep.WriteTo(p, dst)
}

func (c *conn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		c.mu.Lock()
		closed, deadline := c.closed, c.deadline
		c.mu.Unlock()
		if closed {
			return 0, nil, net.ErrClosed
		}
		n, from, again, err := c.read(p, deadline)
		if !again {
			return n, from, err
		}
	}
}

// read waits for a datagram until deadline; again is true when the
// deadline changed meanwhile.
func (c *conn) read(p []byte, deadline time.Time) (n int, from net.Addr, again bool, err error) {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return 0, nil, false, os.ErrDeadlineExceeded
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case d := <-c.in:
		return copy(p, d.b), d.from, false, nil
	case <-c.done:
		return 0, nil, false, net.ErrClosed
	case <-c.wake:
		return 0, nil, true, nil
	case <-timeout:
		return 0, nil, false, os.ErrDeadlineExceeded
	}
}

func (c *conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	eps, ports := c.eps, c.wanPorts
	c.mu.Unlock()
	for _, ep := range eps {
		ep.Close()
	}
	for _, p := range ports {
		c.h.nat.release(p)
	}
	return nil
}

func (c *conn) LocalAddr() net.Addr { return c.local }

func (c *conn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

func (c *conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

func (c *conn) SetWriteDeadline(time.Time) error { return nil }
