package node

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/eventbus"
	"github.com/marcopolo/simnet"

	"github.com/ppboost/ppboost/node/simnat"
)

// simHost starts a host with default NAT settings on a simnat host,
// listening on QUIC port 4001; t's cleanup closes it.
func simHost(t *testing.T, sh *simnat.Host, name string, tweak func(*Config)) *Host {
	t.Helper()
	cfg := testConfig(t)
	cfg.ListenAddrs = []string{fmt.Sprintf("/ip4/%s/udp/4001/quic-v1", sh.IP())}
	cfg.Logger = testLogger(t, name)
	if tweak != nil {
		tweak(&cfg)
	}
	h, err := New(context.Background(), cfg, WithPacketConnWrapper(sh.ListenUDP), WithQUICSourceIP(sh.SourceIP))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// simDrain lets what closed hosts leave running end inside the synctest
// bubble, whose clock stops once the test function returns: AutoNAT's
// dial-back service waits out its whole dial timeout (15 s) after a failed
// dial, closed host or not (go-libp2p v0.51.0 p2p/host/autonat/svc.go).
func simDrain() { time.Sleep(time.Minute) }

// directTo reports whether a holds a direct (not relayed) connection to b.
func directTo(a, b *Host) bool {
	for _, c := range a.h.Network().ConnsToPeer(b.h.ID()) {
		if !isRelayAddr(c.RemoteMultiaddr()) {
			return true
		}
	}
	return false
}

// punchPair puts two owners behind two NATs of the given mapping and a
// relay (the data user, RelayOn) on a public address, all with default NAT
// settings; each owner reserves a slot at the relay, a dials b at its
// circuit address, and after a minute of virtual time it reports whether
// the two hold a direct connection, the hole punches both counted, and
// what AutoNAT made of a's reachability.
func punchPair(t *testing.T, mapping simnat.Mapping) (direct bool, ok, failed int64, reach network.Reachability) {
	in := simnat.New(simnet.StaticLatency(20*time.Millisecond), simnet.NodeBiDiLinkSettings{
		Downlink: simnet.LinkSettings{BitsPerSecond: 100_000_000},
		Uplink:   simnet.LinkSettings{BitsPerSecond: 100_000_000},
	})
	t.Cleanup(in.Close)
	t.Cleanup(simDrain)
	relay := simHost(t, in.PublicHost(net.IPv4(1, 0, 0, 1)), "relay", func(c *Config) { c.NAT.RelayService = RelayOn })
	boot := relay.Addrs()[0] + "/p2p/" + string(relay.ID())
	owner := func(k int) *Host {
		nat := in.NewNAT(net.IPv4(2, byte(k), 0, 1), netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/16", k)), mapping)
		sh, err := nat.Host(net.IPv4(10, byte(k), 0, 1))
		if err != nil {
			t.Fatal(err)
		}
		return simHost(t, sh, fmt.Sprintf("owner-%d", k), func(c *Config) { c.Bootstrap = []string{boot} })
	}
	a, b := owner(1), owner(2)
	sub, err := a.h.EventBus().Subscribe(new(event.EvtLocalReachabilityChanged), eventbus.BufSize(16))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for _, h := range []*Host{a, b} {
		for t0 := time.Now(); !h.nat.holds(relay.h.ID()); time.Sleep(100 * time.Millisecond) {
			if time.Since(t0) > 30*time.Second {
				t.Fatalf("%s holds no relay slot after %v", h.ID(), time.Since(t0))
			}
		}
	}
	var circuit string
	for _, s := range b.Addrs() {
		if strings.Contains(s, "/p2p-circuit") {
			circuit = s + "/p2p/" + string(b.ID())
		}
	}
	if circuit == "" {
		t.Fatalf("b has no circuit address: %q", b.Addrs())
	}
	if err := a.Connect(context.Background(), circuit); err != nil {
		t.Fatalf("connect through the relay: %v", err)
	}
	t0 := time.Now()
	for !directTo(a, b) && time.Since(t0) < time.Minute {
		time.Sleep(100 * time.Millisecond)
	}
	direct = directTo(a, b) && directTo(b, a)
	t.Logf("%s NATs: direct=%v after %v; a's addrs %q", mapping, direct, time.Since(t0), a.Addrs())
	// What AutoNAT makes of a a minute after it started (not needed for
	// the above: a reserves at its bootstrap relay at once, see
	// keepReservation).
	time.Sleep(time.Minute - time.Since(t0))
	reach = network.ReachabilityUnknown
	for len(sub.Out()) > 0 {
		reach = (<-sub.Out()).(event.EvtLocalReachabilityChanged).Reachability
	}
	t.Logf("AutoNAT: owner a is %s after %v", reach, time.Since(t0))
	for _, h := range []*Host{a, b} {
		o, f := h.cfg.Metrics.HolePunches()
		ok, failed = ok+o, failed+f
		for _, c := range h.h.Network().ConnsToPeer(peer.ID(b.h.ID())) {
			t.Logf("conn %s -> %s", c.LocalMultiaddr(), c.RemoteMultiaddr())
		}
	}
	return direct, ok, failed, reach
}

// TestSimHolePunch: two owners behind two different NATs with
// endpoint-independent mapping, default NAT settings, meet through the
// data user's relay and DCUtR upgrades the relayed connection to a direct
// one (300 ms of virtual time at 20 ms one way), counted as a success in
// ppboost_holepunch_total; AutoNAT finds them private. Negative control:
// behind symmetric NATs the same check fails (the pair stays relayed and
// the punches are counted as failures).
func TestSimHolePunch(t *testing.T) {
	t.Run("endpoint-independent", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			direct, ok, failed, reach := punchPair(t, simnat.EndpointIndependent)
			t.Logf("hole punches: %d succeeded, %d failed", ok, failed)
			if !direct || ok < 1 {
				t.Fatalf("direct=%v, %d successful hole punches: want a direct connection and at least one success", direct, ok)
			}
			if reach != network.ReachabilityPrivate {
				t.Errorf("AutoNAT found owner a %s, want %s", reach, network.ReachabilityPrivate)
			}
		})
	})
	t.Run("symmetric", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			direct, ok, failed, _ := punchPair(t, simnat.Symmetric)
			t.Logf("hole punches: %d succeeded, %d failed", ok, failed)
			if direct || ok > 0 || failed < 1 {
				t.Fatalf("direct=%v, hole punches %d ok %d failed: want the pair relayed and the punches failed", direct, ok, failed)
			}
		})
	})
}
