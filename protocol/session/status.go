package session

import (
	"context"
	"errors"
	"slices"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/lifecycle"
	"github.com/ppboost/ppboost/protocol/securesum"
)

// What other goroutines read of a User or Owner. The state machines run on
// their loop and nothing else touches their fields; after each event the
// loop publishes the few values the accessors return as an immutable
// status (atomic pointer, replaced only when a value changed: on state
// changes, not per message), and the share validator reads an immutable
// admitted set. Snapshot (observe.go), SumStats and Weights, which copy more
// or change with every message, run on the driver with Call.

// userStatus is what the User's accessors return.
type userStatus struct {
	state   UserState
	phase   lifecycle.Phase
	err     error
	model   *boost.Model
	joined  int
	outcome protocol.Outcome
}

// admitted is who may publish a share now (selected) and whose shares are
// stale (used): the share validator's view, replaced by selectOwners,
// refusals and resume.
type admitted struct {
	selected map[protocol.PeerID]bool
	used     map[protocol.PeerID]bool
}

func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return errors.Is(a, b) && errors.Is(b, a) // == where comparable, never a panic
}

func (u *User) publishStatus() {
	next := userStatus{state: u.state, phase: u.life.Phase(), err: u.err, model: u.us.Model, joined: len(u.joined), outcome: u.outcome}
	if cur := u.status.Load(); cur != nil && cur.state == next.state && cur.phase == next.phase && sameErr(cur.err, next.err) && cur.model == next.model &&
		cur.joined == next.joined && cur.outcome == next.outcome {
		return
	}
	u.status.Store(&next)
}

// publishAdmitted replaces the validator's admitted set after selected or
// used changed (on the driver).
func (u *User) publishAdmitted() {
	u.admit.Store(&admitted{selected: maps(u.selected), used: maps(u.used)})
}

func maps(m map[protocol.PeerID]bool) map[protocol.PeerID]bool {
	out := make(map[protocol.PeerID]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SumStats returns the secure-sum coordinator's counters, read on the driver
// (Call: not from inside one of its protocol events). They change with
// every sum message, so they are not in the published status.
func (u *User) SumStats() (s securesum.Stats) {
	_ = u.run.Call(context.Background(), func() { s = u.coord.Stats() })
	return s
}

// State reports the user's state and its error, if it failed.
func (u *User) State() (UserState, error) {
	s := u.status.Load()
	return s.state, s.err
}

// Model returns the model trained so far.
func (u *User) Model() *boost.Model { return u.status.Load().model }

// Joined returns how many owners have joined.
func (u *User) Joined() int { return u.status.Load().joined }

// Outcome reports how the session ended (Kind 0 while it runs).
func (u *User) Outcome() protocol.Outcome { return u.status.Load().outcome }

// Phase is where the user stands in the session's lifecycle.
func (u *User) Phase() lifecycle.Phase { return u.status.Load().phase }

// Close stops the user's loop (its timers and its worker goroutine); later
// messages are dropped. Then, for a user started by StartUser, the poster
// it made (no message is posted after Close returns); the transport is the
// caller's, closed after this. Idempotent.
func (u *User) Close() error {
	err := u.run.Driver().Close()
	u.rolePost.Close()
	return err
}

// DriverStats is the saturation of the user's driver.
func (u *User) DriverStats() engine.Stats { return u.run.Driver().Stats() }

// ownerStatus is what the Owner's accessors return.
type ownerStatus struct {
	state   OwnerState
	session string
	final   *boost.Model
}

// publishStatus runs after every event: it allocates only when a value
// changed (compared field by field: a composite built first would escape).
func (o *Owner) publishStatus() {
	st := o.state()
	if cur := o.status.Load(); cur != nil && cur.state == st && cur.session == o.session && cur.final == o.final {
		return
	}
	o.status.Store(&ownerStatus{state: st, session: o.session, final: o.final})
}

// SumStats returns the owner's secure-sum counters, read on the driver (as
// User.SumStats).
func (o *Owner) SumStats() (s securesum.Stats) {
	o.call(func() {
		if o.party != nil {
			s = o.party.Stats()
		}
	})
	return s
}

// State reports the owner's state and session.
func (o *Owner) State() (OwnerState, string) {
	s := o.status.Load()
	return s.state, s.session
}

// Final returns the final model once received.
func (o *Owner) Final() *boost.Model { return o.status.Load().final }

// Weights returns a copy of the owner's current sample weights (tests), read
// on the driver: not from inside one of its events.
func (o *Owner) Weights() (w []float64) {
	o.call(func() { w = slices.Clone(o.model.W) })
	return w
}

// Close stops the owner's driver (its timers and its worker goroutine);
// later messages are dropped. Then, for an owner started by StartOwner, the
// poster it made (no message is posted after Close returns); the transport
// is the caller's, closed after this. Idempotent.
func (o *Owner) Close() error {
	err := o.run.Driver().Close()
	o.rolePost.Close()
	return err
}

// DriverStats is the saturation of the owner's driver.
func (o *Owner) DriverStats() engine.Stats { return o.run.Driver().Stats() }
