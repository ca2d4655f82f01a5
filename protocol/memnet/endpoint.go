package memnet

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/ppboost/ppboost/protocol"
)

// Endpoint is one peer's view of the network: a protocol.Transport that also
// implements protocol.Validating and protocol.MeshWaiter. Its fields are
// guarded by the network's mutex.
type Endpoint struct {
	net        *Network
	id         protocol.PeerID
	handler    func(protocol.Message)
	validators map[string]func(protocol.PeerID, []byte) protocol.Verdict
	stats      Stats
	group      int   // partition group, 0 = none
	killed     bool  // Kill or Close: sends nothing, receives nothing
	pausedTo   int64 // Pause: deliveries and timers wait until this virtual time
	closed     bool  // Close: Send and Publish return ErrClosed
	// SetProcessing: each delivery occupies the peer for processing
	// (+ uniform [0, procJitter)); deliveries queue behind busyTo.
	processing, procJitter time.Duration
	busyTo                 int64
	prepared               int // peers named in Prepare calls
	unprepared             int // peers named in Unprepare calls
}

var (
	_ protocol.Transport  = (*Endpoint)(nil)
	_ protocol.Validating = (*Endpoint)(nil)
	_ protocol.MeshWaiter = (*Endpoint)(nil)
	_ protocol.Preparer   = (*Endpoint)(nil)
	_ protocol.Unpreparer = (*Endpoint)(nil)
)

// Prepare implements protocol.Preparer: links need no set-up, so it only
// counts the peers it was asked for (Network.Prepared), for tests that
// check a session prepares the connections its sums need.
func (e *Endpoint) Prepare(_ context.Context, peers []protocol.PeerID) {
	e.net.mu.Lock()
	e.prepared += len(peers)
	e.net.mu.Unlock()
}

// Unprepare implements protocol.Unpreparer: it counts the peers a session
// that ended released (Network.Unprepared).
func (e *Endpoint) Unprepare(peers []protocol.PeerID) {
	e.net.mu.Lock()
	e.unprepared += len(peers)
	e.net.mu.Unlock()
}

// ID is the peer's id.
func (e *Endpoint) ID() protocol.PeerID { return e.id }

// Clock is the network's clock with timers owned by this peer: once the peer
// is killed or closed, its pending and future AfterFunc callbacks never run.
func (e *Endpoint) Clock() protocol.Clock { return clock{n: e.net, owner: e} }

// SetHandler installs the function that receives every message for this
// peer (from joined topics and direct sends). It runs on the network's
// driver, one message at a time across the whole network, and must not
// block; Message.Data is shared with other receivers and must not be
// modified.
func (e *Endpoint) SetHandler(h func(protocol.Message)) {
	e.net.mu.Lock()
	e.handler = h
	e.net.mu.Unlock()
}

// Join subscribes the peer to topic. Joining twice is a no-op.
func (e *Endpoint) Join(topicName string) error {
	if topicName == "" {
		return fmt.Errorf("%w: empty topic", ErrBadArgument)
	}
	n := e.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || e.closed {
		return ErrClosed
	}
	t := n.topics[topicName]
	if t == nil {
		t = &topic{members: map[*Endpoint]struct{}{}}
		n.topics[topicName] = t
	}
	if _, ok := t.members[e]; ok {
		return nil
	}
	t.members[e] = struct{}{}
	t.subs = append(t.subs, e)
	close(n.topicCh)
	n.topicCh = make(chan struct{})
	return nil
}

// SetTopicValidator installs v as this peer's validator of inbound messages
// on topic (nil removes it). v runs on the network's driver before the
// handler, with the authenticated author.
func (e *Endpoint) SetTopicValidator(topicName string, v func(protocol.PeerID, []byte) protocol.Verdict) error {
	if topicName == "" {
		return fmt.Errorf("%w: empty topic", ErrBadArgument)
	}
	e.net.mu.Lock()
	defer e.net.mu.Unlock()
	if v == nil {
		delete(e.validators, topicName)
		return nil
	}
	if e.validators == nil {
		e.validators = map[string]func(protocol.PeerID, []byte) protocol.Verdict{}
	}
	e.validators[topicName] = v
	return nil
}

// check refuses what no network would accept: a done context, a payload
// over the cap.
func (e *Endpoint) check(ctx context.Context, data []byte) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrBadArgument)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memnet: %s: %w", e.id, err)
	}
	if len(data) > e.net.opts.MaxMessage {
		return fmt.Errorf("%w: %d > %d bytes", ErrTooLarge, len(data), e.net.opts.MaxMessage)
	}
	return nil
}

// Publish sends a copy of data to every other subscriber of topic, in the
// order they joined. It never blocks. A killed peer's publications vanish
// without an error, as they would from a dead process.
func (e *Endpoint) Publish(ctx context.Context, topicName string, data []byte) error {
	if topicName == "" {
		return fmt.Errorf("%w: empty topic", ErrBadArgument)
	}
	if err := e.check(ctx, data); err != nil {
		return err
	}
	n := e.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || e.closed {
		return ErrClosed
	}
	payload := n.payloads.of(data)
	t := n.topics[topicName]
	if e.killed || t == nil {
		return nil
	}
	for _, to := range t.subs {
		if to != e {
			n.transmit(e, to, true, topicName, payload)
		}
	}
	return nil
}

// Send sends a copy of data to one peer on protocolID. It never blocks.
// Messages to killed peers are lost silently (as on a network); a peer that
// never joined is ErrUnknownPeer.
func (e *Endpoint) Send(ctx context.Context, to protocol.PeerID, protocolID string, data []byte) error {
	if protocolID == "" {
		return fmt.Errorf("%w: empty protocol id", ErrBadArgument)
	}
	if err := e.check(ctx, data); err != nil {
		return err
	}
	n := e.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || e.closed {
		return ErrClosed
	}
	payload := n.payloads.of(data)
	dst := n.peers[to]
	if dst == nil {
		return fmt.Errorf("%w: %s", ErrUnknownPeer, to)
	}
	if !e.killed {
		n.transmit(e, dst, false, protocolID, payload)
	}
	return nil
}

// WaitTopicPeers returns once at least want other live peers joined topic.
// Joins take effect at once on this network, so in deterministic mode (where
// waiting could only deadlock the driver) it checks once and returns
// ErrNotEnoughPeers if there are too few; in real-time mode it waits for
// joins until ctx ends.
func (e *Endpoint) WaitTopicPeers(ctx context.Context, topicName string, want int) error {
	n := e.net
	for {
		n.mu.Lock()
		have := 0
		if t := n.topics[topicName]; t != nil {
			for _, s := range t.subs {
				if s != e && !s.killed {
					have++
				}
			}
		}
		changed, closed := n.topicCh, n.closed
		n.mu.Unlock()
		if have >= want {
			return nil
		}
		if closed {
			return ErrClosed
		}
		if n.opts.Deterministic {
			return fmt.Errorf("%w: %s has %d, want %d", ErrNotEnoughPeers, topicName, have, want)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s has %d, want %d: %w", ErrNotEnoughPeers, topicName, have, want, ctx.Err())
		case <-n.stop:
			return ErrClosed
		case <-changed:
		}
	}
}

// Close leaves the network as if killed; later Send and Publish calls return
// ErrClosed. Idempotent.
func (e *Endpoint) Close() error {
	e.net.mu.Lock()
	e.killed, e.closed = true, true
	e.net.mu.Unlock()
	return nil
}

func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// payloadCache hands out the network's copy of what a peer sends: a
// message is copied when it is sent (the sender may reuse its buffer), and
// the same bytes sent again, to another peer or forwarded as received,
// travel as the copy made before. A user that sends one control message
// to each of 10^5 owners, or a roster chunk that goes down a tree, costs
// one copy, and the receivers of a simulation decode it once (Sharing
// keys by the delivered bytes' identity). Receivers never modify what
// they get (a publication was always one copy for every subscriber).
type payloadCache struct {
	byKey map[payloadKey][]byte
	order []payloadKey
}

// payloadKey names a byte slice by its first byte's address and length.
type payloadKey struct {
	first *byte
	n     int
}

// maxPayloads bounds the cache: more than the distinct messages one peer
// sends in a burst (an attempt's few control messages, a roster's chunks).
const maxPayloads = 256

// of returns the network's immutable copy of data: a copy made before when
// data is that copy or its source with the same bytes, a new one otherwise.
func (c *payloadCache) of(data []byte) []byte {
	if len(data) == 0 {
		return nil
	}
	k := payloadKey{&data[0], len(data)}
	if p, ok := c.byKey[k]; ok && (&p[0] == &data[0] || bytes.Equal(p, data)) {
		return p
	}
	p := clone(data)
	if c.byKey == nil {
		c.byKey = make(map[payloadKey][]byte, maxPayloads)
	}
	c.put(k, p)
	c.put(payloadKey{&p[0], len(p)}, p)
	return p
}

func (c *payloadCache) put(k payloadKey, p []byte) {
	if _, ok := c.byKey[k]; !ok {
		if len(c.order) >= maxPayloads {
			delete(c.byKey, c.order[0])
			c.order = c.order[1:]
		}
		c.order = append(c.order, k)
	}
	c.byKey[k] = p
}

// PostsInline implements role.Inline: Send and Publish only queue on the
// network's event loop, so roles post to an Endpoint directly.
func (e *Endpoint) PostsInline() bool { return true }
