package pfds

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/role"
)

// Start is the one way to run a PFDS agent on a transport (as
// session.StartUser): the clock is role.Resolve's (WithClock, else the
// transport's, else the wall clock), the poster role.NewPost's (direct on
// an inline transport, an Outbox otherwise, closed by Close after the
// agent's loop), and the agent is installed on tr (NewDriver: handler,
// validator, topic). log receives the poster's failures (nil: none). The
// agent counts what it refuses in Agent.Dropped; WithDropHook's hook sees
// each of those reasons.
func Start(tr protocol.Transport, agent *Agent, log hclog.Logger, opts ...role.Option) (*Driver, error) {
	o := role.Resolve(tr, nil, opts...)
	if o.OnDrop != nil {
		agent.Dropped.SetHook(o.OnDrop)
	}
	post := role.NewPost(tr, o, log)
	d, err := NewDriver(agent, tr, o.Clock, post)
	if err != nil {
		post.Close()
		return nil, err
	}
	d.post = post
	return d, nil
}

// Drain waits until the poster Start made has handed every queued message
// to the transport, or ctx ends.
func (d *Driver) Drain(ctx context.Context) { d.post.Drain(ctx) }
