package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
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
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Host is a libp2p node implementing protocol.Transport.
type Host struct {
	cfg Config
	log hclog.Logger
	h   host.Host
	ps  *pubsub.PubSub

	handler atomic.Pointer[func(protocol.Message)]

	mu     sync.Mutex
	topics map[string]*pubsub.Topic
	subs   map[string]*pubsub.Subscription

	ctx      context.Context
	cancel   context.CancelFunc
	psCancel context.CancelFunc
	mdns     io.Closer
	wg       sync.WaitGroup
	once     sync.Once
}

var (
	_ protocol.Transport  = (*Host)(nil)
	_ protocol.Validating = (*Host)(nil)
	_ protocol.MeshWaiter = (*Host)(nil)
)

// directProtocols are the stream protocols a node serves.
var directProtocols = []string{wire.ProtoSession, wire.ProtoRing, wire.ProtoShamir}

func frameCap(protoID string) int {
	if protoID == wire.ProtoSession {
		return wire.MaxControlBytes
	}
	return wire.MaxSumFrameBytes
}

// New starts a host: identity from cfg.KeyFile, listeners, gossipsub, stream
// handlers, bootstrap dialling and optional mDNS.
func New(ctx context.Context, cfg Config) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	sk, err := LoadKey(cfg.KeyFile)
	if err != nil {
		return nil, err
	}
	n := cfg.ExpectedPeers
	// Connection and stream limits sized to the number of peers (the data
	// user's host is dialled by every owner; see LIBP2P-NOTES.md).
	conns := rcmgr.LimitVal(4*n + 256)
	streams := rcmgr.LimitVal(64*n + 1024)
	limits := rcmgr.PartialLimitConfig{
		System:    rcmgr.ResourceLimits{Conns: conns, ConnsInbound: conns, ConnsOutbound: conns, Streams: streams, StreamsInbound: streams, StreamsOutbound: streams, FD: conns},
		Transient: rcmgr.ResourceLimits{Conns: conns, ConnsInbound: conns, ConnsOutbound: conns, Streams: streams, StreamsInbound: streams, StreamsOutbound: streams, FD: conns},
	}.Build(rcmgr.DefaultLimits.AutoScale())
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(limits))
	if err != nil {
		return nil, err
	}
	cm, err := connmgr.NewConnManager(n+32, 2*n+64, connmgr.WithGracePeriod(time.Minute))
	if err != nil {
		return nil, err
	}
	listen := cfg.ListenAddrs
	opts := []libp2p.Option{libp2p.Identity(sk), libp2p.ResourceManager(rm), libp2p.ConnectionManager(cm),
		libp2p.WithDialTimeout(cfg.DialTimeout), libp2p.DisableRelay()}
	if cfg.PSKFile != "" {
		f, err := os.Open(cfg.PSKFile)
		if err != nil {
			return nil, fmt.Errorf("psk: %w", err)
		}
		psk, err := pnet.DecodeV1PSK(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("psk %s: %w", cfg.PSKFile, err)
		}
		var tcpOnly []string
		for _, a := range listen {
			if strings.Contains(a, "/quic") {
				log.Warn("private network: QUIC does not support pnet; not listening on", "addr", a)
				continue
			}
			tcpOnly = append(tcpOnly, a)
		}
		if len(tcpOnly) == 0 {
			return nil, errors.New("psk: private networks need a TCP listen address")
		}
		listen = tcpOnly
		opts = append(opts, libp2p.PrivateNetwork(psk), libp2p.NoTransports, libp2p.Transport(tcp.NewTCPTransport))
	}
	opts = append(opts, libp2p.ListenAddrStrings(listen...))
	if len(cfg.AllowList) > 0 {
		g := &allowGater{allowed: map[peer.ID]bool{}, refused: func(p peer.ID) {
			cfg.Metrics.Rejected("gater", "not allowed")
			log.Debug("refused peer not on the allow-list", "peer", p.String())
		}}
		for _, s := range cfg.AllowList {
			p, _ := peer.Decode(s)
			g.allowed[p] = true
		}
		opts = append(opts, libp2p.ConnectionGater(g))
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("libp2p: %w", err)
	}
	psCtx, psCancel := context.WithCancel(context.Background())
	queue := max(256, 8*n)
	ps, err := pubsub.NewGossipSub(psCtx, h,
		pubsub.WithMessageSignaturePolicy(pubsub.StrictSign),
		pubsub.WithFloodPublish(true),
		pubsub.WithPeerOutboundQueueSize(queue),
		pubsub.WithValidateQueueSize(queue),
		pubsub.WithMaxMessageSize(cfg.MaxMessage))
	if err != nil {
		psCancel()
		h.Close()
		return nil, fmt.Errorf("gossipsub: %w", err)
	}
	// ctx bounds the host's background work (bootstrap dialling, topic
	// readers); Close is still needed to release the host.
	hctx, cancel := context.WithCancel(ctx)
	x := &Host{cfg: cfg, log: log.With("peer", h.ID().String()), h: h, ps: ps, topics: map[string]*pubsub.Topic{},
		subs: map[string]*pubsub.Subscription{}, ctx: hctx, cancel: cancel, psCancel: psCancel}
	for _, id := range directProtocols {
		h.SetStreamHandler(libp2pproto.ID(id), x.handleStream)
	}
	for _, a := range cfg.Bootstrap {
		ai, _ := peer.AddrInfoFromString(a)
		x.goTracked(func() { x.dial(*ai) })
	}
	if cfg.MDNS {
		svc := mdns.NewMdnsService(h, cfg.MDNSService, &mdnsNotifee{x: x, seen: map[peer.ID]bool{}})
		if err := svc.Start(); err != nil {
			x.Close()
			return nil, fmt.Errorf("mdns: %w", err)
		}
		x.mdns = svc
	}
	return x, nil
}

// goTracked starts a goroutine that Close waits for.
func (x *Host) goTracked(f func()) {
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		f()
	}()
}

// dial connects to a bootstrap peer, retrying with backoff until the host closes.
func (x *Host) dial(ai peer.AddrInfo) {
	backoff := 100 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(x.ctx, x.cfg.DialTimeout)
		err := x.h.Connect(ctx, ai)
		cancel()
		if err == nil {
			x.log.Debug("connected to bootstrap peer", "to", ai.ID.String())
			return
		}
		x.log.Warn("bootstrap dial failed; retrying", "to", ai.ID.String(), "err", err, "in", backoff)
		select {
		case <-x.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

type mdnsNotifee struct {
	x    *Host
	mu   sync.Mutex
	seen map[peer.ID]bool
}

func (n *mdnsNotifee) HandlePeerFound(ai peer.AddrInfo) {
	if ai.ID == n.x.h.ID() {
		return
	}
	n.mu.Lock()
	dup := n.seen[ai.ID]
	n.seen[ai.ID] = true
	n.mu.Unlock()
	if !dup {
		n.x.goTracked(func() { n.x.dial(ai) })
	}
}

// ID is the host's peer id.
func (x *Host) ID() protocol.PeerID { return protocol.PeerID(x.h.ID().String()) }

// Host exposes the libp2p host for advanced use.
func (x *Host) Host() host.Host { return x.h }

// Addrs are the host's full multiaddrs (with /p2p/).
func (x *Host) Addrs() []string {
	var out []string
	for _, a := range x.h.Addrs() {
		out = append(out, a.String()+"/p2p/"+x.h.ID().String())
	}
	return out
}

// Connect dials a full multiaddr.
func (x *Host) Connect(ctx context.Context, addr string) error {
	ai, err := peer.AddrInfoFromString(addr)
	if err != nil {
		return fmt.Errorf("connect %q: %w", addr, err)
	}
	return x.h.Connect(ctx, *ai)
}

// ConnectedPeers counts open connections' peers.
func (x *Host) ConnectedPeers() int { return len(x.h.Network().Peers()) }

// SetHandler installs the inbound message handler.
func (x *Host) SetHandler(h func(protocol.Message)) { x.handler.Store(&h) }

func (x *Host) deliver(m protocol.Message) {
	if h := x.handler.Load(); h != nil {
		x.cfg.Metrics.Message("in", channel(m))
		(*h)(m)
	}
}

func channel(m protocol.Message) string {
	if m.Topic != "" {
		return m.Topic
	}
	return m.Protocol
}

func (x *Host) topic(name string) (*pubsub.Topic, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if t := x.topics[name]; t != nil {
		return t, nil
	}
	t, err := x.ps.Join(name)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", name, err)
	}
	x.topics[name] = t
	return t, nil
}

// Join subscribes to a topic and delivers its messages (not our own).
func (x *Host) Join(name string) error {
	t, err := x.topic(name)
	if err != nil {
		return err
	}
	x.mu.Lock()
	if x.subs[name] != nil {
		x.mu.Unlock()
		return nil
	}
	sub, err := t.Subscribe(pubsub.WithBufferSize(max(256, 8*x.cfg.ExpectedPeers)))
	if err != nil {
		x.mu.Unlock()
		return fmt.Errorf("subscribe %s: %w", name, err)
	}
	x.subs[name] = sub
	x.mu.Unlock()
	self := x.h.ID()
	x.goTracked(func() {
		for {
			msg, err := sub.Next(x.ctx)
			if err != nil {
				return // cancelled or closed
			}
			if msg.GetFrom() == self {
				continue
			}
			x.deliver(protocol.Message{From: protocol.PeerID(msg.GetFrom().String()), Topic: name, Data: msg.Data})
		}
	})
	return nil
}

// Publish publishes on a topic, refusing oversized messages (gossipsub would
// drop them silently).
func (x *Host) Publish(ctx context.Context, name string, data []byte) error {
	if limit := x.cfg.MaxMessage - 1024; len(data) > limit {
		return fmt.Errorf("publish %s: %d bytes exceed the %d-byte cap", name, len(data), limit)
	}
	t, err := x.topic(name)
	if err != nil {
		return err
	}
	x.cfg.Metrics.Message("out", name)
	return t.Publish(ctx, data)
}

// SetTopicValidator installs v for topic; it sees the signed author.
func (x *Host) SetTopicValidator(name string, v func(protocol.PeerID, []byte) protocol.Verdict) error {
	self := x.h.ID()
	return x.ps.RegisterTopicValidator(name, func(_ context.Context, _ peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
		author := msg.GetFrom()
		if author == self {
			return pubsub.ValidationAccept
		}
		switch v(protocol.PeerID(author.String()), msg.Data) {
		case protocol.Accept:
			return pubsub.ValidationAccept
		case protocol.Ignore:
			x.cfg.Metrics.Rejected(name, "ignored")
			return pubsub.ValidationIgnore
		}
		x.cfg.Metrics.Rejected(name, "rejected")
		x.log.Debug("rejected message", "topic", name, "author", author.String())
		return pubsub.ValidationReject
	})
}

// WaitTopicPeers waits until at least n peers are known on topic.
func (x *Host) WaitTopicPeers(ctx context.Context, name string, n int) error {
	t, err := x.topic(name)
	if err != nil {
		return err
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		have := len(t.ListPeers())
		if have >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s: %d of %d expected peers after waiting: %w", name, have, n, ctx.Err())
		case <-tick.C:
		}
	}
}

// Send opens a stream to `to`, writes one frame and closes it.
func (x *Host) Send(ctx context.Context, to protocol.PeerID, protoID string, data []byte) error {
	pid, err := peer.Decode(string(to))
	if err != nil {
		return fmt.Errorf("send: bad peer id %q: %w", to, err)
	}
	ctx, cancel := context.WithTimeout(ctx, x.cfg.DialTimeout)
	defer cancel()
	s, err := x.h.NewStream(ctx, pid, libp2pproto.ID(protoID))
	if err != nil {
		return fmt.Errorf("send %s to %s: %w", protoID, to, err)
	}
	s.SetWriteDeadline(time.Now().Add(x.cfg.StreamTimeout))
	if err := wire.WriteFrame(s, data, frameCap(protoID)); err != nil {
		s.Reset()
		return fmt.Errorf("send %s to %s: %w", protoID, to, err)
	}
	x.cfg.Metrics.Message("out", protoID)
	return s.Close()
}

// handleStream reads size-capped frames until EOF; anything malformed
// resets the stream and is counted.
func (x *Host) handleStream(s network.Stream) {
	protoID := string(s.Protocol())
	from := protocol.PeerID(s.Conn().RemotePeer().String())
	s.SetReadDeadline(time.Now().Add(x.cfg.StreamTimeout))
	r := bufio.NewReader(s)
	for {
		data, err := wire.ReadFrame(r, frameCap(protoID))
		if err == io.EOF {
			s.Close()
			return
		}
		if err != nil {
			x.cfg.Metrics.Rejected(protoID, "bad frame")
			x.log.Debug("bad frame; resetting stream", "from", string(from), "protocol", protoID, "err", err)
			s.Reset()
			return
		}
		x.deliver(protocol.Message{From: from, Protocol: protoID, Data: data})
	}
}

// Close shuts the node down without leaking goroutines. Idempotent.
func (x *Host) Close() error {
	var err error
	x.once.Do(func() {
		x.cancel()
		x.mu.Lock()
		for _, s := range x.subs {
			s.Cancel()
		}
		for _, t := range x.topics {
			t.Close()
		}
		x.mu.Unlock()
		if x.mdns != nil {
			x.mdns.Close()
		}
		x.psCancel()
		err = x.h.Close()
		x.wg.Wait()
	})
	return err
}

var _ protocol.AddressBook = (*Host)(nil)

// AddAddrs records where a peer listens (from the session roster).
func (x *Host) AddAddrs(p protocol.PeerID, addrs []string) {
	pid, err := peer.Decode(string(p))
	if err != nil || pid == x.h.ID() {
		return
	}
	for _, a := range addrs {
		ai, err := peer.AddrInfoFromString(a)
		if err != nil || ai.ID != pid {
			x.cfg.Metrics.Rejected("roster", "bad address")
			continue
		}
		x.h.Peerstore().AddAddrs(pid, ai.Addrs, peerstore.PermanentAddrTTL)
	}
}

// ListenAddrs are the host's full multiaddrs.
func (x *Host) ListenAddrs() []string { return x.Addrs() }
