package node

import (
	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// allowGater admits only peers on the allow-list, inbound and outbound.
// Inbound refusal happens after the security handshake (the only point where
// the remote peer id is authenticated), so a refused stranger's Connect may
// return nil; its streams fail because the connection is torn down.
type allowGater struct {
	allowed map[peer.ID]bool
	refused func(p peer.ID, dir string)
}

func (g *allowGater) check(p peer.ID, dir string) bool {
	if g.allowed[p] {
		return true
	}
	g.refused(p, dir)
	return false
}

func (g *allowGater) InterceptPeerDial(p peer.ID) bool { return g.check(p, "outbound") }

// InterceptAddrDial runs per address after InterceptPeerDial admitted p.
func (g *allowGater) InterceptAddrDial(p peer.ID, _ ma.Multiaddr) bool { return g.allowed[p] }

func (g *allowGater) InterceptAccept(network.ConnMultiaddrs) bool { return true }

func (g *allowGater) InterceptSecured(dir network.Direction, p peer.ID, _ network.ConnMultiaddrs) bool {
	if dir == network.DirOutbound {
		return g.allowed[p] // counted at InterceptPeerDial
	}
	return g.check(p, "inbound")
}

func (g *allowGater) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) {
	return true, 0
}
