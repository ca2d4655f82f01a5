package memnet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Errors.
var (
	ErrUnknownPeer    = errors.New("memnet: unknown peer")
	ErrDuplicate      = errors.New("memnet: peer id already joined")
	ErrTooLarge       = errors.New("memnet: message exceeds size cap")
	ErrIdle           = errors.New("memnet: no more events")
	ErrTimeout        = errors.New("memnet: time limit reached")
	ErrClosed         = errors.New("memnet: closed")
	ErrReentrant      = errors.New("memnet: network already being driven (Step or RunUntil from a handler or a second goroutine)")
	ErrNotEnoughPeers = errors.New("memnet: not enough peers on topic")
	ErrBadArgument    = errors.New("memnet: invalid argument")
)

// Options configures a network. The zero value is a real-time network with
// instant links and the wire.MaxFrame size cap.
type Options struct {
	Seed          uint64        // randomness for drops, duplicates and jitter
	Deterministic bool          // virtual time driven by Step/RunUntil/RunFor
	Delay         time.Duration // default one-way delay of every link
	Jitter        time.Duration // default uniform extra delay in [0, Jitter)
	MaxMessage    int           // size cap of one message; 0 means wire.MaxFrame
	DropRate      float64       // default probability that a message is lost on any link
	Logger        hclog.Logger  // may be nil
	// Tap, if set, sees every message as it is put on a link (a topic
	// message once per subscriber) and says what the link carries instead:
	// nil drops it, the data itself passes it, several payloads deliver
	// each (replays, mutations). It runs with the network's lock held and
	// must not call the network. An adversary's hand on the wire for the
	// hostile-user fuzzer (protocol/hostile); nil in every other use.
	Tap func(from, to protocol.PeerID, topic bool, name string, data []byte) [][]byte
}

// Validate reports the first field with a value New would have to correct.
func (o Options) Validate() error {
	switch {
	case o.Delay < 0:
		return fmt.Errorf("%w: Options.Delay %v is negative", ErrBadArgument, o.Delay)
	case o.Jitter < 0:
		return fmt.Errorf("%w: Options.Jitter %v is negative", ErrBadArgument, o.Jitter)
	case o.MaxMessage < 0:
		return fmt.Errorf("%w: Options.MaxMessage %d is negative", ErrBadArgument, o.MaxMessage)
	}
	return nil
}

// LinkParams override the defaults on one directed link.
type LinkParams struct {
	Delay, Jitter time.Duration
	DropRate      float64 // probability that a message is lost
	DupRate       float64 // probability that a delivered message arrives twice (independent delays)
}

// Validate reports the first out-of-range field.
func (p LinkParams) Validate() error {
	switch {
	case p.Delay < 0:
		return fmt.Errorf("%w: LinkParams.Delay %v is negative", ErrBadArgument, p.Delay)
	case p.Jitter < 0:
		return fmt.Errorf("%w: LinkParams.Jitter %v is negative", ErrBadArgument, p.Jitter)
	case !(p.DropRate >= 0 && p.DropRate <= 1):
		return fmt.Errorf("%w: LinkParams.DropRate %v not in [0, 1]", ErrBadArgument, p.DropRate)
	case !(p.DupRate >= 0 && p.DupRate <= 1):
		return fmt.Errorf("%w: LinkParams.DupRate %v not in [0, 1]", ErrBadArgument, p.DupRate)
	}
	return nil
}

func (p LinkParams) clamped() LinkParams {
	p.Delay, p.Jitter = max(p.Delay, 0), max(p.Jitter, 0)
	clamp := func(x float64) float64 {
		if !(x > 0) { // also NaN
			return 0
		}
		return min(x, 1)
	}
	p.DropRate, p.DupRate = clamp(p.DropRate), clamp(p.DupRate)
	return p
}

// Stats counts one peer's traffic. A publication counts once per recipient.
// Sent counts every attempt; Dropped counts, on the sender, the messages
// lost on their link (drop rate, DropNext, partition, killed receiver);
// Rejected and Ignored count, on the receiver, what its validator refused.
type Stats struct {
	MsgsSent, BytesSent int64
	MsgsRecv, BytesRecv int64
	Dropped             int64
	Duplicated          int64 // extra copies the links made of this peer's messages
	Rejected, Ignored   int64
}

func (s *Stats) add(o Stats) {
	s.MsgsSent += o.MsgsSent
	s.BytesSent += o.BytesSent
	s.MsgsRecv += o.MsgsRecv
	s.BytesRecv += o.BytesRecv
	s.Dropped += o.Dropped
	s.Duplicated += o.Duplicated
	s.Rejected += o.Rejected
	s.Ignored += o.Ignored
}

type link struct{ from, to protocol.PeerID }

type topic struct {
	subs    []*Endpoint // in join order: the order of a publication's deliveries
	members map[*Endpoint]struct{}
}

// Network is the in-memory network. All its methods are safe for concurrent
// use; see the package documentation for who runs handlers.
type Network struct {
	opts  Options
	log   hclog.Logger
	start time.Time // real-time mode: origin of the queue's time line

	mu          sync.Mutex
	peers       map[protocol.PeerID]*Endpoint
	topics      map[string]*topic
	topicCh     chan struct{} // closed and replaced when a topic gains a subscriber
	links       map[link]LinkParams
	dropNext    map[link]int
	partitioned bool
	groupOf     map[protocol.PeerID]int // 1-based group of the current partition
	q           queue
	seq         uint64
	now         int64 // deterministic mode: virtual nanoseconds since epoch
	rand        *rand.Rand
	closed      bool
	watchers    []*watcher // real-time RunUntil conditions, replaced on change (copy on write)

	// payloads are the latest payloads handed out (payloadCache): the
	// same bytes sent to many peers travel as one immutable copy.
	payloads payloadCache

	driving atomic.Bool // deterministic mode: Step or RunUntil in progress
	wake    chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
}

// epoch is the virtual clock's start.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// New creates a network; in real-time mode its event loop starts now and
// runs until Close. Out-of-range options (see Options.Validate) are
// corrected to the nearest valid value and logged.
func New(opts Options) *Network {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if err := opts.Validate(); err != nil {
		opts.Logger.Warn("corrected network options", "err", err)
	}
	opts.Delay, opts.Jitter = max(opts.Delay, 0), max(opts.Jitter, 0)
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = wire.MaxFrame
	}
	n := &Network{
		opts: opts, log: opts.Logger, start: time.Now(),
		peers: map[protocol.PeerID]*Endpoint{}, topics: map[string]*topic{}, topicCh: make(chan struct{}),
		links: map[link]LinkParams{}, dropNext: map[link]int{}, groupOf: map[protocol.PeerID]int{},
		rand: rng.Derive(opts.Seed, 0x4d454d4e4554), // "MEMNET"
		wake: make(chan struct{}, 1), stop: make(chan struct{}),
	}
	if !opts.Deterministic {
		n.wg.Add(1)
		go n.loop()
	}
	return n
}

// Join adds a peer and returns its endpoint. Ids are unique among live
// peers; a killed peer's id may join again (a restarted process with the
// same key): the new endpoint starts with no subscriptions or handler.
func (n *Network) Join(id protocol.PeerID) (*Endpoint, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: empty peer id", ErrBadArgument)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	if old, dup := n.peers[id]; dup && !old.killed {
		return nil, fmt.Errorf("%w: %s", ErrDuplicate, id)
	} else if dup {
		n.unsubscribeLocked(old)
	}
	e := &Endpoint{net: n, id: id, group: n.groupOf[id]}
	n.peers[id] = e
	return e, nil
}

// SetLink overrides delay, jitter, drop and duplicate rates on the directed
// link a -> b for messages sent from now on. Out-of-range values are clamped
// (see LinkParams.Validate) and logged.
func (n *Network) SetLink(a, b protocol.PeerID, p LinkParams) {
	if err := p.Validate(); err != nil {
		n.log.Warn("clamped link parameters", "from", a, "to", b, "err", err)
	}
	n.mu.Lock()
	n.links[link{a, b}] = p.clamped()
	n.mu.Unlock()
}

// ResetLink restores the network's default delay and jitter (and no loss)
// on the directed link a -> b.
func (n *Network) ResetLink(a, b protocol.PeerID) {
	n.mu.Lock()
	delete(n.links, link{a, b})
	n.mu.Unlock()
}

// Partition splits the network until Heal: only peers in the same group can
// talk; peers in no group (including peers that join later without being
// named) are isolated. A peer named in two groups belongs to the last.
func (n *Network) Partition(groups ...[]protocol.PeerID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.groupOf = map[protocol.PeerID]int{}
	for g, ids := range groups {
		for _, id := range ids {
			n.groupOf[id] = g + 1
		}
	}
	for id, e := range n.peers {
		e.group = n.groupOf[id]
	}
	n.partitioned = true
	n.log.Debug("partition", "groups", len(groups))
}

// Heal removes the partition.
func (n *Network) Heal() {
	n.mu.Lock()
	n.partitioned = false
	n.mu.Unlock()
	n.log.Debug("healed")
}

// Kill stops a peer for good: it no longer sends, messages to it (including
// those in flight) are lost, and the timers of its Endpoint.Clock never
// fire. Unknown ids are ignored.
func (n *Network) Kill(id protocol.PeerID) {
	n.mu.Lock()
	if e := n.peers[id]; e != nil {
		e.killed = true
	}
	n.mu.Unlock()
	n.log.Debug("killed", "peer", id)
}

// Pause freezes a peer for d of virtual time: messages to it and its own
// timers are held and run, in order, when it resumes, as with a process
// stopped by SIGSTOP and continued. Deterministic mode only.
func (n *Network) Pause(id protocol.PeerID, d time.Duration) {
	n.mu.Lock()
	if e := n.peers[id]; e != nil {
		e.pausedTo = n.nowLocked() + int64(d)
	}
	n.mu.Unlock()
	n.log.Debug("paused", "peer", id, "for", d)
}

// SetProcessing makes a peer a busy machine: every message delivered to it
// occupies it for d plus a uniform extra in [0, jitter) of virtual time
// before its handler runs, one message at a time, so messages that arrive
// while it is busy queue in arrival order (a single-server FIFO: a member
// dealt 200 shares at 25 ms each answers a probe 5 s later). Its handler's
// replies leave when the message's processing ends. Timers are not delayed.
// d = 0 restores an instant peer. Deterministic mode only.
func (n *Network) SetProcessing(id protocol.PeerID, d, jitter time.Duration) {
	n.mu.Lock()
	if e := n.peers[id]; e != nil {
		e.processing, e.procJitter = max(d, 0), max(jitter, 0)
	}
	n.mu.Unlock()
}

// Prepared is how many peers the endpoint id was asked to prepare
// connections to (protocol.Preparer).
func (n *Network) Prepared(id protocol.PeerID) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e := n.peers[id]; e != nil {
		return e.prepared
	}
	return 0
}

// Unprepared is how many peers the endpoint id released after a session
// (protocol.Unpreparer).
func (n *Network) Unprepared(id protocol.PeerID) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e := n.peers[id]; e != nil {
		return e.unprepared
	}
	return 0
}

// DropNext loses the next count messages sent on the link from -> to.
func (n *Network) DropNext(from, to protocol.PeerID, count int) {
	if count <= 0 {
		return
	}
	n.mu.Lock()
	n.dropNext[link{from, to}] += count
	n.mu.Unlock()
}

// Stats returns one peer's counters (zero for an unknown id).
func (n *Network) Stats(id protocol.PeerID) Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e := n.peers[id]; e != nil {
		return e.stats
	}
	return Stats{}
}

// TotalStats sums every peer's counters.
func (n *Network) TotalStats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	var t Stats
	for _, e := range n.peers {
		t.add(e.stats)
	}
	return t
}

// Pending is the number of queued events (deliveries and timers, including
// stopped timers not yet due).
func (n *Network) Pending() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.q.len()
}

// nowLocked is the current point on the queue's time line; n.mu held.
func (n *Network) nowLocked() int64 {
	if n.opts.Deterministic {
		return n.now
	}
	return int64(time.Since(n.start))
}

// schedule queues ev after d; n.mu held.
func (n *Network) schedule(d time.Duration, ev event) {
	n.seq++
	n.q.push(n.nowLocked()+int64(max(d, 0)), n.seq, ev)
	if !n.opts.Deterministic {
		select {
		case n.wake <- struct{}{}:
		default:
		}
	}
}

// transmit puts one message (its topic or protocol id name, its payload
// data) on the link from -> to; n.mu held.
func (n *Network) transmit(from, to *Endpoint, topic bool, name string, data []byte) {
	if n.opts.Tap != nil {
		for _, d := range n.opts.Tap(from.id, to.id, topic, name, data) {
			n.transmitOne(from, to, topic, name, d)
		}
		return
	}
	n.transmitOne(from, to, topic, name, data)
}

func (n *Network) transmitOne(from, to *Endpoint, topic bool, name string, data []byte) {
	st := &from.stats
	st.MsgsSent++
	st.BytesSent += int64(len(data))
	if to.killed || (n.partitioned && (from.group == 0 || from.group != to.group)) {
		st.Dropped++
		return
	}
	p := LinkParams{Delay: n.opts.Delay, Jitter: n.opts.Jitter, DropRate: n.opts.DropRate}
	if len(n.links) > 0 || len(n.dropNext) > 0 {
		l := link{from.id, to.id}
		if c, ok := n.dropNext[l]; ok {
			if c <= 1 {
				delete(n.dropNext, l)
			} else {
				n.dropNext[l] = c - 1
			}
			st.Dropped++
			return
		}
		if lp, ok := n.links[l]; ok {
			p = lp
		}
	}
	if p.DropRate > 0 && n.rand.Float64() < p.DropRate {
		st.Dropped++
		return
	}
	ev := event{kind: evDeliver, topic: topic, from: from, to: to, name: name, data: data}
	n.schedule(n.delay(p), ev)
	if p.DupRate > 0 && n.rand.Float64() < p.DupRate {
		st.Duplicated++
		n.schedule(n.delay(p), ev)
	}
}

func (n *Network) delay(p LinkParams) time.Duration {
	if p.Jitter > 0 {
		return p.Delay + time.Duration(n.rand.Int64N(int64(p.Jitter)))
	}
	return p.Delay
}

// job is a popped event made ready to run without the lock.
type job struct {
	fn      func()                                         // timer callback
	handler func(protocol.Message)                         // delivery: receiver's handler
	valid   func(protocol.PeerID, []byte) protocol.Verdict // delivery: receiver's topic validator
	to      *Endpoint
	msg     protocol.Message
}

// next pops the next live event due no later than limit and prepares it;
// n.mu held. It returns ErrIdle when no live event is queued and ErrTimeout
// when the next one is due after limit. Stopped timers and timers of killed
// peers are discarded on the way.
func (n *Network) next(limit int64) (job, int64, error) {
	for n.q.len() > 0 {
		top := n.q.peek()
		ev := n.q.slots[top.slot]
		if ev.kind == evTimer && (ev.tm.state != timerPending || (ev.tm.owner != nil && ev.tm.owner.killed)) {
			n.q.pop()
			ev.tm.state = timerDead
			continue
		}
		if top.at > limit {
			return job{}, top.at, ErrTimeout
		}
		if to := ev.target(); to != nil && to.pausedTo > top.at {
			// A paused peer: its messages and timers wait, in order, until
			// it resumes (what a SIGSTOPped process sees).
			n.q.pop()
			n.seq++
			n.q.push(to.pausedTo, n.seq, ev)
			continue
		}
		if ev.kind == evDeliver && !ev.served && ev.to.processing > 0 && n.opts.Deterministic {
			// A busy receiver: the message waits for the ones before it,
			// then for its own processing, and runs when that ends.
			to := ev.to
			n.q.pop()
			d := int64(to.processing)
			if to.procJitter > 0 {
				d += n.rand.Int64N(int64(to.procJitter))
			}
			to.busyTo = max(to.busyTo, top.at) + d
			ev.served = true
			n.seq++
			n.q.push(to.busyTo, n.seq, ev)
			continue
		}
		at, _ := n.q.pop()
		switch ev.kind {
		case evTimer:
			ev.tm.state = timerFired
			return job{fn: ev.tm.fn}, at, nil
		case evDeliver:
			to := ev.to
			if to.killed {
				ev.from.stats.Dropped++
				return job{}, at, nil
			}
			j := job{handler: to.handler, to: to, msg: ev.message()}
			if ev.topic && to.validators != nil {
				j.valid = to.validators[ev.name]
			}
			if j.valid == nil {
				to.stats.MsgsRecv++
				to.stats.BytesRecv += int64(len(ev.data))
			}
			return j, at, nil
		default: // evWake
			return job{}, at, nil
		}
	}
	return job{}, 0, ErrIdle
}

// run executes a prepared job without n.mu.
func (n *Network) run(j job) {
	if j.fn != nil {
		j.fn()
		return
	}
	if j.to == nil {
		return
	}
	if j.valid != nil {
		v := j.valid(j.msg.From, j.msg.Data)
		n.mu.Lock()
		st := &j.to.stats
		switch v {
		case protocol.Accept:
			st.MsgsRecv++
			st.BytesRecv += int64(len(j.msg.Data))
		case protocol.Ignore:
			st.Ignored++
		default: // Reject, and any value a validator should not return
			st.Rejected++
		}
		n.mu.Unlock()
		if v != protocol.Accept {
			return
		}
	}
	if j.handler != nil {
		j.handler(j.msg)
	}
}

// Step runs the next event in deterministic mode and reports whether there
// was one (a message lost to a killed receiver counts as an event). It
// returns false in real-time mode, after Close, and when called from a
// handler or while another goroutine drives the network.
func (n *Network) Step() bool {
	if !n.opts.Deterministic || !n.driving.CompareAndSwap(false, true) {
		return false
	}
	defer n.driving.Store(false)
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return false
	}
	j, at, err := n.next(1<<63 - 1)
	if err != nil {
		n.mu.Unlock()
		return false
	}
	n.now = max(n.now, at)
	n.mu.Unlock()
	n.run(j)
	return true
}

// RunUntil runs events until cond holds, checked before the first event and
// after every event.
//
// Deterministic mode: cond runs on the caller with the network quiescent. It
// returns ErrIdle if the queue empties first, and ErrTimeout if the next
// event is due more than maxVirtual after the start (virtual time then stops
// at that limit). It returns ErrReentrant when called from a handler.
//
// Real-time mode: cond runs on the event loop after each event, serialized
// with handlers, so it may read what handlers write without locks; it
// returns ErrTimeout after maxVirtual of wall time. It must not be called
// from a handler.
//
// Both return ErrClosed once the network is closed.
func (n *Network) RunUntil(cond func() bool, maxVirtual time.Duration) error {
	if cond == nil {
		return fmt.Errorf("%w: nil condition", ErrBadArgument)
	}
	if !n.opts.Deterministic {
		return n.runRealTime(cond, maxVirtual)
	}
	if !n.driving.CompareAndSwap(false, true) {
		return ErrReentrant
	}
	defer n.driving.Store(false)
	_, err := n.drive(cond, maxVirtual)
	return err
}

// drive is RunUntil's deterministic loop; it also returns the time limit.
func (n *Network) drive(cond func() bool, maxVirtual time.Duration) (int64, error) {
	n.mu.Lock()
	limit := satAdd(n.now, int64(max(maxVirtual, 0)))
	n.mu.Unlock()
	for !cond() {
		n.mu.Lock()
		if n.closed {
			n.mu.Unlock()
			return limit, ErrClosed
		}
		j, at, err := n.next(limit)
		if err != nil {
			if errors.Is(err, ErrTimeout) {
				n.now = max(n.now, limit)
				err = fmt.Errorf("%w: %v of virtual time passed (next event at +%v)", ErrTimeout, maxVirtual, time.Duration(at-limit))
			}
			n.mu.Unlock()
			return limit, err
		}
		n.now = max(n.now, at)
		n.mu.Unlock()
		n.run(j)
	}
	return limit, nil
}

// RunFor runs every event due within d and leaves the virtual clock d
// later; in real-time mode it sleeps d (or until Close). It does nothing when
// called from a handler.
func (n *Network) RunFor(d time.Duration) {
	if !n.opts.Deterministic {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-n.stop:
		}
		return
	}
	if !n.driving.CompareAndSwap(false, true) {
		return
	}
	defer n.driving.Store(false)
	limit, err := n.drive(func() bool { return false }, d)
	if errors.Is(err, ErrIdle) {
		n.mu.Lock()
		n.now = max(n.now, limit)
		n.mu.Unlock()
	}
}

func satAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return 1<<63 - 1
}

// watcher is a real-time RunUntil condition; only the loop touches fired.
type watcher struct {
	cond  func() bool
	done  chan struct{}
	fired bool
}

func (w *watcher) check() {
	if !w.fired && w.cond() {
		w.fired = true
		close(w.done)
	}
}

func (n *Network) runRealTime(cond func() bool, limit time.Duration) error {
	w := &watcher{cond: cond, done: make(chan struct{})}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return ErrClosed
	}
	n.watchers = append(n.watchers[:len(n.watchers):len(n.watchers)], w)
	n.schedule(0, event{kind: evWake}) // check cond once even if nothing else happens
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		ws := make([]*watcher, 0, len(n.watchers))
		for _, x := range n.watchers {
			if x != w {
				ws = append(ws, x)
			}
		}
		n.watchers = ws
		n.mu.Unlock()
	}()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-w.done:
		return nil
	case <-t.C:
		return fmt.Errorf("%w: %v of wall time passed", ErrTimeout, limit)
	case <-n.stop:
		return ErrClosed
	}
}

// loop drains the queue in real time.
func (n *Network) loop() {
	defer n.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		n.mu.Lock()
		j, at, err := n.next(int64(time.Since(n.start)))
		ws := n.watchers
		n.mu.Unlock()
		if err == nil {
			n.run(j)
			for _, w := range ws {
				w.check()
			}
			continue
		}
		wait := time.Hour
		if errors.Is(err, ErrTimeout) {
			wait = time.Duration(at) - time.Since(n.start)
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

// Close stops the network: queued events are dropped, endpoints refuse to
// send, the real-time loop ends and Close waits for it. Idempotent. In
// real-time mode it must not be called from a handler (it would wait for
// itself).
func (n *Network) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.q.reset()
	n.mu.Unlock()
	close(n.stop)
	n.wg.Wait()
	n.log.Debug("closed")
	return nil
}

// Clock returns the network's clock: virtual in deterministic mode, the wall
// clock otherwise. Its AfterFunc callbacks are events on the network's queue
// (serialized with deliveries) and belong to no peer; use Endpoint.Clock for
// timers that Kill should silence.
func (n *Network) Clock() protocol.Clock { return clock{n: n} }

type clock struct {
	n     *Network
	owner *Endpoint // nil: the network's own clock
}

func (c clock) Now() time.Time {
	if !c.n.opts.Deterministic {
		return time.Now()
	}
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	return epoch.Add(time.Duration(c.n.now))
}

// AfterFunc queues f after d. After Close (or, on an endpoint's clock, after
// the endpoint was killed) f never runs.
func (c clock) AfterFunc(d time.Duration, f func()) protocol.Timer {
	t := &timer{n: c.n, owner: c.owner, fn: f}
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	if f == nil || c.n.closed || (c.owner != nil && c.owner.killed) {
		t.state = timerDead
		return t
	}
	c.n.schedule(d, event{kind: evTimer, tm: t})
	return t
}

const (
	timerPending = iota
	timerFired
	timerStopped
	timerDead // discarded without running: owner killed, network closed
)

type timer struct {
	n     *Network
	owner *Endpoint
	fn    func()
	state uint8 // guarded by n.mu
}

// Stop prevents the call if it is still pending and reports whether it did.
func (t *timer) Stop() bool {
	t.n.mu.Lock()
	defer t.n.mu.Unlock()
	if t.state != timerPending {
		return false
	}
	// The event stays queued until its time (then it is discarded); what
	// it would have run is let go now: a role re-arming an idle timer per
	// message must not keep every closure it replaced.
	t.state, t.fn = timerStopped, nil
	return true
}

// unsubscribeLocked removes a (killed) endpoint from every topic; n.mu held.
func (n *Network) unsubscribeLocked(e *Endpoint) {
	for _, t := range n.topics {
		if _, ok := t.members[e]; !ok {
			continue
		}
		delete(t.members, e)
		for i, s := range t.subs {
			if s == e {
				t.subs = append(t.subs[:i:i], t.subs[i+1:]...)
				break
			}
		}
	}
}
