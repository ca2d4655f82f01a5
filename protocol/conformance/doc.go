// Package conformance is the protocol's conformance suite: one list of
// subtests that every Transport implementation runs through a Harness. The
// in-memory network runs it in protocol/memnet's tests; node/ runs the same
// list on real libp2p hosts, once with every host in the test process
// (TestConformanceLibp2p) and once with every host in its own OS process
// (TestConformanceProcesses, where Kill is SIGKILL). A transport is done when
// the suite passes on it.
//
// The suite covers the three systems: Subtests (Wang & Chang sessions and
// the secure sums), FedBoostSubtests (federated DPBoost, on the same
// Harness) and PFDSSubtests (PFDS agents and their announcer, through a
// harness's StartPFDS; memnet in protocol/memnet/pfds_test.go, libp2p hosts
// in node/pfds_conformance_test.go). It owns only scenarios and their
// invariants; production code must not import it.
//
// The suite drives the real state machines (protocol.Owner, protocol.User,
// securesum.Party and securesum.Coordinator); it must not re-implement them.
//
// Where it sits: above every system and below the transports' tests: it
// imports the three systems, protocol/role, protocol/securesum and the
// learners, and is run by protocol/memnet's and node's tests (and by
// TestTwoSystemsOneHost*). It must not import a transport: a Harness hands it
// one.
package conformance
