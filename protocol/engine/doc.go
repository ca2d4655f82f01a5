// Package engine is the bottom layer of ppboost's protocol run: the model
// every role is written in and the one driver that runs it on a node.
//
// The model (machine.go): a Machine takes (now, message) and (now, timer)
// and returns Effects — send to a peer, publish on a topic, set or cancel a
// named timer, notify the application — as plain values, or an error when
// it refuses the input (its state then unchanged). Step feeds it one Input
// without any goroutine, so a table test reads (state, input) →
// (state', effects, error) row by row, as drand's DKG tests do.
//
// The driver (driver.go): one Driver per node serializes every event —
// inbound network messages, timers, local calls and continuations — and
// runs them one at a time, in the order they were queued. On a real
// transport events run on the driver's own worker goroutine, never on the
// transport's: Deliver never blocks (a full inbox drops the message and
// counts it), Close stops the worker and the timers, and Stats reports the
// saturation (depth, high-water mark, drops, time busy) from any goroutine.
// On the in-memory network's virtual clock the driver runs inline on the
// caller's goroutine, deterministically. Runner (runner.go) binds a Machine
// to a Driver and performs its effects through a Poster.
//
// Where it sits: engine imports no other ppboost package. protocol re-exports
// its vocabulary (PeerID, Message, Clock, Timer, Poster, RealClock);
// protocol/lifecycle builds the shared session lifecycle on Out; every role
// of the three systems (the Wang & Chang and fedboost users and owners, the
// PFDS agent) is a Machine run by a Runner, and the secure-sum harnesses
// outside a role drive parties and coordinators on a Driver directly.
//
// What it must not do: import libp2p or any transport (effects leave through
// a Poster, messages arrive through Deliver), hold protocol state of its own
// beyond timers and the queue, block a transport goroutine, or read the wall
// clock for protocol decisions (time comes from the Clock; the wall clock
// only measures Stats.Busy).
package engine
