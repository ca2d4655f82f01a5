package node

import (
	"context"
	"fmt"
	"net"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
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
	tcpDial   tcp.ContextDialer
	listenUDP func(network string, laddr *net.UDPAddr) (net.PacketConn, error)
	extra     []libp2p.Option
}

// WithTCPDialer makes every outbound TCP connection go through d (the
// connection it returns is upgraded as usual: TLS or Noise, then yamux).
// netem.Node is one.
func WithTCPDialer(d tcp.ContextDialer) Option {
	return func(o *options) error {
		if d == nil {
			return fmt.Errorf("node: WithTCPDialer: nil dialer")
		}
		o.tcpDial = d
		return nil
	}
}

// WithPacketConnWrapper opens every UDP socket of the QUIC transport (its
// listeners and the sockets it dials from) with listen, which may wrap the
// socket (netem.Node.ListenUDP delays and drops the datagrams it sends).
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

// tcpOptions are the TCP transport's options: no SO_REUSEPORT (see New),
// and the dialer of WithTCPDialer.
func (o options) tcpOptions() []any {
	out := []any{tcp.DisableReuseport()}
	if o.tcpDial != nil {
		d := o.tcpDial
		out = append(out, tcp.WithDialerForAddr(func(ma.Multiaddr) (tcp.ContextDialer, error) { return d, nil }))
	}
	return out
}

// libp2pOptions are what the options add to New's libp2p options.
func (o options) libp2pOptions() []libp2p.Option {
	var out []libp2p.Option
	if o.listenUDP != nil {
		out = append(out, libp2p.QUICReuse(newQUICConnManager(o.listenUDP)))
	}
	return append(out, o.extra...)
}

// newQUICConnManager builds the QUIC connection manager as go-libp2p's
// default does (v0.51.0 config/config.go: inbound connections are charged
// to the resource manager, source addresses verified by it, closed with the
// host), with listen opening its UDP sockets. It registers no QUIC
// Prometheus metrics.
func newQUICConnManager(listen func(string, *net.UDPAddr) (net.PacketConn, error)) any {
	return func(key quic.StatelessResetKey, tokens quic.TokenGeneratorKey, rcmgr network.ResourceManager, lc fx.Lifecycle) (*quicreuse.ConnManager, error) {
		opts := []quicreuse.Option{
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
		}
		cm, err := quicreuse.NewConnManager(key, tokens, opts...)
		if err != nil {
			return nil, err
		}
		lc.Append(fx.StopHook(cm.Close))
		return cm, nil
	}
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
