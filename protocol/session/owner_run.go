package session

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/lifecycle"
)

// The owner on its runner: the machine (owner.go) decides, and what it
// decides that is not a message or a timer leaves as a Notify effect whose
// Value is one of the types below. notify maps them to OwnerConfig's
// callbacks, in order with the events and outside them (an OnNotify
// callback may call Snapshot).

// ownerLeft: the owner left session with outcome out (OnEnd, OnOutcome).
type ownerLeft struct {
	session string
	out     protocol.Outcome
}

// ownerRefusal: the owner would not join, or left, session (OnRefuse).
type ownerRefusal struct{ session, reason string }

// errDealt: an err dealing began (OnErrDealing).
type errDealt struct {
	session        string
	round, attempt int
	exact, noisy   []float64
}

// preparePeers: open connections to dial in the background
// (protocol.Preparer), and wait for expect's dials before dialling them
// (protocol.Expecter; prepare.go).
type preparePeers struct {
	dial   []protocol.PeerID
	expect []expected
	// ack, when not 0, is the roster version whose RosterAck waits for
	// these dials: the runner injects inputPrepared with it once they
	// have ended (protocol.PrepareNotifier; at once without one).
	ack uint32
}

// inputPrepared is the protocol of the local message the runner injects
// when the dials a RosterAck waits for have ended (its data: the roster
// version, 4 bytes big-endian). It never comes from the network.
const inputPrepared = "local:session/prepared"

// expected are peers that dial this owner, which sends to them on proto.
type expected struct {
	proto string
	peers []protocol.PeerID
}

// A final model (OnFinal) is a *boost.Model, an observed event
// (OwnerConfig.Observe) an OwnerEvent. The lifecycle's own EventFinal and
// EventAborted (Value: the outcome) come after ownerLeft and need no
// mapping.

// newRunner puts the owner on its own driver (counting what its inbox
// drops, publishing its status after every event), its effects leaving
// through post.
func (o *Owner) newRunner(clock protocol.Clock, post protocol.Poster) *engine.Runner {
	d := engine.NewDriver(engine.Config{Clock: clock, OnDrop: func(reason string) { o.stats.Inc("loop: " + reason) },
		AfterEvent: o.publishStatus})
	return engine.NewRunner(d, o, post, engine.RunnerOptions{OnNotify: o.notify})
}

// notify runs one Notify effect's callback (on the driver, between events).
// It reads the callbacks when it runs: a test may set them with call.
func (o *Owner) notify(n engine.Notify) {
	switch v := n.Value.(type) {
	case OwnerEvent:
		if f := o.cfg.Observe; f != nil {
			f(v)
		}
	case ownerRefusal:
		if f := o.cfg.OnRefuse; f != nil {
			f(v.session, v.reason)
		}
	case *boost.Model:
		if f := o.cfg.OnFinal; f != nil {
			f(v)
		}
	case ownerLeft:
		if u, ok := o.prep.(protocol.Unpreparer); ok && len(o.prepared) > 0 {
			// The session's connections may be trimmed again.
			u.Unprepare(o.prepared)
			o.prepared = nil
		}
		if f := o.cfg.OnEnd; f != nil {
			f(v.session, v.out.String())
		}
		if f := o.cfg.OnOutcome; f != nil {
			f(v.session, v.out)
		}
	case errDealt:
		if f := o.cfg.OnErrDealing; f != nil {
			f(v.session, v.round, v.attempt, v.exact, v.noisy)
		}
	case preparePeers:
		if e, ok := o.prep.(protocol.Expecter); ok {
			// Before the dials: a peer this owner would dial first
			// and also expects never is one (securesum.ExpectPeers).
			for _, x := range v.expect {
				e.Expect(context.Background(), x.proto, x.peers)
			}
		}
		if o.prep == nil || len(v.dial) == 0 {
			return
		}
		o.prepared = append(o.prepared, v.dial...)
		var done func()
		if v.ack != 0 {
			done = func() {
				o.run.Inject(engine.Message{From: o.self, Protocol: inputPrepared, Data: binary.BigEndian.AppendUint32(nil, v.ack)})
			}
		}
		protocol.PrepareThen(context.Background(), o.prep, v.dial, done)
	}
}

// call runs f on the owner's driver, serialized with its events (not from
// inside one of them on the in-memory network: it would wait for itself).
// After Close it returns without running f.
func (o *Owner) call(f func()) { _ = o.run.Call(context.Background(), f) }

// inputClock is the time of the input being applied: what the machine's
// rate-limited log counts in (it arms no timer).
type inputClock struct{ lc *lifecycle.Session }

func (c inputClock) Now() time.Time { return c.lc.Now() }

func (c inputClock) AfterFunc(time.Duration, func()) protocol.Timer { return stoppedTimer{} }

type stoppedTimer struct{}

func (stoppedTimer) Stop() bool { return false }
