// Package release is the door through which an owner's data leaves the
// owner: every release (PROTOCOL.md, "Releases: what leaves an owner") is
// charged here, through one small type per mechanism that computes its ε
// from the mechanism's own parameters (the noise scale and the sensitivity
// it was designed for, or the LDP mechanism's own ε), never from an ε passed
// along beside the data. Gate.Charge writes that ε to the owner's ledger,
// which fsyncs it, and returns only then: the caller sends the bytes after
// Charge returned nil, and not at all otherwise.
//
// Values (value.go) is the gate's memory: it hands out one value per
// canonical Name — charged first, its noise drawn from a stream keyed by the
// owner's secret and the name, bound by digest in the ledger — so the same
// name always yields the same value (PROTOCOL.md, "A release is a value").
// The value itself is made by the caller's function from that stream.
//
// The package owns the charge of each mechanism kind, the gate and its
// memory. It must not build, perturb or send anything itself (boost and
// crypto do that, in the callers' make functions), pick a ledger key or a
// name (the roles do, from their own state), or log.
//
// Where it sits: below the roles: it imports the crypto packages' accounting
// and protocol (the Ledger); protocol/lifecycle's release gate charges through
// it, and the systems describe their releases with it. It must not send
// anything: charging is its whole job.
package release
