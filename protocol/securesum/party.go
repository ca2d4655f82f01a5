package securesum

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/shamir"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Messages for instances this party has not begun (they can overtake the
// SumStart that announces the instance) are kept only from members of the
// session's roster, at most maxBufferedPerPeer per sender and maxBufferedBytes
// in all; a Begin evicts what belongs to older rounds. An outsider that knows
// the session id therefore cannot fill an owner's memory, and a roster member
// can hold at most a few frames of it.
const (
	maxBufferedPerPeer = 4
	maxBufferedBytes   = 16 << 20
)

// Party is an owner's side of every secure-sum instance of a session. Like
// the Coordinator it has no locks: Begin and Handle run on the owner's loop.
//
// Before it contributes, a party checks the coordinator's request against the
// session's parameters: at least MinParties contributors, the committee it
// computes itself from the roster's beacon, the announced threshold, and a
// dealer set of at least MinDealers. A request that would reveal more is
// refused, counted and logged; nothing is sent.
type Party struct {
	env   Env
	p     Params
	codec field.Codec

	seq    uint64
	stats  Stats
	roster []protocol.PeerID // sorted; senders outside it are never buffered
	inst   map[key]*partyInstance
	newest map[key]uint32 // base key -> newest instance begun
	// unmasked holds the ring sums (base keys) whose backward pass went
	// through this party: their total may be known, so the party takes
	// part in no later instance of them (a re-formed ring without one
	// party would give the coordinator that party's value by subtraction).
	unmasked map[key]bool
	pending  []buffered
	bytes    int
	perPeer  map[protocol.PeerID]int
}

type buffered struct {
	from protocol.PeerID
	env  *wire.Envelope
	size int
}

type partyInstance struct {
	k           key
	coordinator protocol.PeerID
	length      int
	value       []field.Elem
	ring        *ringParty
	shamir      *shamirParty
}

type ringParty struct {
	order   []protocol.PeerID
	pos     int
	mask    []field.Elem
	fwdDone bool
	bwdDone bool
	// last is the newest ring message this party sent, re-sent when the
	// coordinator probes a stalled ring (the receiver drops a duplicate).
	last   *wire.Sum
	lastTo protocol.PeerID
}

type shamirParty struct {
	dealt     []shamir.Share // this party's shares, re-sent when probed
	member    bool
	x         field.Elem
	committee []protocol.PeerID
	t         int
	shares    map[protocol.PeerID][]field.Elem
	dealers   []protocol.PeerID // the instance's parties, sorted
	revealedQ []byte            // the one dealer set this member revealed over
	partial   []field.Elem
}

// NewParty prepares a party.
func NewParty(env Env, p Params) *Party {
	c, _ := field.NewCodec(p.ScaleBits)
	return &Party{env: env, p: p, codec: c, inst: map[key]*partyInstance{}, newest: map[key]uint32{}, unmasked: map[key]bool{},
		perPeer: map[protocol.PeerID]int{}}
}

// SetRoster tells the party the session's sorted roster: secure-sum messages
// from anyone else are dropped, never buffered; and an instance whose
// committee is drawn from the roster (committee_from_roster) draws it from
// this one.
func (p *Party) SetRoster(roster []protocol.PeerID) { p.roster = roster }

// Stats returns a copy of the counters (call it on the owner's loop).
func (p *Party) Stats() Stats { return p.stats }

// Params are the parameters the party checks requests against.
func (p *Party) Params() Params { return p.p }

// Protocol is the direct protocol this party's sum messages go on.
func (p *Party) Protocol() string { return p.env.protoFor(p.p.Method) }

func (p *Party) drop(from protocol.PeerID, err error) {
	p.env.dropped(p.stats.count(err))
	p.env.Log.Debug("secure-sum message dropped", "from", string(from), "err", err)
}

// Check runs every check Begin runs on a request before it sends anything,
// except those on the value itself, without changing the party: a caller
// that must pay for a dealing (a ledger charge) checks first and pays only
// for a dealing that Begin would send.
func (p *Party) Check(h *wire.Header, start *wire.SumStart, roster []protocol.PeerID, beacon []byte) error {
	_, err := p.admit(h, start, roster, beacon, false)
	return err
}

// admission is what admit found out about a request.
type admission struct {
	k     key
	parts []protocol.PeerID
	pos   int
	com   []protocol.PeerID // Shamir
	t     int
}

// A member-only party (Serve) is in the committee of an instance whose
// committee comes from the session's roster, and is not one of its parties.
func (p *Party) admit(h *wire.Header, start *wire.SumStart, roster []protocol.PeerID, beacon []byte, memberOnly bool) (admission, error) {
	k := keyOf(h, start.GetPurpose(), start.GetInstance())
	a := admission{k: k}
	if _, dup := p.inst[k]; dup {
		return a, fmt.Errorf("%w: instance %d of %q already begun", ErrDuplicate, k.instance, k.purpose)
	}
	if n, ok := p.newest[k.base()]; ok && n > k.instance {
		return a, fmt.Errorf("%w: instance %d superseded by %d", ErrLate, k.instance, n)
	} else if ok && p.p.SingleInstance {
		return a, fmt.Errorf("%w: this value was already dealt in instance %d of %q; a second instance could be subtracted from the first", ErrRefused, n, k.purpose)
	}
	if p.unmasked[k.base()] {
		return a, fmt.Errorf("%w: the backward pass of an earlier ring of %q went through this party, so its total may be known; a re-formed ring could be subtracted from it", ErrRefused, k.purpose)
	}
	if start.GetMethod() != p.p.Method {
		return a, fmt.Errorf("%w: method %q, the session announced %q", ErrRefused, start.GetMethod(), p.p.Method)
	}
	// The roster is sorted and shared by every instance; only instances
	// with exclusions need their own list. Everything below is O(log n)
	// per party except for committee members, so that 10^5 parties stay
	// cheap.
	excl, err := Excluded(start, len(roster))
	if err != nil {
		return a, err
	}
	a.parts = roster
	if countBits(excl) > 0 {
		a.parts = p.partsOf(roster, excl)
	}
	if len(a.parts) < p.p.MinParties {
		return a, fmt.Errorf("%w: %d parties, this session reveals no sum over fewer than %d", ErrRefused, len(a.parts), p.p.MinParties)
	}
	pos, found := slices.BinarySearch(a.parts, p.env.Self)
	switch {
	case memberOnly && found:
		return a, fmt.Errorf("%w: %s is a party of this instance: it deals (Begin)", ErrNotParticipant, p.env.Self)
	case !memberOnly && !found:
		return a, fmt.Errorf("%w: %s is not a party of this instance", ErrNotParticipant, p.env.Self)
	}
	a.pos = pos
	fromRoster := start.GetCommitteeFromRoster()
	if fromRoster && (p.p.Method != Shamir || !p.p.SingleInstance) {
		return a, fmt.Errorf("%w: a committee from the roster needs Shamir sums dealt once", ErrRefused)
	}
	if memberOnly && !fromRoster {
		return a, fmt.Errorf("%w: %s is not a party of this instance", ErrNotParticipant, p.env.Self)
	}
	if p.p.Method == Shamir {
		pool, size := a.parts, p.p.Committee
		if fromRoster {
			if len(p.roster) == 0 {
				return a, fmt.Errorf("%w: a committee from the roster, and this party has none", ErrRefused)
			}
			pool, size = p.roster, poolCommittee(p.p, len(a.parts))
		}
		a.com = committee(pool, size, beacon, k)
		a.t = p.p.ThresholdFor(len(a.com))
		if err := checkCommittee(start, a.com, a.t); err != nil {
			return a, err
		}
		if memberOnly && !slices.Contains(a.com, p.env.Self) {
			return a, fmt.Errorf("%w: %s is not in the committee of this instance", ErrNotParticipant, p.env.Self)
		}
	}
	return a, nil
}

// Serve joins, as a committee member that deals nothing, an instance whose
// committee is drawn from the session's roster (SetRoster) and whose
// parties do not include this party: it holds the dealers' shares and
// reveals one partial sum over the coordinator's dealer set, as any member
// does. roster is the instance's parties (the dealers), sorted. It charges
// nothing: nothing this party sends depends on its data.
func (p *Party) Serve(h *wire.Header, start *wire.SumStart, roster []protocol.PeerID, beacon []byte, coordinator protocol.PeerID) error {
	a, err := p.admit(h, start, roster, beacon, true)
	if err != nil {
		return err
	}
	in := &partyInstance{k: a.k, coordinator: coordinator, length: int(start.GetLength())}
	if in.length < 1 {
		return fmt.Errorf("%w: length %d", ErrMalformed, in.length)
	}
	i := slices.Index(a.com, p.env.Self)
	in.shamir = &shamirParty{committee: a.com, t: a.t, dealers: a.parts, member: true, x: field.Elem(i + 1),
		shares: map[protocol.PeerID][]field.Elem{}}
	p.open(in)
	p.env.Log.Trace("serving", "purpose", a.k.purpose, "round", a.k.round, "attempt", a.k.attempt, "buffered", len(p.pending))
	p.replay(a.k)
	return nil
}

// open records a begun (or served) instance and drops the state of the
// ones it ends.
func (p *Party) open(in *partyInstance) {
	k := in.k
	p.inst[k] = in
	p.newest[k.base()] = k.instance
	// Earlier instances of the same sum, and every sum of earlier rounds,
	// are over for this party: drop their state (late messages for them
	// are recognized through p.newest).
	for old := range p.inst {
		if (old.base() == k.base() && old.instance < k.instance) || old.session != k.session ||
			old.round < k.round || (old.round == k.round && old.attempt < k.attempt) {
			delete(p.inst, old)
		}
	}
	p.stats.Started++
}

// Begin joins the instance announced by start (published by coordinator)
// with this party's value. roster is the session's sorted roster and beacon
// its public randomness, both as this party received them.
func (p *Party) Begin(h *wire.Header, start *wire.SumStart, roster []protocol.PeerID, beacon []byte, coordinator protocol.PeerID, value []float64) error {
	a, err := p.admit(h, start, roster, beacon, false)
	if err != nil {
		return err
	}
	k, parts, pos := a.k, a.parts, a.pos
	if int(start.GetLength()) != len(value) || len(value) == 0 {
		return fmt.Errorf("%w: value has %d coordinates, instance wants %d", ErrMalformed, len(value), start.GetLength())
	}
	bound := p.p.Bound
	if bound == 0 {
		bound = float64(len(roster))
	}
	for i, v := range value {
		if !(math.Abs(v) <= bound) {
			return fmt.Errorf("%w: coordinate %d is %v, bound %v", ErrValue, i, v, bound)
		}
	}
	enc, err := p.codec.EncodeVec(value)
	if err != nil {
		return err
	}
	if p.env.Noise != nil {
		if err := p.env.Noise(enc); err != nil {
			return fmt.Errorf("securesum: noise share: %w", err)
		}
	}
	in := &partyInstance{k: k, coordinator: coordinator, length: len(value), value: enc}
	switch p.p.Method {
	case Ring:
		in.ring = &ringParty{order: parts, pos: pos, mask: make([]field.Elem, len(value))}
	case Shamir:
		com, t := a.com, a.t
		in.shamir = &shamirParty{committee: com, t: t, dealers: parts}
		if i := slices.Index(com, p.env.Self); i >= 0 {
			in.shamir.member, in.shamir.x = true, field.Elem(i+1)
			in.shamir.shares = map[protocol.PeerID][]field.Elem{}
		}
	}
	p.open(in)
	if r := in.ring; r != nil {
		for i := range r.mask {
			r.mask[i] = field.Random(p.env.Rand)
		}
		if pos == 0 {
			p.ringForward(in, make([]field.Elem, len(value)))
		}
	} else {
		sh := in.shamir
		shares, err := shamir.Split(p.env.Rand, enc, shamir.Points(len(sh.committee)), sh.t)
		if err != nil {
			delete(p.inst, k)
			return err
		}
		sh.dealt = shares
		p.deal(in, false)
		p.env.Log.Trace("dealt", "purpose", k.purpose, "round", k.round, "attempt", k.attempt, "members", len(sh.committee), "member", sh.member)
	}
	p.replay(k)
	return nil
}

// replay hands the instance the messages that overtook its SumStart, and
// evicts buffered messages of rounds before k's.
func (p *Party) replay(k key) {
	keep := p.pending[:0]
	var mine []buffered
	for _, b := range p.pending {
		s := b.env.GetSum()
		bk := keyOf(b.env.GetHeader(), s.GetPurpose(), s.GetInstance())
		switch {
		case bk == k:
			mine = append(mine, b)
		case bk.round < k.round || (bk.round == k.round && bk.attempt < k.attempt) || bk.session != k.session:
			p.stats.Late++
		default:
			keep = append(keep, b)
			continue
		}
		p.bytes -= b.size
		p.perPeer[b.from]--
	}
	clear(p.pending[len(keep):])
	p.pending = keep
	for _, b := range mine {
		p.Handle(b.from, b.env)
	}
}

// deal sends this party's share to every committee member (again, when
// probed: a member drops a share it already holds).
func (p *Party) deal(in *partyInstance, again bool) {
	sh := in.shamir
	if sh.dealt == nil {
		return // a member that deals nothing (Serve)
	}
	for i, m := range sh.committee {
		if again && m == p.env.Self {
			continue
		}
		p.send(m, in, &wire.Sum{Kind: wire.Sum_SHAMIR_SHARE, X: uint64(sh.dealt[i].X), Values: raw(sh.dealt[i].Y)})
	}
}

// sendRing sends a ring message and remembers it for retransmission.
func (p *Party) sendRing(in *partyInstance, to protocol.PeerID, m *wire.Sum) {
	in.ring.last, in.ring.lastTo = m, to
	p.send(to, in, m)
}

// Sharing lets the parties of one process share the participant lists they
// derive from one roster. It is injected by a simulator (protocol/simulate),
// whose 10^5 parties would otherwise each hold a 10^5-entry copy of every
// list; nil, as in production, means every party computes its own and
// nothing is shared between parties.
type Sharing interface {
	// Parts returns the list build computes for roster without the members
	// set in excluded, or one an earlier call returned for the same roster
	// and bitmap. Callers only read the list.
	Parts(roster []protocol.PeerID, excluded []byte, build func() []protocol.PeerID) []protocol.PeerID
}

// partsOf is the roster without the excluded members (through the Env's
// Sharing, if any).
func (p *Party) partsOf(roster []protocol.PeerID, excl []byte) []protocol.PeerID {
	build := func() []protocol.PeerID {
		parts := make([]protocol.PeerID, 0, len(roster))
		for i, r := range roster {
			if !hasBit(excl, i) {
				parts = append(parts, r)
			}
		}
		return parts
	}
	if p.env.Share == nil {
		return build()
	}
	return p.env.Share.Parts(roster, excl, build)
}

// checkCommittee refuses a Shamir SumStart whose committee (named in full
// or by its digest) or threshold differs from the committee com and
// threshold t the party computed from its own roster and beacon.
func checkCommittee(start *wire.SumStart, com []protocol.PeerID, t int) error {
	named, digest := start.GetCommittee(), start.GetCommitteeDigest()
	var same bool
	switch {
	case len(named) > 0 && len(digest) > 0:
		return fmt.Errorf("%w: SumStart names its committee both in full and by digest", ErrMalformed)
	case len(named) > 0:
		same = slices.Equal(peersOf(named), com)
	default:
		same = bytes.Equal(digest, CommitteeDigest(com))
	}
	if !same || int(start.GetThreshold()) != t {
		return fmt.Errorf("%w: SumStart names a committee (%d names, digest %x) with t = %d; the roster's beacon gives another committee of %d with t = %d",
			ErrRefused, len(named), digest, start.GetThreshold(), len(com), t)
	}
	return nil
}

func peersOf(ids []string) []protocol.PeerID {
	out := make([]protocol.PeerID, len(ids))
	for i, s := range ids {
		out[i] = protocol.PeerID(s)
	}
	return out
}

func (p *Party) send(to protocol.PeerID, in *partyInstance, m *wire.Sum) {
	if to == p.env.Self {
		// A committee member deals to itself without the network.
		p.Handle(p.env.Self, sumEnvelope(in.k, &p.seq, m))
		return
	}
	p.env.Send(to, p.env.protoFor(p.p.Method), sumEnvelope(in.k, &p.seq, m))
}

// ringForward adds value and mask to the running sum and passes it on.
func (p *Party) ringForward(in *partyInstance, running []field.Elem) {
	r := in.ring
	out := make([]field.Elem, in.length)
	for i := range out {
		out[i] = running[i].Add(in.value[i]).Add(r.mask[i])
	}
	r.fwdDone = true
	next := r.order[(r.pos+1)%len(r.order)]
	p.sendRing(in, next, &wire.Sum{Kind: wire.Sum_RING_FORWARD, Values: raw(out), Hop: uint32(r.pos)})
}

// Handle processes one secure-sum message.
func (p *Party) Handle(from protocol.PeerID, env *wire.Envelope) {
	m := env.GetSum()
	if m == nil {
		p.drop(from, fmt.Errorf("%w: not a secure-sum message", ErrMalformed))
		return
	}
	k := keyOf(env.GetHeader(), m.GetPurpose(), m.GetInstance())
	in := p.inst[k]
	if in == nil {
		p.buffer(from, k, env)
		return
	}
	var err error
	if in.ring != nil {
		err = p.ring(from, in, m)
	} else {
		err = p.shamirMember(from, in, m)
	}
	if err != nil {
		p.drop(from, err)
	}
}

// buffer keeps a message for an instance not begun yet, within the bounds.
func (p *Party) buffer(from protocol.PeerID, k key, env *wire.Envelope) {
	if n, ok := p.newest[k.base()]; ok && n >= k.instance {
		p.drop(from, ErrLate)
		return
	}
	if _, ok := slices.BinarySearch(p.roster, from); !ok && from != p.env.Self {
		p.drop(from, fmt.Errorf("%w: %s is not in the roster", ErrNotParticipant, from))
		return
	}
	size := 64 + 8*len(env.GetSum().GetValues()) + len(env.GetSum().GetDealers())
	if p.perPeer[from] >= maxBufferedPerPeer || p.bytes+size > maxBufferedBytes {
		p.drop(from, fmt.Errorf("%w: %d messages from %s, %d bytes in all", ErrBufferFull, p.perPeer[from], from, p.bytes))
		return
	}
	p.perPeer[from]++
	p.bytes += size
	p.pending = append(p.pending, buffered{from, env, size})
}

func (p *Party) ring(from protocol.PeerID, in *partyInstance, m *wire.Sum) error {
	r := in.ring
	n := len(r.order)
	prev := r.order[(r.pos+n-1)%n]
	switch m.GetKind() {
	case wire.Sum_PING:
		if from != in.coordinator {
			return ErrNotParticipant
		}
		p.send(in.coordinator, in, &wire.Sum{Kind: wire.Sum_PONG})
		if r.last != nil {
			p.send(r.lastTo, in, r.last)
		}
		return nil
	case wire.Sum_RING_FORWARD:
		if from != prev {
			return fmt.Errorf("%w: forward from %s, predecessor is %s", ErrNotParticipant, from, prev)
		}
		v, err := elems(m.GetValues(), in.length)
		if err != nil {
			return err
		}
		if r.pos == 0 {
			// The masked total is back at party 1: peel its mask, start the backward pass.
			if r.bwdDone {
				return ErrDuplicate
			}
			r.bwdDone = true
			p.unmasked[in.k.base()] = true
			out := make([]field.Elem, in.length)
			for i := range out {
				out[i] = v[i].Sub(r.mask[i])
			}
			p.sendRing(in, r.order[1], &wire.Sum{Kind: wire.Sum_RING_BACKWARD, Values: raw(out), Hop: 0})
			return nil
		}
		if r.fwdDone {
			return ErrDuplicate
		}
		p.ringForward(in, v)
		return nil
	case wire.Sum_RING_BACKWARD:
		if from != prev || r.pos == 0 {
			return fmt.Errorf("%w: backward from %s", ErrNotParticipant, from)
		}
		if r.bwdDone {
			return ErrDuplicate
		}
		if !r.fwdDone {
			return fmt.Errorf("%w: backward pass before the forward pass", ErrMalformed)
		}
		v, err := elems(m.GetValues(), in.length)
		if err != nil {
			return err
		}
		r.bwdDone = true
		p.unmasked[in.k.base()] = true
		out := make([]field.Elem, in.length)
		for i := range out {
			out[i] = v[i].Sub(r.mask[i])
		}
		if r.pos == n-1 {
			p.sendRing(in, in.coordinator, &wire.Sum{Kind: wire.Sum_RING_TOTAL, Values: raw(out), Hop: uint32(r.pos)})
			return nil
		}
		p.sendRing(in, r.order[r.pos+1], &wire.Sum{Kind: wire.Sum_RING_BACKWARD, Values: raw(out), Hop: uint32(r.pos)})
		return nil
	}
	return fmt.Errorf("%w: kind %v at a ring party", ErrMalformed, m.GetKind())
}

func (p *Party) shamirMember(from protocol.PeerID, in *partyInstance, m *wire.Sum) error {
	sh := in.shamir
	if m.GetKind() == wire.Sum_PING {
		if from != in.coordinator {
			return ErrNotParticipant
		}
		p.deal(in, true)
		return nil
	}
	if !sh.member {
		return fmt.Errorf("%w: %v sent to a non-member", ErrNotParticipant, m.GetKind())
	}
	switch m.GetKind() {
	case wire.Sum_SHAMIR_SHARE:
		if _, ok := slices.BinarySearch(sh.dealers, from); !ok {
			return fmt.Errorf("%w: share from %s", ErrNotParticipant, from)
		}
		if _, dup := sh.shares[from]; dup {
			return ErrDuplicate
		}
		if field.Elem(m.GetX()) != sh.x {
			return fmt.Errorf("%w: share for point %d, ours is %d", ErrMalformed, m.GetX(), sh.x)
		}
		v, err := elems(m.GetValues(), in.length)
		if err != nil {
			return err
		}
		if sh.revealedQ != nil {
			return fmt.Errorf("%w: share after the partial sum was revealed", ErrLate)
		}
		sh.shares[from] = v
		if len(sh.shares) == len(sh.dealers) {
			// Fast path: every dealer's share is here; tell the coordinator.
			p.env.Log.Trace("every share held", "purpose", in.k.purpose, "round", in.k.round, "attempt", in.k.attempt, "last_dealer", string(from))
			p.sendHolding(in)
		}
		return nil
	case wire.Sum_SHAMIR_REPORT:
		if from != in.coordinator {
			return ErrNotParticipant
		}
		p.sendHolding(in)
		return nil
	case wire.Sum_SHAMIR_DEALERS:
		if from != in.coordinator {
			return ErrNotParticipant
		}
		n := len(sh.dealers)
		q := m.GetDealers()
		if m.GetAllDealers() {
			if len(q) != 0 {
				return fmt.Errorf("%w: dealer bitmap with all_dealers", ErrMalformed)
			}
			q = newBitmap(n)
			for i := 0; i < n; i++ {
				setBit(q, i)
			}
		} else if err := checkBitmap(q, n); err != nil {
			return err
		}
		if sh.revealedQ != nil {
			// At most one partial sum per instance: partials over two
			// different dealer sets would let anyone subtract them and
			// learn one dealer's share. The same set again is a harmless
			// retransmission of what was already revealed.
			if !slices.Equal(q, sh.revealedQ) {
				return fmt.Errorf("%w: second dealer set", ErrRefused)
			}
			p.send(in.coordinator, in, &wire.Sum{Kind: wire.Sum_SHAMIR_PARTIAL, X: uint64(sh.x), Values: raw(sh.partial)})
			return nil
		}
		if size, min := countBits(q), p.p.MinDealers(len(sh.committee)); size < min {
			return fmt.Errorf("%w: dealer set of %d, this session reveals no sum over fewer than %d", ErrRefused, size, min)
		}
		sum := make([]field.Elem, in.length)
		for i, d := range sh.dealers {
			if !hasBit(q, i) {
				continue
			}
			s, ok := sh.shares[d]
			if !ok {
				return fmt.Errorf("%w: no share from dealer %s", ErrRefused, d)
			}
			field.AddVec(sum, sum, s)
		}
		sh.revealedQ, sh.partial = slices.Clone(q), sum
		p.send(in.coordinator, in, &wire.Sum{Kind: wire.Sum_SHAMIR_PARTIAL, X: uint64(sh.x), Values: raw(sum)})
		return nil
	}
	return fmt.Errorf("%w: kind %v at a Shamir member", ErrMalformed, m.GetKind())
}

func (p *Party) sendHolding(in *partyInstance) {
	sh := in.shamir
	if len(sh.shares) == len(sh.dealers) {
		p.send(in.coordinator, in, &wire.Sum{Kind: wire.Sum_SHAMIR_HOLDING, X: uint64(sh.x), AllDealers: true})
		return
	}
	held := newBitmap(len(sh.dealers))
	for i, d := range sh.dealers {
		if _, ok := sh.shares[d]; ok {
			setBit(held, i)
		}
	}
	p.send(in.coordinator, in, &wire.Sum{Kind: wire.Sum_SHAMIR_HOLDING, X: uint64(sh.x), Dealers: held})
}
