package protocol

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/protocol/engine"
)

// Outbox sends on a Transport without blocking the caller: state machines
// hand it messages while holding their lock, and a per-destination worker
// delivers them in order. Used with real transports, whose Send dials and
// may wait up to its timeout; with the in-memory network's deterministic
// loop use Direct instead, which calls the transport inline.
type Outbox struct {
	tr      Transport
	timeout time.Duration
	log     hclog.Logger

	mu     sync.Mutex
	queues map[string][]func(context.Context)
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed bool
}

// Poster is how drivers emit messages (engine.Poster).
type Poster = engine.Poster

// NewOutbox returns an asynchronous poster; every operation gets timeout.
func NewOutbox(tr Transport, timeout time.Duration, log hclog.Logger) *Outbox {
	ctx, cancel := context.WithCancel(context.Background())
	return &Outbox{tr: tr, timeout: timeout, log: log, queues: map[string][]func(context.Context){}, ctx: ctx, cancel: cancel}
}

func (o *Outbox) enqueue(key string, op func(context.Context)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	q, busy := o.queues[key]
	o.queues[key] = append(q, op)
	if busy {
		return
	}
	o.wg.Add(1)
	go o.drain(key)
}

func (o *Outbox) drain(key string) {
	defer o.wg.Done()
	for {
		o.mu.Lock()
		q := o.queues[key]
		if len(q) == 0 || o.closed {
			delete(o.queues, key)
			o.mu.Unlock()
			return
		}
		op := q[0]
		o.queues[key] = q[1:]
		o.mu.Unlock()
		ctx, cancel := context.WithTimeout(o.ctx, o.timeout)
		op(ctx)
		cancel()
	}
}

// Send delivers data to one peer, in order with earlier sends to that peer.
func (o *Outbox) Send(to PeerID, protocolID string, data []byte) {
	o.enqueue("peer:"+string(to), func(ctx context.Context) {
		if err := o.tr.Send(ctx, to, protocolID, data); err != nil {
			o.log.Debug("send failed", "to", to, "protocol", protocolID, "err", err)
		}
	})
}

// Publish publishes on topic, in order with earlier publications there.
func (o *Outbox) Publish(topic string, data []byte) {
	o.enqueue("topic:"+topic, func(ctx context.Context) {
		if err := o.tr.Publish(ctx, topic, data); err != nil {
			o.log.Warn("publish failed", "topic", topic, "err", err)
		}
	})
}

// Close drops queued messages and waits for in-flight ones. Idempotent.
func (o *Outbox) Close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.cancel()
	o.wg.Wait()
}

// Direct posts synchronously; for the in-memory network, whose Send and
// Publish only enqueue.
type Direct struct {
	Tr  Transport
	Log hclog.Logger
}

func (d Direct) Send(to PeerID, protocolID string, data []byte) {
	if err := d.Tr.Send(context.Background(), to, protocolID, data); err != nil {
		d.Log.Debug("send failed", "to", to, "err", err)
	}
}

func (d Direct) Publish(topic string, data []byte) {
	if err := d.Tr.Publish(context.Background(), topic, data); err != nil {
		d.Log.Warn("publish failed", "topic", topic, "err", err)
	}
}

// Drain waits until every queued message has been handed to the transport
// (sent or failed), or ctx ends: a node that exits after its last message
// (an owner's refusal) lets it leave first.
func (o *Outbox) Drain(ctx context.Context) {
	for {
		o.mu.Lock()
		n := len(o.queues)
		o.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}
