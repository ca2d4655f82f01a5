package securesum

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// out records what a driver posted.
type out struct {
	to  protocol.PeerID
	env *wire.Envelope
}

// manual is a hand-driven world: messages are queued, never delivered
// unless the test does it; time does not pass. The coordinator's SumStarts
// and SumResults are kept apart from the Sum messages.
type manual struct {
	sent      []out
	announced []out // SumStart, SumResult
}

type nopClock struct{}

func (nopClock) Now() time.Time { return time.Time{} }
func (nopClock) AfterFunc(time.Duration, func()) protocol.Timer {
	return stopper{}
}

type stopper struct{}

func (stopper) Stop() bool { return true }

func (m *manual) env(self protocol.PeerID, seed uint64) Env {
	return Env{Self: self, Clock: nopClock{}, Rand: rng.Seeded(seed), Log: hclog.NewNullLogger(),
		Send: func(to protocol.PeerID, _ string, e *wire.Envelope) {
			if e.GetSum() == nil {
				m.announced = append(m.announced, out{to, e})
				return
			}
			m.sent = append(m.sent, out{to, e})
		}}
}

// startsTo checks that the first len(roster) announcements are one
// SumStart to each roster member, the same envelope, and returns it.
func (m *manual) startsTo(t *testing.T, roster []protocol.PeerID) *wire.Envelope {
	t.Helper()
	if len(m.announced) < len(roster) {
		t.Fatalf("%d announcements, want a SumStart to each of %d parties", len(m.announced), len(roster))
	}
	for i, id := range roster {
		if a := m.announced[i]; a.to != id || a.env.GetSumStart() == nil || a.env != m.announced[0].env {
			t.Fatalf("announcement %d: to %s, %v; want the SumStart to %s", i, a.to, a.env, id)
		}
	}
	return m.announced[0].env
}

func (m *manual) take() []out { s := m.sent; m.sent = nil; return s }

var hdr = &wire.Header{Version: wire.Version, Session: "s", Round: 1}

func TestRingByHand(t *testing.T) {
	w := &manual{}
	p := DefaultParams()
	p.Method = Ring
	roster := []protocol.PeerID{"a", "b", "c"}
	coord := NewCoordinator(w.env("user", 9), p)
	var total []float64
	coord.Sum(Request{Header: hdr, Purpose: "err", Roster: roster, Length: 1}, func(v []float64, n int, err error) {
		if err != nil || n != 3 {
			t.Fatalf("done: %v %d", err, n)
		}
		total = v
	})
	start := w.startsTo(t, roster)
	parties := map[protocol.PeerID]*Party{}
	vals := map[protocol.PeerID]float64{"a": 0.5, "b": -0.25, "c": 2}
	for i, id := range roster {
		parties[id] = NewParty(w.env(id, uint64(i)), p)
		if err := parties[id].Begin(start.GetHeader(), start.GetSumStart(), roster, nil, "user", []float64{vals[id]}); err != nil {
			t.Fatal(err)
		}
	}
	// Party a starts: one forward message to b, masked (not 0.5 in the clear).
	hops := 0
	for msgs := w.take(); len(msgs) > 0; msgs = w.take() {
		for _, m := range msgs {
			hops++
			if m.to == "user" {
				coord.Handle("c", m.env)
				continue
			}
			if m.env.GetSum().GetKind() == wire.Sum_RING_FORWARD && m.to == "b" {
				if v := m.env.GetSum().GetValues()[0]; v == uint64(1<<23) { // 0.5 * 2^24
					t.Fatal("party a's value left it unmasked")
				}
			}
			var from protocol.PeerID
			switch m.to {
			case "a":
				from = "c"
			case "b":
				from = "a"
			case "c":
				from = "b"
			}
			parties[m.to].Handle(from, m.env)
		}
	}
	if hops != 2*3 { // 3 forward hops, 2 backward hops, 1 total
		t.Fatalf("%d messages, want 6", hops)
	}
	if total == nil || total[0] != 2.25 {
		t.Fatalf("total %v, want 2.25", total)
	}
	// Each party is told the total, on its direct stream.
	if len(w.announced) != 2*len(roster) {
		t.Fatalf("%d announcements, want a SumStart and a SumResult to each of %d parties", len(w.announced), len(roster))
	}
	for i, a := range w.announced[len(roster):] {
		if a.to != roster[i] || a.env.GetSumResult().GetTotal()[0] != 2.25 || a.env.GetSumResult().GetParties() != 3 {
			t.Fatalf("announcement to %s: %v, want the SumResult to %s", a.to, a.env, roster[i])
		}
	}
	// A replayed forward to b after the instance is done is dropped and counted.
	replay := sumEnvelope(keyOf(hdr, "err", start.GetSumStart().GetInstance()), new(uint64), &wire.Sum{Kind: wire.Sum_RING_FORWARD, Values: []uint64{1}})
	parties["b"].Handle("a", replay)
	parties["b"].Handle("c", replay) // not b's predecessor
	if st := parties["b"].Stats(); st.Duplicate != 1 || st.NonParticipant != 1 {
		t.Fatalf("b's stats %+v", st)
	}
}

func TestShamirMemberRevealsOnce(t *testing.T) {
	w := &manual{}
	p := DefaultParams()
	p.Committee, p.Threshold = 5, 3
	roster := []protocol.PeerID{"a", "b", "c", "d", "e"}
	coord := NewCoordinator(w.env("user", 1), p)
	var total []float64
	coord.Sum(Request{Header: hdr, Purpose: "wsum", Roster: roster, Length: 2, Beacon: []byte("beacon")}, func(v []float64, _ int, err error) {
		if err != nil {
			t.Fatal(err)
		}
		total = v
	})
	start := w.startsTo(t, roster)
	if s := start.GetSumStart(); len(s.GetCommittee()) != 0 || len(s.GetCommitteeDigest()) != 32 {
		t.Fatalf("SumStart names %d members and a digest of %d bytes; want the digest alone", len(s.GetCommittee()), len(s.GetCommitteeDigest()))
	}
	parties := map[protocol.PeerID]*Party{}
	want := []float64{0, 0}
	for i, id := range roster {
		parties[id] = NewParty(w.env(id, uint64(10+i)), p)
		v := []float64{float64(i) / 4, -float64(i)}
		want[0] += v[0]
		want[1] += v[1]
		if err := parties[id].Begin(start.GetHeader(), start.GetSumStart(), roster, []byte("beacon"), "user", v); err != nil {
			t.Fatal(err)
		}
	}
	// Begin recorded every dealer's shares interleaved without senders:
	// start again, delivering each party's sends right after its Begin.
	w.take()
	for i, id := range roster {
		parties[id] = NewParty(w.env(id, uint64(10+i)), p)
		parties[id].SetRoster(roster)
	}
	for i, id := range roster {
		parties[id].Begin(start.GetHeader(), start.GetSumStart(), roster, []byte("beacon"), "user", []float64{float64(i) / 4, -float64(i)})
		for _, m := range w.take() {
			if m.to == "user" { // a member's holding report (fast path)
				coord.Handle(roster[m.env.GetSum().GetX()-1], m.env)
			} else {
				parties[m.to].Handle(id, m.env)
			}
		}
	}
	// Dealer sets go to members; partial sums come back (members are
	// identified by their evaluation point x).
	for msgs := w.take(); len(msgs) > 0; msgs = w.take() {
		for _, m := range msgs {
			if m.to == "user" {
				coord.Handle(roster[m.env.GetSum().GetX()-1], m.env)
			} else {
				parties[m.to].Handle("user", m.env)
			}
		}
	}
	if total == nil || total[0] != want[0] || total[1] != want[1] {
		t.Fatalf("total %v, want %v", total, want)
	}
	// A second, different dealer set is refused: revealing two partials
	// would let anyone subtract them.
	second := sumEnvelope(keyOf(hdr, "wsum", start.GetSumStart().GetInstance()), new(uint64), &wire.Sum{Kind: wire.Sum_SHAMIR_DEALERS, Dealers: []byte{0b00111}})
	parties["c"].Handle("user", second)
	if st := parties["c"].Stats(); st.Refused != 1 {
		t.Fatalf("second dealer set: stats %+v", st)
	}
	if len(w.take()) != 0 {
		t.Fatal("a member revealed a second partial sum")
	}
	// Garbage: wrong length, non-field value, unknown kind, non-participant.
	bad := []*wire.Sum{
		{Kind: wire.Sum_SHAMIR_SHARE, X: 3, Values: []uint64{1}},
		{Kind: wire.Sum_SHAMIR_SHARE, X: 3, Values: []uint64{field.P, 1}},
		{Kind: wire.Sum_RING_TOTAL},
	}
	fresh := NewParty(w.env("c", 99), p)
	h2 := &wire.Header{Version: wire.Version, Session: "s", Round: 2}
	st2 := *start.GetSumStart()
	fresh.Begin(h2, &st2, roster, []byte("beacon"), "user", []float64{1, 1})
	w.take()
	for _, b := range bad {
		fresh.Handle("a", sumEnvelope(keyOf(h2, "wsum", st2.GetInstance()), new(uint64), b))
	}
	fresh.Handle("mallory", sumEnvelope(keyOf(h2, "wsum", st2.GetInstance()), new(uint64), &wire.Sum{Kind: wire.Sum_SHAMIR_SHARE, X: 3, Values: []uint64{1, 1}}))
	if st := fresh.Stats(); st.Malformed != 3 || st.NonParticipant != 1 {
		t.Fatalf("garbage stats %+v", st)
	}
}

func TestParamsAndBudget(t *testing.T) {
	p := DefaultParams()
	p.Threshold = 40
	if err := p.Validate(); err == nil {
		t.Fatal("t > c accepted")
	}
	w := &manual{}
	p = DefaultParams()
	p.Bound = 1e12 // cannot be summed at 2^24 by 10 parties
	c := NewCoordinator(w.env("user", 1), p)
	if err := c.Sum(Request{Header: hdr, Purpose: "x", Roster: []protocol.PeerID{"a", "b", "c"}, Length: 1}, func([]float64, int, error) {}); err == nil {
		t.Fatal("sum beyond the bit budget started")
	}
	rp := DefaultParams()
	rp.Method = Ring
	party := NewParty(w.env("a", 1), rp)
	start := &wire.SumStart{Purpose: "x", Method: Ring, Length: 1}
	if err := party.Begin(hdr, start, []protocol.PeerID{"a", "b", "c"}, nil, "user", []float64{4}); err == nil {
		t.Fatal("value above the bound (3 parties) accepted")
	}
}

func TestCommitteeDeterministic(t *testing.T) {
	var parts []protocol.PeerID
	for i := 0; i < 100; i++ {
		parts = append(parts, protocol.PeerID(fmt.Sprintf("p%03d", i)))
	}
	k0, k1 := keyOf(hdr, "err", 0), keyOf(hdr, "err", 1)
	a := committee(parts, 32, []byte("beacon"), k0)
	b := committee(parts, 32, []byte("beacon"), k0)
	d := committee(parts, 32, []byte("other"), k0)
	if len(a) != 32 || fmt.Sprint(a) != fmt.Sprint(b) || fmt.Sprint(a) == fmt.Sprint(d) {
		t.Fatal("committee not a deterministic function of the beacon")
	}
	// The coordinator picks instance numbers: they must not move the
	// committee (no grinding). A re-formed instance has other participants
	// and so another committee; another purpose another too.
	if c := committee(parts, 32, []byte("beacon"), k1); fmt.Sprint(a) != fmt.Sprint(c) {
		t.Fatal("the instance number changed the committee")
	}
	if e := committee(parts[1:], 32, []byte("beacon"), k1); fmt.Sprint(a) == fmt.Sprint(e) {
		t.Fatal("a re-formed instance without one participant kept the committee")
	}
	// Another round or attempt of the same purpose over the same
	// participants keeps it (the connections of the first sum carry every
	// later one); another session draws another.
	h2 := &wire.Header{Version: wire.Version, Session: hdr.GetSession(), Round: hdr.GetRound() + 3, Attempt: hdr.GetAttempt() + 1}
	if f := committee(parts, 32, []byte("beacon"), keyOf(h2, "err", 0)); fmt.Sprint(a) != fmt.Sprint(f) {
		t.Fatal("another round and attempt changed the committee")
	}
	h3 := &wire.Header{Version: wire.Version, Session: hdr.GetSession() + "x", Round: hdr.GetRound()}
	if f := committee(parts, 32, []byte("beacon"), keyOf(h3, "err", 0)); fmt.Sprint(a) == fmt.Sprint(f) {
		t.Fatal("another session kept the committee")
	}
	if g := committee(parts, 32, []byte("beacon"), keyOf(hdr, "share", 0)); fmt.Sprint(a) == fmt.Sprint(g) {
		t.Fatal("another purpose kept the committee")
	}
	if len(committee(parts[:10], 32, nil, k0)) != 10 {
		t.Fatal("small rosters must use everyone")
	}
}

// Configuration files write durations as strings; unset fields keep their
// defaults, and a bad value names the field.
func TestParamsJSON(t *testing.T) {
	p := DefaultParams()
	if err := json.Unmarshal([]byte(`{"method": "ring", "timeout": "2s"}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.Method != Ring || p.Timeout != 2*time.Second || p.PingTimeout != DefaultParams().PingTimeout || p.Committee != 32 {
		t.Fatalf("decoded %+v", p)
	}
	b, err := json.Marshal(p)
	if err != nil || !strings.Contains(string(b), `"timeout":"2s"`) {
		t.Fatalf("encoded %s, %v", b, err)
	}
	var q Params
	if err := json.Unmarshal(b, &q); err != nil || q != p {
		t.Fatalf("round trip %+v, %v", q, err)
	}
	if err := json.Unmarshal([]byte(`{"timeout": 5000000000}`), &p); err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("integer duration: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"ping_timeout": "soon"}`), &p); err == nil || !strings.Contains(err.Error(), "sum.ping_timeout") {
		t.Fatalf("bad duration: %v", err)
	}
}

// A SumStart names its excluded members as indices when that is shorter
// than the bitmap (a few silent owners of 10^5: bytes, not 12.5 KB on each
// of 10^5 streams), and parties read either encoding back to the same set.
func TestExcludedEncodings(t *testing.T) {
	for _, c := range []struct {
		n       int
		out     []int
		indices bool
	}{
		{100000, []int{0, 17, 99999}, true},
		{16, []int{1, 2, 3, 5, 8, 13}, false},
		{20, []int{19}, true}, // 1 byte against 3
	} {
		excl := newBitmap(c.n)
		for _, i := range c.out {
			setBit(excl, i)
		}
		start := &wire.SumStart{Purpose: "err", Method: Shamir, Length: 2}
		setExcluded(start, excl, c.n)
		if got := len(start.GetExcludedIndex()) > 0; got != c.indices || (got && len(start.GetExcluded()) > 0) {
			t.Fatalf("n=%d, %d out: indices %v, bitmap %d bytes; want indices %v", c.n, len(c.out), start.GetExcludedIndex(), len(start.GetExcluded()), c.indices)
		}
		back, err := Excluded(start, c.n)
		if err != nil || string(back) != string(excl) {
			t.Fatalf("n=%d: read back %v, %v", c.n, back, err)
		}
		if b, _ := wire.Marshal(&wire.Envelope{Header: hdr, Body: &wire.Envelope_SumStart{SumStart: start}}, wire.MaxSumFrameBytes); c.n == 100000 && len(b) > 64 {
			t.Fatalf("SumStart excluding 3 of 10^5 is %d bytes", len(b))
		}
	}
	for name, s := range map[string]*wire.SumStart{
		"both":          {Excluded: []byte{1, 0}, ExcludedIndex: []uint32{0}},
		"not ascending": {ExcludedIndex: []uint32{3, 3}},
		"out of range":  {ExcludedIndex: []uint32{16}},
		"bad bitmap":    {Excluded: []byte{1}},
	} {
		if _, err := Excluded(s, 16); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want malformed", name, err)
		}
	}
}
