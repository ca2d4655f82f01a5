// Package memnet is an in-memory network for the protocol's state
// machines: thousands of virtual peers in one process, with per-link delay,
// jitter and drop rate, partitions, killed peers and dropped messages on
// demand. In deterministic mode every delivery and timer is an event in one
// queue ordered by (virtual time, sequence number) and runs on the caller of
// Step or RunUntil, so a run is a pure function of its seed and inputs.
//
// It ships with the code (ppboost simulate uses it) and must stay a faithful
// stand-in for a network: it never interprets payloads.
package memnet

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Errors.
var (
	ErrUnknownPeer = errors.New("memnet: unknown peer")
	ErrDuplicate   = errors.New("memnet: peer id already joined")
	ErrTooLarge    = errors.New("memnet: message exceeds size cap")
	ErrIdle        = errors.New("memnet: no more events")
	ErrTimeout     = errors.New("memnet: time limit reached")
	ErrClosed      = errors.New("memnet: network closed")
)

// Options configures a network.
type Options struct {
	Seed          uint64
	Deterministic bool
	Delay         time.Duration // default one-way delay
	Jitter        time.Duration // uniform extra delay in [0, Jitter)
	MaxMessage    int           // default wire.MaxFrame
	Logger        hclog.Logger
}

// LinkParams override the defaults on one directed link.
type LinkParams struct {
	Delay, Jitter time.Duration
	DropRate      float64
}

// Stats counts one peer's traffic.
type Stats struct {
	MsgsSent, BytesSent int64
	MsgsRecv, BytesRecv int64
	Dropped             int64 // lost on links (drop rate, DropNext, partitions, killed peers)
	Rejected, Ignored   int64 // refused by the receiver's topic validator
}

func (s *Stats) add(o Stats) {
	s.MsgsSent += o.MsgsSent
	s.BytesSent += o.BytesSent
	s.MsgsRecv += o.MsgsRecv
	s.BytesRecv += o.BytesRecv
	s.Dropped += o.Dropped
	s.Rejected += o.Rejected
	s.Ignored += o.Ignored
}

type link struct{ from, to protocol.PeerID }

type event struct {
	at       time.Time
	seq      uint64
	fn       func()
	canceled bool
	index    int
}

type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *eventHeap) Push(x any)   { e := x.(*event); e.index = len(*h); *h = append(*h, e) }
func (h *eventHeap) Pop() any     { old := *h; e := old[len(old)-1]; *h = old[:len(old)-1]; return e }
func (h eventHeap) peek() *event  { return h[0] }

// Network is the in-memory network.
type Network struct {
	opts Options
	log  hclog.Logger

	mu        sync.Mutex
	peers     map[protocol.PeerID]*Endpoint
	topics    map[string]map[protocol.PeerID]bool
	links     map[link]LinkParams
	group     map[protocol.PeerID]int
	partition bool
	killed    map[protocol.PeerID]bool
	dropNext  map[link]int
	queue     eventHeap
	seq       uint64
	now       time.Time // virtual time (deterministic mode)
	rand      *rand.Rand
	stats     map[protocol.PeerID]*Stats
	closed    bool

	// real-time mode
	wake chan struct{}
	stop chan struct{}
	wg   sync.WaitGroup
}

// epoch is the virtual clock's start.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// New creates a network; in real-time mode its event loop starts now.
func New(opts Options) *Network {
	if opts.MaxMessage == 0 {
		opts.MaxMessage = wire.MaxFrame
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	n := &Network{opts: opts, log: opts.Logger, peers: map[protocol.PeerID]*Endpoint{},
		topics: map[string]map[protocol.PeerID]bool{}, links: map[link]LinkParams{},
		group: map[protocol.PeerID]int{}, killed: map[protocol.PeerID]bool{}, dropNext: map[link]int{},
		now: epoch, rand: rng.Derive(opts.Seed, 0x4d454d), stats: map[protocol.PeerID]*Stats{},
		wake: make(chan struct{}, 1), stop: make(chan struct{})}
	if !opts.Deterministic {
		n.wg.Add(1)
		go n.loop()
	}
	return n
}

// Join adds a peer and returns its endpoint.
func (n *Network) Join(id protocol.PeerID) (*Endpoint, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, dup := n.peers[id]; dup {
		return nil, fmt.Errorf("%w: %s", ErrDuplicate, id)
	}
	e := &Endpoint{net: n, id: id, validators: map[string]func(protocol.PeerID, []byte) protocol.Verdict{}}
	n.peers[id] = e
	n.stats[id] = &Stats{}
	return e, nil
}

// SetLink overrides delay, jitter and drop rate on the directed link a -> b.
func (n *Network) SetLink(a, b protocol.PeerID, p LinkParams) {
	n.mu.Lock()
	n.links[link{a, b}] = p
	n.mu.Unlock()
}

// Partition splits the network: only peers in the same group can talk;
// peers in no group are isolated.
func (n *Network) Partition(groups ...[]protocol.PeerID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.group = map[protocol.PeerID]int{}
	for g, ids := range groups {
		for _, id := range ids {
			n.group[id] = g + 1
		}
	}
	n.partition = true
}

// Heal removes the partition.
func (n *Network) Heal() {
	n.mu.Lock()
	n.partition = false
	n.mu.Unlock()
}

// Kill stops a peer: it neither sends nor receives any more.
func (n *Network) Kill(id protocol.PeerID) {
	n.mu.Lock()
	n.killed[id] = true
	n.mu.Unlock()
}

// DropNext drops the next count messages on the link from -> to.
func (n *Network) DropNext(from, to protocol.PeerID, count int) {
	n.mu.Lock()
	n.dropNext[link{from, to}] += count
	n.mu.Unlock()
}

// Stats returns one peer's counters.
func (n *Network) Stats(id protocol.PeerID) Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s := n.stats[id]; s != nil {
		return *s
	}
	return Stats{}
}

// TotalStats sums every peer's counters.
func (n *Network) TotalStats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	var t Stats
	for _, s := range n.stats {
		t.add(*s)
	}
	return t
}

// schedule queues fn after d; the caller holds n.mu.
func (n *Network) schedule(d time.Duration, fn func()) *event {
	n.seq++
	e := &event{at: n.nowLocked().Add(d), seq: n.seq, fn: fn}
	heap.Push(&n.queue, e)
	if !n.opts.Deterministic {
		select {
		case n.wake <- struct{}{}:
		default:
		}
	}
	return e
}

func (n *Network) nowLocked() time.Time {
	if n.opts.Deterministic {
		return n.now
	}
	return time.Now()
}

// delay draws a link's delay and whether the message is lost; n.mu held.
func (n *Network) route(from, to protocol.PeerID) (time.Duration, bool) {
	if n.killed[from] || n.killed[to] {
		return 0, false
	}
	if n.partition && (n.group[from] == 0 || n.group[from] != n.group[to]) {
		return 0, false
	}
	l := link{from, to}
	if c := n.dropNext[l]; c > 0 {
		n.dropNext[l] = c - 1
		return 0, false
	}
	p, ok := n.links[l]
	if !ok {
		p = LinkParams{Delay: n.opts.Delay, Jitter: n.opts.Jitter}
	}
	if p.DropRate > 0 && n.rand.Float64() < p.DropRate {
		return 0, false
	}
	d := p.Delay
	if p.Jitter > 0 {
		d += time.Duration(n.rand.Int64N(int64(p.Jitter)))
	}
	return d, true
}

// send queues one delivery; n.mu held.
func (n *Network) send(from, to protocol.PeerID, m protocol.Message) {
	st := n.stats[from]
	st.MsgsSent++
	st.BytesSent += int64(len(m.Data))
	d, ok := n.route(from, to)
	if !ok {
		st.Dropped++
		return
	}
	n.schedule(d, func() { n.deliver(to, m) })
}

// deliver runs on the event loop without n.mu.
func (n *Network) deliver(to protocol.PeerID, m protocol.Message) {
	n.mu.Lock()
	e := n.peers[to]
	if e == nil || n.killed[to] {
		n.stats[m.From].Dropped++
		n.mu.Unlock()
		return
	}
	h := e.handler
	var v func(protocol.PeerID, []byte) protocol.Verdict
	if m.Topic != "" {
		v = e.validators[m.Topic]
	}
	n.mu.Unlock()
	if v != nil {
		switch v(m.From, m.Data) {
		case protocol.Reject:
			n.count(to, func(s *Stats) { s.Rejected++ })
			return
		case protocol.Ignore:
			n.count(to, func(s *Stats) { s.Ignored++ })
			return
		}
	}
	n.count(to, func(s *Stats) { s.MsgsRecv++; s.BytesRecv += int64(len(m.Data)) })
	if h != nil {
		h(m)
	}
}

func (n *Network) count(id protocol.PeerID, f func(*Stats)) {
	n.mu.Lock()
	f(n.stats[id])
	n.mu.Unlock()
}

// Step runs the next event (deterministic mode) and reports whether there was one.
func (n *Network) Step() bool {
	n.mu.Lock()
	for n.queue.Len() > 0 {
		e := heap.Pop(&n.queue).(*event)
		if e.canceled {
			continue
		}
		if e.at.After(n.now) {
			n.now = e.at
		}
		n.mu.Unlock()
		e.fn()
		return true
	}
	n.mu.Unlock()
	return false
}

// RunUntil runs events until cond holds (checked after every event), the
// queue empties (ErrIdle) or virtual time advances by more than maxVirtual
// (ErrTimeout). In real-time mode it polls cond every millisecond for up to
// maxVirtual of wall time.
func (n *Network) RunUntil(cond func() bool, maxVirtual time.Duration) error {
	if !n.opts.Deterministic {
		deadline := time.Now().Add(maxVirtual)
		for !cond() {
			if time.Now().After(deadline) {
				return ErrTimeout
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	}
	start := n.Clock().Now()
	limit := start.Add(maxVirtual)
	for !cond() {
		n.mu.Lock()
		if n.queue.Len() > 0 && n.queue.peek().at.After(limit) {
			n.now = limit
			n.mu.Unlock()
			return ErrTimeout
		}
		n.mu.Unlock()
		if !n.Step() {
			return ErrIdle
		}
	}
	return nil
}

// RunFor runs events for d of virtual time (or sleeps d in real-time mode).
func (n *Network) RunFor(d time.Duration) {
	_ = n.RunUntil(func() bool { return false }, d)
}

// loop drains the queue in real time.
func (n *Network) loop() {
	defer n.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		n.mu.Lock()
		var wait time.Duration = time.Hour
		var run *event
		for n.queue.Len() > 0 {
			top := n.queue.peek()
			if top.canceled {
				heap.Pop(&n.queue)
				continue
			}
			if d := time.Until(top.at); d > 0 {
				wait = d
			} else {
				run = heap.Pop(&n.queue).(*event)
			}
			break
		}
		n.mu.Unlock()
		if run != nil {
			run.fn()
			continue
		}
		timer.Reset(wait)
		select {
		case <-n.stop:
			return
		case <-n.wake:
		case <-timer.C:
		}
	}
}

// Close stops the real-time loop and waits for it. Idempotent.
func (n *Network) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	close(n.stop)
	n.wg.Wait()
	return nil
}

// Clock returns the network's clock: virtual in deterministic mode (timers
// are events), otherwise wall time with timers on the event loop.
func (n *Network) Clock() protocol.Clock { return clock{n} }

type clock struct{ n *Network }

func (c clock) Now() time.Time {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	return c.n.nowLocked()
}

func (c clock) AfterFunc(d time.Duration, f func()) protocol.Timer {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	return &timer{n: c.n, e: c.n.schedule(d, f)}
}

type timer struct {
	n *Network
	e *event
}

func (t *timer) Stop() bool {
	t.n.mu.Lock()
	defer t.n.mu.Unlock()
	if t.e.canceled || t.e.index < 0 {
		return false
	}
	stopped := !t.e.canceled
	t.e.canceled = true
	return stopped
}

// Endpoint is one peer's Transport.
type Endpoint struct {
	net        *Network
	id         protocol.PeerID
	handler    func(protocol.Message)
	validators map[string]func(protocol.PeerID, []byte) protocol.Verdict
}

var (
	_ protocol.Transport  = (*Endpoint)(nil)
	_ protocol.Validating = (*Endpoint)(nil)
	_ protocol.MeshWaiter = (*Endpoint)(nil)
)

func (e *Endpoint) ID() protocol.PeerID { return e.id }

func (e *Endpoint) SetHandler(h func(protocol.Message)) {
	e.net.mu.Lock()
	e.handler = h
	e.net.mu.Unlock()
}

func (e *Endpoint) Join(topic string) error {
	n := e.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.topics[topic] == nil {
		n.topics[topic] = map[protocol.PeerID]bool{}
	}
	n.topics[topic][e.id] = true
	return nil
}

func (e *Endpoint) SetTopicValidator(topic string, v func(protocol.PeerID, []byte) protocol.Verdict) error {
	e.net.mu.Lock()
	e.validators[topic] = v
	e.net.mu.Unlock()
	return nil
}

// Publish delivers a copy of data to every other subscriber of topic.
func (e *Endpoint) Publish(_ context.Context, topic string, data []byte) error {
	n := e.net
	if len(data) > n.opts.MaxMessage {
		return fmt.Errorf("%w: %d > %d bytes", ErrTooLarge, len(data), n.opts.MaxMessage)
	}
	m := protocol.Message{From: e.id, Topic: topic, Data: append([]byte(nil), data...)}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.killed[e.id] {
		return nil
	}
	subs := n.topics[topic]
	// Deterministic order: iterate peers in join order would need a slice;
	// sort the subscriber ids instead.
	for _, id := range sortedIDs(subs) {
		if id != e.id {
			n.send(e.id, id, m)
		}
	}
	return nil
}

// Send delivers a copy of data to one peer.
func (e *Endpoint) Send(_ context.Context, to protocol.PeerID, protocolID string, data []byte) error {
	n := e.net
	if len(data) > n.opts.MaxMessage {
		return fmt.Errorf("%w: %d > %d bytes", ErrTooLarge, len(data), n.opts.MaxMessage)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.peers[to]; !ok {
		return fmt.Errorf("%w: %s", ErrUnknownPeer, to)
	}
	if n.killed[e.id] {
		return nil
	}
	n.send(e.id, to, protocol.Message{From: e.id, Protocol: protocolID, Data: append([]byte(nil), data...)})
	return nil
}

// WaitTopicPeers returns once n other peers joined topic. In deterministic
// mode joins are instantaneous, so it checks once.
func (e *Endpoint) WaitTopicPeers(ctx context.Context, topic string, want int) error {
	for {
		e.net.mu.Lock()
		have := len(e.net.topics[topic])
		if e.net.topics[topic][e.id] {
			have--
		}
		e.net.mu.Unlock()
		if have >= want {
			return nil
		}
		if e.net.opts.Deterministic {
			return fmt.Errorf("memnet: topic %s has %d peers, want %d", topic, have, want)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("memnet: topic %s has %d peers, want %d: %w", topic, have, want, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (e *Endpoint) Close() error {
	e.net.Kill(e.id)
	return nil
}
