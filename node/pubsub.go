package node

import (
	"context"
	"fmt"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ppboost/ppboost/protocol"
)

// envelopeReserve is the room Publish leaves in cfg.MaxMessage for
// gossipsub's signed envelope around the payload: author (40 bytes),
// sequence number (10), Ed25519 signature (66), field tags and lengths
// (about 15) and the topic name, which is added separately. 512 bytes is
// about four times what is needed.
const envelopeReserve = 512

// How often WaitTopicPeers and Publish look at a topic's peers.
const (
	waitPoll    = 20 * time.Millisecond
	publishPoll = 2 * time.Millisecond
)

// topic returns the joined topic handle for name.
func (x *Host) topic(name string) (*pubsub.Topic, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil, fmt.Errorf("topic %s: %w", name, ErrClosed)
	}
	if t := x.topics[name]; t != nil {
		return t, nil
	}
	t, err := x.ps.Join(name)
	if err != nil {
		return nil, fmt.Errorf("topic %s: join: %w", name, err)
	}
	x.topics[name] = t
	return t, nil
}

// Join subscribes to topic; its messages, except the node's own, reach the
// handler as protocol.Message{From: signed author, Topic, Data}. Joining
// twice is a no-op. Call SetHandler first: messages that arrive with no
// handler are dropped and counted.
func (x *Host) Join(name string) error {
	t, err := x.topic(name)
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return fmt.Errorf("join %s: %w", name, ErrClosed)
	}
	if x.subs[name] != nil {
		return nil
	}
	sub, err := t.Subscribe(pubsub.WithBufferSize(x.size.queue))
	if err != nil {
		return fmt.Errorf("join %s: subscribe: %w", name, err)
	}
	x.subs[name] = sub
	self := x.h.ID()
	x.goTrackedLocked(func() {
		for {
			msg, err := sub.Next(x.ctx)
			if err != nil {
				return // cancelled, closed, or New's context ended
			}
			author := msg.GetFrom()
			if author == self {
				continue
			}
			x.deliver(protocol.Message{From: protocol.PeerID(author.String()), Topic: name, Data: msg.Data}, name)
		}
	})
	return nil
}

// PublishCap is the largest payload Publish accepts on topic.
func (x *Host) PublishCap(topic string) int {
	return x.cfg.MaxMessage - envelopeReserve - len(topic)
}

// Publish signs data and sends it to every peer known on topic (flood
// publishing). Oversized payloads are refused with ErrTooLarge: gossipsub
// would drop them without an error.
//
// Readiness. A publication reaches only the peers whose subscription this
// node has already heard of; gossipsub returns nil either way. If the topic
// has no peer yet but the node is connected to someone, Publish first waits
// up to cfg.PublishWait (polling every few milliseconds) for one: that
// covers an owner publishing its share moments after the data user
// subscribed, while the subscription may still be in flight. It then
// publishes regardless and returns nil, as the best-effort Transport
// contract allows. With no connections at all there is nobody to wait for
// (the data user's announcements before any owner has dialled it), so it
// does not wait. We do not use pubsub.WithReadiness(MinTopicSize(1)): it
// polls every 200 ms and blocks until ctx ends, which would hold an Outbox
// queue for its whole timeout. Callers that need particular peers wait for
// them with WaitTopicPeers (the data user does before a session starts) and
// rely on protocol replies and timeouts.
func (x *Host) Publish(ctx context.Context, name string, data []byte) error {
	if limit := x.PublishCap(name); len(data) > limit {
		return fmt.Errorf("publish %s: %d bytes exceed the %d-byte cap: %w", name, len(data), limit, ErrTooLarge)
	}
	t, err := x.topic(name)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	if len(t.ListPeers()) == 0 && x.cfg.PublishWait > 0 && x.ConnectedPeers() > 0 {
		x.awaitFirstPeer(ctx, t)
	}
	if err := t.Publish(ctx, data); err != nil {
		return fmt.Errorf("publish %s: %w", name, err)
	}
	x.m.MessageSent(name)
	if x.log.IsDebug() && len(t.ListPeers()) == 0 {
		x.log.Debug("published on a topic with no peers: nobody receives it", "topic", name, "bytes", len(data))
	}
	return nil
}

// awaitFirstPeer polls t until it has a peer, cfg.PublishWait passes, ctx
// ends or the node stops.
func (x *Host) awaitFirstPeer(ctx context.Context, t *pubsub.Topic) {
	timer := time.NewTimer(x.cfg.PublishWait)
	defer timer.Stop()
	tick := time.NewTicker(publishPoll)
	defer tick.Stop()
	for len(t.ListPeers()) == 0 {
		select {
		case <-ctx.Done():
			return
		case <-x.ctx.Done():
			return
		case <-timer.C:
			return
		case <-tick.C:
		}
	}
}

// SetTopicValidator registers v for topic. It runs before a message is
// delivered or forwarded and sees the signed author (msg.GetFrom()), never
// the forwarder; gossipsub has already checked the signature (StrictSign),
// so the author cannot be forged. Accept delivers and forwards; Reject drops
// and penalizes the forwarding peer; Ignore drops silently. Rejected and
// ignored messages are counted per topic and logged at debug level. The
// node's own publications are accepted without calling v. One validator per
// topic: setting it again replaces the earlier one (a node that serves a
// second session attaches a new state machine).
func (x *Host) SetTopicValidator(name string, v func(from protocol.PeerID, data []byte) protocol.Verdict) error {
	if v == nil {
		return fmt.Errorf("topic %s: nil validator", name)
	}
	if x.isClosed() {
		return fmt.Errorf("topic %s: %w", name, ErrClosed)
	}
	self := x.h.ID()
	val := func(_ context.Context, forwarder peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
		author := msg.GetFrom()
		if author == self {
			return pubsub.ValidationAccept
		}
		verdict := v(protocol.PeerID(author.String()), msg.Data)
		var reason string
		switch verdict {
		case protocol.Accept:
			return pubsub.ValidationAccept
		case protocol.Ignore:
			reason = "ignored"
		case protocol.Reject:
			reason = "rejected"
		default:
			reason = "bad verdict"
		}
		x.m.Rejected(name, reason)
		x.log.Debug("dropped a publication", "topic", name, "verdict", reason, "author", author.String(),
			"forwarder", forwarder.String(), "bytes", len(msg.Data))
		if verdict == protocol.Ignore {
			return pubsub.ValidationIgnore
		}
		return pubsub.ValidationReject
	}
	// Inline: validators are quick checks; running them on the validation
	// workers avoids a goroutine per message.
	_ = x.ps.UnregisterTopicValidator(name) // none registered yet: nothing to replace
	if err := x.ps.RegisterTopicValidator(name, val, pubsub.WithValidatorInline(true)); err != nil {
		return fmt.Errorf("topic %s: register validator: %w", name, err)
	}
	return nil
}

// WaitTopicPeers polls the topic's peers until at least n other peers are
// subscribed, ctx ends or the node stops. The error names the topic and the
// wanted and seen counts.
func (x *Host) WaitTopicPeers(ctx context.Context, name string, n int) error {
	t, err := x.topic(name)
	if err != nil {
		return err
	}
	tick := time.NewTicker(waitPoll)
	defer tick.Stop()
	for {
		seen := len(t.ListPeers())
		if seen >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s: %d of %d wanted peers after waiting: %w", name, seen, n, ctx.Err())
		case <-x.ctx.Done():
			return fmt.Errorf("topic %s: %d of %d wanted peers: %w", name, seen, n, x.stopped())
		case <-tick.C:
		}
	}
}
