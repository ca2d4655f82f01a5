package engine

import "time"

// PeerID names a participant. On libp2p it is the string form of a peer.ID;
// on the in-memory network any unique string.
type PeerID string

// Message is one inbound message handed to the protocol by a transport.
// Exactly one of Topic (a pubsub message) or Protocol (a direct stream
// message) is set.
type Message struct {
	From     PeerID // authenticated author (pubsub: signed author, not the forwarder)
	Topic    string
	Protocol string
	Data     []byte
}

// Clock abstracts time for the drivers so that the in-memory network can run
// them in virtual time, deterministically.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once after d. On the real clock f runs on its own
	// goroutine; on the in-memory network's virtual clock it runs on the
	// network's event loop, serialized with message delivery.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not run yet and reports whether it did so.
	Stop() bool
}

// RealClock is the wall clock. A driver on it runs its own worker goroutine.
type RealClock struct{}

func (RealClock) Now() time.Time { return time.Now() }

func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Poster is how drivers emit messages. It must not block for long: on a real
// transport it is an asynchronous outbox (protocol.Outbox).
type Poster interface {
	Send(to PeerID, protocolID string, data []byte)
	Publish(topic string, data []byte)
}
