// Package pfds is the PFDS session over the mesh (Fioretto & Van Hentenryck
// 2019): every agent publishes a private decision tree, then a private
// synthetic version of its data labelled by the vote of every tree it
// received, and finally trains on its own data plus everything shared. An
// announcement with cv runs PFDS-cv instead (boost/pfds.VariantParams: a
// random tree with its leaf class counts published, the share made from
// published values only; SPEC.md).
//
// It owns the session's messages (a small self-contained binary format in
// msg.go, not protobuf: three messages whose bodies are the public tree of
// boost/pfds and a few integers, so regenerating protocol/wire was not worth
// it), the topic validator, and the agent's state machine, an
// engine.Machine (Agent.Receive, Agent.Fire: input in, effects out; see
// TestAgentTransitions for its table; its phase, release gate, drops and
// end are a lifecycle.Session's) that Driver runs on an engine.Runner
// bound to a protocol.Transport and a protocol.Clock; Start (start.go) is how
// callers run one, with the clock and poster protocol/role chooses.
//
// The algorithms live in boost/pfds (the one-process oracle this session is
// checked against); the durable budget ledger is the caller's
// protocol.Ledger; the in-memory runner is protocol/simulate's RunPFDS and
// the transport suite protocol/conformance's PFDSSubtests. This package
// must not import libp2p (nor memnet outside its tests), start goroutines
// of its own (the engine's driver runs the agent), or let anything leave
// the node before the ledger recorded the session's full epsilon.
//
// Where it sits: one of the three systems, above protocol, engine,
// lifecycle, role, release, wire and boost/pfds; protocol/simulate,
// conformance and the CLI use it.
package pfds
