package pfds

import (
	"context"
	"sync"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/role"
)

// Driver binds an Agent to a transport: the agent runs on an engine.Runner
// (its own engine.Driver: a worker goroutine on the real clock, inline on
// the in-memory network's), the transport's handler only queues messages,
// and the topic validator reads the agent's published view without waiting
// for the agent.
type Driver struct {
	agent  *Agent
	run    *engine.Runner
	done   chan struct{}
	finish sync.Once
	post   *role.Post // what Start made (nil from NewDriver): closed after the driver
}

// NewDriver installs the agent's handler and validator on tr and joins the
// topic. post is protocol.Direct on memnet, a protocol.Outbox on libp2p.
// Close stops it.
func NewDriver(agent *Agent, tr protocol.Transport, clock protocol.Clock, post protocol.Poster) (*Driver, error) {
	d := &Driver{agent: agent, done: make(chan struct{})}
	// Inputs the inbox drops are counted in Stats (the agent counts what
	// it refuses itself, in Dropped).
	ed := engine.NewDriver(engine.Config{Clock: clock})
	d.run = engine.NewRunner(ed, agent, post, engine.RunnerOptions{OnNotify: func(n engine.Notify) {
		if rp, ok := n.Value.(RosterPeers); ok {
			connectRoster(tr, rp)
		}
		if n.Event == engine.EventFinal || n.Event == engine.EventAborted {
			d.finish.Do(func() { close(d.done) })
		}
	}})
	tr.SetHandler(func(m protocol.Message) {
		if m.Topic == Topic {
			d.run.Deliver(m)
		}
	})
	if v, ok := tr.(protocol.Validating); ok {
		if err := v.SetTopicValidator(Topic, agent.Validate); err != nil {
			ed.Close()
			return nil, err
		}
	}
	if err := tr.Join(Topic); err != nil {
		ed.Close()
		return nil, err
	}
	return d, nil
}

// Deliver feeds a message the driver's own node authored (pubsub does not
// deliver one's own publications): the announcer's agent uses it.
func (d *Driver) Deliver(from protocol.PeerID, data []byte) {
	d.run.Inject(protocol.Message{From: from, Topic: Topic, Data: data})
}

// Done is closed when the agent reaches StateDone or StateFailed.
func (d *Driver) Done() <-chan struct{} { return d.done }

// Agent runs f with the agent on the driver's loop (not from inside one of
// its events on the in-memory network: it would wait for itself). After
// Close it runs f on the caller's goroutine: no event runs any more.
func (d *Driver) Agent(f func(*Agent)) {
	if err := d.run.Call(context.Background(), func() { f(d.agent) }); err != nil {
		f(d.agent)
	}
}

// Stats is the saturation of the agent's loop.
func (d *Driver) Stats() engine.Stats { return d.run.Driver().Stats() }

// Close stops the timers and the driver; later messages are dropped. Then
// the poster Start made (nothing is posted after Close returns).
// Idempotent.
func (d *Driver) Close() {
	d.run.Driver().Close()
	d.post.Close()
}

// connectRoster gives the transport the roster's addresses and has it
// open connections to the members in the background (what it lacks, it
// skips: the in-memory network needs neither).
func connectRoster(tr protocol.Transport, rp RosterPeers) {
	if book, ok := tr.(protocol.AddressBook); ok {
		for i, addrs := range rp.Addrs {
			if len(addrs) > 0 {
				book.AddAddrs(rp.Peers[i], addrs)
			}
		}
	}
	if pr, ok := tr.(protocol.Preparer); ok {
		pr.Prepare(context.Background(), rp.Peers)
	}
}
