package node

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	manet "github.com/multiformats/go-multiaddr/net"
)

// Bootstrap re-dial backoff: doubles from minBackoff to maxBackoff, each
// wait jittered to [1/2, 1] of its value so restarted owners do not dial in
// lock step.
const (
	minBackoff    = 100 * time.Millisecond
	maxBackoff    = 5 * time.Second
	bootstrapTag  = "ppboost-bootstrap"
	mdnsDialTries = 3
)

// startBootstrap starts one loop per bootstrap peer that keeps a connection
// to it: it dials with backoff until connected, then waits for the
// connection to drop and dials again, until the host stops. Bootstrap peers
// are protected from the connection manager's trimming.
func (x *Host) startBootstrap(addrs []string, cm connmgr.ConnManager) {
	infos := map[peer.ID]*peer.AddrInfo{}
	var order []peer.ID
	for _, s := range addrs {
		ai, err := peer.AddrInfoFromString(s) // checked by Validate
		if err != nil || ai.ID == x.h.ID() {
			continue
		}
		if prev := infos[ai.ID]; prev != nil {
			prev.Addrs = append(prev.Addrs, ai.Addrs...)
			continue
		}
		infos[ai.ID] = ai
		order = append(order, ai.ID)
	}
	for _, id := range order {
		x.redial[id] = make(chan struct{}, 1)
		cm.Protect(id, bootstrapTag)
	}
	if len(order) > 0 {
		x.h.Network().Notify(&network.NotifyBundle{DisconnectedF: x.disconnected})
	}
	for _, id := range order {
		ai, wake := *infos[id], x.redial[id]
		x.goTracked(func() { x.keepConnected(ai, wake) })
	}
}

// shortLived is how long a bootstrap connection must last to count as a
// success. A peer whose gater refuses this node (its allow-list) completes
// the handshake, so the dial returns nil, and then closes the connection:
// counted as a success, that redialled at once, hundreds of times a second.
const shortLived = 2 * time.Second

func (x *Host) keepConnected(ai peer.AddrInfo, wake <-chan struct{}) {
	backoff := minBackoff
	failures := 0
	var connectedAt time.Time // of the current connection; zero when none
	everConnected := false
	to := ai.ID.String()
	for {
		if x.h.Network().Connectedness(ai.ID) != network.Connected {
			var err error
			if !connectedAt.IsZero() && time.Since(connectedAt) < shortLived {
				// Not admitted, most likely: count it as a failed dial.
				err = fmt.Errorf("%w after %v", errClosedAfterHandshake, time.Since(connectedAt).Round(time.Millisecond))
			} else {
				err = x.dialOnce(ai)
			}
			connectedAt = time.Time{}
			if x.ctx.Err() != nil {
				return
			}
			if err != nil {
				x.boot.set(to, err)
				failures++
				if errors.Is(err, errClosedAfterHandshake) {
					x.rlog.Log(hclog.Warn, "bootstrap not admitted "+to,
						"the bootstrap peer closes the connection right after the handshake: it does not admit this node "+
							"(its allow-list or its connection limits); retrying with backoff", "to", to, "attempt", failures, "err", err)
				} else if failures == 1 {
					x.log.Warn("bootstrap dial failed; retrying with backoff", "to", to, "err", err)
				} else {
					x.log.Debug("bootstrap dial failed", "to", to, "attempt", failures, "err", err)
				}
				wait := backoff/2 + rand.N(backoff/2+1)
				backoff = min(2*backoff, maxBackoff)
				select {
				case <-x.ctx.Done():
					return
				case <-time.After(wait):
				}
				continue
			}
			connectedAt = time.Now()
		}
		if connectedAt.IsZero() { // connected before this loop dialled
			connectedAt = time.Now()
		}
		// The connection counts (and is logged) once it has held for
		// shortLived; a refusal closes it before that.
		held := time.After(max(0, shortLived-time.Since(connectedAt)))
		select {
		case <-x.ctx.Done():
			return
		case <-wake:
			continue
		case <-held:
		}
		if x.h.Network().Connectedness(ai.ID) != network.Connected {
			continue
		}
		x.boot.set(to, nil)
		if !everConnected {
			x.log.Info("connected to bootstrap peer", "to", to, "after_failures", failures)
			everConnected = true
		} else {
			x.rlog.Log(hclog.Info, "bootstrap connected "+to, "connected to bootstrap peer again", "to", to, "after_failures", failures)
		}
		backoff, failures = minBackoff, 0
		select {
		case <-x.ctx.Done():
			return
		case <-wake:
		}
	}
}

var errClosedAfterHandshake = errors.New("connection closed by the peer right after the handshake")

// dialOnce dials ai once. It clears the swarm's own dial backoff for the
// peer first (5 s growing to 5 min after a failure): the callers pace
// their retries themselves, and a bootstrap peer that was down when the
// node started must be reachable as soon as it is up.
func (x *Host) dialOnce(ai peer.AddrInfo) error {
	if sw, ok := x.h.Network().(*swarm.Swarm); ok {
		sw.Backoff().Clear(ai.ID)
	}
	ctx, cancel := x.dialContext()
	defer cancel()
	return x.explainDial(ai, x.h.Connect(ctx, ai))
}

// startMDNS announces the host under cfg.MDNSService and dials the peers it
// finds. mDNS answers only on the interfaces the host listens on: with only
// loopback addresses it finds nobody, so say so.
func (x *Host) startMDNS() error {
	loopbackOnly := true
	for _, a := range x.h.Addrs() {
		if !manet.IsIPLoopback(a) {
			loopbackOnly = false
		}
	}
	if loopbackOnly {
		x.log.Warn("mDNS is on but the node listens on loopback only; listen on 0.0.0.0 to be found on the LAN")
	}
	n := &mdnsNotifee{x: x, seen: map[peer.ID]bool{}}
	svc := mdns.NewMdnsService(x.h, x.cfg.MDNSService, n)
	if err := svc.Start(); err != nil {
		return fmt.Errorf("mdns %q: %w", x.cfg.MDNSService, err)
	}
	x.mdns = svc
	return nil
}

// mdnsNotifee dials each discovered peer once; HandlePeerFound fires again
// and again for the same peer. A peer whose dials all fail is forgotten, so
// its next announcement is tried afresh.
type mdnsNotifee struct {
	x    *Host
	mu   sync.Mutex
	seen map[peer.ID]bool
}

func (n *mdnsNotifee) HandlePeerFound(ai peer.AddrInfo) {
	x := n.x
	if ai.ID == x.h.ID() {
		return
	}
	if len(x.cfg.AllowList) > 0 && !x.allowedPeer(ai.ID) {
		return
	}
	n.mu.Lock()
	dup := n.seen[ai.ID]
	n.seen[ai.ID] = true
	n.mu.Unlock()
	if dup {
		return
	}
	started := x.goTracked(func() {
		var err error
		for try := 0; try < mdnsDialTries && x.ctx.Err() == nil; try++ {
			if err = x.dialOnce(ai); err == nil {
				x.log.Debug("connected to an mDNS peer", "to", ai.ID.String())
				return
			}
		}
		x.log.Debug("mDNS peer unreachable", "to", ai.ID.String(), "err", err)
		n.mu.Lock()
		delete(n.seen, ai.ID)
		n.mu.Unlock()
	})
	if !started {
		n.mu.Lock()
		delete(n.seen, ai.ID)
		n.mu.Unlock()
	}
}

func (x *Host) allowedPeer(p peer.ID) bool {
	for _, s := range x.cfg.AllowList {
		if q, err := peer.Decode(s); err == nil && q == p {
			return true
		}
	}
	return false
}
