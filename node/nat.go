package node

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	circuitpb "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/pb"
	circuitproto "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/proto"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// RelayMode says when a node serves circuit relay v2 to other peers.
type RelayMode string

const (
	// RelayAuto serves the relay once AutoNAT finds this node publicly
	// reachable (an owner on a public address). The default.
	RelayAuto RelayMode = "auto"
	// RelayOn serves the relay from the start and takes the node to be
	// publicly reachable: the data user, whom every owner dials.
	RelayOn RelayMode = "on"
	// RelayOff never relays for others.
	RelayOff RelayMode = "off"
)

// NATConfig configures NAT traversal. On by default: a node behind a NAT
// takes part in a session with no extra setting.
//
//   - Every node runs the relay transport (it can dial and be dialled
//     through a circuit relay v2), AutoNAT v1 and v2 (it learns whether its
//     addresses are reachable, and answers such probes for others), and
//     DCUtR hole punching (a relayed connection is upgraded to a direct one
//     when both sides can punch; QUIC, since TCP runs without SO_REUSEPORT).
//   - A node with bootstrap peers holds a relay reservation on each of them
//     from the moment it connects (see keepReservation) and advertises the
//     circuit addresses through them among its own (Host.Addrs, hence the
//     session roster); AutoRelay with the bootstrap peers as static relays
//     takes over once AutoNAT has found the node private.
//   - Dials try a peer's direct addresses first and its relay addresses
//     RelayDelay later (at once if every direct dial failed).
//   - The relay service (RelayService) carries what its limits allow:
//     see relayResources.
type NATConfig struct {
	// Off turns NAT traversal off: no relay transport, relay service,
	// reservations, AutoNAT or hole punching. The node then reaches only
	// peers it can dial directly.
	Off bool
	// RelayService: RelayAuto (default), RelayOn (the data user) or
	// RelayOff.
	RelayService RelayMode
	// RelayDelay is how long a dial gives a peer's direct addresses before
	// it also tries the peer's relay addresses.
	RelayDelay time.Duration
	// CircuitBytes and CircuitDuration bound one connection this node
	// relays (each direction); the relay resets a circuit that exceeds
	// either, and the next message opens a new one.
	CircuitBytes    int64
	CircuitDuration time.Duration
}

// Defaults of NATConfig. Why these numbers: a relayed connection between
// two owners carries only direct protocol streams (gossipsub does not open
// streams on limited connections, so the mesh stays on the direct
// connections every owner holds to the data user): secure-sum frames of at
// most wire.MaxSumFrameBytes (64 KiB) and session messages. A warm Shamir
// sum costs an owner 16-19 KB on the wire over all its peers at n = 20 and
// the first about 130 KB including TLS handshakes (issue 20), so one owner
// pair moves a few KB per sum: 1 MiB per direction is 16 maximal frames or
// hundreds of typical sums, and 10 minutes covers a session of the default
// length. Hole punching replaces the circuit with a direct connection within
// seconds when it works; when it does not, a circuit that reaches a limit
// is reset and the next message opens a new one (one handshake more).
const (
	defaultCircuitBytes    = 1 << 20
	defaultCircuitDuration = 10 * time.Minute
	defaultRelayDelay      = time.Second
	minCircuitBytes        = 16 << 10 // a TLS handshake and a few frames
	minCircuitDuration     = 10 * time.Second
	// relayReservationTTL is how long a reservation lasts; the holder
	// refreshes it at three quarters of that (keepReservation).
	relayReservationTTL = time.Hour
)

// DefaultNATConfig turns NAT traversal on with the relay service in auto
// mode.
func DefaultNATConfig() NATConfig {
	return NATConfig{
		RelayService:    RelayAuto,
		RelayDelay:      defaultRelayDelay,
		CircuitBytes:    defaultCircuitBytes,
		CircuitDuration: defaultCircuitDuration,
	}
}

func (c NATConfig) validate(bad func(string, ...any)) {
	switch c.RelayService {
	case RelayAuto, RelayOn, RelayOff:
	default:
		bad("NAT.RelayService: %q, want %q, %q or %q", c.RelayService, RelayAuto, RelayOn, RelayOff)
	}
	if c.RelayDelay < 0 {
		bad("NAT.RelayDelay: %v, want >= 0", c.RelayDelay)
	}
	if c.CircuitBytes < minCircuitBytes {
		bad("NAT.CircuitBytes: %d, want >= %d (a TLS handshake and a few frames)", c.CircuitBytes, minCircuitBytes)
	}
	if c.CircuitDuration < minCircuitDuration {
		bad("NAT.CircuitDuration: %v, want >= %v", c.CircuitDuration, minCircuitDuration)
	}
}

// relayResources are the limits of the relay service, sized to the number
// of peers the node expects (its session's owners):
//
//   - MaxReservations: every expected peer plus 16 spare slots (restarts);
//     strangers beyond that are refused a slot.
//   - MaxReservationsPerIP: the same total. Owners behind one NAT (a
//     hospital, an office; loopback in a testnet) share an IP address, and
//     libp2p's default of 8 per IP would refuse the ninth of them.
//   - MaxCircuits: open circuits per peer, counted at both ends: an owner
//     no one can reach directly may need one to every other owner of a
//     Shamir sum.
//   - Limit: per circuit, NATConfig.CircuitBytes each way and
//     NATConfig.CircuitDuration (see the defaults for why).
//   - BufferSize: libp2p's 2 KiB per direction; memory is charged to the
//     relay service's resource-manager scope, which caps the total.
//
// Only peers that hold a reservation can be reached through the relay, so
// a stranger cannot use it to reach anyone who did not ask for it; with an
// allow-list the connection gater refuses strangers before any of this.
func relayResources(expected int, c NATConfig) relayv2.Resources {
	slots := expected + 16
	return relayv2.Resources{
		Limit:                  &relayv2.RelayLimit{Duration: c.CircuitDuration, Data: c.CircuitBytes},
		ReservationTTL:         relayReservationTTL,
		MaxReservations:        slots,
		MaxCircuits:            max(16, expected),
		BufferSize:             2048,
		MaxReservationsPerPeer: 1,
		MaxReservationsPerIP:   slots,
		MaxReservationsPerASN:  slots,
	}
}

// natState is what the NAT options share with the host: the circuit
// addresses of the reservations held, and the metrics.
type natState struct {
	m      *Metrics
	relays []peer.AddrInfo // bootstrap peers (set before any goroutine starts)

	lost map[peer.ID]chan struct{} // per relay: its last connection closed (set before any goroutine starts)

	mu       sync.Mutex
	circuits map[peer.ID][]ma.Multiaddr // relay -> this node's addresses through it
	conns    map[string]string          // open connection id -> kind, for the gauges
}

func newNATState(m *Metrics) *natState {
	return &natState{m: m, lost: map[peer.ID]chan struct{}{}, circuits: map[peer.ID][]ma.Multiaddr{}, conns: map[string]string{}}
}

// addrs is the host's address factory: its own addresses, without
// loopback ones when it has others (a peer that dials 127.0.0.1 reaches its
// own machine, at best a refused port, at worst another node there), plus
// the circuit addresses of the reservations it holds. Private addresses
// stay: an owner on the same LAN (a hospital's two departments) can use
// them, and a peer elsewhere fails them fast and goes on to the relay
// address (relayLastRanker).
func (s *natState) addrs(addrs []ma.Multiaddr) []ma.Multiaddr {
	out := addrs
	if slices.ContainsFunc(addrs, func(a ma.Multiaddr) bool { return !manet.IsIPLoopback(a) }) {
		out = slices.DeleteFunc(slices.Clone(addrs), manet.IsIPLoopback)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.circuits) == 0 {
		return out
	}
	out = slices.Clone(out)
	relays := make([]peer.ID, 0, len(s.circuits))
	for r := range s.circuits {
		relays = append(relays, r)
	}
	sort.Slice(relays, func(i, j int) bool { return relays[i] < relays[j] })
	for _, r := range relays {
		out = append(out, s.circuits[r]...)
	}
	return ma.Unique(out)
}

// holds reports whether this node holds a slot on relay.
func (s *natState) holds(relay peer.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.circuits[relay]) > 0
}

func (s *natState) setCircuits(relay peer.ID, addrs []ma.Multiaddr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if addrs == nil {
		delete(s.circuits, relay)
	} else {
		s.circuits[relay] = addrs
	}
	s.m.setRelayReservations(len(s.circuits))
}

// Trace is the hole-punch event tracer: it counts hole punches by result
// (both ends of a punch see its end; the initiator makes up to 3 attempts
// per relayed connection).
func (s *natState) Trace(evt *holepunch.Event) {
	if e, ok := evt.Evt.(*holepunch.EndHolePunchEvt); ok {
		s.m.holePunch(e.Success)
	}
}

// relayTracer counts the bytes the relay service carries for others
// (ppboost_relay_bytes_total) and passes every event on to libp2p's own
// relay metrics (libp2p_relaysvc_*), which an explicit tracer replaces.
type relayTracer struct {
	relayv2.MetricsTracer // libp2p's, or nil without metrics
	m                     *Metrics
}

func newRelayTracer(m *Metrics) *relayTracer {
	t := &relayTracer{m: m}
	if m != nil {
		t.MetricsTracer = relayv2.NewMetricsTracer(relayv2.WithRegisterer(m.Registry()))
	}
	return t
}

func (t *relayTracer) BytesTransferred(n int) {
	t.m.relayBytes(n)
	if t.MetricsTracer != nil {
		t.MetricsTracer.BytesTransferred(n)
	}
}

func (t *relayTracer) RelayStatus(on bool) {
	if t.MetricsTracer != nil {
		t.MetricsTracer.RelayStatus(on)
	}
}

func (t *relayTracer) ConnectionOpened() {
	if t.MetricsTracer != nil {
		t.MetricsTracer.ConnectionOpened()
	}
}

func (t *relayTracer) ConnectionClosed(d time.Duration) {
	if t.MetricsTracer != nil {
		t.MetricsTracer.ConnectionClosed(d)
	}
}

func (t *relayTracer) ConnectionRequestHandled(s circuitpb.Status) {
	if t.MetricsTracer != nil {
		t.MetricsTracer.ConnectionRequestHandled(s)
	}
}

func (t *relayTracer) ReservationAllowed(renewal bool) {
	if t.MetricsTracer != nil {
		t.MetricsTracer.ReservationAllowed(renewal)
	}
}

func (t *relayTracer) ReservationClosed(n int) {
	if t.MetricsTracer != nil {
		t.MetricsTracer.ReservationClosed(n)
	}
}

func (t *relayTracer) ReservationRequestHandled(s circuitpb.Status) {
	if t.MetricsTracer != nil {
		t.MetricsTracer.ReservationRequestHandled(s)
	}
}

// connected and disconnected keep the connection gauges, each connection
// counted once: startNAT also counts the connections that opened before it
// subscribed (the host listens from libp2p.New on), and one of those may be
// reported by both.
func (s *natState) connected(_ network.Network, c network.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[c.ID()]; ok {
		return
	}
	kind := connKind(c)
	s.conns[c.ID()] = kind
	s.m.connOpened(kind, c.Stat().Direction == network.DirInbound)
}

func (s *natState) disconnected(n network.Network, c network.Conn) {
	// A relay forgets a slot when its holder's last connection closes
	// (even if the bootstrap loop reconnects at once): tell the keeper.
	if ch, ok := s.lost[c.RemotePeer()]; ok && n.Connectedness(c.RemotePeer()) != network.Connected {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	kind, ok := s.conns[c.ID()]
	if !ok {
		return
	}
	delete(s.conns, c.ID())
	s.m.connClosed(kind)
}

// connKind is "relayed" for a connection through a circuit relay, else
// "direct".
func connKind(c network.Conn) string {
	if isRelayAddr(c.RemoteMultiaddr()) {
		return "relayed"
	}
	return "direct"
}

func isRelayAddr(a ma.Multiaddr) bool {
	for _, c := range a {
		if c.Protocol().Code == ma.P_CIRCUIT {
			return true
		}
	}
	return false
}

// bootstrapInfos merges cfg.Bootstrap by peer (checked by Validate).
func bootstrapInfos(addrs []string) []peer.AddrInfo {
	var out []peer.AddrInfo
	idx := map[peer.ID]int{}
	for _, s := range addrs {
		ai, err := peer.AddrInfoFromString(s)
		if err != nil {
			continue
		}
		if i, ok := idx[ai.ID]; ok {
			out[i].Addrs = append(out[i].Addrs, ai.Addrs...)
			continue
		}
		idx[ai.ID] = len(out)
		out = append(out, *ai)
	}
	return out
}

// relayPrefixes are the addresses of the bootstrap peers (the relays this
// node reserves at) as /32 or /128 prefixes, which the resource manager
// exempts from libp2p's per-IP connection cap (8) and rate limit (a burst
// of 16): it charges a relayed connection to the relay's address, so an
// owner that opens or accepts a Shamir sum's connections through the data
// user (one per committee peer behind another NAT) would be refused from
// the ninth on. Empty with NAT traversal off.
func relayPrefixes(cfg Config) []string {
	if cfg.NAT.Off {
		return nil
	}
	var out []string
	for _, ai := range bootstrapInfos(cfg.Bootstrap) {
		for _, a := range ai.Addrs {
			ip, err := manet.ToIP(a)
			if err != nil {
				continue // a DNS name: not known until dialled
			}
			if ip4 := ip.To4(); ip4 != nil {
				out = append(out, ip4.String()+"/32")
			} else {
				out = append(out, ip.String()+"/128")
			}
		}
	}
	return out
}

// natOptions are the libp2p options of cfg.NAT (see NATConfig).
func natOptions(cfg Config, st *natState) []libp2p.Option {
	if cfg.NAT.Off {
		return []libp2p.Option{libp2p.DisableRelay()}
	}
	opts := []libp2p.Option{
		libp2p.EnableRelay(),
		libp2p.EnableNATService(),
		libp2p.EnableAutoNATv2(),
		libp2p.EnableHolePunching(holepunch.WithTracer(st)),
		libp2p.AddrsFactory(st.addrs),
		libp2p.SwarmOpts(swarm.WithDialRanker(relayLastRanker(cfg.NAT.RelayDelay))),
	}
	if relays := bootstrapInfos(cfg.Bootstrap); len(relays) > 0 {
		opts = append(opts, libp2p.EnableAutoRelayWithStaticRelays(relays, autorelay.WithNumRelays(len(relays))))
	}
	res := []relayv2.Option{relayv2.WithResources(relayResources(cfg.ExpectedPeers, cfg.NAT)), relayv2.WithMetricsTracer(newRelayTracer(cfg.Metrics))}
	switch cfg.NAT.RelayService {
	case RelayOn:
		// The relay manager starts the service when the node is public;
		// a data user is, by construction (every owner dials it).
		opts = append(opts, libp2p.ForceReachabilityPublic(), libp2p.EnableRelayService(res...))
	case RelayAuto:
		opts = append(opts, libp2p.EnableRelayService(res...))
	}
	return opts
}

// relayLastRanker is libp2p's default dial ranking with relay addresses
// held back by delay whenever the peer has any direct address, private ones
// included. libp2p's ranker holds them back only behind public addresses,
// so two owners on one LAN (or loopback) would open a relayed connection
// through the data user in parallel with the direct one. The swarm starts
// the next dials at once when every dial in flight has failed, so a peer
// whose direct addresses are all unreachable (another site's private
// addresses) is tried through the relay without waiting.
func relayLastRanker(delay time.Duration) network.DialRanker {
	return func(addrs []ma.Multiaddr) []network.AddrDelay {
		ranked := swarm.DefaultDialRanker(addrs)
		var direct time.Duration
		hasDirect := false
		for _, r := range ranked {
			if !isRelayAddr(r.Addr) {
				hasDirect = true
				direct = max(direct, r.Delay)
			}
		}
		if !hasDirect {
			return ranked
		}
		for i, r := range ranked {
			if isRelayAddr(r.Addr) && r.Delay < direct+delay {
				ranked[i].Delay = direct + delay
			}
		}
		sort.SliceStable(ranked, func(i, j int) bool { return ranked[i].Delay < ranked[j].Delay })
		return ranked
	}
}

// startNAT starts what NAT traversal needs once the host exists: the
// connection gauges and a reservation keeper per bootstrap peer.
func (x *Host) startNAT() {
	st := x.nat
	if x.cfg.NAT.Off {
		return
	}
	var relays []peer.AddrInfo
	for _, ai := range bootstrapInfos(x.cfg.Bootstrap) {
		if ai.ID != x.h.ID() {
			relays = append(relays, ai)
			st.lost[ai.ID] = make(chan struct{}, 1)
		}
	}
	st.relays = relays
	x.h.Network().Notify(&network.NotifyBundle{ConnectedF: st.connected, DisconnectedF: st.disconnected})
	x.h.Network().Notify(&network.NotifyBundle{ConnectedF: func(n network.Network, c network.Conn) {
		// A direct connection beside relayed ones, in either order.
		p := c.RemotePeer()
		if relayed, direct := connKinds(n, p); relayed && direct {
			x.goTracked(func() { x.closeRelayed(p) })
		}
	}})
	for _, c := range x.h.Network().Conns() {
		if !c.IsClosed() {
			st.connected(x.h.Network(), c)
		}
	}
	for _, ai := range relays {
		x.goTracked(func() { x.keepReservation(st, ai) })
	}
}

// relayedGrace is how long a relayed connection stays open after a direct
// one to the same peer opened (DCUtR finishing its exchange on it), and
// relayedPoll how often closeRelayed looks again at one that still
// carries streams, up to relayedTries times.
const (
	relayedGrace = 2 * time.Second
	relayedPoll  = time.Second
	relayedTries = 120
)

// connKinds reports whether the node holds relayed and direct
// connections to p.
func connKinds(n network.Network, p peer.ID) (relayed, direct bool) {
	for _, c := range n.ConnsToPeer(p) {
		if isRelayAddr(c.RemoteMultiaddr()) {
			relayed = true
		} else {
			direct = true
		}
	}
	return relayed, direct
}

// closeRelayed closes the relayed connections to p once a direct one is
// open (hole punching succeeded, or p dialled in directly): new streams
// already prefer the direct connection, but a relayed one left open holds
// one of the relay's circuits until its limits reset it, and carries
// identify's pushes to p through the relay. A relayed connection that
// still carries streams is left until they end (looked at every
// relayedPoll, at most relayedTries times); none is closed while p has no
// direct connection.
func (x *Host) closeRelayed(p peer.ID) {
	if !x.sleep(relayedGrace) {
		return
	}
	for range relayedTries {
		nw := x.h.Network()
		if _, direct := connKinds(nw, p); !direct {
			return
		}
		busy := false
		for _, c := range nw.ConnsToPeer(p) {
			if !isRelayAddr(c.RemoteMultiaddr()) {
				continue
			}
			if len(c.GetStreams()) > 0 {
				busy = true
				continue
			}
			if err := c.Close(); err != nil {
				x.log.Debug("closing a relayed connection", "peer", p.String(), "err", err)
			}
		}
		if !busy || !x.sleep(relayedPoll) {
			return
		}
	}
}

// addRelayRoutes records, for a peer learnt from a session roster, a route
// through each of this node's bootstrap relays. In a session every owner
// bootstraps to the data user and holds a slot there, so the route works
// even if the peer's roster entry was made before its slot was (its
// addresses are those it had when it joined). Relay addresses are dialled
// only after the direct ones (relayLastRanker), and a peer without a slot
// fails fast (NO_RESERVATION).
//
// Only relays known to serve count (this node holds a slot there, or
// identify listed the relay protocol): a bootstrap peer that runs no relay
// service would only cost a failed hop stream per slow dial.
func (x *Host) addRelayRoutes(p peer.ID) {
	if x.nat == nil || x.cfg.NAT.Off {
		return
	}
	for _, r := range x.nat.relays {
		if r.ID == p || !(x.nat.holds(r.ID) || x.servesRelay(r.ID)) {
			continue
		}
		x.h.Peerstore().AddAddrs(p, circuitAddrs(r, &client.Reservation{}), peerstore.PermanentAddrTTL)
	}
}

// reservePoll is how often a reservation keeper waiting for its relay
// checks the connection; noRelayPoll how often it checks whether a
// bootstrap peer without a relay service has started one (an owner that
// AutoNAT found public).
const (
	reservePoll = time.Second
	noRelayPoll = 5 * time.Second
)

// offersRelay is false only when identify has told the peer's protocols
// and the circuit relay hop protocol is not among them; servesRelay is
// true only when it is among them.
func (x *Host) offersRelay(p peer.ID) bool {
	protos, err := x.h.Peerstore().GetProtocols(p)
	if err != nil || len(protos) == 0 {
		return true // not identified yet: ask
	}
	return slices.Contains(protos, circuitproto.ProtoIDv2Hop)
}

func (x *Host) servesRelay(p peer.ID) bool {
	protos, err := x.h.Peerstore().GetProtocols(p)
	return err == nil && slices.Contains(protos, circuitproto.ProtoIDv2Hop)
}

// keepReservation holds a relay slot on the bootstrap peer ai while the
// node is connected to it: it reserves as soon as the connection is up,
// advertises the circuit addresses the slot gives, refreshes the slot at
// three quarters of its lifetime, and withdraws the addresses and reserves
// again when the last connection to the relay closes (the relay forgets
// the slot then, however fast the bootstrap loop reconnects). A refused or
// failed reservation is logged (at most once a minute) and retried with
// backoff.
//
// It does not wait for AutoNAT to call the node private: that takes 15 s
// at best, never happens on a network whose addresses libp2p does not
// consider public, and a session's roster is fixed seconds after start.
// A slot held by a node that turns out to be public costs the relay one
// reservation and nothing else: dialers try direct addresses first.
func (x *Host) keepReservation(st *natState, ai peer.AddrInfo) {
	to := ai.ID.String()
	backoff := time.Second
	logged := false
	defer st.setCircuits(ai.ID, nil)
	for {
		// A peer whose identify lists no relay service is asked again only
		// when its protocols change (checked every noRelayPoll), not with
		// a stream it would refuse.
		if !x.offersRelay(ai.ID) {
			if !x.sleep(noRelayPoll) {
				return
			}
			continue
		}
		// Reserve dials the relay if need be (the swarm shares one dial
		// with the bootstrap loop), so the slot is there as early as
		// possible: the session roster carries the addresses a node has
		// when it joins. A loss reported before this reservation is old.
		select {
		case <-st.lost[ai.ID]:
		default:
		}
		ctx, cancel := x.dialContext()
		rsvp, err := client.Reserve(ctx, x.h, ai)
		cancel()
		if x.ctx.Err() != nil {
			return
		}
		if err != nil {
			x.m.relayReserveFailed()
			if x.h.Network().Connectedness(ai.ID) != network.Connected {
				// The relay is unreachable for now: the bootstrap loop
				// reports that and re-dials; reserve once it is back.
				x.log.Debug("relay reservation: relay not connected; waiting for the bootstrap loop", "relay", to, "err", err)
				for x.h.Network().Connectedness(ai.ID) != network.Connected {
					if !x.sleep(reservePoll) {
						return
					}
				}
				continue
			}
			x.rlog.Log(hclog.Warn, "relay reservation "+to, "a bootstrap peer refused a relay slot: peers that cannot dial this node directly cannot reach it through this relay; retrying",
				"relay", to, "retry_in", backoff, "err", err)
			if !x.sleep(backoff) {
				return
			}
			backoff = min(2*backoff, 5*time.Minute)
			continue
		}
		backoff = time.Second
		addrs := circuitAddrs(ai, rsvp)
		st.setCircuits(ai.ID, addrs)
		if !logged {
			x.log.Info("relay slot reserved: peers that cannot dial this node directly reach it through the relay",
				"relay", to, "expires", rsvp.Expiration.UTC().Format(time.RFC3339), "circuit_limit_bytes", rsvp.LimitData,
				"circuit_limit_duration", rsvp.LimitDuration, "addrs", multiaddrsString(addrs))
			logged = true
		}
		refresh := time.NewTimer(time.Until(rsvp.Expiration) * 3 / 4)
		select {
		case <-x.ctx.Done():
			refresh.Stop()
			return
		case <-refresh.C:
		case <-st.lost[ai.ID]:
			refresh.Stop()
			st.setCircuits(ai.ID, nil)
			x.log.Debug("relay connection lost; the slot is gone until it is reserved again", "relay", to)
		}
	}
}

// sleep waits d or until the host stops; it reports whether to go on.
func (x *Host) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-x.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// circuitAddrs are this node's addresses through the relay ai: the relay's
// addresses (those it vouched for in the reservation, else the bootstrap
// addresses this node dialled, which on a private network are the only
// ones it can know) followed by /p2p/<relay>/p2p-circuit.
func circuitAddrs(ai peer.AddrInfo, rsvp *client.Reservation) []ma.Multiaddr {
	suffix, err := ma.NewMultiaddr("/p2p/" + ai.ID.String() + "/p2p-circuit")
	if err != nil {
		return nil
	}
	var out []ma.Multiaddr
	add := func(a ma.Multiaddr) {
		if rest, last := ma.SplitLast(a); last != nil && last.Protocol().Code == ma.P_P2P {
			a = rest
		}
		if isRelayAddr(a) {
			return
		}
		out = append(out, a.Encapsulate(suffix))
	}
	for _, a := range rsvp.Addrs {
		add(a)
	}
	for _, a := range ai.Addrs {
		add(a)
	}
	return ma.Unique(out)
}

func multiaddrsString(as []ma.Multiaddr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, " ")
}

// logDialFailure logs a failed stream open to p, at most once a minute per
// peer: for a failed dial, every address tried and why it failed (counted
// in ppboost_dial_failures_total); otherwise the error (a refused
// protocol, a resource limit, a timeout on an open connection).
func (x *Host) logDialFailure(p peer.ID, protoID string, err error) {
	if x.ctx.Err() != nil {
		return // shutting down
	}
	var de *swarm.DialError
	if !errors.As(err, &de) {
		x.rlog.Log(hclog.Warn, "stream "+p.String(), "could not open a stream to a peer", "peer", p.String(),
			"protocol", protoID, "connected", x.h.Network().Connectedness(p).String(), "err", err)
		return
	}
	x.m.dialFailed()
	var reasons []string
	for _, te := range de.DialErrors {
		reasons = append(reasons, fmt.Sprintf("%s: %v", te.Address, te.Cause))
	}
	if de.Skipped > 0 {
		reasons = append(reasons, fmt.Sprintf("(%d more)", de.Skipped))
	}
	if de.Cause != nil {
		reasons = append(reasons, "cause: "+de.Cause.Error())
	}
	x.rlog.Log(hclog.Warn, "dial "+p.String(), "could not reach a peer", "peer", p.String(), "protocol", protoID,
		"known_addrs", multiaddrsString(x.h.Peerstore().Addrs(p)), "tried", strings.Join(reasons, "; "), "err", err)
}
