package securesum

import (
	"fmt"
	"slices"
	"time"

	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/shamir"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Coordinator is the data user's side: it opens sum instances, re-forms
// rings, fixes Shamir dealer sets and reconstructs totals.
//
// It is a state machine without locks: Sum, Handle and its timers (armed on
// Env.Clock, which is the node's protocol.Loop) must run on one loop.
type Coordinator struct {
	env   Env
	p     Params
	codec field.Codec

	seq   uint64
	stats Stats
	sums  map[key]*coordSum // by base key (instance 0)
}

type phase int

const (
	phaseRunning   phase = iota // ring: waiting for the total; shamir: dealing
	phaseProbing                // ring: pinged the parties; shamir: asked for holdings
	phaseRevealing              // shamir: dealer set sent, collecting partial sums
	phaseDone
)

type coordSum struct {
	k        key // current instance
	roster   []protocol.PeerID
	excluded map[protocol.PeerID]bool
	parts    []protocol.PeerID
	length   int
	beacon   []byte
	done     func([]float64, int, error)
	phase    phase
	timer    protocol.Timer
	reforms  int
	started  int
	// ring
	pongs map[protocol.PeerID]bool
	// shamir
	committee  []protocol.PeerID
	t          int
	holdAll    map[protocol.PeerID]bool
	holds      map[protocol.PeerID]map[string]bool
	q          []string
	qAll       bool
	waitedMore bool
	revealers  map[protocol.PeerID]bool
	partials   map[protocol.PeerID]shamir.Share
}

// NewCoordinator prepares a coordinator.
func NewCoordinator(env Env, p Params) *Coordinator {
	c, _ := field.NewCodec(p.ScaleBits)
	return &Coordinator{env: env, p: p, codec: c, sums: map[key]*coordSum{}}
}

// Stats returns a copy of the counters (call it on the node's loop).
func (c *Coordinator) Stats() Stats { return c.stats }

// Sum opens a secure sum of vectors of `length` over roster for (h,
// purpose). done is called exactly once, with the total and the number of
// parties it covers, or an error; SumResult is published before. done runs
// inside the event that ends the sum (a message or a timer), on the loop.
func (c *Coordinator) Sum(h *wire.Header, purpose string, roster []protocol.PeerID, length int, beacon []byte, done func(total []float64, parties int, err error)) error {
	if err := c.p.Validate(); err != nil {
		return err
	}
	if len(roster) == 0 || length < 1 {
		return fmt.Errorf("securesum: %d parties, length %d", len(roster), length)
	}
	bound := c.p.Bound
	if bound == 0 {
		bound = float64(len(roster))
	}
	if err := c.codec.CheckBudget(len(roster), bound); err != nil {
		return err
	}
	k := keyOf(h, purpose, 0)
	if _, dup := c.sums[k]; dup {
		return fmt.Errorf("%w: sum %q of round %d attempt %d already started", ErrDuplicate, purpose, k.round, k.attempt)
	}
	s := &coordSum{k: k, roster: slices.Clone(roster), excluded: map[protocol.PeerID]bool{}, length: length,
		beacon: slices.Clone(beacon), done: done}
	slices.Sort(s.roster)
	c.sums[k] = s
	c.start(s)
	return nil
}

func (c *Coordinator) start(s *coordSum) {
	s.parts = s.parts[:0]
	var excl []string
	for _, r := range s.roster {
		if s.excluded[r] {
			excl = append(excl, string(r))
		} else {
			s.parts = append(s.parts, r)
		}
	}
	start := &wire.SumStart{Purpose: s.k.purpose, Instance: s.k.instance, Method: c.p.Method, Excluded: excl, Length: uint32(s.length)}
	s.phase = phaseRunning
	s.pongs = map[protocol.PeerID]bool{}
	if c.p.Method == Shamir {
		s.committee = Committee(s.parts, c.p.Committee, s.beacon, s.k.instance)
		s.t = min(c.p.Threshold, len(s.committee))
		s.holdAll, s.holds = map[protocol.PeerID]bool{}, map[protocol.PeerID]map[string]bool{}
		s.partials, s.revealers, s.q, s.qAll, s.waitedMore = map[protocol.PeerID]shamir.Share{}, nil, nil, false, false
		start.Committee = make([]string, len(s.committee))
		for i, m := range s.committee {
			start.Committee[i] = string(m)
		}
		start.Threshold = uint32(s.t)
	}
	c.stats.Started++
	s.started++
	c.env.Publish(&wire.Envelope{Header: header(s.k, &c.seq), Body: &wire.Envelope_SumStart{SumStart: start}})
	wait := c.p.Timeout
	if c.p.Method == Ring {
		wait += time.Duration(2*len(s.parts)) * c.p.HopTimeout // the ring is 2n sequential hops
	}
	c.arm(s, wait, c.onTimeout)
}

// arm replaces the instance's timer.
func (c *Coordinator) arm(s *coordSum, d time.Duration, f func(*coordSum, key)) {
	if s.timer != nil {
		s.timer.Stop()
	}
	k := s.k
	s.timer = c.env.Clock.AfterFunc(d, func() {
		if s.k == k && s.phase != phaseDone {
			f(s, k)
		}
	})
}

func (c *Coordinator) send(s *coordSum, to protocol.PeerID, m *wire.Sum) {
	c.env.Send(to, protoFor(c.p.Method), sumEnvelope(s.k, &c.seq, m))
}

func (c *Coordinator) onTimeout(s *coordSum, _ key) {
	switch {
	case c.p.Method == Ring && s.phase == phaseRunning:
		// The total is late: find out who is still there.
		s.phase = phaseProbing
		for _, p := range s.parts {
			c.send(s, p, &wire.Sum{Kind: wire.Sum_PING})
		}
		c.arm(s, c.p.PingTimeout, c.reform)
	case c.p.Method == Shamir && s.phase == phaseRunning:
		s.phase = phaseProbing
		for _, m := range s.committee {
			if !s.holdAll[m] {
				c.send(s, m, &wire.Sum{Kind: wire.Sum_SHAMIR_REPORT})
			}
		}
		c.arm(s, c.p.PingTimeout, func(s *coordSum, _ key) { c.decide(s) })
	case s.phase == phaseRevealing:
		c.fail(s, fmt.Errorf("%w: %d of %d partial sums arrived, threshold %d", ErrTooFew, len(s.partials), len(s.revealers), s.t))
	}
}

// reform starts a new ring instance without the parties that did not answer.
func (c *Coordinator) reform(s *coordSum, _ key) {
	var silent []protocol.PeerID
	for _, p := range s.parts {
		if !s.pongs[p] {
			silent = append(silent, p)
			s.excluded[p] = true
		}
	}
	s.reforms++
	c.stats.Reforms++
	if s.reforms > c.p.MaxReforms {
		c.fail(s, fmt.Errorf("%w: ring did not complete after %d re-forms", ErrTooFew, c.p.MaxReforms))
		return
	}
	if len(s.parts)-len(silent) < 1 {
		c.fail(s, fmt.Errorf("%w: no party answered", ErrTooFew))
		return
	}
	c.env.Log.Info("re-forming ring", "purpose", s.k.purpose, "round", s.k.round, "instance", s.k.instance+1, "silent", len(silent))
	s.k.instance++
	c.start(s)
}

// decide fixes the dealer set Q: the dealers held by at least t responding
// members, shrunk (dropping the dealer held by the fewest) until at least t
// members hold all of Q; those members are asked for their partial sums.
func (c *Coordinator) decide(s *coordSum) {
	responders := []protocol.PeerID{}
	held := func(m protocol.PeerID, d string) bool { return s.holdAll[m] || s.holds[m][d] }
	for _, m := range s.committee {
		if s.holdAll[m] || s.holds[m] != nil {
			responders = append(responders, m)
		}
	}
	count := map[string]int{}
	for _, d := range s.parts {
		for _, m := range responders {
			if held(m, string(d)) {
				count[string(d)]++
			}
		}
	}
	var q []string
	for _, d := range s.parts {
		if count[string(d)] >= s.t {
			q = append(q, string(d))
		}
	}
	holdersOf := func(q []string) []protocol.PeerID {
		var ms []protocol.PeerID
		for _, m := range responders {
			ok := true
			for _, d := range q {
				if !held(m, d) {
					ok = false
					break
				}
			}
			if ok {
				ms = append(ms, m)
			}
		}
		return ms
	}
	if len(q) < len(s.parts) && !s.waitedMore {
		// Some dealers' shares have not reached enough members: on a busy
		// network they may be in flight. Wait one more timeout before
		// settling for a total that leaves them out (a crashed dealer thus
		// costs one extra timeout per sum).
		s.waitedMore = true
		s.phase = phaseRunning
		c.arm(s, c.p.Timeout, c.onTimeout)
		return
	}
	members := holdersOf(q)
	for len(q) > 0 && len(members) < s.t {
		worst := 0
		for i, d := range q {
			if count[d] < count[q[worst]] {
				worst = i
			}
		}
		q = slices.Delete(q, worst, worst+1)
		members = holdersOf(q)
	}
	if (len(q) == 0 || len(members) < s.t) && s.reforms < c.p.MaxReforms {
		// Shares may still be in flight on a slow network: wait another
		// timeout and ask again before giving up. Nothing was revealed yet.
		s.reforms++
		c.stats.Reforms++
		s.phase = phaseRunning
		c.env.Log.Debug("too few shares held; waiting longer", "purpose", s.k.purpose, "round", s.k.round, "responders", len(responders))
		c.arm(s, c.p.Timeout, c.onTimeout)
		return
	}
	if len(q) == 0 || len(members) < s.t {
		c.fail(s, fmt.Errorf("%w: %d of %d committee members answered, threshold %d", ErrTooFew, len(responders), len(s.committee), s.t))
		return
	}
	s.q, s.qAll = q, len(q) == len(s.parts)
	s.revealers = map[protocol.PeerID]bool{}
	s.phase = phaseRevealing
	msg := &wire.Sum{Kind: wire.Sum_SHAMIR_DEALERS, AllDealers: s.qAll}
	if !s.qAll {
		msg.Dealers = q
	}
	for _, m := range members {
		s.revealers[m] = true
		c.send(s, m, msg)
	}
	c.arm(s, c.p.Timeout, c.onTimeout)
}

// Handle processes one secure-sum message addressed to the coordinator.
func (c *Coordinator) Handle(from protocol.PeerID, env *wire.Envelope) {
	if err := c.handle(from, env); err != nil {
		c.stats.count(err)
		c.env.Log.Debug("secure-sum message dropped", "from", string(from), "err", err)
	}
}

func (c *Coordinator) handle(from protocol.PeerID, env *wire.Envelope) error {
	m := env.GetSum()
	if m == nil {
		return fmt.Errorf("%w: not a secure-sum message", ErrMalformed)
	}
	k := keyOf(env.GetHeader(), m.GetPurpose(), m.GetInstance())
	s := c.sums[k.base()]
	if s == nil || s.phase == phaseDone || s.k != k {
		return ErrLate
	}
	if _, ok := slices.BinarySearch(s.parts, from); !ok {
		return ErrNotParticipant
	}
	switch m.GetKind() {
	case wire.Sum_PONG:
		if s.pongs[from] {
			return ErrDuplicate
		}
		s.pongs[from] = true
		return nil
	case wire.Sum_RING_TOTAL:
		if c.p.Method != Ring || from != s.parts[len(s.parts)-1] {
			return fmt.Errorf("%w: total from %s", ErrNotParticipant, from)
		}
		v, err := elems(m.GetValues(), s.length)
		if err != nil {
			return err
		}
		c.finish(s, v, len(s.parts))
		return nil
	case wire.Sum_SHAMIR_HOLDING:
		i := slices.Index(s.committee, from)
		if c.p.Method != Shamir || i < 0 {
			return fmt.Errorf("%w: holding from a non-member", ErrNotParticipant)
		}
		if s.phase == phaseRevealing {
			return ErrLate
		}
		if m.GetAllDealers() {
			s.holdAll[from] = true
		} else {
			h := map[string]bool{}
			for _, d := range m.GetDealers() {
				h[d] = true
			}
			s.holds[from] = h
		}
		if len(s.holdAll) == len(s.committee) {
			c.decide(s) // fast path: everyone holds every share
		}
		return nil
	case wire.Sum_SHAMIR_PARTIAL:
		if c.p.Method != Shamir || s.phase != phaseRevealing || !s.revealers[from] {
			return fmt.Errorf("%w: partial from %s", ErrNotParticipant, from)
		}
		if _, dup := s.partials[from]; dup {
			return ErrDuplicate
		}
		i := slices.Index(s.committee, from)
		if m.GetX() != uint64(i+1) {
			return fmt.Errorf("%w: partial at point %d from member %d", ErrMalformed, m.GetX(), i+1)
		}
		v, err := elems(m.GetValues(), s.length)
		if err != nil {
			return err
		}
		s.partials[from] = shamir.Share{X: field.Elem(i + 1), Y: v}
		if len(s.partials) >= s.t {
			shares := make([]shamir.Share, 0, len(s.partials))
			for _, mem := range s.committee {
				if sh, ok := s.partials[mem]; ok {
					shares = append(shares, sh)
				}
			}
			total, err := shamir.Reconstruct(shares, s.t)
			if err != nil {
				c.fail(s, err)
				return nil
			}
			c.finish(s, total, len(s.q))
		}
		return nil
	}
	return fmt.Errorf("%w: kind %v at the coordinator", ErrMalformed, m.GetKind())
}

func (c *Coordinator) finish(s *coordSum, total []field.Elem, parties int) {
	s.phase = phaseDone
	if s.timer != nil {
		s.timer.Stop()
	}
	c.stats.Completed++
	dec := c.codec.DecodeVec(total)
	c.env.Publish(&wire.Envelope{Header: header(s.k, &c.seq), Body: &wire.Envelope_SumResult{SumResult: &wire.SumResult{
		Purpose: s.k.purpose, Instance: s.k.instance, Total: dec, Parties: uint32(parties)}}})
	s.done(dec, parties, nil)
}

func (c *Coordinator) fail(s *coordSum, err error) {
	s.phase = phaseDone
	if s.timer != nil {
		s.timer.Stop()
	}
	c.stats.Failed++
	c.env.Log.Warn("secure sum failed", "purpose", s.k.purpose, "round", s.k.round, "err", err)
	s.done(nil, 0, err)
}
