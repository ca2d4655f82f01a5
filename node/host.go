package node

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/pnet"
	libp2pproto "github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/host/peerstore/pstoremem"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Host is a libp2p node. It implements protocol.Transport,
// protocol.Validating, protocol.MeshWaiter and protocol.AddressBook.
type Host struct {
	cfg  Config
	log  hclog.Logger
	m    *Metrics
	h    host.Host
	ps   *pubsub.PubSub
	size sizing
	psk  pnet.PSK // nil without a private network
	in   *inbound // what peers hold on direct streams
	out  outbound // long-lived outbound direct streams (outbound.go)
	rlog *rateLog // for what outsiders can trigger at line rate
	nat  *natState
	id   protocol.PeerID // h.ID() in text (ID: a base58 encoding per call otherwise)
	pids peerIDs         // decoded peer ids of Send's destinations

	// boot holds the bootstrap peers' last dial results (BootstrapErr).
	boot bootStatus

	prep prepareStats // what Prepare did (prepare.go)
	// prepared counts, per peer, the sessions whose Prepare named it and
	// that have not ended (Unprepare): its connection is protected.
	prepMu   sync.Mutex
	prepared map[peer.ID]int
	// expect are the peers expected to dial this node (Expect).
	expMu  sync.Mutex
	expect map[peer.ID]*expectation

	handler atomic.Pointer[func(protocol.Message)]

	mu     sync.Mutex // guards closed, topics, subs; held while starting goroutines
	closed bool
	topics map[string]*pubsub.Topic
	subs   map[string]*pubsub.Subscription

	ctx       context.Context // ends at Close or when New's ctx ends
	cancel    context.CancelFunc
	psCancel  context.CancelFunc // pubsub has no Close: cancelling its context stops it
	mdns      io.Closer
	redial    map[peer.ID]chan struct{} // bootstrap peers: poked when their connection drops
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

var (
	_ protocol.Transport   = (*Host)(nil)
	_ protocol.Validating  = (*Host)(nil)
	_ protocol.MeshWaiter  = (*Host)(nil)
	_ protocol.AddressBook = (*Host)(nil)
)

// directProtocols are the stream protocols a node serves: every system's
// (wire.Systems()), so one host can serve roles of several systems.
var directProtocols = wire.DirectProtocols()

// New starts a host: the identity from cfg.KeyFile, TCP and QUIC listeners
// (TCP only with a private-network key), TLS or Noise, yamux, gossipsub with
// strict signing, bootstrap dialling and optional mDNS.
//
// ctx bounds the host's background work: when it ends, bootstrap re-dialling,
// mDNS dials and topic readers stop (a signal context in a command). Close is
// still needed to release the host, and must not be called from a handler.
// Options (options.go) change the transports, for tests and experiments.
func New(ctx context.Context, cfg Config, with ...Option) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o, err := applyOptions(with)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	sk, err := LoadKey(cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	listen := cfg.ListenAddrs
	var psk pnet.PSK
	if cfg.PSKFile != "" {
		if psk, err = readPSK(cfg.PSKFile); err != nil {
			return nil, fmt.Errorf("node: %w", err)
		}
		listen = tcpOnly(listen, log)
		log.Info("private network key loaded: TCP only, QUIC is disabled (it does not support pnet)", "psk", cfg.PSKFile)
	}
	allowed := map[peer.ID]bool{}
	for _, s := range cfg.AllowList {
		p, _ := peer.Decode(s) // checked by Validate
		allowed[p] = true
	}
	size := sizeFor(cfg.ExpectedPeers)
	rm, err := newResourceManager(size, append(slices.Clone(cfg.TrustedNetworks), relayPrefixes(cfg)...))
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	cm, err := newConnManager(size)
	if err != nil {
		rm.Close()
		return nil, fmt.Errorf("node: %w", err)
	}
	pstore, err := pstoremem.NewPeerstore()
	if err != nil {
		rm.Close()
		cm.Close()
		return nil, fmt.Errorf("node: peerstore: %w", err)
	}
	opts := []libp2p.Option{
		libp2p.Identity(sk),
		libp2p.Peerstore(pstore),
		libp2p.ListenAddrStrings(listen...),
		libp2p.NoTransports,
		// No SO_REUSEPORT: with it, TCP dials leave from the listen port, so
		// two owners dialling each other at once (the first secure sum)
		// made the same 4-tuple, TCP merged them into one connection with
		// two TLS clients, and both dials failed ("received unexpected
		// handshake message of type *tls.clientHelloMsg"); the libp2p
		// conformance run failed 2 runs in 4 on it. Ephemeral source ports
		// cost TCP hole punching; hole punching goes over QUIC, whose dials
		// leave from the listening UDP socket (see nat.go).
		libp2p.Transport(tcp.NewTCPTransport, tcp.DisableReuseport()),
		libp2p.ResourceManager(rm),
		libp2p.ConnectionManager(cm),
		libp2p.WithDialTimeout(cfg.DialTimeout),
	}
	nat := newNATState(cfg.Metrics)
	opts = append(opts, natOptions(cfg, nat)...)
	if psk != nil {
		opts = append(opts, libp2p.PrivateNetwork(psk))
	} else {
		opts = append(opts, libp2p.Transport(o.quicTransport()))
	}
	rlog := newRateLog(log, logEvery)
	if len(allowed) > 0 {
		opts = append(opts, libp2p.ConnectionGater(&allowGater{allowed: allowed, refused: func(p peer.ID, dir string) {
			cfg.Metrics.Rejected("gater", "not allowed")
			rlog.Log(hclog.Warn, "gater: not allowed "+dir, "refused a peer not on the allow-list", "peer", p.String(), "direction", dir)
		}}))
	}
	if cfg.Metrics != nil {
		opts = append(opts, libp2p.PrometheusRegisterer(cfg.Metrics.Registry()))
	} else {
		opts = append(opts, libp2p.DisableMetrics())
	}
	opts = append(opts, o.libp2pOptions(psk == nil)...) // after New's own: they may replace them
	h, err := libp2p.New(opts...)
	if err != nil {
		// libp2p closes these only when its config is invalid, not when
		// listening fails (a busy port); closing twice is harmless. The
		// failed swarm still leaks two goroutines there (upstream).
		rm.Close()
		cm.Close()
		pstore.Close()
		return nil, fmt.Errorf("node: libp2p: %w", err)
	}
	psCtx, psCancel := context.WithCancel(context.Background())
	psOpts := []pubsub.Option{
		pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
		pubsub.WithFloodPublish(true),
		pubsub.WithPeerOutboundQueueSize(size.queue),
		pubsub.WithValidateQueueSize(size.queue),
		// One validation worker keeps one author's messages in the order
		// they arrived on a stream. With the default (one per CPU),
		// signature checks ran in parallel and reordered a burst of
		// control messages (Learner, Alpha, SumStart), and owners that saw
		// them out of order sat out the round's secure sum: the libp2p
		// conformance run then failed about half the time, and passed 6/6
		// with one worker. Cost: Ed25519 checks are serial, roughly 20,000
		// messages per second per node.
		pubsub.WithValidateWorkers(1),
		pubsub.WithMaxMessageSize(cfg.MaxMessage)}
	if cfg.MeshHigh > 0 {
		psOpts = append(psOpts, pubsub.WithGossipSubParams(meshParams(cfg.MeshHigh)))
	}
	ps, err := pubsub.NewGossipSub(psCtx, h, psOpts...)
	if err != nil {
		psCancel()
		h.Close()
		return nil, fmt.Errorf("node: gossipsub: %w", err)
	}
	hctx, cancel := context.WithCancel(ctx)
	x := &Host{cfg: cfg, log: log.With("peer", h.ID().String()), m: cfg.Metrics, h: h, ps: ps, size: size,
		in: newInbound(cfg.Inbound, cfg.Metrics), rlog: rlog, psk: psk,
		topics: map[string]*pubsub.Topic{}, subs: map[string]*pubsub.Subscription{},
		ctx: hctx, cancel: cancel, psCancel: psCancel, redial: map[peer.ID]chan struct{}{}}
	x.nat, x.id = nat, protocol.PeerID(h.ID().String())
	// Every system's direct protocols are registered before the first
	// connection, so that identify tells each peer of them when it
	// connects: a peer opens its first stream on one lazily, with its
	// first frame, instead of negotiating it first (a round trip on the
	// critical path of the first message: issue 31's simulated sessions
	// paid 2-4 one-way delays a W&C attempt for it, when an owner had
	// connected before its role began and identify's later push had not
	// reached the user). Until SetHandler, their streams are refused.
	for _, id := range directProtocols {
		h.SetStreamHandler(libp2pproto.ID(id), x.handleStream)
	}
	h.Network().Notify(&network.NotifyBundle{ConnectedF: x.expectConnected})
	x.startNAT()
	x.startBootstrap(cfg.Bootstrap, cm)
	if cfg.MDNS {
		if err := x.startMDNS(); err != nil {
			x.Close()
			return nil, fmt.Errorf("node: %w", err)
		}
	}
	x.log.Info("node started", "addrs", strings.Join(x.Addrs(), " "), "private_network", psk != nil,
		"allow_list", len(allowed), "mdns", cfg.MDNS, "nat_traversal", !cfg.NAT.Off, "relay_service", cfg.NAT.RelayService, "bootstrap", len(cfg.Bootstrap), "expected_peers", cfg.ExpectedPeers)
	return x, nil
}

// readPSK reads a private-network key in the swarm.key format.
func readPSK(path string) (pnet.PSK, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("psk: %w", err)
	}
	defer f.Close()
	psk, err := pnet.DecodeV1PSK(f)
	if err != nil {
		return nil, fmt.Errorf("psk %s: %w", path, err)
	}
	return psk, nil
}

// tcpOnly drops QUIC listen addresses, which cannot carry a private network.
func tcpOnly(addrs []string, log hclog.Logger) []string {
	var out []string
	for _, s := range addrs {
		a, err := ma.NewMultiaddr(s)
		if err == nil && transportOf(a) == "tcp" {
			out = append(out, s)
			continue
		}
		log.Warn("private network: QUIC does not support pnet keys; not listening on this address", "addr", s)
	}
	return out
}

// goTracked runs f on a goroutine that Close waits for. After Close it does
// nothing and reports false. Every goroutine the Host starts goes through
// it (or goTrackedLocked).
func (x *Host) goTracked(f func()) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.goTrackedLocked(f)
}

// goTrackedLocked is goTracked with x.mu held. Close sets closed under x.mu
// before it waits, so no goroutine is added to a WaitGroup being waited on.
func (x *Host) goTrackedLocked(f func()) bool {
	if x.closed {
		return false
	}
	x.goChild(f)
	return true
}

// goChild runs f on a goroutine Close waits for, even while Close is under
// way. Only a goroutine Close itself waits for (one started by goTracked)
// may call it: the WaitGroup's count is then above zero, so the Add cannot
// race with Close's Wait.
func (x *Host) goChild(f func()) {
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		f()
	}()
}

func (x *Host) isClosed() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.closed
}

// stopped explains why background work ended: Close, or New's context.
func (x *Host) stopped() error {
	if x.isClosed() {
		return ErrClosed
	}
	return fmt.Errorf("node: context of New ended: %w", context.Cause(x.ctx))
}

// ID is the host's peer id.
func (x *Host) ID() protocol.PeerID { return x.id }

// peerIDs caches the decoded libp2p ids of the peers a host sends to: a
// Send decoded its destination's base58 text every time (four allocations
// of the nine a warm message cost; issue 31's "allocates nothing per share
// it can reuse"). Bounded: emptied when it holds maxCachedPeerIDs.
type peerIDs struct {
	mu sync.Mutex
	m  map[protocol.PeerID]peer.ID
}

const maxCachedPeerIDs = 1 << 14

// decode returns p's libp2p id.
func (c *peerIDs) decode(p protocol.PeerID) (peer.ID, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, ok := c.m[p]; ok {
		return id, nil
	}
	id, err := peer.Decode(string(p))
	if err != nil {
		return "", err
	}
	if c.m == nil || len(c.m) >= maxCachedPeerIDs {
		c.m = make(map[protocol.PeerID]peer.ID)
	}
	c.m[p] = id
	return id, nil
}

// Host exposes the libp2p host for advanced use.
func (x *Host) Host() host.Host { return x.h }

// Addrs are the host's full multiaddrs (ending in /p2p/<peer id>), TCP first.
func (x *Host) Addrs() []string {
	var tcps, others []string
	for _, a := range x.h.Addrs() {
		s := a.String() + "/p2p/" + x.h.ID().String()
		if transportOf(a) == "tcp" {
			tcps = append(tcps, s)
		} else {
			others = append(others, s)
		}
	}
	return append(tcps, others...)
}

// ListenAddrs are the host's full multiaddrs (protocol.AddressBook).
func (x *Host) ListenAddrs() []string { return x.Addrs() }

// Connect dials a full multiaddr (with /p2p/<peer id>). With an allow-list on
// the other side, a nil error does not prove admission: see allowGater. A
// dial that fails because of the private-network key says so
// (ErrPSKMismatch, ErrPSKRequired, ErrPSKNotUsed) instead of "context
// deadline exceeded".
func (x *Host) Connect(ctx context.Context, addr string) error {
	ai, err := peer.AddrInfoFromString(addr)
	if err != nil {
		return fmt.Errorf("connect %q: %w", addr, err)
	}
	if x.isClosed() {
		return fmt.Errorf("connect %s: %w", ai.ID, ErrClosed)
	}
	if err := x.h.Connect(ctx, *ai); err != nil {
		return fmt.Errorf("connect %s: %w", ai.ID, x.explainDial(*ai, err))
	}
	return nil
}

// ConnectedPeers counts the peers with an open connection.
func (x *Host) ConnectedPeers() int { return len(x.h.Network().Peers()) }

// AddAddrs records where a peer listens (from the session roster). Addresses
// that do not end in p's own /p2p/ id are ignored and counted.
func (x *Host) AddAddrs(p protocol.PeerID, addrs []string) {
	pid, err := peer.Decode(string(p))
	if err != nil || pid == x.h.ID() {
		return
	}
	for _, a := range addrs {
		ai, err := peer.AddrInfoFromString(a)
		if err != nil || ai.ID != pid {
			x.m.Rejected("roster", "bad address")
			x.log.Debug("ignoring a roster address", "peer", string(p), "addr", a)
			continue
		}
		x.h.Peerstore().AddAddrs(pid, ai.Addrs, peerstore.PermanentAddrTTL)
	}
	x.addRelayRoutes(pid)
}

// PeerAddrs are where p listens as this host's peerstore knows it
// (protocol.AddressLookup): the addresses identify learned once p
// connected, as full multiaddrs ending in /p2p/<p>, TCP first, at most
// MaxPeerAddrs of at most MaxPeerAddrBytes bytes each. nil for a peer
// id that does not decode, for this host itself, or for a peer never seen.
func (x *Host) PeerAddrs(p protocol.PeerID) []string {
	pid, err := peer.Decode(string(p))
	if err != nil || pid == x.h.ID() {
		return nil
	}
	var tcps, others []string
	for _, a := range x.h.Peerstore().Addrs(pid) {
		s := a.String() + "/p2p/" + pid.String()
		if len(s) > MaxPeerAddrBytes {
			continue
		}
		if transportOf(a) == "tcp" {
			tcps = append(tcps, s)
		} else {
			others = append(others, s)
		}
	}
	out := append(tcps, others...)
	if len(out) > MaxPeerAddrs {
		out = out[:MaxPeerAddrs]
	}
	return out
}

// MaxPeerAddrs and MaxPeerAddrBytes bound what PeerAddrs returns: the
// limits a roster's addresses are held to (fedboost.MaxMemberAddrs).
const (
	MaxPeerAddrs     = 8
	MaxPeerAddrBytes = 256
)

// SetHandler installs the function that receives every inbound message
// (until then the streams of every system's direct protocols,
// wire.DirectProtocols(), registered in New, are refused, so nothing is
// accepted that no one would read). h runs on
// transport goroutines and must not block for long: a slow handler stalls
// its peer's stream. It should not call Send itself, since Send may dial a
// peer (up to DialTimeout). Hand replies to a goroutine, as
// protocol.Outbox does.
func (x *Host) SetHandler(h func(protocol.Message)) {
	x.handler.Store(&h)
}

// deliver hands m to the handler.
func (x *Host) deliver(m protocol.Message, kind string) {
	h := x.handler.Load()
	if h == nil || *h == nil {
		x.m.Rejected(kind, "no handler")
		return
	}
	x.m.MessageReceived(kind)
	(*h)(m)
}

// Close shuts the node down: topic readers and dial loops stop,
// subscriptions are cancelled and topics closed, pubsub and mDNS stop, the
// libp2p host closes, and Close waits for every goroutine it started.
// Idempotent; later calls return the first call's error.
func (x *Host) Close() error {
	x.closeOnce.Do(func() {
		x.mu.Lock()
		x.closed = true
		subs, topics := x.subs, x.topics
		x.subs, x.topics = map[string]*pubsub.Subscription{}, map[string]*pubsub.Topic{}
		x.mu.Unlock()
		// Frames Send has queued leave before the host goes (bounded).
		x.out.flush(closeFlush)
		x.cancel()
		x.out.waitWriters(closeGrace + time.Second)
		for _, s := range subs {
			s.Cancel()
		}
		for name, t := range topics {
			if err := t.Close(); err != nil {
				x.log.Debug("closing topic", "topic", name, "err", err)
			}
		}
		if x.mdns != nil {
			if err := x.mdns.Close(); err != nil {
				x.log.Debug("closing mDNS", "err", err)
			}
		}
		x.psCancel()
		for _, id := range directProtocols {
			x.h.RemoveStreamHandler(libp2pproto.ID(id))
		}
		if err := x.h.Close(); err != nil {
			x.closeErr = fmt.Errorf("node: close libp2p host: %w", err)
		}
		x.wg.Wait()
		x.log.Debug("node closed")
	})
	return x.closeErr
}

// disconnected is the network notifee: it wakes the re-dial loop of a
// bootstrap peer whose last connection closed.
func (x *Host) disconnected(_ network.Network, c network.Conn) {
	p := c.RemotePeer()
	if ch, ok := x.redial[p]; ok && x.h.Network().Connectedness(p) != network.Connected {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// meshParams are gossipsub's default parameters with D_hi raised to high
// (0: unchanged; Config.MeshHigh).
func meshParams(high int) pubsub.GossipSubParams {
	p := pubsub.DefaultGossipSubParams()
	if high > p.Dhi {
		p.Dhi = high
	}
	return p
}
