package node

import (
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/x/rate"
)

// sizing derives every size that grows with Config.ExpectedPeers.
//
// The data user's host is dialled by every owner, and each owner may hold a
// connection to every other owner of a secure sum: with libp2p's auto-scaled
// defaults a hub refused dials beyond about 70 concurrent handshakes (its
// Transient scope) and the default connection manager (160/192) trimmed it
// above 192 peers (LIBP2P-NOTES.md). Limits are only ever raised above the
// auto-scaled defaults, never lowered.
type sizing struct {
	conns   int // System and Transient connections (and file descriptors)
	streams int // System and Transient streams; per-protocol inbound streams
	lowW    int // connection manager low water
	highW   int // connection manager high water (<= conns, libp2p checks)
	queue   int // gossipsub peer-outbound and validation queues, subscription buffer
}

func sizeFor(n int) sizing {
	return sizing{
		conns:   4*n + 256,
		streams: 64*n + 1024,
		lowW:    2*n + 32,
		highW:   3*n + 64,
		queue:   max(256, 8*n),
	}
}

// raise sets each limit in r to at least its value, keeping higher defaults.
func raise(r *rcmgr.ResourceLimits, conns, streams int) {
	up := func(v *rcmgr.LimitVal, want int) {
		if want > 0 && *v != rcmgr.Unlimited && int(*v) < want {
			*v = rcmgr.LimitVal(want)
		}
	}
	up(&r.Conns, conns)
	up(&r.ConnsInbound, conns)
	up(&r.ConnsOutbound, conns)
	up(&r.FD, conns)
	up(&r.Streams, streams)
	up(&r.StreamsInbound, streams)
	up(&r.StreamsOutbound, streams)
}

// newResourceManager builds the resource manager for s. Connections from
// trusted prefixes (and loopback, as in libp2p's defaults) are neither
// capped per IP nor rate limited.
func newResourceManager(s sizing, trusted []string) (network.ResourceManager, error) {
	partial := rcmgr.DefaultLimits.AutoScale().ToPartialLimitConfig()
	raise(&partial.System, s.conns, s.streams)
	raise(&partial.Transient, s.conns, s.streams)
	raise(&partial.ServiceDefault, 0, s.streams)
	raise(&partial.ProtocolDefault, 0, s.streams)
	limits := partial.Build(rcmgr.DefaultLimits.AutoScale())

	v4 := []rcmgr.NetworkPrefixLimit{{Network: netip.MustParsePrefix("127.0.0.0/8"), ConnCount: math.MaxInt}}
	v6 := []rcmgr.NetworkPrefixLimit{{Network: netip.MustParsePrefix("::1/128"), ConnCount: math.MaxInt}}
	rates := []rate.PrefixLimit{{Prefix: netip.MustParsePrefix("127.0.0.0/8")}, {Prefix: netip.MustParsePrefix("::1/128")}}
	for _, t := range trusted {
		p, err := netip.ParsePrefix(t)
		if err != nil {
			return nil, fmt.Errorf("TrustedNetworks %q: %w", t, err)
		}
		p = p.Masked()
		if p.Addr().Is4() {
			v4 = append(v4, rcmgr.NetworkPrefixLimit{Network: p, ConnCount: math.MaxInt})
		} else {
			v6 = append(v6, rcmgr.NetworkPrefixLimit{Network: p, ConnCount: math.MaxInt})
		}
		rates = append(rates, rate.PrefixLimit{Prefix: p}) // zero Limit: not rate limited
	}
	limiter := &rate.Limiter{
		NetworkPrefixLimits: rates,
		SubnetRateLimiter: rate.SubnetLimiter{ // libp2p's defaults for everyone else
			IPv4SubnetLimits: []rate.SubnetLimit{{PrefixLength: 32, Limit: rate.Limit{RPS: 0.2, Burst: 16}}},
			IPv6SubnetLimits: []rate.SubnetLimit{
				{PrefixLength: 56, Limit: rate.Limit{RPS: 0.2, Burst: 16}},
				{PrefixLength: 48, Limit: rate.Limit{RPS: 0.5, Burst: 80}},
			},
			GracePeriod: time.Minute,
		},
	}
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(limits),
		rcmgr.WithNetworkPrefixLimit(v4, v6), rcmgr.WithConnRateLimiters(limiter))
	if err != nil {
		return nil, fmt.Errorf("resource manager: %w", err)
	}
	return rm, nil
}

func newConnManager(s sizing) (*connmgr.BasicConnMgr, error) {
	cm, err := connmgr.NewConnManager(s.lowW, s.highW, connmgr.WithGracePeriod(time.Minute))
	if err != nil {
		return nil, fmt.Errorf("connection manager: %w", err)
	}
	return cm, nil
}
