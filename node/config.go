package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/ppboost/ppboost/protocol/wire"
)

// Config configures a node.
type Config struct {
	KeyFile     string   // Ed25519 identity (ppboost keygen); required
	ListenAddrs []string // multiaddrs
	Bootstrap   []string // full multiaddrs with /p2p/ to dial at start
	PSKFile     string   // private-network key (TCP only)
	AllowList   []string // peer ids allowed to connect; empty allows everyone
	MDNS        bool
	MDNSService string
	// ExpectedPeers sizes connection and stream limits, the connection
	// manager and gossipsub queues: the data user sets it to the number of
	// owners, owners leave the default.
	ExpectedPeers int
	MaxMessage    int // gossipsub message cap
	DialTimeout   time.Duration
	StreamTimeout time.Duration // read/write deadline of one direct message
	Logger        hclog.Logger
	Metrics       *Metrics
}

// DefaultConfig listens on loopback TCP and QUIC with ephemeral ports.
func DefaultConfig() Config {
	return Config{
		ListenAddrs:   []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"},
		MDNSService:   "ppboost-1",
		ExpectedPeers: 16,
		MaxMessage:    wire.MaxControlBytes + 4096, // room for the signed envelope
		DialTimeout:   10 * time.Second,
		StreamTimeout: 10 * time.Second,
	}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	var errs []error
	if c.KeyFile == "" {
		errs = append(errs, errors.New("key_file: required"))
	}
	if len(c.ListenAddrs) == 0 {
		errs = append(errs, errors.New("listen_addrs: at least one address required"))
	}
	for _, a := range c.ListenAddrs {
		if _, err := ma.NewMultiaddr(a); err != nil {
			errs = append(errs, fmt.Errorf("listen_addrs: %q: %v", a, err))
		}
	}
	for _, a := range c.Bootstrap {
		if _, err := peer.AddrInfoFromString(a); err != nil {
			errs = append(errs, fmt.Errorf("bootstrap: %q is not a multiaddr with /p2p/<peer id>: %v", a, err))
		}
	}
	for _, p := range c.AllowList {
		if _, err := peer.Decode(p); err != nil {
			errs = append(errs, fmt.Errorf("allow_list: %q is not a peer id: %v", p, err))
		}
	}
	if c.ExpectedPeers < 1 {
		errs = append(errs, fmt.Errorf("expected_peers: must be at least 1, got %d", c.ExpectedPeers))
	}
	if c.MaxMessage < 1024 {
		errs = append(errs, fmt.Errorf("max_message: at least 1024 bytes, got %d", c.MaxMessage))
	}
	if c.DialTimeout <= 0 || c.StreamTimeout <= 0 {
		errs = append(errs, fmt.Errorf("dial_timeout, stream_timeout: must be positive, got %v, %v", c.DialTimeout, c.StreamTimeout))
	}
	return errors.Join(errs...)
}
