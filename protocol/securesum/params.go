package securesum

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Methods.
const (
	Ring   = "ring"
	Shamir = "shamir"
)

// Params are the secure-sum tunables.
type Params struct {
	Method string `json:"method"` // "ring" | "shamir"
	// Threshold is Shamir's t, capped at the committee size; 0 means a
	// majority of the committee (floor(c/2)+1): the sum then survives the
	// loss of up to c-t members, and a coalition needs more than half of
	// the committee to learn a value.
	Threshold int  `json:"threshold"`
	Committee int  `json:"committee"` // Shamir c (all parties when fewer)
	ScaleBits uint `json:"scale_bits"`
	// MinParties is the fewest contributors any revealed aggregate may
	// cover (for Shamir never fewer than t). Parties refuse a ring, or a
	// dealer set, smaller than that: with one contributor the total is its
	// value, with two each learns the other's.
	MinParties int `json:"min_parties"`
	// Bound is the largest |value| a party may contribute; 0 means the
	// number of roster parties (weights are normalized to an average owner
	// total of 1, so no owner's sum exceeds the owner count).
	Bound float64 `json:"bound"`
	// Timeout is the least a step waits before the coordinator probes a
	// stalled instance; the step's deadline grows past it with the
	// measured round-trip times and the step's message depth (see
	// Coordinator), and a step whose shares are still arriving is extended,
	// up to MaxWait.
	Timeout     time.Duration `json:"timeout"`
	HopTimeout  time.Duration `json:"hop_timeout"`  // ring: extra wait per hop (2 hops per party)
	PingTimeout time.Duration `json:"ping_timeout"` // the least it waits for answers to a probe
	MaxReforms  int           `json:"max_reforms"`  // re-formed ring instances before giving up
	// MaxWait is the hard cap of one instance's dealing (Shamir: from the
	// SumStart until the dealer set is fixed) or of one ring pass: however
	// fast shares keep arriving, the coordinator decides with what it has
	// then. 0 means DefaultMaxWait; a cap below Timeout is Timeout.
	MaxWait time.Duration `json:"max_wait"`
	// Processing is the allowance per message a party handles in a step
	// (decoding, field arithmetic, a busy machine's queue): a Shamir member
	// handles one share per dealer, so the dealing step allows
	// Processing x (dealers + committee) beyond its network delays.
	Processing time.Duration `json:"processing"`
	// SingleInstance: a party deals its value in one instance of a sum
	// only, and the coordinator never re-forms (a stalled instance that
	// retransmission cannot save fails). For values that carry one-time
	// noise (distributed privacy): two totals over different dealer sets
	// would differ by one party's value with only its own noise share.
	SingleInstance bool `json:"single_instance,omitempty"`
}

// DefaultParams: Shamir with a majority threshold of a committee of 32,
// at least 3 contributors, scale 2^24.
func DefaultParams() Params {
	return Params{Method: Shamir, Committee: 32, ScaleBits: field.DefaultScaleBits, MinParties: DefaultMinParties,
		Timeout: 5 * time.Second, HopTimeout: 20 * time.Millisecond, PingTimeout: time.Second, MaxReforms: 3,
		MaxWait: DefaultMaxWait, Processing: DefaultProcessing}
}

// Cap is the effective MaxWait.
func (p Params) Cap() time.Duration {
	if p.MaxWait == 0 {
		return max(DefaultMaxWait, p.Timeout)
	}
	return max(p.MaxWait, p.Timeout)
}

// DefaultMaxWait caps one instance's dealing: a 200-owner first sum on a
// loaded machine (6,400 TLS handshakes on two cores) took about a minute.
const DefaultMaxWait = 2 * time.Minute

// DefaultProcessing is the per-message allowance of DefaultParams: one
// request and reply on an open libp2p stream cost about 0.35 ms on the
// 2-core build machine, and a member takes its shares' streams
// concurrently. A machine busier than that is covered by the extension of
// a progressing dealing, not by this allowance.
const DefaultProcessing = 250 * time.Microsecond

// DefaultMinParties is the smallest aggregate an owner helps reveal.
const DefaultMinParties = 3

// ThresholdFor is t for a committee of the given size.
func (p Params) ThresholdFor(committee int) int {
	if p.Threshold == 0 {
		return committee/2 + 1
	}
	return min(p.Threshold, committee)
}

// MinDealers is the smallest dealer set a Shamir sum over a committee of the
// given size may reveal.
func (p Params) MinDealers(committee int) int { return max(p.MinParties, p.ThresholdFor(committee)) }

// Validate checks the parameters and names the bad field.
func (p Params) Validate() error {
	switch p.Method {
	case Ring, Shamir:
	default:
		return fmt.Errorf("method: %q is not ring or shamir", p.Method)
	}
	if p.Method == Shamir {
		if p.Committee < 1 {
			return fmt.Errorf("committee: must be at least 1, got %d", p.Committee)
		}
		if p.Threshold < 0 || p.Threshold > p.Committee {
			return fmt.Errorf("threshold: must be in [0, committee=%d] (0 = majority), got %d", p.Committee, p.Threshold)
		}
	}
	if p.MinParties < DefaultMinParties {
		return fmt.Errorf("min_parties: must be at least %d, got %d", DefaultMinParties, p.MinParties)
	}
	if _, err := field.NewCodec(p.ScaleBits); err != nil {
		return fmt.Errorf("scale_bits: %w", err)
	}
	if p.Bound < 0 {
		return fmt.Errorf("bound: must not be negative, got %v", p.Bound)
	}
	if p.HopTimeout < 0 {
		return fmt.Errorf("hop_timeout: must not be negative, got %v", p.HopTimeout)
	}
	if p.Timeout <= 0 || p.PingTimeout <= 0 {
		return fmt.Errorf("timeout, ping_timeout: must be positive, got %v, %v", p.Timeout, p.PingTimeout)
	}
	if p.MaxReforms < 0 {
		return fmt.Errorf("max_reforms: must not be negative, got %d", p.MaxReforms)
	}
	if p.MaxWait < 0 {
		return fmt.Errorf("max_wait: must not be negative, got %v", p.MaxWait)
	}
	if p.Processing < 0 {
		return fmt.Errorf("processing: must not be negative, got %v", p.Processing)
	}
	return nil
}

// Env binds the drivers to the outside world.
type Env struct {
	Self protocol.PeerID
	// Send posts a secure-sum message to one peer on the direct stream of
	// protocolID: Sum messages, and the coordinator's SumStart and
	// SumResult to each party of an instance.
	Send func(to protocol.PeerID, protocolID string, env *wire.Envelope)
	// Clock is the time source (Now); without Timers the coordinator also
	// arms its instances' timers on it.
	Clock protocol.Clock
	// Timers, if set, arms the coordinator's named timers as timers of the
	// role it is a sub-machine of (engine.Out does); the role hands their
	// expiry to Coordinator.Fire. TimerPrefix starts every name, so that
	// several coordinators of one role keep their timers apart.
	Timers      Timers
	TimerPrefix string
	Rand        *rand.Rand // masks and coefficients: rng.Secure in production
	Log         hclog.Logger
	// Dropped, if set, is told the reason of every message or request the
	// driver drops (the session counts them for /metrics).
	Dropped func(reason string)
	// Noise, if set, adds this party's share of distributed noise to its
	// encoded value before the value is masked or shared (a party's value
	// then never leaves it without its noise share). The coordinator's
	// MinParties must cover what the noise design needs.
	Noise func(enc []field.Elem) error
	// RTT, if set, is the round-trip estimator the coordinator reads its
	// deadlines from and feeds with its own request/reply timings; several
	// coordinators of one node (and the session) may share it. Nil: the
	// coordinator keeps its own.
	RTT *RTTs
	// Share, if set, lets the parties of one process share what they
	// derive from one roster (a simulator's; nil in production).
	Share Sharing
	// System names the stream protocols of the sums; the zero value is
	// wire.WC().
	System wire.System
}

// Timers arms and cancels named timers (engine.Out implements it).
type Timers interface {
	SetTimer(name string, after time.Duration)
	CancelTimer(name string)
}

// sys is the Env's system, wire.WC() when unset.
func (e Env) sys() wire.System {
	if e.System.Name == "" {
		return wire.WC()
	}
	return e.System
}

// PosterEnv is PosterEnvFor(wire.WC(), ...).
func PosterEnv(self protocol.PeerID, post protocol.Poster, clock protocol.Clock, r *rand.Rand, log hclog.Logger) Env {
	return PosterEnvFor(wire.WC(), self, post, clock, r, log)
}

// PosterEnvFor is the Env of a driver of system sys that posts marshalled
// envelopes through a protocol.Poster on direct streams (the system's ring
// or Shamir protocol). Oversized messages (above wire.MaxSumFrameBytes) are
// logged and not sent. An envelope sent to several peers in a row (a
// SumStart, a SumResult) is marshalled once: the drivers never change an
// envelope once they have sent it. Call Send on one goroutine (the
// driver's loop).
func PosterEnvFor(sys wire.System, self protocol.PeerID, post protocol.Poster, clock protocol.Clock, r *rand.Rand, log hclog.Logger) Env {
	var last *wire.Envelope
	var lastB []byte
	return Env{
		Self: self, Clock: clock, Rand: r, Log: log, System: sys,
		Send: func(to protocol.PeerID, protocolID string, env *wire.Envelope) {
			if env != last {
				b, err := wire.Marshal(env, wire.MaxSumFrameBytes)
				if err != nil {
					log.Error("secure-sum message too large", "err", err)
					return
				}
				last, lastB = env, b
			}
			post.Send(to, protocolID, lastB)
		},
	}
}

// Rule violations.
var (
	ErrNotParticipant = errors.New("securesum: sender is not a participant")
	ErrDuplicate      = errors.New("securesum: duplicate message")
	ErrLate           = errors.New("securesum: message for a finished or superseded instance")
	ErrMalformed      = errors.New("securesum: malformed message")
	ErrRefused        = errors.New("securesum: request refused")
	ErrTooFew         = errors.New("securesum: too few parties answered")
	ErrValue          = errors.New("securesum: value outside the agreed bound")
	ErrBufferFull     = errors.New("securesum: buffer for instances not begun is full")
)

// Stats counts what a driver dropped and did.
type Stats struct {
	Duplicate, Late, NonParticipant, Malformed, Refused, BufferFull int
	Started, Completed, Failed, Reforms                             int
}

// count records a drop and returns its reason's name.
func (s *Stats) count(err error) string {
	switch {
	case errors.Is(err, ErrDuplicate):
		s.Duplicate++
		return "duplicate"
	case errors.Is(err, ErrLate):
		s.Late++
		return "late"
	case errors.Is(err, ErrNotParticipant):
		s.NonParticipant++
		return "not a participant"
	case errors.Is(err, ErrRefused):
		s.Refused++
		return "request refused"
	case errors.Is(err, ErrBufferFull):
		s.BufferFull++
		return "buffer full"
	default:
		s.Malformed++
		return "malformed"
	}
}

// dropped reports a drop to the environment.
func (e Env) dropped(reason string) {
	if e.Dropped != nil {
		e.Dropped("sum: " + reason)
	}
}

// key names one instance.
type key struct {
	session        string
	round, attempt uint32
	purpose        string
	instance       uint32
}

func keyOf(h *wire.Header, purpose string, instance uint32) key {
	return key{h.GetSession(), h.GetRound(), h.GetAttempt(), purpose, instance}
}

// base identifies the sum regardless of instance (re-forms).
func (k key) base() key { k.instance = 0; return k }

func (e Env) protoFor(method string) string { return e.sys().SumProtocol(method) }

// header builds an outgoing header for instance k.
func header(k key, seq *uint64) *wire.Header {
	*seq++
	return &wire.Header{Version: wire.Version, Session: k.session, Round: k.round, Attempt: k.attempt, Seq: *seq}
}

func sumEnvelope(k key, seq *uint64, m *wire.Sum) *wire.Envelope {
	m.Purpose, m.Instance = k.purpose, k.instance
	return &wire.Envelope{Header: header(k, seq), Body: &wire.Envelope_Sum{Sum: m}}
}

// elems converts wire values, rejecting non-field elements and wrong lengths.
func elems(v []uint64, length int) ([]field.Elem, error) {
	if len(v) != length {
		return nil, fmt.Errorf("%w: %d values, want %d", ErrMalformed, len(v), length)
	}
	out := make([]field.Elem, len(v))
	for i, x := range v {
		if x >= field.P {
			return nil, fmt.Errorf("%w: value %d is not a field element", ErrMalformed, x)
		}
		out[i] = field.Elem(x)
	}
	return out, nil
}

func raw(v []field.Elem) []uint64 {
	out := make([]uint64, len(v))
	for i, x := range v {
		out[i] = uint64(x)
	}
	return out
}

// Committee picks the Shamir committee of one instance: every participant
// when there are at most c, else c of them by a shuffle seeded from the
// session's public beacon, the session and the sum's purpose over the
// instance's participants. Parties recompute it and refuse a SumStart that
// names another committee.
//
// Neither the round nor the attempt enters the seed (they did before issue
// 31): every sum of a purpose over the same participants has the same
// committee, so the connections its dealers opened for the first sum carry
// every later one (a new committee per round made each warm sum of 200
// owners dial on its critical path: 10.5 one-way delays instead of 5 on the
// simulated internet, experiment's TestWANSim). A coalition's chance to
// hold t seats is the same for one draw as for each of many; drawn once, a
// session has one chance instead of one per sum.
//
// The instance number does not enter the seed (the parameter stays for the
// callers that name an instance): the coordinator picks instance numbers,
// and a seed it can vary would let it grind through 2^32 committees for one
// it likes. A re-formed instance still gets its own committee, because its
// participants differ (the silent ones are excluded). And the committee of a
// sum's first instance is known from the roster alone, so owners can open
// its connections before the sum starts (protocol.Preparer).
func Committee(participants []protocol.PeerID, c int, beacon []byte, h *wire.Header, purpose string, instance uint32) []protocol.PeerID {
	return committee(participants, c, beacon, keyOf(h, purpose, instance))
}

// poolCommittee is the size of a committee drawn from a pool
// (Request.Pool) for a sum of dealers parties: no larger than the
// committee of a sum drawn from its own parties (Params.Committee, or the
// parties), so that t and the smallest dealer set (MinDealers) are what
// they would be. The draw is a prefix of one shuffle seeded by the beacon,
// session and purpose, so the committees of every size are nested: an
// owner that opened connections to the first Params.Committee members has
// every pool committee's.
func poolCommittee(p Params, dealers int) int { return min(p.Committee, dealers) }

// PoolCommittee is the committee of a sum of dealers parties whose
// committee comes from pool (Request.Pool), as Committee is for one drawn
// from its parties: who must hear of the sum besides its dealers.
func PoolCommittee(pool []protocol.PeerID, dealers int, p Params, beacon []byte, h *wire.Header, purpose string) []protocol.PeerID {
	return committee(pool, poolCommittee(p, dealers), beacon, keyOf(h, purpose, 0))
}

func committee(participants []protocol.PeerID, c int, beacon []byte, k key) []protocol.PeerID {
	if len(participants) <= c {
		return append([]protocol.PeerID(nil), participants...)
	}
	h := sha256.New()
	h.Write([]byte("ppboost/securesum/committee/v2\x00"))
	h.Write(beacon)
	h.Write([]byte(k.session))
	h.Write([]byte{0})
	h.Write([]byte(k.purpose))
	sum := h.Sum(nil)
	r := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum), binary.LittleEndian.Uint64(sum[8:])))
	// A partial Fisher-Yates shuffle over a sparse map of swapped
	// positions: c distinct indices, uniformly, in O(c) time and memory
	// whatever the number of participants (every party of a 10^5-owner sum
	// computes it).
	n := len(participants)
	swapped := make(map[int]int, 2*c)
	at := func(i int) int {
		if v, ok := swapped[i]; ok {
			return v
		}
		return i
	}
	out := make([]protocol.PeerID, c)
	for i := 0; i < c; i++ {
		j := i + r.IntN(n-i)
		vi, vj := at(i), at(j)
		swapped[i], swapped[j] = vj, vi
		out[i] = participants[vj]
	}
	return out
}

// CommitteeDigest names a committee in x-order: SHA-256 over a domain tag
// and the members' ids, each prefixed by its length. A SumStart carries it
// instead of the members' names; parties compare it with the digest of the
// committee they compute themselves.
func CommitteeDigest(com []protocol.PeerID) []byte {
	h := sha256.New()
	h.Write([]byte("ppboost/securesum/committee/v1\x00"))
	var b [binary.MaxVarintLen64]byte
	for _, m := range com {
		h.Write(b[:binary.PutUvarint(b[:], uint64(len(m)))])
		h.Write([]byte(m))
	}
	return h.Sum(nil)
}

func durationOf(d interface{ Nanoseconds() int64 }) time.Duration {
	return time.Duration(d.Nanoseconds())
}

// paramsJSON is Params with its durations as strings ("5s", "20ms"), the
// form a configuration file uses.
type paramsJSON struct {
	Method      string  `json:"method"`
	Threshold   int     `json:"threshold"`
	Committee   int     `json:"committee"`
	ScaleBits   uint    `json:"scale_bits"`
	MinParties  int     `json:"min_parties"`
	Bound       float64 `json:"bound"`
	Timeout     string  `json:"timeout"`
	HopTimeout  string  `json:"hop_timeout"`
	PingTimeout string  `json:"ping_timeout"`
	MaxReforms  int     `json:"max_reforms"`
	MaxWait     string  `json:"max_wait"`
	Processing  string  `json:"processing"`
}

// MarshalJSON writes durations as strings.
func (p Params) MarshalJSON() ([]byte, error) {
	return json.Marshal(paramsJSON{p.Method, p.Threshold, p.Committee, p.ScaleBits, p.MinParties, p.Bound,
		p.Timeout.String(), p.HopTimeout.String(), p.PingTimeout.String(), p.MaxReforms, p.MaxWait.String(), p.Processing.String()})
}

// UnmarshalJSON reads durations as strings ("5s"); fields absent from the
// input keep their current values, so decoding onto DefaultParams() changes
// only what the file sets. Errors name the field.
func (p *Params) UnmarshalJSON(b []byte) error {
	j := paramsJSON{p.Method, p.Threshold, p.Committee, p.ScaleBits, p.MinParties, p.Bound,
		p.Timeout.String(), p.HopTimeout.String(), p.PingTimeout.String(), p.MaxReforms, p.MaxWait.String(), p.Processing.String()}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("sum: %w (durations are strings such as \"5s\")", err)
	}
	q := Params{Method: j.Method, Threshold: j.Threshold, Committee: j.Committee, ScaleBits: j.ScaleBits,
		MinParties: j.MinParties, Bound: j.Bound, MaxReforms: j.MaxReforms}
	for _, d := range []struct {
		name string
		s    string
		dst  *time.Duration
	}{{"timeout", j.Timeout, &q.Timeout}, {"hop_timeout", j.HopTimeout, &q.HopTimeout}, {"ping_timeout", j.PingTimeout, &q.PingTimeout},
		{"max_wait", j.MaxWait, &q.MaxWait}, {"processing", j.Processing, &q.Processing}} {
		v, err := time.ParseDuration(d.s)
		if err != nil {
			return fmt.Errorf("sum.%s: %q is not a duration such as \"5s\"", d.name, d.s)
		}
		*d.dst = v
	}
	*p = q
	return nil
}
