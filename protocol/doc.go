// Package protocol is the distributed ppboost run: wire messages, the masked
// ring and Shamir secure sums, the owner and data-user sessions as state
// machines, and an in-memory network for tests and large simulations.
//
// Where it sits: the systems (session, fedboost, pfds), securesum,
// lifecycle and role build on it; it talks only to the Transport interface
// and never imports libp2p (node/ adapts Transport to a libp2p host) or a
// system package. Under it sits protocol/engine, the state-machine model and
// the one driver per node (events on a worker goroutine on the real clock,
// inline on the in-memory network's); PeerID, Message, Clock, Timer, Poster
// and RealClock are the engine's, re-exported here.
package protocol
