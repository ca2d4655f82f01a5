package node

import (
	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// allowGater admits only peers on the allow-list. A refused peer's Connect
// may still return nil (refusal happens after the handshake); its streams
// fail.
type allowGater struct {
	allowed map[peer.ID]bool
	refused func(peer.ID)
}

func (g *allowGater) ok(p peer.ID) bool {
	if g.allowed[p] {
		return true
	}
	if g.refused != nil {
		g.refused(p)
	}
	return false
}

func (g *allowGater) InterceptPeerDial(p peer.ID) bool                 { return g.ok(p) }
func (g *allowGater) InterceptAddrDial(p peer.ID, _ ma.Multiaddr) bool { return g.ok(p) }
func (g *allowGater) InterceptAccept(network.ConnMultiaddrs) bool      { return true }
func (g *allowGater) InterceptSecured(_ network.Direction, p peer.ID, _ network.ConnMultiaddrs) bool {
	return g.ok(p)
}
func (g *allowGater) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) {
	return true, 0
}
