package securesum

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/shamir"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Coordinator is the data user's side: it opens sum instances, re-forms
// rings, fixes Shamir dealer sets and reconstructs totals.
//
// It is a sub-machine of the data user's role, without locks: Sum, Handle
// and Fire run on the role's driver. Each instance has one named timer
// (TimerPrefix + purpose/round/attempt), armed through Env.Timers, whose
// expiry the role hands back to Fire; without Env.Timers (a coordinator used
// on its own) it arms them on Env.Clock and fires them itself.
//
// Parties that stayed silent in one sum of the session (a ring party that
// did not answer a probe, a Shamir dealer whose shares reached nobody, a
// committee member that never reported) are left out of the session's later
// sums, so that one crashed owner costs one timeout, not one per sum.
type Coordinator struct {
	env   Env
	p     Params
	codec field.Codec

	seq   uint64
	stats Stats
	sums  map[key]*coordSum    // by base key (instance 0)
	armed map[string]*coordSum // by timer name: instances with a pending timer
	dead  map[protocol.PeerID]bool
	warnT bool
	base  uint32 // instance number of every sum's first instance
	rtt   *RTTs
}

// Phase is where one secure-sum instance is, as the coordinator sees it.
type Phase int

const (
	PhaseRunning   Phase = iota // ring: waiting for the total; shamir: dealing
	PhaseProbing                // ring: pinged the parties; shamir: asked for holdings
	PhaseRevealing              // shamir: dealer set sent, collecting partial sums
	PhaseDone                   // total published or failed
)

func (p Phase) String() string {
	switch p {
	case PhaseRunning:
		return "running"
	case PhaseProbing:
		return "probing"
	case PhaseRevealing:
		return "revealing"
	case PhaseDone:
		return "done"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// Request names one secure sum.
type Request struct {
	Header        *wire.Header // session, round, attempt
	Purpose       string
	Roster        []protocol.PeerID // sorted
	RosterVersion uint32
	Length        int
	// Beacon is the session's public randomness (committee choice); parties
	// derive the same bytes from the roster.
	Beacon []byte
	// Pool, if set (sorted; Shamir with Params.SingleInstance only), is
	// where the committee is drawn from instead of Roster: the session's
	// roster, which every party holds (Party.SetPool). Roster is then the
	// dealers only, and the committee is one set for every sum of the
	// purpose in the session, whichever owners deal, so its connections
	// are opened once (protocol.Preparer). The SumStart says so
	// (committee_from_roster), and goes to the members outside Roster too.
	Pool []protocol.PeerID
}

type coordSum struct {
	k        key // current instance
	req      Request
	excluded []byte // bitmap over req.Roster
	parts    []protocol.PeerID
	start    *wire.Envelope // the instance's SumStart, sent again when it stalls
	done     func([]float64, int, error)
	phase    Phase
	name     string          // the instance's timer name
	onFire   func(*coordSum) // what its pending timer does
	timer    protocol.Timer  // the pending timer, without Env.Timers
	gen      uint64          // arms so far: a stale clock timer is ignored
	reforms  int
	nudges   int // stalls recovered by retransmission, without a re-form
	ring     *ringCoord
	shamir   *shamirCoord
	// begun is when the instance started: its dealing (or ring pass) is
	// capped at Params.Cap() from then.
	begun time.Time
	// probed holds when each outstanding probe (ring PING, Shamir REPORT)
	// or dealer set was sent, for RTT samples; a zero time marks a request
	// sent again before it was answered, whose reply is ambiguous and not
	// sampled (Karn's rule).
	probed map[protocol.PeerID]time.Time
	// progress is the dealing's progress at the last check (shares held by
	// responding members plus responders); progPinged is its value when the
	// missing dealers were last asked to re-send, -1 before.
	progress, progPinged int
	revealed             bool  // done with a total (Dealt)
	checks               int   // dealing checks so far
	gained               bool  // the last check found progress
	held                 []int // per dealer: responding members holding its share at the last check
}

type ringCoord struct {
	pongs  map[protocol.PeerID]bool
	second bool // the silent parties were pinged a second time
}

type shamirCoord struct {
	committee  []protocol.PeerID
	t          int
	holdAll    map[protocol.PeerID]bool
	holds      map[protocol.PeerID][]byte // dealer bitmap over parts
	q          []byte                     // the dealer set (bitmap over parts)
	qSize      int
	waitedMore bool
	revealers  map[protocol.PeerID]bool
	partials   map[protocol.PeerID]shamir.Share
}

// NewCoordinator prepares a coordinator. Its instances are numbered from a
// random base, so that a data user restarted in the same session never
// reuses the instance names of its earlier incarnation: a share or ring
// message of the old instance still in flight cannot be taken for one of
// the new.
func NewCoordinator(env Env, p Params) *Coordinator {
	c, _ := field.NewCodec(p.ScaleBits)
	rtt := env.RTT
	if rtt == nil {
		rtt = NewRTTs()
	}
	return &Coordinator{env: env, p: p, codec: c, sums: map[key]*coordSum{}, armed: map[string]*coordSum{}, dead: map[protocol.PeerID]bool{},
		base: env.Rand.Uint32() >> 2, // room for 2^30 re-forms above it
		rtt:  rtt}
}

// RTT is the coordinator's round-trip estimator (call it on the role's driver).
func (c *Coordinator) RTT() *RTTs { return c.rtt }

// Stats returns a copy of the counters (call it on the node's loop).
func (c *Coordinator) Stats() Stats { return c.stats }

// Dead lists the parties left out of later sums, sorted.
func (c *Coordinator) Dead() []protocol.PeerID {
	out := make([]protocol.PeerID, 0, len(c.dead))
	for p := range c.dead {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Sum opens a secure sum of vectors of r.Length over r.Roster (minus the
// parties already known dead). done is called exactly once, with the total
// and the number of parties it covers, or an error; the SumResult has been
// sent to the instance's parties before. done runs inside the event that
// ends the sum (a message or a timer), inside the role's transition.
func (c *Coordinator) Sum(r Request, done func(total []float64, parties int, err error)) error {
	if err := c.p.Validate(); err != nil {
		return err
	}
	if len(r.Roster) == 0 || r.Length < 1 {
		return fmt.Errorf("securesum: %d parties, length %d", len(r.Roster), r.Length)
	}
	if !slices.IsSorted(r.Roster) {
		return fmt.Errorf("securesum: roster not sorted")
	}
	if r.Pool != nil {
		// A re-formed instance would have to exclude silent members from
		// the pool, which its SumStart cannot name: a pool sum is dealt
		// once.
		if c.p.Method != Shamir || !c.p.SingleInstance {
			return fmt.Errorf("securesum: a committee pool needs Shamir with SingleInstance")
		}
		if !slices.IsSorted(r.Pool) || len(r.Pool) == 0 {
			return fmt.Errorf("securesum: committee pool empty or not sorted")
		}
	}
	if err := c.codec.CheckBudget(len(r.Roster), c.bound(len(r.Roster))); err != nil {
		return err
	}
	k := keyOf(r.Header, r.Purpose, 0)
	if _, dup := c.sums[k]; dup {
		return fmt.Errorf("%w: sum %q of round %d attempt %d already started", ErrDuplicate, r.Purpose, k.round, k.attempt)
	}
	s := &coordSum{k: k, req: r, excluded: newBitmap(len(r.Roster)), done: done,
		name: fmt.Sprintf("%ssum/%s/%d/%d", c.env.TimerPrefix, r.Purpose, k.round, k.attempt)}
	s.k.instance = c.base
	for i, p := range r.Roster {
		if c.dead[p] {
			setBit(s.excluded, i)
		}
	}
	c.sums[k] = s
	c.start(s)
	return nil
}

// Dealt lists, sorted, the roster members whose values are in the total of
// the sum r names, once it is done (inside its done callback, or later):
// the dealer set of a Shamir sum, the parties of a ring's last instance.
// The roster members outside it were silent, excluded or refused. ok is
// false while the sum has no total (running, failed, or unknown).
func (c *Coordinator) Dealt(h *wire.Header, purpose string) (dealt []protocol.PeerID, ok bool) {
	s := c.sums[keyOf(h, purpose, 0)]
	if s == nil || s.phase != PhaseDone || !s.revealed {
		return nil, false
	}
	for d, p := range s.parts {
		if s.shamir == nil || hasBit(s.shamir.q, d) {
			dealt = append(dealt, p)
		}
	}
	slices.Sort(dealt)
	return dealt, true
}

// bound is the largest |value| a party may contribute to a sum over n roster
// members (see Params.Bound).
func (c *Coordinator) bound(n int) float64 {
	if c.p.Bound > 0 {
		return c.p.Bound
	}
	return float64(n)
}

func (c *Coordinator) start(s *coordSum) {
	s.parts = s.parts[:0]
	for i, r := range s.req.Roster {
		if !hasBit(s.excluded, i) {
			s.parts = append(s.parts, r)
		}
	}
	if len(s.parts) < c.p.MinParties {
		c.fail(s, fmt.Errorf("%w: %d parties left, a sum reveals nothing over fewer than %d", ErrTooFew, len(s.parts), c.p.MinParties))
		return
	}
	start := &wire.SumStart{Purpose: s.k.purpose, Instance: s.k.instance, Method: c.p.Method, Length: uint32(s.req.Length),
		RosterVersion: s.req.RosterVersion}
	if countBits(s.excluded) > 0 {
		setExcluded(start, s.excluded, len(s.req.Roster))
	}
	s.phase = PhaseRunning
	s.begun, s.probed, s.progress, s.progPinged, s.checks, s.gained, s.held = c.env.Clock.Now(), map[protocol.PeerID]time.Time{}, 0, -1, 0, false, nil
	var wait time.Duration
	switch c.p.Method {
	case Ring:
		s.ring = &ringCoord{pongs: map[protocol.PeerID]bool{}}
		wait = c.ringWait(s) // the ring is 2n sequential hops
	case Shamir:
		pool, size := s.parts, c.p.Committee
		if s.req.Pool != nil {
			pool, size, start.CommitteeFromRoster = s.req.Pool, poolCommittee(c.p, len(s.parts)), true
		}
		sh := &shamirCoord{committee: committee(pool, size, s.req.Beacon, s.k)}
		sh.t = c.p.ThresholdFor(len(sh.committee))
		sh.holdAll, sh.holds = map[protocol.PeerID]bool{}, map[protocol.PeerID][]byte{}
		sh.partials = map[protocol.PeerID]shamir.Share{}
		if sh.t == len(sh.committee) && sh.t > 1 && !c.warnT {
			c.warnT = true
			c.env.Log.Warn("Shamir threshold equals the committee size: one silent member fails every sum", "t", sh.t)
		}
		start.CommitteeDigest = CommitteeDigest(sh.committee)
		start.Threshold = uint32(sh.t)
		s.shamir = sh
		wait = c.dealWait(s)
	}
	c.stats.Started++
	s.start = &wire.Envelope{Header: header(s.k, &c.seq), Body: &wire.Envelope_SumStart{SumStart: start}}
	c.announce(s)
	c.arm(s, wait, c.onTimeout)
}

// announce sends the instance's SumStart to each of its parties, on the
// sum protocol's direct stream: the same stream carries the coordinator's
// later requests to that party (PING, SHAMIR_REPORT, SHAMIR_DEALERS), so
// the SumStart reaches a party before them. Nobody else needs it: a party
// learns its instance only from it, and excluded members and outsiders
// take no part. It names the committee by its digest; every party computes
// the committee itself from the roster and beacon it holds.
//
// A committee drawn from a pool (Request.Pool) has members that do not
// deal: they get the SumStart too, after the parties.
func (c *Coordinator) announce(s *coordSum) {
	proto := c.env.protoFor(c.p.Method)
	for _, p := range s.parts {
		c.env.Send(p, proto, s.start)
	}
	for _, m := range c.membersOnly(s) {
		c.env.Send(m, proto, s.start)
	}
}

// membersOnly are the committee members of s that are not its parties
// (only with a pool), in x-order.
func (c *Coordinator) membersOnly(s *coordSum) []protocol.PeerID {
	if s.req.Pool == nil || s.shamir == nil {
		return nil
	}
	var out []protocol.PeerID
	for _, m := range s.shamir.committee {
		if _, ok := slices.BinarySearch(s.parts, m); !ok {
			out = append(out, m)
		}
	}
	return out
}

// maxNudges*MaxReforms bounds the retransmission rounds of one instance: a
// ring of n parties over links that lose a fraction f of messages stalls
// about 2nf times (6 for 60 parties at 5%), each stall recovered by one
// probe.
const maxNudges = 4

// Deadlines. A step waits for its message chain: depth one-way delays of
// the slowest expected party, each taken as half its RTO (srtt + 4 rttvar,
// RTTs), plus Params.Processing for every message the busiest party handles
// in the step, and never less than the step's floor (Timeout for a step,
// PingTimeout for a probe). A peer never measured counts as the slowest
// measured one; with no measurement at all the RTO is PingTimeout (1 s by
// default, TCP's initial RTO). Owner-to-owner delays are not measured by
// the coordinator: they are taken to be no larger than the slowest
// user-to-owner delay (true for the symmetric links of the tests; a
// dealing that outlasts its deadline anyway is extended while it makes
// progress, see decide).

// oneWay is the one-way delay allowed for a message among peers.
func (c *Coordinator) oneWay(peers []protocol.PeerID) time.Duration {
	return c.rtt.MaxRTO(peers, c.p.PingTimeout) / 2
}

// capped bounds a wait by what is left of the instance's Params.Cap().
func (c *Coordinator) capped(s *coordSum, d time.Duration) time.Duration {
	left := c.p.Cap() - c.env.Clock.Now().Sub(s.begun)
	return max(min(d, left), 0)
}

// dealWait is the Shamir dealing step: SumStart to every dealer, a share
// from each dealer to each member, each member's holding report: 3
// one-way delays; a member handles one share per dealer and the
// coordinator one report per member.
func (c *Coordinator) dealWait(s *coordSum) time.Duration {
	msgs := len(s.parts) + len(s.shamir.committee)
	return c.capped(s, max(c.p.Timeout, 3*c.oneWay(s.parts)+time.Duration(msgs)*c.p.Processing))
}

// revealWait is the Shamir reveal step: the dealer set to each member and
// its partial sum back, 2 one-way delays, a member's sum over its shares.
func (c *Coordinator) revealWait(s *coordSum) time.Duration {
	msgs := len(s.parts) + len(s.shamir.committee)
	return max(c.p.Timeout, 2*c.oneWay(s.shamir.committee)+time.Duration(msgs)*c.p.Processing)
}

// probeWait is how long a probe of peers waits for its answers: their
// slowest RTO, with the messages a prober may have queued ahead of it.
func (c *Coordinator) probeWait(s *coordSum, peers []protocol.PeerID) time.Duration {
	return max(c.p.PingTimeout, c.rtt.MaxRTO(peers, c.p.PingTimeout)+time.Duration(len(s.parts))*c.p.Processing)
}

// ringWait is how long a ring pass may take: SumStart, n forward hops, n-1
// backward hops and the total to the coordinator, 2n+1 one-way delays (the
// ring's latency bound) with 2n messages handled one after another; at
// least the timeout plus HopTimeout per hop, at most the cap.
func (c *Coordinator) ringWait(s *coordSum) time.Duration {
	n := len(s.parts)
	floor := c.p.Timeout + time.Duration(2*n)*c.p.HopTimeout
	need := time.Duration(2*n+1)*c.oneWay(s.parts) + time.Duration(2*n)*c.p.Processing
	return min(max(floor, need), c.p.Cap())
}

// RingBound is the latency bound of a ring of n parties whose one-way
// delays are at most oneWay: 2n+1 sequential messages (see ringWait).
func RingBound(n int, oneWay time.Duration) time.Duration { return time.Duration(2*n+1) * oneWay }

// probe records that a request that expects a reply goes to p now.
func (s *coordSum) probe(p protocol.PeerID, now time.Time) {
	if _, out := s.probed[p]; out {
		s.probed[p] = time.Time{} // sent again: the reply is ambiguous
		return
	}
	s.probed[p] = now
}

// answered takes an RTT sample from p's reply to an outstanding request.
func (c *Coordinator) answered(s *coordSum, p protocol.PeerID) {
	t0, ok := s.probed[p]
	if !ok {
		return
	}
	delete(s.probed, p)
	if !t0.IsZero() {
		c.rtt.Observe(p, c.env.Clock.Now().Sub(t0))
	}
}

// arm replaces the instance's timer: f runs when it fires.
func (c *Coordinator) arm(s *coordSum, d time.Duration, f func(*coordSum)) {
	s.onFire = f
	s.gen++
	c.armed[s.name] = s
	if c.env.Timers != nil {
		c.env.Timers.SetTimer(s.name, d)
		return
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	gen := s.gen
	s.timer = c.env.Clock.AfterFunc(d, func() {
		if s.gen == gen {
			c.Fire(s.name)
		}
	})
}

// disarm cancels the instance's timer (it ended).
func (c *Coordinator) disarm(s *coordSum) {
	s.onFire = nil
	s.gen++
	delete(c.armed, s.name)
	if c.env.Timers != nil {
		c.env.Timers.CancelTimer(s.name)
	} else if s.timer != nil {
		s.timer.Stop()
	}
}

// Stop ends every instance still running, without calling its done: the
// role that owns the coordinator ended its session, so no SumStart is sent
// again and no timer of its fires. Later Handle calls find no live
// instance.
func (c *Coordinator) Stop() {
	for _, s := range c.sums {
		if s.phase != PhaseDone {
			s.phase = PhaseDone
			c.disarm(s)
		}
	}
}

// Fire runs the expiry of the named timer and reports whether it is one of
// this coordinator's (an instance's, pending or already ended).
func (c *Coordinator) Fire(name string) bool {
	s, ok := c.armed[name]
	if !ok {
		return strings.HasPrefix(name, c.env.TimerPrefix+"sum/")
	}
	f := s.onFire
	if f == nil || s.phase == PhaseDone {
		return true
	}
	s.onFire = nil
	delete(c.armed, name)
	f(s)
	return true
}

func (c *Coordinator) send(s *coordSum, to protocol.PeerID, m *wire.Sum) {
	c.env.Send(to, c.env.protoFor(c.p.Method), sumEnvelope(s.k, &c.seq, m))
}

// onTimeout handles a stalled instance. Messages can be lost, so the first
// answer is retransmission: the SumStart is sent again to every party (a
// party that lost it cannot answer anything else), and a PING asks
// every ring party to re-send its last ring message (a Shamir dealer its
// shares); receivers drop what they already have. Only parties that stay
// silent through two probes are left out.
func (c *Coordinator) onTimeout(s *coordSum) {
	switch {
	case s.ring != nil && s.phase == PhaseRunning:
		s.phase = PhaseProbing
		s.ring.pongs, s.ring.second = map[protocol.PeerID]bool{}, false
		c.announce(s)
		now := c.env.Clock.Now()
		for _, p := range s.parts {
			s.probe(p, now)
			c.send(s, p, &wire.Sum{Kind: wire.Sum_PING})
		}
		c.arm(s, c.probeWait(s, s.parts), c.probed)
	case s.shamir != nil && s.phase == PhaseRunning:
		s.phase = PhaseProbing
		// While the dealing makes progress the messages are arriving: a
		// busy member works through its queue in order, and another
		// SumStart or report request would only lengthen it. They are
		// sent again at the first check and after a check without progress.
		again := s.checks == 0 || !s.gained
		if again {
			c.announce(s)
		}
		now := c.env.Clock.Now()
		var asked []protocol.PeerID
		for _, m := range s.shamir.committee {
			if !s.shamir.holdAll[m] {
				if _, out := s.probed[m]; out && !again {
					asked = append(asked, m)
					continue
				}
				s.probe(m, now)
				asked = append(asked, m)
				c.send(s, m, &wire.Sum{Kind: wire.Sum_SHAMIR_REPORT})
			}
		}
		c.arm(s, c.probeWait(s, asked), c.decide) // a last report is always waited for, past the cap too
	case s.phase == PhaseRevealing:
		sh := s.shamir
		if s.nudges < maxNudges*c.p.MaxReforms {
			// Dealer sets or partial sums were lost: ask again. A member
			// answers the same dealer set with the same partial sum.
			s.nudges++
			msg := &wire.Sum{Kind: wire.Sum_SHAMIR_DEALERS, AllDealers: sh.qSize == len(s.parts)}
			if !msg.AllDealers {
				msg.Dealers = sh.q
			}
			now := c.env.Clock.Now()
			for _, m := range sh.committee { // in order: a run is a function of its seed
				if _, ok := sh.partials[m]; sh.revealers[m] && !ok {
					s.probe(m, now)
					c.send(s, m, msg)
				}
			}
			c.arm(s, c.revealWait(s), c.onTimeout)
			return
		}
		if s.reforms < c.p.MaxReforms && !c.p.SingleInstance {
			// Members that hold the dealer set went silent before
			// revealing: start a new instance without them (fresh
			// sharings, so partial sums of the two instances cannot be
			// combined).
			silent := 0
			for m := range sh.revealers {
				if _, ok := sh.partials[m]; !ok {
					i, _ := slices.BinarySearch(s.req.Roster, m)
					setBit(s.excluded, i)
					c.dead[m] = true
					silent++
				}
			}
			s.reforms++
			c.stats.Reforms++
			c.env.Log.Info("re-forming Shamir sum", "purpose", s.k.purpose, "round", s.k.round, "silent_members", silent)
			s.k.instance++
			c.start(s)
			return
		}
		c.fail(s, fmt.Errorf("%w: %d of %d partial sums arrived, threshold %d", ErrTooFew, len(sh.partials), len(sh.revealers), sh.t))
	}
}

// probed runs after a ring probe: everyone answered (their retransmissions
// are under way: wait again), some stayed silent twice (re-form without
// them), or some are silent once (ping them again).
func (c *Coordinator) probed(s *coordSum) {
	var silent []protocol.PeerID
	for _, p := range s.parts {
		if !s.ring.pongs[p] {
			silent = append(silent, p)
		}
	}
	switch {
	case len(silent) == 0 && s.nudges < maxNudges*c.p.MaxReforms:
		s.nudges++
		s.phase = PhaseRunning
		c.arm(s, c.ringWait(s), c.onTimeout)
	case len(silent) > 0 && !s.ring.second:
		s.ring.second = true
		now := c.env.Clock.Now()
		for _, p := range silent {
			s.probe(p, now)
			c.send(s, p, &wire.Sum{Kind: wire.Sum_PING})
		}
		c.arm(s, c.probeWait(s, silent), c.probed)
	default:
		c.reform(s)
	}
}

// reform starts a new ring instance without the parties that did not answer.
func (c *Coordinator) reform(s *coordSum) {
	silent := 0
	for _, p := range s.parts {
		if !s.ring.pongs[p] {
			silent++
			i, _ := slices.BinarySearch(s.req.Roster, p)
			setBit(s.excluded, i)
			c.dead[p] = true
		}
	}
	s.reforms++
	c.stats.Reforms++
	if s.reforms > c.p.MaxReforms || c.p.SingleInstance {
		c.fail(s, fmt.Errorf("%w: ring did not complete after %d re-forms", ErrTooFew, c.p.MaxReforms))
		return
	}
	c.env.Log.Info("re-forming ring", "purpose", s.k.purpose, "round", s.k.round, "instance", s.k.instance+1, "silent", silent)
	s.k.instance++
	c.start(s) // fails there if fewer than MinParties are left
}

// decide fixes the dealer set Q: the dealers held by at least t responding
// members, shrunk (dropping the dealer held by the fewest) until at least t
// members hold all of Q. Q never has fewer than MinDealers dealers: a
// smaller aggregate would reveal too much, so the sum fails instead.
func (c *Coordinator) decide(s *coordSum) {
	sh := s.shamir
	responders := sh.responders()
	count := sh.holdCounts(responders, len(s.parts))
	if c.extendDealing(s, responders, count) {
		return
	}
	q, members := sh.dealerSet(responders, count, c.p.MinDealers(len(sh.committee)))
	if minQ := c.p.MinDealers(len(sh.committee)); len(q) < minQ || len(members) < sh.t {
		c.tooFewHeld(s, responders, count, minQ, len(q), len(members))
		return
	}
	c.markSilent(s, responders, count)
	c.reveal(s, q, members)
}

// held reports whether member m holds dealer d's share (by its report).
func (sh *shamirCoord) held(m protocol.PeerID, d int) bool {
	return sh.holdAll[m] || hasBit(sh.holds[m], d)
}

// responders are the committee members that reported, in x-order.
func (sh *shamirCoord) responders() []protocol.PeerID {
	var out []protocol.PeerID
	for _, m := range sh.committee {
		if sh.holdAll[m] || sh.holds[m] != nil {
			out = append(out, m)
		}
	}
	return out
}

// holdCounts is, per dealer of n, how many responders hold its share.
func (sh *shamirCoord) holdCounts(responders []protocol.PeerID, n int) []int {
	count := make([]int, n)
	for d := range count {
		for _, m := range responders {
			if sh.held(m, d) {
				count[d]++
			}
		}
	}
	return count
}

// holdersOf are the responders that hold the share of every dealer in q.
func (sh *shamirCoord) holdersOf(responders []protocol.PeerID, q []int) []protocol.PeerID {
	var ms []protocol.PeerID
	for _, m := range responders {
		if !slices.ContainsFunc(q, func(d int) bool { return !sh.held(m, d) }) {
			ms = append(ms, m)
		}
	}
	return ms
}

// dealerSet is the largest dealer set decide can reveal over: the dealers
// held by at least t responders, shrunk while fewer than t responders hold
// all of it (never below minQ dealers), and the responders that do.
func (sh *shamirCoord) dealerSet(responders []protocol.PeerID, count []int, minQ int) (q []int, members []protocol.PeerID) {
	for d, k := range count {
		if k >= sh.t {
			q = append(q, d)
		}
	}
	members = sh.holdersOf(responders, q)
	for len(q) > minQ && len(members) < sh.t {
		worst := 0
		for i, d := range q {
			if count[d] < count[q[worst]] {
				worst = i
			}
		}
		q = slices.Delete(q, worst, worst+1)
		members = sh.holdersOf(responders, q)
	}
	return q, members
}

// extendDealing decides whether a dealing that is still incomplete waits
// another step, and if so asks the dealers whose shares stopped arriving
// to re-send and re-arms the instance's timer.
//
// Progress-based extension. Some dealers' shares have not reached every
// responding member (or some members have not answered): they may be lost
// or still in flight on a slow link or a busy machine. The first check
// asks those dealers to re-send (members drop what they already hold) and
// waits one more step; later checks wait again as long as the members hold
// more shares than at the check before, and ask again when a check shows
// no progress but the last request did bring some. A dealing that stalls
// with nothing gained since the last request, or that reaches the cap
// (Params.Cap), settles for the dealer set it has. An honest dealer on a
// slow link or a busy machine is therefore left out only if its shares
// take longer than the cap.
func (c *Coordinator) extendDealing(s *coordSum, responders []protocol.PeerID, count []int) bool {
	n := len(s.parts)
	missing, progress := 0, len(responders)
	for _, k := range count {
		progress += k
		if k < len(responders) {
			missing++
		}
	}
	if (missing == 0 && len(responders) == len(s.shamir.committee)) || c.env.Clock.Now().Sub(s.begun) >= c.p.Cap() {
		return false
	}
	first, gained := s.checks == 0, progress > s.progress
	s.checks++
	s.gained = gained && !first
	ask := first || (!gained && progress > s.progPinged)
	if !first && !gained && !ask {
		return false
	}
	// Dealers whose shares stopped arriving are asked to re-send: at the
	// first check every dealer missing somewhere, later the missing
	// dealers that gained nothing since the check before (their shares
	// were lost, not queued). Dealers whose shares are still arriving are
	// left alone.
	for d := 0; d < n; d++ {
		if count[d] < len(responders) && (first || ask || len(s.held) != n || count[d] <= s.held[d]) {
			c.send(s, s.parts[d], &wire.Sum{Kind: wire.Sum_PING})
		}
	}
	if ask {
		s.progPinged = progress
	}
	s.progress, s.held = progress, count
	s.shamir.waitedMore = true
	s.phase = PhaseRunning
	c.arm(s, c.capped(s, c.stepWait(s)), c.onTimeout)
	return true
}

// tooFewHeld handles a dealing whose shares cannot be revealed over a large
// enough dealer set: shares may still be in flight on a slow network, so
// it waits another step and asks again (nothing was revealed yet), up to
// MaxReforms times, and then fails the sum.
func (c *Coordinator) tooFewHeld(s *coordSum, responders []protocol.PeerID, count []int, minQ, q, members int) {
	sh := s.shamir
	if s.reforms < c.p.MaxReforms {
		s.reforms++
		c.stats.Reforms++
		s.phase = PhaseRunning
		c.env.Log.Debug("too few shares held; waiting longer", "purpose", s.k.purpose, "round", s.k.round, "responders", len(responders))
		c.arm(s, c.stepWait(s), c.onTimeout)
		return
	}
	c.markSilent(s, responders, count)
	c.fail(s, fmt.Errorf("%w: %d of %d committee members answered (threshold %d); the largest dealer set of at least %d that t members all hold has %d dealers and %d members",
		ErrTooFew, len(responders), len(sh.committee), sh.t, minQ, q, members))
}

// reveal fixes the dealer set q and asks the members holding all of it
// for their partial sums.
func (c *Coordinator) reveal(s *coordSum, q []int, members []protocol.PeerID) {
	sh := s.shamir
	n := len(s.parts)
	sh.q = newBitmap(n)
	for _, d := range q {
		setBit(sh.q, d)
	}
	sh.qSize = len(q)
	sh.revealers = map[protocol.PeerID]bool{}
	s.phase = PhaseRevealing
	msg := &wire.Sum{Kind: wire.Sum_SHAMIR_DEALERS, AllDealers: len(q) == n}
	if len(q) < n {
		msg.Dealers = sh.q
	}
	now := c.env.Clock.Now()
	c.env.Log.Trace("dealer set fixed", "purpose", s.k.purpose, "round", s.k.round, "dealers", len(q), "of", n,
		"holding_all", len(sh.holdAll), "members", len(sh.committee), "checks", s.checks, "since_start", now.Sub(s.begun))
	for _, m := range members {
		sh.revealers[m] = true
		delete(s.probed, m) // a late report is no sample of the dealer set's RTT
		s.probe(m, now)
		c.send(s, m, msg)
	}
	c.arm(s, c.revealWait(s), c.onTimeout)
}

// stepWait is one more step of a stalled Shamir dealing: a re-sent share
// and the report that follows it (2 one-way delays), with a member's shares
// to handle, at least the timeout.
func (c *Coordinator) stepWait(s *coordSum) time.Duration {
	msgs := len(s.parts) + len(s.shamir.committee)
	return max(c.p.Timeout, 2*c.oneWay(s.parts)+time.Duration(msgs)*c.p.Processing)
}

// markSilent records dealers whose shares reached no responding member and
// members that never answered: later sums of the session leave them out.
func (c *Coordinator) markSilent(s *coordSum, responders []protocol.PeerID, count []int) {
	for d, n := range count {
		if n == 0 {
			c.dead[s.parts[d]] = true
		}
	}
	for _, m := range s.shamir.committee {
		if !slices.Contains(responders, m) {
			c.dead[m] = true
		}
	}
}

// Handle processes one secure-sum message addressed to the coordinator.
func (c *Coordinator) Handle(from protocol.PeerID, env *wire.Envelope) {
	if err := c.handle(from, env); err != nil {
		c.env.dropped(c.stats.count(err))
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
	if s == nil || s.phase == PhaseDone || s.k != k {
		return ErrLate
	}
	if _, ok := slices.BinarySearch(s.parts, from); !ok && (s.shamir == nil || !slices.Contains(s.shamir.committee, from)) {
		return ErrNotParticipant
	}
	switch m.GetKind() {
	case wire.Sum_PONG:
		return c.onPong(s, from)
	case wire.Sum_RING_TOTAL:
		return c.onRingTotal(s, from, m)
	case wire.Sum_SHAMIR_HOLDING:
		return c.onHolding(s, from, m)
	case wire.Sum_SHAMIR_PARTIAL:
		return c.onPartial(s, from, m)
	}
	return fmt.Errorf("%w: kind %v at the coordinator", ErrMalformed, m.GetKind())
}

// onPong records a ring party's answer to a probe.
func (c *Coordinator) onPong(s *coordSum, from protocol.PeerID) error {
	if s.ring == nil {
		return nil // a Shamir member answering a ping: nothing to record
	}
	if s.ring.pongs[from] {
		return ErrDuplicate
	}
	c.answered(s, from)
	s.ring.pongs[from] = true
	return nil
}

// onRingTotal ends a ring with the total its last party sent.
func (c *Coordinator) onRingTotal(s *coordSum, from protocol.PeerID, m *wire.Sum) error {
	if s.ring == nil || from != s.parts[len(s.parts)-1] {
		return fmt.Errorf("%w: total from %s", ErrNotParticipant, from)
	}
	v, err := elems(m.GetValues(), s.req.Length)
	if err != nil {
		return err
	}
	c.finish(s, v, len(s.parts))
	return nil
}

// onHolding records which dealers' shares a committee member holds; when
// every member holds every share the dealer set is fixed at once.
func (c *Coordinator) onHolding(s *coordSum, from protocol.PeerID, m *wire.Sum) error {
	sh := s.shamir
	if sh == nil || !slices.Contains(sh.committee, from) {
		return fmt.Errorf("%w: holding from a non-member", ErrNotParticipant)
	}
	if s.phase == PhaseRevealing {
		return ErrLate
	}
	c.answered(s, from)
	c.env.Log.Trace("holding", "purpose", s.k.purpose, "round", s.k.round, "member", string(from), "all", m.GetAllDealers(),
		"since_start", c.env.Clock.Now().Sub(s.begun))
	if m.GetAllDealers() {
		sh.holdAll[from] = true
	} else {
		if err := checkBitmap(m.GetDealers(), len(s.parts)); err != nil {
			return err
		}
		sh.holds[from] = slices.Clone(m.GetDealers())
		if len(sh.holds[from]) == 0 {
			sh.holds[from] = newBitmap(len(s.parts))
		}
	}
	if len(sh.holdAll) == len(sh.committee) {
		c.decide(s) // fast path: everyone holds every share
	}
	return nil
}

// onPartial records a member's partial sum over the dealer set and
// reconstructs the total once t of them are here.
func (c *Coordinator) onPartial(s *coordSum, from protocol.PeerID, m *wire.Sum) error {
	sh := s.shamir
	if sh == nil || s.phase != PhaseRevealing || !sh.revealers[from] {
		return fmt.Errorf("%w: partial from %s", ErrNotParticipant, from)
	}
	if _, dup := sh.partials[from]; dup {
		return ErrDuplicate
	}
	c.answered(s, from)
	i := slices.Index(sh.committee, from)
	if m.GetX() != uint64(i+1) {
		return fmt.Errorf("%w: partial at point %d from member %d", ErrMalformed, m.GetX(), i+1)
	}
	v, err := elems(m.GetValues(), s.req.Length)
	if err != nil {
		return err
	}
	sh.partials[from] = shamir.Share{X: field.Elem(i + 1), Y: v}
	c.env.Log.Trace("partial", "purpose", s.k.purpose, "round", s.k.round, "member", string(from), "partials", len(sh.partials),
		"since_start", c.env.Clock.Now().Sub(s.begun))
	if len(sh.partials) < sh.t {
		return nil
	}
	shares := make([]shamir.Share, 0, len(sh.partials))
	for _, mem := range sh.committee {
		if p, ok := sh.partials[mem]; ok {
			shares = append(shares, p)
		}
	}
	total, err := shamir.Reconstruct(shares, sh.t)
	if err != nil {
		c.fail(s, err)
		return nil
	}
	c.finish(s, total, sh.qSize)
	return nil
}

func (c *Coordinator) finish(s *coordSum, total []field.Elem, parties int) {
	s.phase, s.revealed = PhaseDone, true
	c.disarm(s)
	c.stats.Completed++
	dec := c.codec.DecodeVec(total)
	// The parties of the instance are told the total it revealed and how
	// many dealers it covers, on the same direct streams as the SumStart.
	res := &wire.Envelope{Header: header(s.k, &c.seq), Body: &wire.Envelope_SumResult{SumResult: &wire.SumResult{
		Purpose: s.k.purpose, Instance: s.k.instance, Total: dec, Parties: uint32(parties)}}}
	proto := c.env.protoFor(c.p.Method)
	for _, p := range s.parts {
		c.env.Send(p, proto, res)
	}
	s.done(dec, parties, nil)
}

func (c *Coordinator) fail(s *coordSum, err error) {
	s.phase = PhaseDone
	c.disarm(s)
	c.stats.Failed++
	c.env.Log.Warn("secure sum failed", "purpose", s.k.purpose, "round", s.k.round, "err", err)
	s.done(nil, 0, err)
}
