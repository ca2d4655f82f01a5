// Package memnet is an in-memory network for the protocol's state machines:
// thousands of virtual peers in one process, with per-link delay, jitter,
// loss and duplication, partitions, killed peers and messages dropped on
// demand. It ships with the code: ppboost simulate runs 10^4 owners over it,
// and the conformance suite runs over it in tests.
//
// # Model
//
// Every message delivery and every Clock timer is an event in one queue
// ordered by (due time, sequence number); one driver runs the events one at a
// time, so handlers, validators and timer callbacks of all peers are
// serialized and never run concurrently with each other.
//
//   - Deterministic mode (Options.Deterministic): time is virtual and only
//     moves when the caller drives the queue with Step, RunUntil or RunFor;
//     events run on the caller's goroutine. Send, Publish and AfterFunc called
//     from inside a handler only enqueue. The same seed and the same calls
//     give the identical event order, so a run is a pure function of its
//     inputs. Not safe for two goroutines driving at once (the second gets
//     ErrReentrant), and calls from other goroutines while it runs are safe
//     but make the order depend on the scheduler.
//   - Real-time mode: one goroutine, started by New and stopped by Close,
//     drains the same queue, sleeping until the next event is due on the
//     wall clock. Send and Publish are safe from any number of goroutines.
//
// Delays, jitter, loss and duplication are drawn from one ChaCha8 stream
// derived from Options.Seed, in the order messages are sent. Publish sends one copy of the
// payload to each other subscriber of the topic, in the order they joined;
// each copy crosses its link independently and counts as one message in the
// Stats. The payload is copied once on Send or Publish (callers may reuse
// their buffer); the copies of one publication share that buffer, so
// handlers must treat Message.Data as read-only. A receiver's topic validator
// (SetTopicValidator) runs before its handler and may Reject or Ignore the
// message; both are counted.
//
// Faults: SetLink changes one directed link (delay, jitter, drop and
// duplicate rates), Partition and Heal cut the network into groups, DropNext
// loses the next messages on a link, Kill stops a peer (it neither sends nor
// receives, and the timers of its Endpoint.Clock never fire). Partitions,
// link settings and DropNext apply when a message is sent; a killed receiver
// also loses the messages already in flight to it.
//
// Load: SetProcessing makes a peer a busy machine, whose messages each take
// a processing time before its handler runs, one at a time in arrival order
// (a queue), so the replies of a loaded peer leave late. Prepare (the
// protocol.Preparer of a transport that opens connections) only counts.
//
// # Speed
//
// Measured on the 2-core build machine (go test -bench . -benchtime
// 1000000x, 10^4 endpoints, 1 ms +- 1 ms links): a direct message sent from
// a handler and delivered costs about 0.4 us and one allocation (the payload
// copy), 2.5 million messages per second; with a backlog of 10^6 queued
// messages about 1.1 us each; one 1 KiB publication to 10^4 subscribers
// about 1.7 ms (6 million deliveries per second, two allocations). A queued
// event takes 96 bytes (a 24-byte heap item and a 72-byte slot).
//
// # Must not
//
// memnet never interprets payloads (no protocol logic here: it is a stand-in
// for a network and nothing more), never starts a goroutine per peer or per
// message, and never blocks a sender.
//
// Where it sits: beside node, as the other protocol.Transport: it imports
// protocol and protocol/wire; protocol/simulate and the tests run sessions on
// it. It must not import a system package.
package memnet
