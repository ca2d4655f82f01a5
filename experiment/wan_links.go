package experiment

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/marcopolo/simnet"

	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/node/netem"
	"github.com/ppboost/ppboost/node/simnat"
)

// wanLinks is the network a WAN harness's hosts run on: node/netem's
// emulated links on real loopback sockets (netemLinks), or a simulated
// internet in virtual time (simLinks).
type wanLinks interface {
	// newHost starts one host called name with its key in dir, for the
	// transport ("tcp" or "quic"), sized for expected peers.
	newHost(ctx context.Context, dir, name, transport string, expected int) (*node.Host, error)
	// register records that the host called name listens at addrs
	// (wanNetAddrs), so that what it sends is charged to it.
	register(name string, addrs []string) error
	// sent is what the host called name put on the wire (bytes, with
	// every packet and handshake).
	sent(name string) int64
}

// netemLinks are the emulated links of em.
type netemLinks struct{ em *netem.Emulator }

func (l netemLinks) newHost(ctx context.Context, dir, name, transport string, expected int) (*node.Host, error) {
	return wanNewHost(ctx, l.em, dir, name, transport, expected)
}

func (l netemLinks) register(name string, addrs []string) error {
	return wanRegister(l.em, name, addrs)
}
func (l netemLinks) sent(name string) int64 { return l.em.Node(name).Sent() }

// simLinks is a simulated internet (node/simnat on
// github.com/marcopolo/simnet, as go-libp2p's x/simlibp2p and its
// hole-punching tests use it): the data user listens on QUIC at a
// public-looking address 1.0.0.1 that exists only in this process, each
// owner at its own public address 1.x.y.z or, with nats > 0, on the LAN of
// one of nats NAT routers (owner i behind NAT i mod nats, at 2.k.0.1), its
// UDP socket a simnet endpoint with the network's latency and a 100 Mbit/s
// uplink and downlink; run inside testing/synctest's bubble every timer is
// virtual: a latency figure is exact whatever the machine's load (what CPU
// costs is measured apart). QUIC only: simnet carries datagrams.
//
// Every host runs node's default NAT traversal (AutoNAT, relay client,
// DCUtR hole punching); the data user serves the relay (RelayOn), and the
// owners bootstrap to it, hence hold a slot there.
type simLinks struct {
	in        *simnat.Internet
	nats      []*simnat.NAT
	mu        sync.Mutex
	hosts     map[string]*simnat.Host
	metrics   map[string]*node.Metrics
	user      string // the data user's full address, once it runs
	nextOwner int
	// loss is the probability that a datagram a host sends is lost on
	// the way (each host draws from its own generator, seeded by seed and
	// its number; a lost datagram is not counted in sent).
	loss float64
	seed uint64
	// userBPS is the data user's link in bits/s (0: everyone's).
	userBPS int
}

// newSimLinks starts a simulated network of latency one way on every
// path, with nats NAT routers of the given mapping for the owners (0:
// every owner public). Close it with close.
func newSimLinks(latency func(*simnet.Packet) time.Duration, nats int, mapping simnat.Mapping) *simLinks {
	l := &simLinks{in: simnat.New(latency, simnet.NodeBiDiLinkSettings{
		Downlink: simnet.LinkSettings{BitsPerSecond: 100_000_000},
		Uplink:   simnet.LinkSettings{BitsPerSecond: 100_000_000},
	}), hosts: map[string]*simnat.Host{}, metrics: map[string]*node.Metrics{}}
	for k := range nats {
		l.nats = append(l.nats, l.in.NewNAT(net.IPv4(2, byte(k>>8), byte(k), 1),
			netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(k >> 8), byte(k), 0}), 24), mapping))
	}
	return l
}

func (l *simLinks) close() { l.in.Close() }

// newHost starts the data user (name "user", the first host) or an owner.
func (l *simLinks) newHost(ctx context.Context, dir, name, transport string, expected int) (*node.Host, error) {
	if transport != "quic" {
		return nil, fmt.Errorf("simulated internet: %s: QUIC only (simnet carries datagrams)", transport)
	}
	l.mu.Lock()
	n := len(l.hosts) + 1
	var sh *simnat.Host
	var err error
	if name == "user" && l.userBPS > 0 {
		sh = l.in.PublicHostLink(net.IPv4(1, byte(n>>16), byte(n>>8), byte(n)), simnet.NodeBiDiLinkSettings{
			Downlink: simnet.LinkSettings{BitsPerSecond: l.userBPS}, Uplink: simnet.LinkSettings{BitsPerSecond: l.userBPS}})
	} else if name == "user" || len(l.nats) == 0 {
		sh = l.in.PublicHost(net.IPv4(1, byte(n>>16), byte(n>>8), byte(n)))
	} else {
		i := l.nextOwner
		l.nextOwner++
		nat := l.nats[i%len(l.nats)]
		sh, err = nat.Host(net.IPv4(10, nat.Public()[13], nat.Public()[14], byte(2+i/len(l.nats))))
	}
	if err == nil {
		l.hosts[name] = sh
	}
	user := l.user
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	key := filepath.Join(dir, name+".key")
	if _, err := node.GenerateKey(key); err != nil {
		return nil, err
	}
	cfg := node.DefaultConfig()
	cfg.KeyFile, cfg.ExpectedPeers, cfg.Logger = key, expected+8, hclog.NewNullLogger()
	cfg.Metrics = node.NewMetrics()
	cfg.ListenAddrs = []string{fmt.Sprintf("/ip4/%s/udp/4001/quic-v1", sh.IP())}
	if name == "user" {
		cfg.NAT.RelayService = node.RelayOn
	} else if user != "" {
		cfg.Bootstrap = []string{user}
	}
	listen := sh.ListenUDP
	if l.loss > 0 {
		r := rand.New(rand.NewPCG(l.seed, uint64(n)))
		listen = func(network string, laddr *net.UDPAddr) (net.PacketConn, error) {
			pc, err := sh.ListenUDP(network, laddr)
			if err != nil {
				return nil, err
			}
			return &lossyConn{PacketConn: pc, loss: l.loss, rng: r}, nil
		}
	}
	x, err := node.New(ctx, cfg, node.WithPacketConnWrapper(listen), node.WithQUICSourceIP(sh.SourceIP))
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.metrics[name] = cfg.Metrics
	if name == "user" {
		l.user = x.Addrs()[0]
	}
	l.mu.Unlock()
	return x, nil
}

func (l *simLinks) register(string, []string) error { return nil } // each host counts its own datagrams

func (l *simLinks) sent(name string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.hosts[name]; h != nil {
		return h.Sent()
	}
	return 0
}

// metricsOf is the node metrics of the host called name (nil if none).
func (l *simLinks) metricsOf(name string) *node.Metrics {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.metrics[name]
}

// natOf is the NAT the host called name sits behind (nil: public).
func (l *simLinks) natOf(name string) *simnat.NAT {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.hosts[name]; h != nil {
		return h.NAT()
	}
	return nil
}

// lossyConn loses each datagram written with probability loss.
type lossyConn struct {
	net.PacketConn
	loss float64
	mu   sync.Mutex
	rng  *rand.Rand
}

func (c *lossyConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	c.mu.Lock()
	lost := c.rng.Float64() < c.loss
	c.mu.Unlock()
	if lost {
		return len(p), nil
	}
	return c.PacketConn.WriteTo(p, addr)
}
