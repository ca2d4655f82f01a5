// Package role is the one way a protocol role (a Wang & Chang or fedboost
// user or owner, a PFDS agent) is started on a protocol.Transport: the
// options every system's Start takes (clock, send timeout, drop hook,
// poster override) and the choice of poster.
//
// Which poster a role gets is decided by what the transport is, not by a
// flag at each call site: a transport that implements Inline and says so
// (the in-memory network, whose Send and Publish only queue) is posted to
// directly, on the role's own event, which keeps memnet's runs
// deterministic; every other transport (libp2p, whose Send dials and may
// wait its timeout) gets a protocol.Outbox, closed after the role.
//
// It must not: import a system package (session, fedboost, pfds import it),
// import libp2p or memnet, or start anything itself; the systems' Start
// functions construct and attach their roles.
//
// Where it sits: between the systems and the transports: it imports protocol
// and boost (owner limits); session, fedboost and pfds start their roles
// through it, and the CLI, the experiments and conformance call those Start
// functions.
package role
