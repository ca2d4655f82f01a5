package node

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/connmgr"
	ic "github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/pnet"
	"github.com/libp2p/go-libp2p/core/transport"
	libp2pquic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/quicreuse"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
	"github.com/quic-go/quic-go"
	"go.uber.org/fx"

	"github.com/ppboost/ppboost/node/netem"
)

// Option changes how New builds the libp2p host. Options exist for tests
// and experiments that put real hosts behind emulated links (node/netem)
// or add transports; a deployment needs none.
type Option func(*options) error

type options struct {
	tcpDial      tcp.ContextDialer
	wrapAccepted func(net.Conn) net.Conn
	listenUDP    func(network string, laddr *net.UDPAddr) (net.PacketConn, error)
	sourceIP     func(dst *net.UDPAddr) (net.IP, error)
	extra        []libp2p.Option
	// pathMTU leaves quic-go's path-MTU discovery on (tests: the negative
	// control of TestQUICSendsNoPathMTUProbes).
	pathMTU bool
}

// WithQUICSourceIP makes the QUIC transport pick the source address of a
// dial with choose instead of the machine's routing table: on a simulated
// network (node/simnet_test.go) the addresses exist only in the process.
// It needs WithPacketConnWrapper.
func WithQUICSourceIP(choose func(dst *net.UDPAddr) (net.IP, error)) Option {
	return func(o *options) error {
		if choose == nil {
			return fmt.Errorf("node: WithQUICSourceIP: nil function")
		}
		o.sourceIP = choose
		return nil
	}
}

// sourceIPFunc adapts a function to quicreuse.SourceIPSelector.
type sourceIPFunc func(dst *net.UDPAddr) (net.IP, error)

func (f sourceIPFunc) PreferredSourceIPForDestination(dst *net.UDPAddr) (net.IP, error) {
	return f(dst)
}

// WithTCPDialer makes every outbound TCP connection go through d (the
// connection it returns is upgraded as usual: TLS or Noise, then yamux).
// netem.Node is one. With it (or WithTCPListenWrapper) the host runs
// wrappedTCP instead of go-libp2p's TCP transport: go-libp2p's own dialer
// option hides the wrapper's socket options behind manet's conn type and
// logs an error on every dial, and it has no listen hook.
func WithTCPDialer(d tcp.ContextDialer) Option {
	return func(o *options) error {
		if d == nil {
			return fmt.Errorf("node: WithTCPDialer: nil dialer")
		}
		o.tcpDial = d
		return nil
	}
}

// WithTCPListenWrapper passes every accepted TCP connection through wrap
// before the security handshake.
func WithTCPListenWrapper(wrap func(net.Conn) net.Conn) Option {
	return func(o *options) error {
		if wrap == nil {
			return fmt.Errorf("node: WithTCPListenWrapper: nil function")
		}
		o.wrapAccepted = wrap
		return nil
	}
}

// WithPacketConnWrapper opens every UDP socket of the QUIC transport (its
// listeners and the sockets it dials from) with listen, which may wrap the
// socket (netem.Node.ListenUDP delays and drops the datagrams it sends).
//
// It covers every host libp2p builds for the node, not only the node's own:
// AutoNAT v1 and v2 dial back from hosts of their own, which share the
// node's transports (not its QUIC connection manager), so the QUIC
// transport carries a connection manager of its own built on listen. Those
// hosts do not listen: their first dial opens a socket with an unspecified
// address and port 0 (0.0.0.0:0), which listen must bind to an address of
// the node's (on a simulated network, one that exists there).
func WithPacketConnWrapper(listen func(network string, laddr *net.UDPAddr) (net.PacketConn, error)) Option {
	return func(o *options) error {
		if listen == nil {
			return fmt.Errorf("node: WithPacketConnWrapper: nil function")
		}
		o.listenUDP = listen
		return nil
	}
}

// WithLibp2pOptions appends raw go-libp2p options (an extra transport, for
// instance) after New's own; they may conflict with them, which libp2p.New
// reports.
func WithLibp2pOptions(opts ...libp2p.Option) Option {
	return func(o *options) error {
		o.extra = append(o.extra, opts...)
		return nil
	}
}

func applyOptions(opts []Option) (options, error) {
	var o options
	for _, f := range opts {
		if err := f(&o); err != nil {
			return o, err
		}
	}
	return o, nil
}

// libp2pOptions are what the options add to New's libp2p options (which
// they follow). With a TCP dialer or listen wrapper they replace New's
// transports: wrappedTCP, and QUIC again when quic is set.
func (o options) libp2pOptions(quic bool) []libp2p.Option {
	var out []libp2p.Option
	if o.tcpDial != nil || o.wrapAccepted != nil {
		dial, wrap := o.tcpDial, o.wrapAccepted
		out = append(out, libp2p.NoTransports, libp2p.Transport(func(u transport.Upgrader, rcmgr network.ResourceManager) *wrappedTCP {
			return &wrappedTCP{upgrader: u, rcmgr: rcmgr, dial: dial, wrap: wrap}
		}))
		if quic {
			out = append(out, libp2p.Transport(o.quicTransport()))
		}
	}
	return append(out, o.extra...)
}

// quicTransport is the QUIC transport constructor: go-libp2p's transport
// on a connection manager of its own, built on the sockets of
// WithPacketConnWrapper's function or net.ListenUDP. libp2p hands the transport constructors (not the QUICReuse
// option) to the hosts AutoNAT dials back from, so this is how their
// sockets, too, go through the wrapper.
//
// Either way its sockets go through withoutPathMTU: no path-MTU discovery.
func (o options) quicTransport() any {
	listen := o.listenUDP
	if listen == nil {
		listen = func(network string, laddr *net.UDPAddr) (net.PacketConn, error) { return net.ListenUDP(network, laddr) }
	}
	if !o.pathMTU {
		listen = withoutPathMTU(listen)
	}
	newCM := newQUICConnManager(listen, o.sourceIP)
	return func(key ic.PrivKey, srk quic.StatelessResetKey, tokens quic.TokenGeneratorKey, psk pnet.PSK, gater connmgr.ConnectionGater,
		rcmgr network.ResourceManager, lc fx.Lifecycle) (transport.Transport, error) {
		cm, err := newCM(srk, tokens, rcmgr, lc)
		if err != nil {
			return nil, err
		}
		return libp2pquic.NewTransport(key, cm, psk, gater, rcmgr)
	}
}

// newQUICConnManager builds the QUIC connection manager as go-libp2p's
// default does (v0.51.0 config/config.go: inbound connections are charged
// to the resource manager, source addresses verified by it, closed with the
// host), with listen opening its UDP sockets. It registers no QUIC
// Prometheus metrics.
// quicConnManagerCtor is the constructor libp2p.QUICReuse takes.
type quicConnManagerCtor = func(quic.StatelessResetKey, quic.TokenGeneratorKey, network.ResourceManager, fx.Lifecycle) (*quicreuse.ConnManager, error)

func newQUICConnManager(listen func(string, *net.UDPAddr) (net.PacketConn, error), sourceIP func(*net.UDPAddr) (net.IP, error)) quicConnManagerCtor {
	return func(key quic.StatelessResetKey, tokens quic.TokenGeneratorKey, rcmgr network.ResourceManager, lc fx.Lifecycle) (*quicreuse.ConnManager, error) {
		var opts []quicreuse.Option
		if sourceIP != nil {
			opts = append(opts, quicreuse.OverrideSourceIPSelector(func() (quicreuse.SourceIPSelector, error) { return sourceIPFunc(sourceIP), nil }))
		}
		opts = append(opts, []quicreuse.Option{
			quicreuse.OverrideListenUDP(listen),
			quicreuse.ConnContext(func(ctx context.Context, ci *quic.ClientInfo) (context.Context, error) {
				addr, err := quicreuse.ToQuicMultiaddr(ci.RemoteAddr, quic.Version1)
				if err != nil {
					addr = nil
				}
				scope, err := rcmgr.OpenConnection(network.DirInbound, false, addr)
				if err != nil {
					return ctx, err
				}
				ctx = network.WithConnManagementScope(ctx, scope)
				context.AfterFunc(ctx, scope.Done)
				return ctx, nil
			}),
			quicreuse.VerifySourceAddress(rcmgr.VerifySourceAddress),
		}...)
		cm, err := quicreuse.NewConnManager(key, tokens, opts...)
		if err != nil {
			return nil, err
		}
		lc.Append(fx.StopHook(cm.Close))
		return cm, nil
	}
}

// withoutPathMTU wraps listen's sockets so that quic-go runs no path-MTU
// discovery on them (go-libp2p v0.51 offers no quic.Config to turn it off;
// quic-go runs it only on a socket whose don't-fragment bit it can set,
// through SyscallConn). Discovery sends a padded PING of 1.3-1.4 KB on a
// connection that is sending anyway, one at a time, every 5 round trips,
// until it has bracketed the path's MTU: about 4 probes and their
// acknowledgements per connection, on the first messages the connection
// carries. ppboost's messages are shares of about 50 bytes, and a W&C
// dealer uses each connection to a committee member once per session, so
// the probes were most of what QUIC sent: 21-26x the protocol's bytes in
// warm sums among 60 real hosts on loopback, 51 % of the bytes in qlog
// (issue 31). Without it packets stay at quic-go's initial 1,252-byte
// payload, the largest size every IPv4 path must carry; a 200 KB roster
// chunk takes about 15 % more packets than at loopback's 1,452. The
// wrapper also leaves out quic-go's batched reads, GSO and ECN (they need
// the same SyscallConn), which matter only at packet rates ppboost's
// sessions do not reach; socket buffer sizes are still set.
func withoutPathMTU(listen func(string, *net.UDPAddr) (net.PacketConn, error)) func(string, *net.UDPAddr) (net.PacketConn, error) {
	return func(network string, laddr *net.UDPAddr) (net.PacketConn, error) {
		c, err := listen(network, laddr)
		if err != nil {
			return nil, err
		}
		return noPathMTU{c}, nil
	}
}

// noPathMTU is a socket without SyscallConn or the UDP message methods:
// quic-go treats it as a plain net.PacketConn that cannot set the
// don't-fragment bit (withoutPathMTU).
type noPathMTU struct{ net.PacketConn }

// SetReadBuffer and SetWriteBuffer pass quic-go's buffer sizing on to the
// socket (a socket without them keeps its size).
func (c noPathMTU) SetReadBuffer(n int) error {
	if b, ok := c.PacketConn.(interface{ SetReadBuffer(int) error }); ok {
		return b.SetReadBuffer(n)
	}
	return nil
}

func (c noPathMTU) SetWriteBuffer(n int) error {
	if b, ok := c.PacketConn.(interface{ SetWriteBuffer(int) error }); ok {
		return b.SetWriteBuffer(n)
	}
	return nil
}

// Emulated are the options that put a host behind the emulated links of
// n: its TCP dials and all its UDP sockets (QUIC) go through them. After
// New, register the host's addresses with n.Register(h.NetAddrs()...) so
// that other nodes' links to it are found (its UDP sockets register
// themselves).
func Emulated(n *netem.Node) []Option {
	return []Option{WithTCPDialer(n), WithPacketConnWrapper(n.ListenUDP)}
}

// NetAddrs are the host's listen addresses as net.Addr (TCP and UDP).
func (x *Host) NetAddrs() []net.Addr {
	var out []net.Addr
	for _, a := range append(x.h.Network().ListenAddresses(), x.h.Addrs()...) {
		if len(a) < 2 {
			continue
		}
		if na, err := manet.ToNetAddr(a[:2]); err == nil { // /ip4/A/tcp/P or /ip4/A/udp/P
			out = append(out, na)
		}
	}
	return out
}

// wrappedTCP is a TCP transport that dials through a ContextDialer and
// wraps accepted connections, then upgrades them as go-libp2p's TCP
// transport does (v0.51.0 p2p/transport/tcp: resource-manager scope,
// connection gating, simultaneous-connect direction, security and muxer).
// It has no SO_REUSEPORT and no metrics.
type wrappedTCP struct {
	upgrader transport.Upgrader
	rcmgr    network.ResourceManager
	dial     tcp.ContextDialer       // nil: net.Dialer
	wrap     func(net.Conn) net.Conn // nil: accepted connections as they are
}

var _ transport.Transport = (*wrappedTCP)(nil)

// tcpConnectTimeout is go-libp2p's TCP connect timeout.
const tcpConnectTimeout = 5 * time.Second

func (t *wrappedTCP) CanDial(a ma.Multiaddr) bool {
	if len(a) != 2 || a[1].Protocol().Code != ma.P_TCP {
		return false
	}
	switch a[0].Protocol().Code {
	case ma.P_IP4, ma.P_IP6:
		return true
	}
	return false
}

func (t *wrappedTCP) Dial(ctx context.Context, raddr ma.Multiaddr, p peer.ID) (transport.CapableConn, error) {
	scope, err := t.rcmgr.OpenConnection(network.DirOutbound, true, raddr)
	if err != nil {
		return nil, err
	}
	c, err := t.dialScoped(ctx, raddr, p, scope)
	if err != nil {
		scope.Done()
		return nil, err
	}
	return c, nil
}

func (t *wrappedTCP) dialScoped(ctx context.Context, raddr ma.Multiaddr, p peer.ID, scope network.ConnManagementScope) (transport.CapableConn, error) {
	if err := scope.SetPeer(p); err != nil {
		return nil, err
	}
	netw, addr, err := manet.DialArgs(raddr)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, tcpConnectTimeout)
	defer cancel()
	var nc net.Conn
	if t.dial != nil {
		nc, err = t.dial.DialContext(dctx, netw, addr)
	} else {
		var d net.Dialer
		nc, err = d.DialContext(dctx, netw, addr)
	}
	if err != nil {
		return nil, err
	}
	mc, err := manet.WrapNetConn(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	dir := network.DirOutbound
	if ok, isClient, _ := network.GetSimultaneousConnect(ctx); ok && !isClient {
		dir = network.DirInbound
	}
	return t.upgrader.Upgrade(ctx, t, mc, dir, p, scope)
}

func (t *wrappedTCP) Listen(laddr ma.Multiaddr) (transport.Listener, error) {
	l, err := manet.Listen(laddr)
	if err != nil {
		return nil, err
	}
	if t.wrap != nil {
		l = &wrappedListener{Listener: l, wrap: t.wrap}
	}
	return t.upgrader.UpgradeGatedMaListener(t, t.upgrader.GateMaListener(l)), nil
}

func (t *wrappedTCP) Protocols() []int { return []int{ma.P_TCP} }
func (t *wrappedTCP) Proxy() bool      { return false }
func (t *wrappedTCP) String() string   { return "TCP (wrapped)" }

// wrappedListener wraps every accepted connection.
type wrappedListener struct {
	manet.Listener
	wrap func(net.Conn) net.Conn
}

func (l *wrappedListener) Accept() (manet.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(interface{ SetLinger(int) error }); ok {
		_ = tc.SetLinger(0) // as go-libp2p's TCP listener does
	}
	w, err := manet.WrapNetConn(l.wrap(c))
	if err != nil {
		c.Close()
		return nil, err
	}
	return w, nil
}
