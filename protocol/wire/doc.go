// Package wire holds ppboost's wire format: the protobuf messages (generated
// code committed; regenerate with go generate), varint-delimited frames with a
// size cap, and the versioned protocol IDs and topic names.
//
// It must not contain protocol logic: decoding validates shape, the state
// machines in protocol/ validate meaning.
//
// Where it sits: below every system and transport: it imports dataset (the
// schema) only; the systems, securesum, memnet, node, the simulator and the
// CLI encode and decode through it. It must not import a system package: the
// systems convert to and from its types.
package wire
