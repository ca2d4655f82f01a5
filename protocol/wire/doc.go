// Package wire holds ppboost's wire format: the protobuf messages (generated
// code committed; regenerate with go generate), varint-delimited frames with a
// size cap, and the versioned protocol IDs and topic names.
//
// It must not contain protocol logic: decoding validates shape, the state
// machines in protocol/ validate meaning.
package wire
