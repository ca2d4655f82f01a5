// Package node puts the protocol on a real network. It owns:
//
//   - Host: a libp2p host (TCP and QUIC, TLS or Noise, yamux) implementing
//     protocol.Transport, protocol.Validating, protocol.MeshWaiter and
//     protocol.AddressBook. Gossipsub with strict signing, flood publishing,
//     raised queues and a message cap; topic validators that authorize the
//     signed author; direct streams for wire.ProtoSession, wire.ProtoRing
//     and wire.ProtoShamir carrying varint-prefixed frames with size caps and
//     deadlines, reset on any error.
//   - Resource and connection limits sized to Config.ExpectedPeers, so a
//     data user's host takes hundreds of owners (see limits.go).
//   - The Ed25519 identity file (GenerateKey, LoadKey), the private-network
//     key and the peer allow-list (a connection gater), bootstrap dialling
//     that re-dials with backoff, and mDNS.
//   - On-disk state: the owner's budget ledger (FileLedger, fsynced before
//     Spend returns, locked while open) and WriteFileAtomic for the data
//     user's checkpoints.
//   - Metrics: Prometheus series on a registry of their own, served by
//     Metrics.Serve.
//
// It must not contain protocol logic: it moves bytes and authenticates
// peers; protocol/ decides what the bytes mean. It imports protocol/ and
// never the reverse.
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
// timeouts. Send returns nil only after the peer's handler took the message
// (the peer closes the stream as an acknowledgement), so one sender's
// direct messages to one peer are handled in order. TCP runs without
// SO_REUSEPORT so that two peers dialling each other at once get two
// connections instead of one broken one (see New).
//
// Measured on 2 shared cores, loopback TCP, both hosts in one process,
// go test -bench -benchtime 3000x -count 3 (Send acknowledged by the peer):
//
//	BenchmarkOneHop/bytes=64        88-90 µs/op  (Send returns after the remote handler took it; a new stream per message)
//	BenchmarkOneHop/bytes=4096      97-99 µs/op
//	BenchmarkRequestResponse       158-165 µs/op (two acknowledged Sends)
//	BenchmarkSecureSumLibp2p ring/n=10 4.7 ms, ring/n=50 15 ms, shamir/n=10 9.5 ms, shamir/n=50 176 ms (-benchtime 5x)
//
// Conformance: the protocol's conformance suite passes on Host with every
// peer in one process (conformance_test.go) and with one OS process per peer
// (procnet_test.go: the test binary re-executed as a child node, driven over
// its stdin/stdout, crashed with SIGKILL). Both are slow and skip under
// -short; .ci/run runs them with -race.
//
// TestManyOwnersOneUser: 200 owner hosts bootstrap to one user host; the
// user publishes once and all 200 owners reply on direct streams within
// about 65 ms of the last owner joining the topic.
package node
