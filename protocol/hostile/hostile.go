// Package hostile is the hostile-user fuzzer's adversary and its observer:
// a hand on the in-memory network's wire (memnet.Options.Tap) that mutates,
// replays and reorders everything the data user (and its sybils) send —
// header attempt numbers, rounds and trees, session ids, sum purposes and
// instances, whole old messages — and an omniscient observer that sees every
// message an honest owner sends and reconstructs the values it dealt into
// Shamir sums (from the shares it sent to the committee), the LDP shares it
// published and the PFDS trees and data shares it published.
//
// After a run, Check compares what left each honest owner with its ledger:
// every distinct value has a charge (its ledger key is recorded), one slot
// (the quantity a value is of, read leniently from what the owner answered)
// never carried two different values, and the ε implied by what the
// adversary saw — each slot's charge times the number of independent draws
// of it — is at most the ε the ledger holds. The package knows nothing of
// the owner's release gate: it reads the wire and the ledger only.
//
// It must not be used outside tests and fuzz runs: it is an attacker.
//
// Where it sits: beside memnet, above the wire package and crypto/shamir (to
// read what it sees); the fuzz tests drive it through protocol/simulate's
// runners. No role imports it.
package hostile

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/shamir"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Adversary mutates what the data user sends. Rate is the probability that
// a message of the user's gets extra mutated copies (its original always
// passes, so that the session can progress and reach the sums worth
// attacking). Not safe for concurrent use: memnet calls Tap under its lock.
type Adversary struct {
	User   protocol.PeerID
	Honest map[protocol.PeerID]bool
	Rate   float64
	Obs    *Observer
	// Fix, if set, repairs what the user can compute itself in a mutated
	// copy (a SumStart's committee for its new header and purpose: the
	// coordinator knows the roster and the beacon), so that copies reach
	// the owners' release decisions rather than a committee check.
	Fix func(*wire.Envelope)
	// Mutate, if set, replaces the envelope mutations for messages that are
	// not wire envelopes (PFDS announcements): a changed copy of data and
	// what was changed, or nil.
	Mutate func(data []byte, r *rand.Rand) ([]byte, string)

	r       *rand.Rand
	old     [][]byte // the user's earlier messages (for replays)
	counts  map[string]int
	pending []delayed // copies held back to arrive after later messages
}

type delayed struct {
	to   protocol.PeerID
	data []byte
}

// New returns an adversary for user's messages, seeded.
func New(seed uint64, user protocol.PeerID, honest []protocol.PeerID, rate float64) *Adversary {
	a := &Adversary{User: user, Honest: map[protocol.PeerID]bool{}, Rate: rate, Obs: NewObserver(),
		r: rand.New(rand.NewPCG(seed, 0x686f7374696c65)), counts: map[string]int{}}
	for _, h := range honest {
		a.Honest[h] = true
	}
	a.Obs.Honest = a.Honest
	return a
}

// Mutations counts what the adversary did, by kind.
func (a *Adversary) Mutations() map[string]int { return a.counts }

// Tap is the memnet.Options.Tap: it lets the observer see every message and
// adds the user's mutated copies.
func (a *Adversary) Tap(from, to protocol.PeerID, topic bool, name string, data []byte) [][]byte {
	a.Obs.See(from, to, topic, name, data)
	if from != a.User {
		return [][]byte{data}
	}
	out := [][]byte{data}
	// Reorder: copies held back from earlier messages arrive now.
	keep := a.pending[:0]
	for _, d := range a.pending {
		if d.to == to {
			out = append(out, d.data)
			continue
		}
		keep = append(keep, d)
	}
	a.pending = keep
	var env *wire.Envelope
	if a.Mutate == nil {
		var err error
		if env, err = wire.Unmarshal(data, wire.MaxFrame); err != nil {
			return out
		}
	}
	if len(a.old) < 256 && a.r.Float64() < 0.2 {
		a.old = append(a.old, data)
	}
	if a.r.Float64() >= a.Rate {
		return out
	}
	for n := 1 + a.r.IntN(3); n > 0; n-- {
		var b []byte
		var kind string
		if a.Mutate != nil {
			if b, kind = a.Mutate(data, a.r); b == nil {
				continue
			}
		} else {
			m, k := a.mutate(env)
			if m == nil {
				continue
			}
			if a.Fix != nil {
				a.Fix(m)
			}
			var err error
			if b, err = wire.Marshal(m, wire.MaxFrame); err != nil {
				continue
			}
			kind = k
		}
		a.counts[kind]++
		a.Obs.See(from, to, topic, name, b)
		if a.r.IntN(4) == 0 {
			a.pending = append(a.pending, delayed{to, b})
			a.counts["reordered"]++
			continue
		}
		out = append(out, b)
	}
	if len(a.old) > 0 && a.r.IntN(4) == 0 {
		old := a.old[a.r.IntN(len(a.old))]
		a.Obs.See(from, to, topic, name, old)
		out = append(out, old)
		a.counts["old message replayed"]++
	}
	return out
}

// mutate returns a changed copy of env and what was changed.
func (a *Adversary) mutate(env *wire.Envelope) (*wire.Envelope, string) {
	m := proto.Clone(env).(*wire.Envelope)
	h := m.GetHeader()
	if h == nil {
		return nil, ""
	}
	h.Seq += 1 + uint64(a.r.IntN(1<<20)) // no receiver de-duplicates on it
	ss, res := m.GetSumStart(), m.GetSumResult()
	switch k := a.r.IntN(8); {
	case k <= 2:
		h.Attempt = uint32(a.r.IntN(32))
		return m, "attempt"
	case k == 3 && (ss != nil || res != nil):
		p := Respell(purposeOf(ss, res), a.r)
		if ss != nil {
			ss.Purpose = p
		} else {
			res.Purpose = p
		}
		return m, "purpose respelled"
	case k == 4 && ss != nil:
		ss.Instance += uint32(1 + a.r.IntN(3))
		return m, "instance"
	case k == 5:
		if a.r.IntN(2) == 0 && h.Round > 0 {
			h.Round--
		} else {
			h.Round++
		}
		return m, "round"
	case k == 6:
		h.Session += []string{"x", " ", "0", "/"}[a.r.IntN(4)]
		return m, "session"
	default:
		h.Attempt = uint32(a.r.IntN(32))
		if ss != nil && a.r.IntN(2) == 0 {
			ss.Purpose = Respell(ss.Purpose, a.r)
		}
		return m, "attempt and purpose"
	}
}

func purposeOf(ss *wire.SumStart, res *wire.SumResult) string {
	if ss != nil {
		return ss.GetPurpose()
	}
	return res.GetPurpose()
}

// Respell writes a purpose another way that a lenient parser (fmt.Sscanf)
// reads as the same: a leading zero or plus sign on its last number, or
// trailing junk.
func Respell(p string, r *rand.Rand) string {
	i := len(p)
	for i > 0 && p[i-1] >= '0' && p[i-1] <= '9' {
		i--
	}
	if i == len(p) {
		return p + " "
	}
	switch r.IntN(5) {
	case 0:
		return p[:i] + "0" + p[i:]
	case 1:
		return p[:i] + "+" + p[i:]
	case 2:
		return p + "x"
	case 3:
		return p + " "
	default:
		return p[:i] + "00" + p[i:]
	}
}

// Canonical reads a purpose as a lenient parser does (fmt.Sscanf's
// integers, trailing junk ignored): the quantity a respelled request asks
// for, which is what the observer groups values by.
func Canonical(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); {
		c := p[i]
		if c == '+' || (c >= '0' && c <= '9') {
			j := i
			if c == '+' {
				j++
			}
			k := j
			for k < len(p) && p[k] >= '0' && p[k] <= '9' {
				k++
			}
			if k > j {
				n, _ := strconv.Atoi(p[j:k])
				b.WriteString(strconv.Itoa(n))
				i = k
				if k < len(p) && p[k] != '/' {
					return b.String() // trailing junk
				}
				continue
			}
		}
		b.WriteByte(c)
		i++
	}
	return strings.TrimSpace(b.String())
}

// instKey names one Shamir instance of one dealer.
type instKey struct {
	dealer         protocol.PeerID
	session        string
	round, attempt uint32
	purpose        string
	instance       uint32
}

type startKey struct {
	session        string
	round, attempt uint32
	purpose        string
	instance       uint32
}

// Slot is the quantity a value is of, as the observer reads it: the
// system's message kind, session, round or tree, attempt (kept: the W&C
// err dealing is charged per attempt; the federated plan has one) and the
// canonical purpose.
type Slot struct {
	Owner          protocol.PeerID
	Kind           string // "sum", "share" or "pfds"
	Session        string
	Round, Attempt uint32
	Purpose        string
}

func (s Slot) String() string {
	return fmt.Sprintf("%s %s %q r%d a%d %s", s.Owner, s.Kind, s.Session, s.Round, s.Attempt, s.Purpose)
}

// Observer records what left honest owners.
type Observer struct {
	Honest map[protocol.PeerID]bool
	// SlotOf, if set, maps a reconstructed sum dealing's slot to the slot
	// its charge covers (e.g. a federated sum's attempt is not part of
	// it); nil keeps the slot.
	SlotOf func(Slot) Slot

	shares     map[instKey]map[field.Elem][]field.Elem
	thresholds map[startKey]int
	published  map[Slot]map[string]bool // topic messages: distinct payloads
}

// NewObserver returns an empty observer.
func NewObserver() *Observer {
	return &Observer{shares: map[instKey]map[field.Elem][]field.Elem{}, thresholds: map[startKey]int{},
		published: map[Slot]map[string]bool{}}
}

// See records one message on the wire.
func (o *Observer) See(from, to protocol.PeerID, topic bool, name string, data []byte) {
	if topic {
		if o.Honest[from] {
			o.seeTopic(from, name, data)
		}
		return
	}
	env, err := wire.Unmarshal(data, wire.MaxFrame)
	if err != nil {
		return
	}
	h := env.GetHeader()
	if ss := env.GetSumStart(); ss != nil && ss.GetThreshold() > 0 {
		k := startKey{h.GetSession(), h.GetRound(), h.GetAttempt(), ss.GetPurpose(), ss.GetInstance()}
		o.thresholds[k] = int(ss.GetThreshold())
	}
	s := env.GetSum()
	if s == nil || s.GetKind() != wire.Sum_SHAMIR_SHARE || !o.Honest[from] {
		return
	}
	k := instKey{from, h.GetSession(), h.GetRound(), h.GetAttempt(), s.GetPurpose(), s.GetInstance()}
	m := o.shares[k]
	if m == nil {
		m = map[field.Elem][]field.Elem{}
		o.shares[k] = m
	}
	ys := make([]field.Elem, len(s.GetValues()))
	for i, v := range s.GetValues() {
		ys[i] = field.Elem(v)
	}
	m[field.Elem(s.GetX())] = ys
}

// seeTopic records an honest owner's publication: a W&C Share, or a PFDS
// message (any other topic payload of an owner's is recorded by its bytes
// under its topic).
func (o *Observer) seeTopic(from protocol.PeerID, topic string, data []byte) {
	slot := Slot{Owner: from, Kind: "pfds", Purpose: topic}
	body := string(data)
	if env, err := wire.Unmarshal(data, wire.MaxFrame); err == nil && env.GetShare() != nil {
		b, _ := proto.Marshal(env.GetShare())
		slot = Slot{Owner: from, Kind: "share", Session: env.GetHeader().GetSession()}
		body = string(b)
	} else if sess, kind, ok := PFDSHeader(data); ok {
		slot.Session, slot.Purpose = sess, kind
	} else {
		return // an owner's control message (Join, Refuse): no data
	}
	m := o.published[slot]
	if m == nil {
		m = map[string]bool{}
		o.published[slot] = m
	}
	m[body] = true
}

// PFDSHeader reads a PFDS message's session and kind; set by the test that
// runs PFDS (the pfds package's decoder), nil elsewhere.
var PFDSHeader = func(data []byte) (session, kind string, ok bool) { return "", "", false }

// Values returns, per slot, the distinct values that left honest owners:
// Shamir dealings reconstructed from their committee shares (instances whose
// shares did not all arrive are skipped), and publications.
func (o *Observer) Values() map[Slot]int {
	distinct := map[Slot]map[string]bool{}
	keys := make([]instKey, 0, len(o.shares))
	for k := range o.shares {
		keys = append(keys, k)
	}
	for _, k := range keys {
		m := o.shares[k]
		t, ok := o.thresholds[startKey{k.session, k.round, k.attempt, k.purpose, k.instance}]
		if !ok || len(m) < t {
			continue
		}
		sh := make([]shamir.Share, 0, len(m))
		for x, y := range m {
			sh = append(sh, shamir.Share{X: x, Y: y})
		}
		slices.SortFunc(sh, func(a, b shamir.Share) int { return int(a.X) - int(b.X) })
		v, err := shamir.Reconstruct(sh, t)
		if err != nil {
			continue
		}
		slot := Slot{Owner: k.dealer, Kind: "sum", Session: k.session, Round: k.round, Attempt: k.attempt, Purpose: Canonical(k.purpose)}
		if o.SlotOf != nil {
			slot = o.SlotOf(slot)
		}
		if distinct[slot] == nil {
			distinct[slot] = map[string]bool{}
		}
		distinct[slot][fmt.Sprint(v)] = true
	}
	out := map[Slot]int{}
	for s, m := range distinct {
		out[s] = len(m)
	}
	for s, m := range o.published {
		out[s] = len(m)
	}
	return out
}

// Ledger is what Check reads of an honest owner's ledger.
type Ledger interface {
	Contributed(key string) bool
	Spent() float64
	Budget() float64
}

// Finding is one broken invariant.
type Finding struct {
	Slot Slot
	What string
}

func (f Finding) String() string { return f.Slot.String() + ": " + f.What }

// Charge says which ledger key covers a slot and what one draw of it
// costs (the system's own accountant); ok false for a slot that is no
// release (it is reported).
type Charge func(Slot) (key string, eps float64, ok bool)

// Report is Check's account of a run.
type Report struct {
	Values   int                         // distinct values that left honest owners
	Findings []Finding                   // broken invariants
	Implied  map[protocol.PeerID]float64 // eps implied by what was seen (independent draws)
	Charged  map[protocol.PeerID]float64 // eps the ledgers hold
}

// Check compares what left each honest owner with its ledger. The ε implied
// by what was seen adds, per charge key, the key's ε times the most
// independent draws any of its slots had (a charge covers one draw of each
// of its slots: a key's slots compose as its charge says; a second draw of
// one of them is a second release of it).
func Check(o *Observer, ledgers map[protocol.PeerID]Ledger, charge Charge) Report {
	rep := Report{Implied: map[protocol.PeerID]float64{}, Charged: map[protocol.PeerID]float64{}}
	type ownerKey struct {
		owner protocol.PeerID
		key   string
	}
	draws := map[ownerKey]int{}
	eps := map[ownerKey]float64{}
	vals := o.Values()
	slots := make([]Slot, 0, len(vals))
	for s := range vals {
		slots = append(slots, s)
	}
	slices.SortFunc(slots, func(a, b Slot) int { return strings.Compare(a.String(), b.String()) })
	for _, s := range slots {
		n := vals[s]
		rep.Values += n
		led := ledgers[s.Owner]
		key, e, ok := charge(s)
		if !ok {
			rep.Findings = append(rep.Findings, Finding{s, "a value that is no release of the plan"})
			continue
		}
		if n > 1 {
			rep.Findings = append(rep.Findings, Finding{s, fmt.Sprintf("%d different values (one name, %d independent draws)", n, n)})
		}
		if led == nil || !led.Contributed(key) {
			rep.Findings = append(rep.Findings, Finding{s, fmt.Sprintf("a value without a charge (ledger key %q not recorded)", key)})
		}
		k := ownerKey{s.Owner, key}
		draws[k] = max(draws[k], n)
		eps[k] = e
	}
	for k, n := range draws {
		rep.Implied[k.owner] += float64(n) * eps[k]
	}
	for id, led := range ledgers {
		rep.Charged[id] = led.Spent()
		if led.Spent() > led.Budget()+1e-9 {
			rep.Findings = append(rep.Findings, Finding{Slot{Owner: id}, fmt.Sprintf("spent %g of a %g budget", led.Spent(), led.Budget())})
		}
		if rep.Implied[id] > led.Spent()*(1+1e-9)+1e-12 {
			rep.Findings = append(rep.Findings, Finding{Slot{Owner: id}, fmt.Sprintf("the adversary saw eps %.4g, the ledger holds %.4g", rep.Implied[id], led.Spent())})
		}
	}
	return rep
}

// Resend returns a copy of data, if it is a SumStart of round, under
// attempt and (if purpose is set) purpose(old purpose); nil otherwise.
func Resend(data []byte, round, attempt uint32, purpose func(string) string, fix func(*wire.Envelope)) []byte {
	env, err := wire.Unmarshal(data, wire.MaxFrame)
	if err != nil || env.GetSumStart() == nil || env.GetHeader().GetRound() != round {
		return nil
	}
	m := proto.Clone(env).(*wire.Envelope)
	m.Header.Attempt = attempt
	m.Header.Seq += 1 << 32
	if purpose != nil {
		m.GetSumStart().Purpose = purpose(m.GetSumStart().GetPurpose())
	}
	if fix != nil {
		fix(m)
	}
	b, err := wire.Marshal(m, wire.MaxFrame)
	if err != nil {
		return nil
	}
	return b
}

// Respelled puts prefix before the last number of p ("leaves/0" with "+":
// "leaves/+0").
func Respelled(p, prefix string) string {
	i := len(p)
	for i > 0 && p[i-1] >= '0' && p[i-1] <= '9' {
		i--
	}
	return p[:i] + prefix + p[i:]
}
