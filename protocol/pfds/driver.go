package pfds

import (
	"sync"

	"github.com/ppboost/ppboost/protocol"
)

// Driver binds an Agent to a transport and a clock: inbound messages and
// timers call the agent's transition functions under one lock, in the
// order they happen, and the driver performs the resulting actions
// (publish through the Poster, arm timers on the Clock). On the in-memory
// network's deterministic mode everything runs on the caller's goroutine.
type Driver struct {
	mu     sync.Mutex
	agent  *Agent
	clock  protocol.Clock
	post   protocol.Poster
	timers []protocol.Timer
	done   chan struct{}
	closed bool
}

// NewDriver installs the agent's handler and validator on tr and joins the
// topic. post is protocol.Direct on memnet, a protocol.Outbox on libp2p.
func NewDriver(agent *Agent, tr protocol.Transport, clock protocol.Clock, post protocol.Poster) (*Driver, error) {
	d := &Driver{agent: agent, clock: clock, post: post, done: make(chan struct{})}
	tr.SetHandler(d.handle)
	if v, ok := tr.(protocol.Validating); ok {
		if err := v.SetTopicValidator(Topic, d.validate); err != nil {
			return nil, err
		}
	}
	if err := tr.Join(Topic); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Driver) validate(from protocol.PeerID, data []byte) protocol.Verdict {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.agent.Validate(from, data)
}

func (d *Driver) handle(m protocol.Message) {
	if m.Topic != Topic {
		return
	}
	d.apply(func() []Action { return d.agent.Handle(m.From, m.Data) })
}

// Deliver feeds a message the driver's own node authored (pubsub does not
// deliver one's own publications): the announcer's agent uses it.
func (d *Driver) Deliver(from protocol.PeerID, data []byte) {
	d.apply(func() []Action { return d.agent.Handle(from, data) })
}

func (d *Driver) apply(step func() []Action) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	acts := step()
	for _, a := range acts {
		if a.Timer > 0 {
			s, retry := a.TimerOf, a.Retry
			d.timers = append(d.timers, d.clock.AfterFunc(a.Timer, func() {
				d.apply(func() []Action {
					if retry {
						return d.agent.Retry()
					}
					return d.agent.Timeout(s)
				})
			}))
		}
	}
	if s := d.agent.State(); s == StateDone || s == StateFailed {
		d.closeDoneLocked()
	}
	d.mu.Unlock()
	for _, a := range acts {
		if a.Publish != nil {
			d.post.Publish(Topic, a.Publish)
		}
	}
}

func (d *Driver) closeDoneLocked() {
	select {
	case <-d.done:
	default:
		close(d.done)
	}
}

// Done is closed when the agent reaches StateDone or StateFailed.
func (d *Driver) Done() <-chan struct{} { return d.done }

// Agent runs f with the agent under the driver's lock.
func (d *Driver) Agent(f func(*Agent)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(d.agent)
}

// Close stops the timers; later events are ignored. Idempotent.
func (d *Driver) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	d.closed = true
	for _, t := range d.timers {
		t.Stop()
	}
}
