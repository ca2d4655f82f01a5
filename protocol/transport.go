package protocol

import (
	"context"

	"github.com/ppboost/ppboost/protocol/engine"
)

// PeerID names a participant (engine.PeerID). On libp2p it is the string
// form of a peer.ID; on the in-memory network any unique string.
type PeerID = engine.PeerID

// Message is one inbound message handed to the protocol by a Transport
// (engine.Message). Exactly one of Topic (a pubsub message) or Protocol (a
// direct stream message) is set.
type Message = engine.Message

// Transport is the narrow interface the protocol talks to. Implementations:
// the in-memory network in this package and the libp2p host in node/.
//
// Delivery is best effort: a message may be lost, delayed or duplicated, and
// the protocol recovers with timeouts and retries. Implementations must never
// block the caller indefinitely: Publish and Send honour ctx.
type Transport interface {
	// ID is this participant's own peer id.
	ID() PeerID
	// Join subscribes to a topic; its messages are delivered to the handler.
	Join(topic string) error
	// Publish sends data to every subscriber of topic (not back to the sender).
	Publish(ctx context.Context, topic string, data []byte) error
	// Send delivers data to one peer on a direct stream speaking protocolID.
	Send(ctx context.Context, to PeerID, protocolID string, data []byte) error
	// SetHandler installs the function that receives every inbound message
	// (from joined topics and from direct streams of the protocol IDs in
	// Protocols). It is called from transport goroutines; it must not block
	// for long. Call it before Join.
	SetHandler(h func(Message))
	// Close releases resources; it is idempotent.
	Close() error
}

// Verdict is a topic validator's decision.
type Verdict int

const (
	Accept Verdict = iota // deliver and forward
	Reject                // malformed or unauthorized: drop and penalize the author
	Ignore                // stale or duplicate: drop silently (but count it)
)

// Validating is implemented by transports that can drop messages before they
// are forwarded (libp2p gossipsub topic validators). The in-memory network
// implements it too so that tests exercise the same rules.
type Validating interface {
	SetTopicValidator(topic string, v func(from PeerID, data []byte) Verdict) error
}

// MeshWaiter is implemented by transports whose pubsub needs time to form a
// mesh before a publication reaches everyone (gossipsub). WaitTopicPeers
// returns when at least n other peers are known on topic, or ctx ends.
type MeshWaiter interface {
	WaitTopicPeers(ctx context.Context, topic string, n int) error
}

// AddressBook is implemented by transports that need to be told where peers
// listen (libp2p: owners learn each other's addresses from the roster to
// open secure-sum streams). Addrs are transport-specific strings.
type AddressBook interface {
	AddAddrs(p PeerID, addrs []string)
	// ListenAddrs are this node's own dialable addresses.
	ListenAddrs() []string
}

// AddressLookup is implemented by transports that know where the peers
// they talk to listen (libp2p: the peerstore, filled by identify once a
// peer connects). A data user relays what it knows to the roster (the
// federated FedConfig.roster_addrs), so owners that reach only the user can
// dial each other for secure sums. Addrs are full transport-specific
// strings (libp2p: multiaddrs ending in /p2p/<p>); none: nil.
type AddressLookup interface {
	PeerAddrs(p PeerID) []string
}
