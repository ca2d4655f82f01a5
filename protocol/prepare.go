package protocol

import (
	"context"
	"slices"
)

// Preparer is implemented by transports whose first message to a peer pays
// for opening a connection (libp2p: a dial, a TLS or Noise handshake and a
// muxer negotiation, several round trips). Prepare opens connections to
// peers in the background and returns at once; a peer that cannot be
// reached is not an error here (the message that needs it will time out
// and be retried like any lost message). Sessions call it when the roster
// is fixed, for the peers the coming secure sums will talk to, so that the
// first sum does not pay the handshakes. ctx bounds the background work.
//
// It is a separate interface, not part of Transport: a transport without
// connection set-up (the in-memory network) need not implement it.
type Preparer interface {
	Prepare(ctx context.Context, peers []PeerID)
}

// PrepareNotifier is implemented by Preparers that can tell when the
// connections a Prepare asked for are open, or their dials failed or timed
// out: PrepareThen is Prepare, and then runs done (if not nil) once, on a
// goroutine of its own (at once when there is nothing to dial). An owner
// tells the data user it is ready for the first sum (the W&C RosterAck,
// the federated configuration's) only then, so that the first sum does
// not race the handshakes of every owner's prepared connections.
type PrepareNotifier interface {
	PrepareThen(ctx context.Context, peers []PeerID, done func())
}

// PrepareThen prepares peers on p (a PrepareNotifier, a Preparer, or
// neither) and runs done, if not nil, once the dials have ended: after
// them with a PrepareNotifier, at once otherwise (p cannot say, or has
// nothing to prepare with).
func PrepareThen(ctx context.Context, p any, peers []PeerID, done func()) {
	switch t := p.(type) {
	case PrepareNotifier:
		t.PrepareThen(ctx, peers, done)
		return
	case Preparer:
		t.Prepare(ctx, peers)
	}
	if done != nil {
		done()
	}
}

// Unpreparer is implemented by transports whose Prepare keeps the
// connections it opened (libp2p: protected from the connection manager's
// trimming) until the session that asked for them ends: Unprepare says the
// session no longer needs them, and they may be trimmed again. Prepare and
// Unprepare are counted per peer, so two sessions on one host keep a
// shared peer's connection until both have ended.
type Unpreparer interface {
	Unprepare(peers []PeerID)
}

// Expecter is implemented by transports whose connections either end can
// open (libp2p): Expect says that peers will open their connection to this
// node (they prepare it: Preparer) and that this node will send to them on
// protocol proto. A message on proto to one of them that finds no
// connection waits a short while for theirs before dialling, so that the
// pair is not left with two connections, one dialled by each side (both
// ends of a fresh pair send at once in a sum's first round). ctx bounds
// the expectation; a peer that does not dial in time is dialled as usual.
type Expecter interface {
	Expect(ctx context.Context, proto string, peers []PeerID)
}

// AppendNew appends the peers of add that to lacks, in add's order: the
// union of the peers several sums will talk to, each once (Prepare's and
// Expect's arguments).
func AppendNew(to, add []PeerID) []PeerID {
	for _, q := range add {
		if !slices.Contains(to, q) {
			to = append(to, q)
		}
	}
	return to
}
