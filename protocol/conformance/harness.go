package conformance

import (
	"testing"
	"time"

	"github.com/ppboost/ppboost/protocol"
)

// Peer is one participant of a test cluster.
type Peer struct {
	ID        protocol.PeerID
	Transport protocol.Transport
	// Post sends on Transport without blocking the caller (protocol.Outbox on
	// real transports, protocol.Direct on the deterministic in-memory one).
	Post protocol.Poster
}

// Cluster is a running network of one data user and n owners, plus optional
// extra peers that play attackers.
type Cluster interface {
	User() Peer
	Owners() []Peer
	// Extra adds a peer that is connected like an owner but runs no role.
	Extra(t *testing.T) Peer
	// Ready blocks until pubsub can carry the user's control messages to
	// every owner and the owners' shares to the user (mesh warm-up).
	Ready(t *testing.T)
	// Kill stops a peer abruptly: it neither sends nor receives afterwards.
	Kill(id protocol.PeerID)
	Clock() protocol.Clock
	// Run drives the network until cond holds or timeout passes (virtual
	// time on a deterministic network). cond is called with the network
	// quiescent on deterministic networks and from the test goroutine
	// otherwise, so it must lock whatever it reads.
	Run(cond func() bool, timeout time.Duration) bool
	// Scale tunes timeouts: the one-hop latency order of this network.
	Scale() time.Duration
}

// Harness starts clusters.
type Harness interface {
	Start(t *testing.T, owners int) Cluster
	// MaxOwners is the largest cluster the harness supports in reasonable
	// time; subtests shrink their sizes to it.
	MaxOwners() int
}

// Subtest is one conformance check.
type Subtest struct {
	Name string
	Run  func(t *testing.T, h Harness)
}

// Run runs every subtest against h.
func Run(t *testing.T, h Harness) {
	for _, s := range Subtests {
		t.Run(s.Name, func(t *testing.T) { s.Run(t, h) })
	}
}
