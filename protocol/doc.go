// Package protocol is the distributed ppboost run: wire messages, the masked
// ring and Shamir secure sums, the owner and data-user sessions as state
// machines, and an in-memory network for tests and large simulations.
//
// It talks only to the Transport interface and never imports libp2p; node/
// adapts Transport to a libp2p host.
package protocol
