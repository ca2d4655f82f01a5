// Package conformance is the PFDS session's transport conformance suite:
// the same subtests (the run equals the one-process reference, a killed
// agent, garbage and spoofed messages, duplicate shares) run on the
// in-memory network (memnet_test.go here) and on libp2p hosts
// (node/pfds_conformance_test.go). A transport is done when every subtest
// passes on it.
//
// It owns only test scenarios and their invariants; it must not be
// imported by production code.
package conformance
