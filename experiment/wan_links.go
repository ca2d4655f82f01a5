package experiment

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/marcopolo/simnet"

	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/node/netem"
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

// simLinks is a simulated internet (github.com/marcopolo/simnet, as
// go-libp2p's x/simlibp2p and its hole-punching tests use it): every host
// listens on QUIC at its own public-looking address 1.x.y.z that exists
// only in this process, its UDP socket is a simnet endpoint with the
// network's latency and a 100 Mbit/s uplink and downlink, and run inside
// testing/synctest's bubble every timer is virtual: a latency figure is
// exact whatever the machine's load (what CPU costs is measured apart).
// QUIC only: simnet carries datagrams.
type simLinks struct {
	net  *simnet.Simnet
	link simnet.NodeBiDiLinkSettings
	mu   sync.Mutex
	ips  map[string]net.IP
	wire map[string]*atomic.Int64
	// loss is the probability that a datagram a host sends is lost on
	// the way (each host draws from its own generator, seeded by seed and
	// its number).
	loss float64
	seed uint64
}

// newSimLinks starts a simulated network of latency one way on every
// path. Close it with close.
func newSimLinks(latency func(*simnet.Packet) time.Duration) *simLinks {
	l := &simLinks{net: &simnet.Simnet{LatencyFunc: latency}, ips: map[string]net.IP{}, wire: map[string]*atomic.Int64{},
		link: simnet.NodeBiDiLinkSettings{
			Downlink: simnet.LinkSettings{BitsPerSecond: 100_000_000},
			Uplink:   simnet.LinkSettings{BitsPerSecond: 100_000_000},
		}}
	l.net.Start()
	return l
}

func (l *simLinks) close() { l.net.Close() }

func (l *simLinks) newHost(ctx context.Context, dir, name, transport string, expected int) (*node.Host, error) {
	if transport != "quic" {
		return nil, fmt.Errorf("simulated internet: %s: QUIC only (simnet carries datagrams)", transport)
	}
	l.mu.Lock()
	n := len(l.ips) + 1
	ip := net.IPv4(1, byte(n>>16), byte(n>>8), byte(n))
	l.ips[name] = ip
	c := &atomic.Int64{}
	l.wire[name] = c
	l.mu.Unlock()
	key := filepath.Join(dir, name+".key")
	if _, err := node.GenerateKey(key); err != nil {
		return nil, err
	}
	cfg := node.DefaultConfig()
	cfg.KeyFile, cfg.ExpectedPeers, cfg.Logger = key, expected+8, hclog.NewNullLogger()
	cfg.ListenAddrs = []string{fmt.Sprintf("/ip4/%s/udp/4001/quic-v1", ip)}
	// No NAT traversal here: AutoNAT v2 dials back from a second host of
	// its own whose UDP sockets are real ones, outside the simulation
	// (and outside synctest's bubble, whose clock then stops). Public
	// addresses need none; the NAT cases build their routers apart.
	cfg.NAT.Off = true
	return node.New(ctx, cfg,
		node.WithPacketConnWrapper(func(_ string, laddr *net.UDPAddr) (net.PacketConn, error) {
			sc := &simCounted{SimConn: l.net.NewEndpoint(laddr, l.link), sent: c, loss: l.loss}
			if l.loss > 0 {
				sc.rng = rand.New(rand.NewPCG(l.seed, uint64(n)))
			}
			return sc, nil
		}),
		node.WithQUICSourceIP(func(*net.UDPAddr) (net.IP, error) { return ip, nil }))
}

func (l *simLinks) register(string, []string) error { return nil } // each host counts its own datagrams

func (l *simLinks) sent(name string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.wire[name]; c != nil {
		return c.Load()
	}
	return 0
}

// simCounted counts the bytes a simnet endpoint sends, and loses each
// datagram with probability loss (it still counts: it left the host).
type simCounted struct {
	*simnet.SimConn
	sent *atomic.Int64
	loss float64
	mu   sync.Mutex
	rng  *rand.Rand
}

func (c *simCounted) WriteTo(p []byte, addr net.Addr) (int, error) {
	if c.loss > 0 {
		c.mu.Lock()
		lost := c.rng.Float64() < c.loss
		c.mu.Unlock()
		if lost {
			c.sent.Add(int64(len(p)))
			return len(p), nil
		}
	}
	n, err := c.SimConn.WriteTo(p, addr)
	c.sent.Add(int64(n))
	return n, err
}
