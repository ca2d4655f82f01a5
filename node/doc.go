// Package node puts the protocol on a real network: a libp2p host (TCP and
// QUIC, TLS/Noise, yamux) that implements protocol.Transport with gossipsub
// (strict signing, topic validators, size caps) and direct streams
// (versioned protocol IDs, one varint-delimited frame per stream, deadlines,
// Reset on error); the Ed25519 identity file; the private-network key and
// peer allow-list; bootstrap dialling and mDNS; the owner's durable budget
// ledger and the user's atomic checkpoints; Prometheus metrics.
//
// It must not contain protocol logic: it moves bytes and authenticates
// peers; protocol/ decides what the bytes mean.
//
// Private networks: a pnet key works only with TCP (QUIC does not support
// it), so with PSKFile set the node listens on TCP only and drops QUIC
// listen addresses, with a log line saying so.
//
// mDNS finds peers only on interfaces the node listens on: listen on
// 0.0.0.0 (not 127.0.0.1) for LAN discovery.
package node
