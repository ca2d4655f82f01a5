package fedboost

import (
	"context"
	"errors"
	"slices"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/protocol"
)

// What other goroutines read of a User or Owner: the machines run on their
// drivers, which publishes these immutable values after each event (replaced
// only when one changed); Predictions, which copies more, uses Call.

type userStatus struct {
	state   UserState
	err     error
	outcome protocol.Outcome
	model   *dpboost.Model // once done (OnDone reads it)
}

type ownerStatus struct {
	state OwnerState
	final *dpboost.Model
}

func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return errors.Is(a, b) && errors.Is(b, a) // == where comparable, never a panic
}

// publishStatus runs after every event: it compares before it copies, so
// that an event that changed nothing allocates nothing.
func (u *User) publishStatus() {
	if cur := u.status.Load(); cur != nil && cur.state == u.state && sameErr(cur.err, u.err) && cur.outcome == u.outcome &&
		cur.model == u.model {
		return
	}
	u.status.Store(&userStatus{state: u.state, err: u.err, outcome: u.outcome, model: u.model})
}

// State is the user's state and error.
func (u *User) State() (UserState, error) {
	s := u.status.Load()
	return s.state, s.err
}

// Outcome reports how the session ended (Kind 0 while it runs).
func (u *User) Outcome() protocol.Outcome { return u.status.Load().outcome }

// Close stops the user's driver (timers, worker goroutine), then the
// poster StartUser made (nothing is posted after Close returns).
// Idempotent.
func (u *User) Close() error {
	err := u.run.Driver().Close()
	u.rolePost.Close()
	return err
}

func (o *Owner) publishStatus() {
	next := ownerStatus{state: o.state(), final: o.final}
	if cur := o.status.Load(); cur != nil && *cur == next {
		return // next stays on the stack: an unchanged event allocates nothing
	}
	o.status.Store(&ownerStatus{state: next.state, final: next.final})
}

// State is the owner's state.
func (o *Owner) State() OwnerState { return o.status.Load().state }

// Final is the final model once received.
func (o *Owner) Final() *dpboost.Model { return o.status.Load().final }

// Predictions is a copy of the owner's current predictions F (tests), read
// on the owner's driver: not from inside one of its events.
func (o *Owner) Predictions() (f []float64) {
	_ = o.run.Call(context.Background(), func() { f = slices.Clone(o.F) })
	return f
}

// Close stops the owner's driver (timers, worker goroutine), then the
// poster StartOwner made (nothing is posted after Close returns).
// Idempotent.
func (o *Owner) Close() error {
	err := o.run.Driver().Close()
	o.rolePost.Close()
	return err
}
