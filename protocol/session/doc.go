// Package session owns the boosting session's two roles as state machines:
// the data user (User) and the data owner (Owner). Inbound messages, timers
// and secure-sum completions are events of one driver per role, so every
// transition, including those a timer causes, happens without waiting for
// another message. The user is an engine.Machine run by an engine.Runner
// (user_machine.go: its lifecycle phases, its named timers, its
// coordinators as sub-machines; TestUserTransitions is its table); the
// owner is driven by one protocol.Loop.
//
// The user announces a session, admits joining owners into a roster
// (published in chunks with a digest), selects H unused owners per round,
// aggregates their LDP shares into a base learner (or, with distributed
// privacy, runs one single-instance secure sum of their clipped statistics
// with noise shares and builds the learner from its total), obtains err_m from a
// secure sum (or its validation data), publishes alpha_m, and either accepts
// the learner or retries the round with fresh owners. Every failure ends in
// UserFailed with an error and an Abort published to the owners; a restarted
// user resumes from its checkpoint (UserConfig.Resume) with a fresh attempt:
// no secure sum is ever opened twice with an owner's value.
//
// The owner decides what it releases: it joins only sessions whose mechanism,
// epsilon and minimum sum size fit its own configuration, records every spend
// in its ledger before a share leaves, never releases twice in a session,
// refuses a Select past its deadline, and leaves the session on Final, Abort
// or after the announced idle timeout.
//
// Outside code watches a session through observe.go: Snapshot copies a
// role's state on its loop (bounded, whatever outsiders sent), and
// OwnerConfig.Observe and UserConfig.OnRound hand out events through the
// loop's Notify; nothing reads the state from another goroutine.
//
// StartUser and StartOwner (start.go) are how every caller (the CLI, the
// testnet, protocol/simulate, the conformance suite, the tests) runs a role
// on a transport: protocol/role chooses its clock and poster, and the
// role's Close closes its loop, then that poster.
//
// The package must not do I/O of its own (it posts through protocol.Poster
// and arms timers on its Loop) and must not import libp2p.
//
// Where it sits: one of the three systems, above protocol, engine, lifecycle,
// securesum, role, release, wire and boost; protocol/simulate, conformance,
// status and the CLI use it.
package session
