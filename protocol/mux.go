package protocol

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ppboost/ppboost/protocol/wire"
)

// Mux lets several roles share one Transport (one memnet endpoint, one
// libp2p host): a Transport has a single handler, so the mux installs its
// own and routes every inbound message by its topic or stream protocol to
// the port that claimed it. Each role gets a port (a Transport of its own)
// claiming its system's topics and protocol IDs (wire.System), so a W&C
// owner and a federated DPBoost owner on one host never see each other's
// traffic. A message no port claims is dropped and counted ("mux:
// unrouted"), as is one for a port whose role has not set a handler yet
// ("mux: no handler").
//
// Ports pass Publish and Send through unchanged. A port has the shared
// transport's optional abilities, so a role started on it (protocol/role)
// behaves as on the transport itself: Validating (only for its claimed
// topics), MeshWaiter, Preparer, Unpreparer, Expecter, Clock() and PostsInline() forward to the
// transport when it has them and are what their absence means otherwise
// (no validation, no wait, no preparation, a nil clock, not inline);
// AddressBook and AddressLookup are present exactly when the transport
// has them. Closing a
// port detaches it; Close on the Mux closes the shared transport.
type Mux struct {
	base   Transport
	stats  Counters
	once   sync.Once
	mu     sync.RWMutex
	topics map[string]*port
	protos map[string]*port
}

// NewMux wraps base. Use only the mux's ports from then on: a SetHandler
// on base itself would replace the mux's routing.
func NewMux(base Transport) *Mux {
	return &Mux{base: base, topics: map[string]*port{}, protos: map[string]*port{}}
}

// Stats counts the messages the mux dropped.
func (m *Mux) Stats() *Counters { return &m.stats }

// Close closes the shared transport.
func (m *Mux) Close() error { return m.base.Close() }

// System is Port(s.Topics(), s.Protocols()): a port for one role of system s.
func (m *Mux) System(s wire.System) (Transport, error) {
	return m.Port(s.Name, s.Topics(), s.Protocols())
}

// Port claims topics and stream protocols for one role. Claiming a topic
// or protocol another open port holds is an error naming it.
func (m *Mux) Port(name string, topics, protocols []string) (Transport, error) {
	p := &port{mux: m, name: name, topics: map[string]bool{}, protos: map[string]bool{}}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range topics {
		if o := m.topics[t]; o != nil {
			return nil, fmt.Errorf("protocol: mux: topic %s already claimed by port %q", t, o.name)
		}
	}
	for _, id := range protocols {
		if o := m.protos[id]; o != nil {
			return nil, fmt.Errorf("protocol: mux: protocol %s already claimed by port %q", id, o.name)
		}
	}
	for _, t := range topics {
		m.topics[t], p.topics[t] = p, true
	}
	for _, id := range protocols {
		m.protos[id], p.protos[id] = p, true
	}
	book, isBook := m.base.(AddressBook)
	look, isLook := m.base.(AddressLookup)
	switch {
	case isBook && isLook:
		return struct {
			*port
			AddressBook
			AddressLookup
		}{p, book, look}, nil
	case isBook:
		return struct {
			*port
			AddressBook
		}{p, book}, nil
	case isLook:
		return struct {
			*port
			AddressLookup
		}{p, look}, nil
	}
	return p, nil
}

// route hands msg to the port that claimed its topic or protocol.
func (m *Mux) route(msg Message) {
	m.mu.RLock()
	p := m.topics[msg.Topic]
	if msg.Topic == "" {
		p = m.protos[msg.Protocol]
	}
	m.mu.RUnlock()
	if p == nil {
		m.stats.Inc("mux: unrouted")
		return
	}
	h := p.handler.Load()
	if h == nil || *h == nil {
		m.stats.Inc("mux: no handler")
		return
	}
	(*h)(msg)
}

// port is one role's view of the shared transport.
type port struct {
	mux     *Mux
	name    string
	topics  map[string]bool // immutable after Port
	protos  map[string]bool
	handler atomic.Pointer[func(Message)]
	closed  sync.Once
}

func (p *port) ID() PeerID { return p.mux.base.ID() }

func (p *port) SetHandler(h func(Message)) {
	p.handler.Store(&h)
	p.mux.once.Do(func() { p.mux.base.SetHandler(p.mux.route) })
}

func (p *port) claimed(topic string) error {
	if !p.topics[topic] {
		return fmt.Errorf("protocol: mux: port %q has not claimed topic %s", p.name, topic)
	}
	return nil
}

func (p *port) Join(topic string) error {
	if err := p.claimed(topic); err != nil {
		return err
	}
	return p.mux.base.Join(topic)
}

func (p *port) Publish(ctx context.Context, topic string, data []byte) error {
	return p.mux.base.Publish(ctx, topic, data)
}

func (p *port) Send(ctx context.Context, to PeerID, protocolID string, data []byte) error {
	return p.mux.base.Send(ctx, to, protocolID, data)
}

// SetTopicValidator installs v on the shared transport for a claimed topic
// (a no-op when the shared transport does not validate).
func (p *port) SetTopicValidator(topic string, v func(from PeerID, data []byte) Verdict) error {
	if err := p.claimed(topic); err != nil {
		return err
	}
	if b, ok := p.mux.base.(Validating); ok {
		return b.SetTopicValidator(topic, v)
	}
	return nil
}

// WaitTopicPeers waits on the shared transport (returns at once when it
// has no mesh to wait for).
func (p *port) WaitTopicPeers(ctx context.Context, topic string, n int) error {
	if w, ok := p.mux.base.(MeshWaiter); ok {
		return w.WaitTopicPeers(ctx, topic, n)
	}
	return nil
}

// Prepare forwards to the shared transport's Preparer (none: a no-op).
func (p *port) Prepare(ctx context.Context, peers []PeerID) {
	if pr, ok := p.mux.base.(Preparer); ok {
		pr.Prepare(ctx, peers)
	}
}

// PrepareThen forwards to the shared transport (PrepareThen, the
// package's: done at once when it cannot say when its dials end).
func (p *port) PrepareThen(ctx context.Context, peers []PeerID, done func()) {
	PrepareThen(ctx, p.mux.base, peers, done)
}

// Expect forwards to the shared transport's Expecter (none: a no-op).
func (p *port) Expect(ctx context.Context, proto string, peers []PeerID) {
	if e, ok := p.mux.base.(Expecter); ok {
		e.Expect(ctx, proto, peers)
	}
}

// Unprepare forwards to the shared transport's Unpreparer (none: a no-op).
func (p *port) Unprepare(peers []PeerID) {
	if u, ok := p.mux.base.(Unpreparer); ok {
		u.Unprepare(peers)
	}
}

// Clock is the shared transport's own clock (nil when it has none:
// protocol/role then falls back as for a transport without one).
func (p *port) Clock() Clock {
	if c, ok := p.mux.base.(interface{ Clock() Clock }); ok {
		return c.Clock()
	}
	return nil
}

// PostsInline is the shared transport's (false when it does not say).
func (p *port) PostsInline() bool {
	i, ok := p.mux.base.(interface{ PostsInline() bool })
	return ok && i.PostsInline()
}

// Close detaches the port: its topics and protocols are unclaimed (their
// messages then count as unrouted) and its handler is dropped. The shared
// transport stays open (Mux.Close closes it).
func (p *port) Close() error {
	p.closed.Do(func() {
		p.handler.Store(nil)
		m := p.mux
		m.mu.Lock()
		defer m.mu.Unlock()
		for t := range p.topics {
			if m.topics[t] == p {
				delete(m.topics, t)
			}
		}
		for id := range p.protos {
			if m.protos[id] == p {
				delete(m.protos, id)
			}
		}
	})
	return nil
}
