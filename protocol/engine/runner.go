package engine

import (
	"context"
	"sync/atomic"
)

// Runner runs a Machine on a Driver: inputs become events, and the effects
// each step returns are performed in order (messages through the Poster,
// timers on the driver, notifications to OnNotify), within the same event.
type Runner struct {
	d    *Driver
	m    Machine
	post Poster
	opts RunnerOptions

	timers  map[string]Timer // touched only inside events
	refused atomic.Uint64
}

// RunnerOptions are a Runner's callbacks; they run on the driver's
// goroutine and must not block.
type RunnerOptions struct {
	// OnNotify receives each Notify effect, in order with the events but
	// outside them (Driver.Notify): it may Call the runner to read the
	// machine's state.
	OnNotify func(Notify)
	// OnRefuse receives each error the machine returns (it has counted
	// and logged it itself if it wants to).
	OnRefuse func(error)
}

// NewRunner binds m to d; effects leave through post.
func NewRunner(d *Driver, m Machine, post Poster, opts RunnerOptions) *Runner {
	return &Runner{d: d, m: m, post: post, opts: opts, timers: map[string]Timer{}}
}

// Driver is the runner's driver.
func (r *Runner) Driver() *Driver { return r.d }

// Deliver queues an inbound network message; it never blocks (see
// Driver.Deliver) and reports whether the message was queued.
func (r *Runner) Deliver(m Message) bool {
	return r.d.Deliver(func() { r.apply(r.m.Receive(r.d.Now(), m)) })
}

// Inject queues a message as a local event: one the node authored itself
// and its transport does not hand back (pubsub does not deliver one's own
// publications). Not subject to the inbox bound.
func (r *Runner) Inject(m Message) {
	r.d.Do(func() { r.apply(r.m.Receive(r.d.Now(), m)) })
}

// Call runs f on the driver with the machine, for reading its state from
// outside (see Driver.Call).
func (r *Runner) Call(ctx context.Context, f func()) error { return r.d.Call(ctx, f) }

// Refused counts the inputs the machine refused.
func (r *Runner) Refused() uint64 { return r.refused.Load() }

func (r *Runner) apply(effects []Effect, err error) {
	if err != nil {
		r.refused.Add(1)
		if r.opts.OnRefuse != nil {
			r.opts.OnRefuse(err)
		}
	}
	for _, e := range effects {
		switch e := e.(type) {
		case Send:
			r.post.Send(e.To, e.Protocol, e.Data)
		case Publish:
			r.post.Publish(e.Topic, e.Data)
		case SetTimer:
			r.cancel(e.Name)
			var t Timer
			name := e.Name
			t = r.d.AfterFunc(e.After, func() {
				if r.timers[name] != t {
					return // replaced or cancelled meanwhile
				}
				delete(r.timers, name)
				r.apply(r.m.Fire(r.d.Now(), name))
			})
			r.timers[name] = t
		case CancelTimer:
			r.cancel(e.Name)
		case Notify:
			if f := r.opts.OnNotify; f != nil {
				r.d.Notify(func() { f(e) })
			}
		}
	}
}

func (r *Runner) cancel(name string) {
	if t, ok := r.timers[name]; ok {
		t.Stop()
		delete(r.timers, name)
	}
}
