package node

import (
	"errors"
	"fmt"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"net/netip"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/ppboost/ppboost/protocol/wire"
)

// Limits on Config values that Validate enforces.
const (
	maxExpectedPeers = 1 << 16  // resource limits grow linearly with it
	minMaxMessage    = 4 << 10  // room for a signed envelope and a small payload
	maxMaxMessage    = 64 << 20 // gossipsub holds whole messages in memory
)

// Config configures a node. Start from DefaultConfig.
type Config struct {
	// KeyFile is the Ed25519 identity written by GenerateKey (ppboost keygen).
	// Required; refused if group- or world-readable.
	KeyFile string
	// ListenAddrs are TCP (/tcp/N) or QUIC (/udp/N/quic-v1) multiaddrs. mDNS
	// needs a non-loopback address such as /ip4/0.0.0.0/tcp/0.
	ListenAddrs []string
	// Bootstrap are full multiaddrs (with /p2p/<peer id>) dialled at start
	// and re-dialled, with backoff, whenever the connection drops.
	Bootstrap []string
	// PSKFile is a private-network key (the go-ipfs swarm.key format). With it
	// set the node speaks TCP only: QUIC does not support private networks,
	// so QUIC listen addresses are dropped with a log line.
	PSKFile string
	// AllowList are the peer ids allowed to connect, both ways; empty allows
	// everyone. When set it must contain every bootstrap peer, and an owner
	// must add its pinned data user (the owner command does).
	AllowList []string
	// TrustedNetworks are CIDR prefixes (10.0.0.0/8) exempt from libp2p's
	// per-IP connection cap (8 per IPv4 address) and connection rate limit:
	// needed on the data user's host when many owners sit behind one NAT or
	// run on one machine with a LAN address. Loopback is always exempt.
	TrustedNetworks []string
	// MDNS turns on LAN discovery under MDNSService (default
	// "ppboost-<wire.Version>").
	MDNS        bool
	MDNSService string
	// ExpectedPeers sizes the resource manager's System and Transient
	// connection and stream limits, the connection manager's water marks and
	// the gossipsub queues. The data user sets it to the number of owners;
	// owners leave the default.
	ExpectedPeers int
	// MaxMessage caps a gossipsub RPC (the signed envelope included);
	// Publish refuses payloads that would not fit.
	MaxMessage int
	// MeshHigh is gossipsub's D_hi: the most peers this node keeps in a
	// topic's mesh before it prunes down to D (0: gossipsub's default, 12).
	// A hub that relays a topic for peers connected only to it (the PFDS
	// announcer) sets it to their number, so each of them stays in its
	// mesh and gets every message at once instead of by gossip.
	MeshHigh int
	// PublishWait is how long Publish waits for a first peer on a topic that
	// has none while the node is connected to someone (a subscription still
	// in flight); 0 publishes at once. See Host.Publish.
	PublishWait time.Duration
	// DialTimeout bounds a dial and the opening of a direct stream.
	DialTimeout time.Duration
	// StreamTimeout bounds one direct frame: one write of queued frames, or
	// reading a frame once its first byte has arrived.
	StreamTimeout time.Duration
	// Inbound bounds what peers can make the node hold on direct streams
	// (streams, buffer bytes, rate); see InboundLimits.
	Inbound InboundLimits
	// NAT configures NAT traversal (on by default); see NATConfig.
	NAT NATConfig
	// Logger receives structured logs; nil discards them.
	Logger hclog.Logger
	// Metrics receives the node's counters; nil disables them.
	Metrics *Metrics
}

// DefaultConfig listens on loopback TCP and QUIC with ephemeral ports.
func DefaultConfig() Config {
	return Config{
		ListenAddrs:   []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"},
		MDNSService:   fmt.Sprintf("ppboost-%d", wire.Version),
		ExpectedPeers: 16,
		MaxMessage:    wire.MaxControlBytes + 4096, // a full control message plus its signed envelope
		PublishWait:   500 * time.Millisecond,
		DialTimeout:   10 * time.Second,
		StreamTimeout: 10 * time.Second,
		Inbound:       DefaultInboundLimits(),
		NAT:           DefaultNATConfig(),
	}
}

// transportOf classifies a listen address: "tcp", "quic" or "" (unsupported).
func transportOf(a ma.Multiaddr) string {
	var tcp, udp, quic bool
	for _, c := range a {
		switch c.Protocol().Code {
		case ma.P_TCP:
			tcp = true
		case ma.P_UDP:
			udp = true
		case ma.P_QUIC_V1:
			quic = true
		case ma.P_WS, ma.P_WSS, ma.P_WEBTRANSPORT, ma.P_WEBRTC_DIRECT, ma.P_CIRCUIT:
			return ""
		}
	}
	switch {
	case tcp && !udp:
		return "tcp"
	case udp && quic:
		return "quic"
	}
	return ""
}

// Validate reports every bad field, each error naming the field and value.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.KeyFile == "" {
		bad("KeyFile: required (create one with ppboost keygen)")
	}
	c.validateListen(bad)
	c.validatePeers(bad)
	c.validateLimits(bad)
	c.Inbound.validate(bad)
	c.NAT.validate(bad)
	if len(errs) > 0 {
		return fmt.Errorf("node config: %w", errors.Join(errs...))
	}
	return nil
}

// validateListen checks the listen addresses: each a TCP or QUIC
// multiaddr, and a TCP one when a private network is configured.
func (c Config) validateListen(bad func(string, ...any)) {
	if len(c.ListenAddrs) == 0 {
		bad("ListenAddrs: at least one address required")
	}
	tcpAddrs := 0
	for i, s := range c.ListenAddrs {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			bad("ListenAddrs[%d] %q: %v", i, s, err)
			continue
		}
		switch transportOf(a) {
		case "tcp":
			tcpAddrs++
		case "quic":
		default:
			bad("ListenAddrs[%d] %q: want a TCP (/tcp/N) or QUIC (/udp/N/quic-v1) address", i, s)
		}
	}
	if c.PSKFile != "" && len(c.ListenAddrs) > 0 && tcpAddrs == 0 {
		bad("ListenAddrs %q: a private network (PSKFile %q) needs a TCP address; QUIC does not support private networks", c.ListenAddrs, c.PSKFile)
	}
}

// validatePeers checks the peers the node knows of: the allow-list, the
// bootstrap addresses (in the allow-list when there is one), the trusted
// networks and the mDNS service name.
func (c Config) validatePeers(bad func(string, ...any)) {
	allowed := map[peer.ID]bool{}
	for i, s := range c.AllowList {
		p, err := peer.Decode(s)
		if err != nil {
			bad("AllowList[%d] %q: not a peer id: %v", i, s, err)
			continue
		}
		allowed[p] = true
	}
	for i, s := range c.Bootstrap {
		ai, err := peer.AddrInfoFromString(s)
		if err != nil {
			bad("Bootstrap[%d] %q: not a multiaddr ending in /p2p/<peer id>: %v", i, s, err)
			continue
		}
		if len(c.AllowList) > 0 && !allowed[ai.ID] {
			bad("Bootstrap[%d] %q: peer %s is not in AllowList, so the gater would refuse it", i, s, ai.ID)
		}
	}
	for i, s := range c.TrustedNetworks {
		if _, err := netip.ParsePrefix(s); err != nil {
			bad("TrustedNetworks[%d] %q: not a CIDR prefix: %v", i, s, err)
		}
	}
	if c.MDNS && c.MDNSService == "" {
		bad("MDNSService: required when MDNS is on")
	}
}

// validateLimits checks the sizes and timeouts.
func (c Config) validateLimits(bad func(string, ...any)) {
	if c.ExpectedPeers < 1 || c.ExpectedPeers > maxExpectedPeers {
		bad("ExpectedPeers: %d, want 1..%d", c.ExpectedPeers, maxExpectedPeers)
	}
	if c.MaxMessage < minMaxMessage || c.MaxMessage > maxMaxMessage {
		bad("MaxMessage: %d bytes, want %d..%d", c.MaxMessage, minMaxMessage, maxMaxMessage)
	}
	if c.PublishWait < 0 {
		bad("PublishWait: %v, want >= 0", c.PublishWait)
	}
	if c.MeshHigh != 0 && (c.MeshHigh < pubsub.GossipSubDhi || c.MeshHigh > maxExpectedPeers) {
		bad("MeshHigh: %d, want 0 (gossipsub's %d) or %d..%d", c.MeshHigh, pubsub.GossipSubDhi, pubsub.GossipSubDhi, maxExpectedPeers)
	}
	if c.DialTimeout <= 0 {
		bad("DialTimeout: %v, want > 0", c.DialTimeout)
	}
	if c.StreamTimeout <= 0 {
		bad("StreamTimeout: %v, want > 0", c.StreamTimeout)
	}
}
