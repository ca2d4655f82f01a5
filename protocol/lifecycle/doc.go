// Package lifecycle is the part of a session that the three systems (Wang &
// Chang, federated DPBoost, PFDS) share: the phases every role goes through
// and which moves between them are valid, the idle and step timers, the one
// reorder buffer for messages that overtake what they depend on, drop
// accounting, the end of a session (final or aborted, with its outcome),
// and the release gate — the only path by which a value derived from an
// owner's data leaves it: charge the ledger (which spends and fsyncs), and
// only then emit the message.
//
// A role embeds a Session and keeps only its own round logic: it calls
// Begin with each input's time, Go to change phase, Heard when its peer
// spoke (IdleExpired when the idle timer fires), Release to send a release, Drop to refuse an input and End to
// finish, and returns Take's effects from its engine.Machine methods.
//
// Where it sits: above engine (effects, timers) and release (the ledger
// charge), below the systems (session, fedboost, pfds). It must not import
// a system package, a transport or the wire format: what a message means
// is the system's business; when, and whether, it may leave is this
// package's.
package lifecycle
