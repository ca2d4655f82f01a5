// Package node puts the protocol on a real network. It owns:
//
//   - Host: a libp2p host (TCP and QUIC, TLS or Noise, yamux) implementing
//     protocol.Transport, protocol.Validating, protocol.MeshWaiter and
//     protocol.AddressBook. Gossipsub with strict signing, flood publishing,
//     raised queues and a message cap; topic validators that authorize the
//     signed author; long-lived direct streams for every system's
//     protocols (wire.DirectProtocols: W&C's session, ring and Shamir,
//     federated DPBoost's Shamir; protocol.Mux lets several roles share a
//     host) carrying varint-prefixed frames
//     with size caps and per-frame deadlines, reset on a malformed frame.
//   - Resource and connection limits sized to Config.ExpectedPeers, so a
//     data user's host takes hundreds of owners (see limits.go), and
//     inbound limits against anyone who can connect (InboundLimits,
//     inbound.go): streams per peer, frame buffers that grow only as bytes
//     arrive under per-peer and total byte budgets, a rate floor, a
//     per-peer session-message rate; drops are counted and logged at most
//     once a minute per cause (ratelog.go).
//   - NAT traversal: circuit relay v2, AutoNAT, DCUtR (see below).
//   - Diagnosis of failed dials: a connection the peer closes right after
//     the handshake (its allow-list) is a failed bootstrap dial with
//     backoff; a private-network key mismatch is named (psk.go).
//   - The Ed25519 identity file (GenerateKey, LoadKey), the private-network
//     key and the peer allow-list (a connection gater), bootstrap dialling
//     that re-dials with backoff, and mDNS.
//   - Metrics: Prometheus series on a registry of their own, served by
//     Metrics.Serve.
//
// It must not contain protocol logic: it moves bytes and authenticates
// peers; protocol/ decides what the bytes mean. It imports protocol/ and
// never the reverse.
//
// NAT traversal (nat.go, NATConfig; on by default): every node runs the
// relay transport, AutoNAT v1 and v2 and DCUtR hole punching. The data user
// (NAT.RelayService = RelayOn) serves circuit relay v2; a node with bootstrap
// peers reserves a slot on each at once and advertises its circuit
// addresses in Addrs (so in the session roster), and AddAddrs adds a route
// through its own relays for every roster peer, so a roster entry made
// before the peer's slot still works. Dials hold relay addresses back by
// NAT.RelayDelay behind any direct address. The relay carries, per
// circuit, at most NAT.CircuitBytes each way (1 MiB) for at most
// NAT.CircuitDuration (10 min), then resets it; it holds ExpectedPeers+16
// slots (any number per IP) and ExpectedPeers (at least 16) circuits per
// peer. What crosses it: direct-protocol streams only, since Send opts in
// to limited connections (network.WithAllowLimitedConn) and gossipsub does
// not, so the mesh stays on direct connections; plus libp2p's own identify,
// ping and DCUtR. Hole punching needs public addresses (libp2p's
// manet.IsPublicAddr) and goes over QUIC (TCP has no SO_REUSEPORT, see
// New); an owner behind a NAT punches from the address the relay observed
// (identify), and once a direct connection to a peer is open its relayed
// ones are closed (closeRelayed: they would hold a relay circuit and carry
// identify's pushes). Every connection relayed through a bootstrap peer
// is charged to that peer's IP address by libp2p's resource manager, so the
// bootstrap peers' addresses are exempt from its per-IP connection cap (8)
// and rate limit (relayPrefixes): without that an owner behind a NAT could
// open or accept only 8 of a Shamir committee's relayed connections. Failed
// dials are logged with every address and reason, once a minute per peer;
// Metrics count direct and relayed connections, hole punches (at both
// ends), relay slots and the bytes the relay service carried.
//
// Hole punching runs, in virtual time, on node/simnat (a simulated internet
// with NAT routers; WithPacketConnWrapper and WithQUICSourceIP put a host
// on it, AutoNAT's own dial-back hosts included, so NAT settings stay at
// their defaults there): TestSimHolePunch (two owners behind two NATs end
// direct; behind symmetric NATs they stay relayed) and
// experiment.TestWANSimNAT (20 owners behind 10 NATs: 180 of 180 cross-NAT
// pairs direct, the relay carries no byte of the sums). Measured on 2 shared cores (load 9-12 from
// other work, so noisy), all hosts in one process on loopback TCP:
//
//	go test -run XXX -bench RelayedHop -benchtime 3000x -count 3 ./node
//	BenchmarkRelayedHop/direct    154-257 µs/op (an acknowledged 64-byte Send)
//	BenchmarkRelayedHop/relayed   238-279 µs/op (the same through the relay)
//	go test -run XXX -bench NewHost -benchtime 30x -count 2 ./node
//	BenchmarkNewHost/nat=on       16-30 ms/op (AutoNAT v2's second host: about 15 ms)
//	BenchmarkNewHost/nat=off      4.7-5.1 ms/op
//
// Private networks: a pnet key works only with TCP (QUIC does not support
// it), so with PSKFile set the node listens and dials on TCP only and drops
// QUIC listen addresses with a log line.
//
// mDNS answers only on the interfaces the node listens on: listen on
// 0.0.0.0 (not 127.0.0.1) for LAN discovery.
//
// Delivery is best effort, as protocol.Transport says. Publish waits at most
// PublishWait for a first topic peer and never for the mesh (see Publish);
// callers wait with WaitTopicPeers and rely on protocol replies and
// timeouts. Direct messages travel on long-lived streams, one per (peer,
// protocol), written by one goroutine per destination in Send's order;
// frames queued back to back are written together, and nothing waits for
// the receiver (outbound.go). Send returns nil once its frame is queued on
// an open stream; a Send that finds none waits for it to open, so dial,
// protocol and allow-list failures reach the caller, while a frame lost to
// a later write failure is counted and left to the protocol's timeouts. The
// receiver reads frame after frame (stream.go): the rate floor and the
// frame timeout run from a frame's first byte, and a stream may idle
// between frames for Inbound.Idle. TCP runs without SO_REUSEPORT so that
// two peers dialling each other at once get two connections instead of one
// broken one (see New).
//
// Wire cost and per-hop latency, measured through a counting (and
// delaying) proxy per host (wirebytes_bench_test.go; RESULTS.md has the
// before/after table):
//
//	go test -run XXX -bench 'ShamirWireBytes|DirectWire' -benchtime 10x ./node
//
// A direct message costs one one-way delay (it cost a round trip before:
// the sender waited for the receiver's close), and a burst of frames to
// one peer costs about 1.2x its payload on TCP (yamux header and TLS record
// shared by the batch).
//
// Measured on 2 shared cores, loopback TCP, both hosts in one process:
//
//	go test -run XXX -bench OneHop -benchtime 3000x -count 3 ./node
//	BenchmarkOneHop/bytes=64          72-76 µs/op (before: a new stream per message, acknowledged)
//	BenchmarkOneHop/bytes=4096        82-86 µs/op (before)
//	BenchmarkRequestResponse          121-165 µs/op (before: two acknowledged Sends)
//	go test -run XXX -bench SecureSumLibp2p -benchtime 20x -count 2 ./node (vector of 2; before)
//	ring   n=10 / 50 / 100:  3.6 / 15.4 / 35.8 ms = 2.4x / 2.1x / 2.4x of 2n one-hop latencies
//	shamir n=10 / 50 / 100:  6.3-7.8 / 145-177 / 320-388 ms (c = 32, t = 17)
//
// TestManyOwnersOneUser: 200 owner hosts bootstrap to one user host; the
// user publishes once and all 200 owners reply on direct streams within
// about 65 ms of the last owner joining the topic.
//
// Where it sits: the only package that imports libp2p: it implements
// protocol.Transport (and the optional Validating, AddressBook, Preparer) on a
// libp2p host, above protocol, protocol/wire, store and node/netem; the CLI
// and the experiments create nodes. It must not import a system package
// (session, fedboost, pfds) or decide anything about a session.
package node
