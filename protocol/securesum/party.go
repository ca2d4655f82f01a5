package securesum

import (
	"fmt"
	"math"
	"slices"

	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/shamir"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// maxBuffered bounds messages kept for instances this party has not begun
// (they can overtake the SumStart that announces the instance).
const maxBuffered = 4096

// Party is an owner's side of every secure-sum instance of a session. Like
// the Coordinator it has no locks: Begin and Handle run on the owner's loop.
type Party struct {
	env   Env
	p     Params
	codec field.Codec

	seq     uint64
	stats   Stats
	inst    map[key]*partyInstance
	newest  map[key]uint32 // base key -> newest instance begun
	pending []buffered
}

type buffered struct {
	from protocol.PeerID
	env  *wire.Envelope
}

type partyInstance struct {
	k           key
	method      string
	coordinator protocol.PeerID
	length      int
	// ring
	order   []protocol.PeerID
	pos     int
	mask    []field.Elem
	value   []field.Elem
	fwdDone bool
	bwdDone bool
	// shamir member
	member    bool
	x         field.Elem
	shares    map[protocol.PeerID][]field.Elem
	dealers   []protocol.PeerID // the instance's parties, sorted
	revealedQ []string          // the one dealer set this member revealed over
	partial   []field.Elem
	reported  bool
}

// NewParty prepares a party; it panics only on a programmer error (invalid
// Params are reported by Begin).
func NewParty(env Env, p Params) *Party {
	c, _ := field.NewCodec(p.ScaleBits)
	return &Party{env: env, p: p, codec: c, inst: map[key]*partyInstance{}, newest: map[key]uint32{}}
}

// Stats returns a copy of the counters (call it on the owner's loop).
func (p *Party) Stats() Stats { return p.stats }

func (p *Party) drop(from protocol.PeerID, err error) {
	p.stats.count(err)
	p.env.Log.Debug("secure-sum message dropped", "from", string(from), "err", err)
}

// Begin joins the instance announced by start (published by coordinator)
// with this party's value. roster is the session's sorted roster.
func (p *Party) Begin(h *wire.Header, start *wire.SumStart, roster []protocol.PeerID, coordinator protocol.PeerID, value []float64) error {
	k := keyOf(h, start.GetPurpose(), start.GetInstance())
	if _, dup := p.inst[k]; dup {
		return fmt.Errorf("%w: instance %d of %q already begun", ErrDuplicate, k.instance, k.purpose)
	}
	if n, ok := p.newest[k.base()]; ok && n > k.instance {
		return fmt.Errorf("%w: instance %d superseded by %d", ErrLate, k.instance, n)
	}
	if int(start.GetLength()) != len(value) || len(value) == 0 {
		return fmt.Errorf("%w: value has %d coordinates, instance wants %d", ErrMalformed, len(value), start.GetLength())
	}
	// The roster is sorted and shared by every instance; only re-formed
	// instances (with exclusions) need their own copy. Everything below is
	// O(log n) per party except for committee members, so that 10^4
	// parties stay cheap.
	parts := roster
	if len(start.GetExcluded()) > 0 {
		excluded := map[string]bool{}
		for _, e := range start.GetExcluded() {
			excluded[e] = true
		}
		parts = nil
		for _, r := range roster {
			if !excluded[string(r)] {
				parts = append(parts, r)
			}
		}
	}
	pos, found := slices.BinarySearch(parts, p.env.Self)
	if !found {
		return fmt.Errorf("%w: %s is not a party of this instance", ErrNotParticipant, p.env.Self)
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
	in := &partyInstance{k: k, method: start.GetMethod(), coordinator: coordinator, length: len(value), value: enc}
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
	switch in.method {
	case Ring:
		in.order, in.pos = parts, pos
		in.mask = make([]field.Elem, len(value))
		for i := range in.mask {
			in.mask[i] = field.Random(p.env.Rand)
		}
		if pos == 0 {
			p.ringForward(in, make([]field.Elem, len(value)))
		}
	case Shamir:
		committee := peersOf(start.GetCommittee())
		t := int(start.GetThreshold())
		if len(committee) == 0 || t < 1 || t > len(committee) || hasDuplicates(committee) {
			delete(p.inst, k)
			return fmt.Errorf("%w: committee of %d with threshold %d", ErrMalformed, len(committee), t)
		}
		for _, m := range committee {
			if _, ok := slices.BinarySearch(parts, m); !ok {
				delete(p.inst, k)
				return fmt.Errorf("%w: committee member %s is not a party", ErrMalformed, m)
			}
		}
		in.dealers = parts
		if i := slices.Index(committee, p.env.Self); i >= 0 {
			in.member, in.x = true, field.Elem(i+1)
			in.shares = map[protocol.PeerID][]field.Elem{}
		}
		shares, err := shamir.Split(p.env.Rand, enc, shamir.Points(len(committee)), t)
		if err != nil {
			delete(p.inst, k)
			return err
		}
		for i, m := range committee {
			p.send(m, in, &wire.Sum{Kind: wire.Sum_SHAMIR_SHARE, X: uint64(shares[i].X), Values: raw(shares[i].Y)})
		}
	default:
		delete(p.inst, k)
		return fmt.Errorf("%w: method %q", ErrMalformed, in.method)
	}
	// Replay messages that overtook the SumStart.
	pending := p.pending
	p.pending = nil
	for _, b := range pending {
		s := b.env.GetSum()
		if keyOf(b.env.GetHeader(), s.GetPurpose(), s.GetInstance()) == k {
			p.Handle(b.from, b.env)
		} else {
			p.pending = append(p.pending, b)
		}
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

func hasDuplicates(ids []protocol.PeerID) bool {
	seen := map[protocol.PeerID]bool{}
	for _, id := range ids {
		if seen[id] {
			return true
		}
		seen[id] = true
	}
	return false
}

func (p *Party) send(to protocol.PeerID, in *partyInstance, m *wire.Sum) {
	if to == p.env.Self {
		// A committee member deals to itself without the network.
		env := sumEnvelope(in.k, &p.seq, m)
		p.Handle(p.env.Self, env)
		return
	}
	p.env.Send(to, protoFor(in.method), sumEnvelope(in.k, &p.seq, m))
}

// ringForward adds value and mask to the running sum and passes it on.
func (p *Party) ringForward(in *partyInstance, running []field.Elem) {
	out := make([]field.Elem, in.length)
	for i := range out {
		out[i] = running[i].Add(in.value[i]).Add(in.mask[i])
	}
	in.fwdDone = true
	if len(in.order) == 1 {
		// A ring of one: the total is the party's own value.
		p.send(in.coordinator, in, &wire.Sum{Kind: wire.Sum_RING_TOTAL, Values: raw(in.value), Hop: 0})
		in.bwdDone = true
		return
	}
	next := in.order[(in.pos+1)%len(in.order)]
	p.send(next, in, &wire.Sum{Kind: wire.Sum_RING_FORWARD, Values: raw(out), Hop: uint32(in.pos)})
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
		if n, ok := p.newest[k.base()]; ok && n >= k.instance {
			p.drop(from, ErrLate)
			return
		}
		if len(p.pending) >= maxBuffered {
			p.drop(from, fmt.Errorf("%w: buffer full", ErrLate))
			return
		}
		p.pending = append(p.pending, buffered{from, env})
		return
	}
	var err error
	switch in.method {
	case Ring:
		err = p.ring(from, in, m)
	case Shamir:
		err = p.shamirMember(from, in, m)
	}
	if err != nil {
		p.drop(from, err)
	}
}

func (p *Party) ring(from protocol.PeerID, in *partyInstance, m *wire.Sum) error {
	n := len(in.order)
	prev := in.order[(in.pos+n-1)%n]
	switch m.GetKind() {
	case wire.Sum_PING:
		if from != in.coordinator {
			return ErrNotParticipant
		}
		p.send(in.coordinator, in, &wire.Sum{Kind: wire.Sum_PONG})
		return nil
	case wire.Sum_RING_FORWARD:
		if from != prev {
			return fmt.Errorf("%w: forward from %s, predecessor is %s", ErrNotParticipant, from, prev)
		}
		v, err := elems(m.GetValues(), in.length)
		if err != nil {
			return err
		}
		if in.pos == 0 {
			// The masked total is back at party 1: peel its mask, start the backward pass.
			if in.bwdDone {
				return ErrDuplicate
			}
			in.bwdDone = true
			out := make([]field.Elem, in.length)
			for i := range out {
				out[i] = v[i].Sub(in.mask[i])
			}
			p.send(in.order[1], in, &wire.Sum{Kind: wire.Sum_RING_BACKWARD, Values: raw(out), Hop: 0})
			return nil
		}
		if in.fwdDone {
			return ErrDuplicate
		}
		p.ringForward(in, v)
		return nil
	case wire.Sum_RING_BACKWARD:
		if from != prev || in.pos == 0 {
			return fmt.Errorf("%w: backward from %s", ErrNotParticipant, from)
		}
		if in.bwdDone {
			return ErrDuplicate
		}
		if !in.fwdDone {
			return fmt.Errorf("%w: backward pass before the forward pass", ErrMalformed)
		}
		v, err := elems(m.GetValues(), in.length)
		if err != nil {
			return err
		}
		in.bwdDone = true
		out := make([]field.Elem, in.length)
		for i := range out {
			out[i] = v[i].Sub(in.mask[i])
		}
		if in.pos == n-1 {
			p.send(in.coordinator, in, &wire.Sum{Kind: wire.Sum_RING_TOTAL, Values: raw(out), Hop: uint32(in.pos)})
			return nil
		}
		p.send(in.order[in.pos+1], in, &wire.Sum{Kind: wire.Sum_RING_BACKWARD, Values: raw(out), Hop: uint32(in.pos)})
		return nil
	}
	return fmt.Errorf("%w: kind %v at a ring party", ErrMalformed, m.GetKind())
}

func (p *Party) shamirMember(from protocol.PeerID, in *partyInstance, m *wire.Sum) error {
	switch m.GetKind() {
	case wire.Sum_PING:
		if from != in.coordinator {
			return ErrNotParticipant
		}
		p.send(in.coordinator, in, &wire.Sum{Kind: wire.Sum_PONG})
		return nil
	}
	if !in.member {
		return fmt.Errorf("%w: %v sent to a non-member", ErrNotParticipant, m.GetKind())
	}
	switch m.GetKind() {
	case wire.Sum_SHAMIR_SHARE:
		if _, ok := slices.BinarySearch(in.dealers, from); !ok {
			return fmt.Errorf("%w: share from %s", ErrNotParticipant, from)
		}
		if _, dup := in.shares[from]; dup {
			return ErrDuplicate
		}
		if field.Elem(m.GetX()) != in.x {
			return fmt.Errorf("%w: share for point %d, ours is %d", ErrMalformed, m.GetX(), in.x)
		}
		v, err := elems(m.GetValues(), in.length)
		if err != nil {
			return err
		}
		if in.revealedQ != nil {
			return fmt.Errorf("%w: share after the partial sum was revealed", ErrLate)
		}
		in.shares[from] = v
		if len(in.shares) == len(in.dealers) && !in.reported {
			// Fast path: every dealer's share is here; tell the coordinator.
			in.reported = true
			p.sendHolding(in)
		}
		return nil
	case wire.Sum_SHAMIR_REPORT:
		if from != in.coordinator {
			return ErrNotParticipant
		}
		in.reported = true
		p.sendHolding(in)
		return nil
	case wire.Sum_SHAMIR_DEALERS:
		if from != in.coordinator {
			return ErrNotParticipant
		}
		q := m.GetDealers()
		if m.GetAllDealers() {
			if len(q) != 0 {
				return fmt.Errorf("%w: dealer list with all_dealers", ErrMalformed)
			}
			for _, d := range in.dealers {
				q = append(q, string(d))
			}
		}
		if in.revealedQ != nil {
			// At most one partial sum per instance: partials over two
			// different dealer sets would let anyone subtract them and
			// learn one dealer's share. The same set again is a harmless
			// retransmission of what was already revealed.
			if !slices.Equal(q, in.revealedQ) {
				return fmt.Errorf("%w: second dealer set", ErrRefused)
			}
			p.send(in.coordinator, in, &wire.Sum{Kind: wire.Sum_SHAMIR_PARTIAL, X: uint64(in.x), Values: raw(in.partial)})
			return nil
		}
		if len(q) == 0 || !slices.IsSorted(q) {
			return fmt.Errorf("%w: dealer set must be sorted and non-empty", ErrMalformed)
		}
		sum := make([]field.Elem, in.length)
		for i, d := range q {
			if i > 0 && q[i-1] == d {
				return fmt.Errorf("%w: dealer %s twice", ErrMalformed, d)
			}
			s, ok := in.shares[protocol.PeerID(d)]
			if !ok {
				return fmt.Errorf("%w: no share from dealer %s", ErrRefused, d)
			}
			field.AddVec(sum, sum, s)
		}
		in.revealedQ, in.partial = slices.Clone(q), sum
		p.send(in.coordinator, in, &wire.Sum{Kind: wire.Sum_SHAMIR_PARTIAL, X: uint64(in.x), Values: raw(sum)})
		return nil
	}
	return fmt.Errorf("%w: kind %v at a Shamir member", ErrMalformed, m.GetKind())
}

func (p *Party) sendHolding(in *partyInstance) {
	if len(in.shares) == len(in.dealers) {
		p.send(in.coordinator, in, &wire.Sum{Kind: wire.Sum_SHAMIR_HOLDING, X: uint64(in.x), AllDealers: true})
		return
	}
	ds := make([]string, 0, len(in.shares))
	for d := range in.shares {
		ds = append(ds, string(d))
	}
	slices.Sort(ds)
	p.send(in.coordinator, in, &wire.Sum{Kind: wire.Sum_SHAMIR_HOLDING, X: uint64(in.x), Dealers: ds})
}
