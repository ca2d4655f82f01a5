// Package release is the door through which an owner's data leaves the
// owner: every release (PROTOCOL.md, "Releases: what leaves an owner") is
// charged here, through one small type per mechanism that computes its ε
// from the mechanism's own parameters (the noise scale and the sensitivity
// it was designed for, or the LDP mechanism's own ε), never from an ε passed
// along beside the data. Gate.Charge writes that ε to the owner's ledger,
// which fsyncs it, and returns only then: the caller sends the bytes after
// Charge returned nil, and not at all otherwise.
//
// The package owns the charge of each mechanism kind and the gate. It must
// not build, perturb or send anything (boost and crypto do that), pick a
// ledger key (the session does: one key per release, PROTOCOL.md's ledger
// key column), or log.
//
// Where it sits: below the roles: it imports the crypto packages' accounting
// and protocol (the Ledger); protocol/lifecycle's release gate charges through
// it, and the systems describe their releases with it. It must not send
// anything: charging is its whole job.
package release
