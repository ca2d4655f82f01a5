package pfds

import (
	"errors"
	"testing"
	"time"

	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/release"

	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
)

// Named actors.
const (
	alice     protocol.PeerID = "alice"
	bob       protocol.PeerID = "bob"
	announcer protocol.PeerID = "announcer"
	mallory   protocol.PeerID = "mallory"
)

func testDomain() *bp.Domain {
	return &bp.Domain{Dim: 2, Classes: 2, Attrs: []bp.Attribute{{Name: "x0", Offset: 0}, {Name: "x1", Offset: 1}}}
}

func testLocal(seed string) bp.Local {
	r := rng.ForName(seed)
	var l bp.Local
	for i := 0; i < 100; i++ {
		x := []float64{2*r.Float64() - 1, 2*r.Float64() - 1}
		y := 0
		if x[0] > 0 {
			y = 1
		}
		l.X, l.Y = append(l.X, x), append(l.Y, y)
	}
	return l
}

func testParams() bp.Params {
	p := bp.DefaultParams()
	p.HMax = 3
	return p
}

func newTestAgent(t *testing.T, id protocol.PeerID, led protocol.Ledger) *Agent {
	t.Helper()
	a, err := NewAgent(Config{ID: id, Announcer: announcer, Domain: testDomain(), Schema: "digest",
		Data: testLocal(t.Name() + string(id)), Ledger: led, Rand: rng.ForName(t.Name() + string(id))})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func announcement(roster ...protocol.PeerID) []byte {
	return EncodeAnnounce(announcer, &Announce{Session: "s1", Params: testParams(), Learner: bp.LogReg,
		SchemaDigest: "digest", Roster: roster, TreeTimeout: 1000, DataTimeout: 1000})
}

func publishes(effs []engine.Effect) (n int, last []byte) {
	for _, e := range effs {
		if p, ok := e.(engine.Publish); ok {
			n++
			last = p.Data
		}
	}
	return n, last
}

// handle feeds one message on the topic to a, as its driver would, and
// returns the effects (a refusal's error is in a.Dropped).
func handle(a *Agent, from protocol.PeerID, data []byte) []engine.Effect {
	effs, _ := engine.Step(a, time.Time{}, engine.Message{From: from, Topic: Topic, Data: data})
	return effs
}

// fire expires a's timer name.
func fire(a *Agent, name string) []engine.Effect {
	effs, err := engine.Step(a, time.Time{}, engine.TimerFired{Name: name})
	if err != nil {
		panic(err)
	}
	return effs
}

func TestAgentRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ledger *protocol.MemLedger
		msg    []byte
	}{
		{"budget", protocol.NewMemLedger(0.5), announcement(alice, bob)},
		{"not in roster", protocol.NewMemLedger(10), announcement(bob)},
		{"schema", protocol.NewMemLedger(10), EncodeAnnounce(announcer, &Announce{Session: "s1", Params: testParams(),
			SchemaDigest: "other", Roster: []protocol.PeerID{alice}, TreeTimeout: 1, DataTimeout: 1})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAgent(t, alice, tc.ledger)
			acts := handle(a, announcer, tc.msg)
			if n, _ := publishes(acts); n != 0 || a.State() != StateFailed {
				t.Errorf("state %s, %d publications; want failed and silent", a.State(), n)
			}
			if tc.name != "budget" && tc.ledger.Spent() != 0 {
				t.Errorf("ledger spent %v on a refused session", tc.ledger.Spent())
			}
			if o := a.Outcome(); !a.Refused || o.Kind != protocol.OutcomeFailed {
				t.Errorf("refused %v, outcome %q", a.Refused, o)
			}
		})
	}
}

func TestAgentFlow(t *testing.T) {
	led := protocol.NewMemLedger(10)
	a := newTestAgent(t, alice, led)
	b := newTestAgent(t, bob, protocol.NewMemLedger(10))
	ann := announcement(alice, bob)
	// Only the announcer may announce.
	if acts := handle(a, mallory, EncodeAnnounce(mallory, &Announce{Session: "s1", Params: testParams(), SchemaDigest: "digest",
		Roster: []protocol.PeerID{alice}})); len(acts) != 0 || a.State() != StateIdle || a.Dropped.Get("not announcer") != 1 {
		t.Fatalf("foreign announcement: state %s dropped %v", a.State(), a.Dropped.String())
	}
	actsA := handle(a, announcer, ann)
	if n, _ := publishes(actsA); n != 1 || a.State() != StateTrees {
		t.Fatalf("after announce: state %s, %d publications", a.State(), n)
	}
	// The ledger holds the full epsilon once the tree is out.
	// (AgentRelease: Eps less the geometric mechanism's rounding.)
	if eps := testParams().Eps; led.Spent() > eps || led.Spent() < eps*(1-1e-9) {
		t.Errorf("spent %v, want %v", led.Spent(), eps)
	}
	_, treeA := publishes(actsA)
	_, treeB := publishes(handle(b, announcer, ann))
	// Bob gets alice's tree: both trees in, bob shares data.
	actsB := handle(b, alice, treeA)
	n, dataB := publishes(actsB)
	if n != 1 || b.State() != StateData {
		t.Fatalf("bob after trees: %s, %d publications", b.State(), n)
	}
	// Alice receives bob's data BEFORE bob's tree: kept, expanded later.
	if acts := handle(a, bob, dataB); len(acts) != 0 || a.State() != StateTrees {
		t.Fatalf("early data: %s", a.State())
	}
	// Stale timer of another state does nothing.
	if acts := fire(a, TimerData); acts != nil || a.State() != StateTrees {
		t.Fatal("stale timer acted")
	}
	actsA = handle(a, bob, treeB)
	n, dataA := publishes(actsA)
	if n != 1 || a.State() != StateDone {
		t.Fatalf("alice after bob's tree: %s, %d publications", a.State(), n)
	}
	if got := len(a.Shares()); got != 2 {
		t.Fatalf("alice has %d shares", got)
	}
	// Duplicates, garbage and spoofs are dropped and counted.
	handle(a, bob, treeB)
	handle(a, bob, dataB)
	handle(a, bob, []byte{1, 2, 3})
	handle(a, mallory, treeB)
	if a.Dropped.Get("duplicate") != 2 || a.Dropped.Get("malformed") != 1 || a.Dropped.Get("spoofed") != 1 {
		t.Errorf("dropped %v", a.Dropped.String())
	}
	if v := a.Validate(mallory, treeB); v != protocol.Reject {
		t.Errorf("spoofed tree: verdict %v", v)
	}
	if v := a.Validate(bob, treeB); v != protocol.Ignore {
		t.Errorf("duplicate tree: verdict %v", v)
	}
	handle(b, alice, dataA)
	if b.State() != StateDone {
		t.Fatalf("bob: %s", b.State())
	}
	if _, err := b.Train(1e-3); err != nil {
		t.Fatal(err)
	}
}

func TestAgentTreeTimeout(t *testing.T) {
	a := newTestAgent(t, alice, protocol.NewMemLedger(10))
	handle(a, announcer, announcement(alice, bob))
	acts := fire(a, TimerTrees)
	if n, _ := publishes(acts); n != 1 || a.State() != StateData {
		t.Fatalf("after tree timeout: %s, %d publications", a.State(), n)
	}
	fire(a, TimerData)
	if a.State() != StateDone || len(a.Shares()) != 1 {
		t.Fatalf("after data timeout: %s with %d shares", a.State(), len(a.Shares()))
	}
}

func FuzzHandle(f *testing.F) {
	f.Add(announcement(alice, bob))
	tr := bp.MakeTree(testDomain(), testLocal("f").X, testLocal("f").Y, testParams(), rng.Seeded(1))
	f.Add(EncodeTree(Header{Session: "s1", Author: bob}, bp.AppendTree(nil, tr, testDomain()), nil))
	f.Add(EncodeData(Header{Session: "s1", Author: bob}, &bp.DataShare{Counts: []int{1, 0, 2}, Seed: 9, Labels: []int{0, 1, 1}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := NewAgent(Config{ID: alice, Announcer: announcer, Domain: testDomain(), Schema: "digest",
			Data: testLocal("f"), Ledger: protocol.NewMemLedger(10), Rand: rng.Seeded(2)})
		if err != nil {
			t.Fatal(err)
		}
		a.Validate(bob, b)
		handle(a, bob, b)
		handle(a, announcer, announcement(alice, bob))
		a.Validate(bob, b)
		handle(a, bob, b)
		DecodeAnnounce(b)
		DecodeDataShare(b, 2)
	})
}

func TestAgentRetry(t *testing.T) {
	a := newTestAgent(t, alice, protocol.NewMemLedger(10))
	if fire(a, TimerRetry) != nil {
		t.Fatal("idle agent retried")
	}
	handle(a, announcer, announcement(alice, bob))
	if n, _ := publishes(fire(a, TimerRetry)); n != 1 {
		t.Fatalf("trees phase: %d re-publications, want the tree", n)
	}
	fire(a, TimerTrees)
	total := 1
	for {
		acts := fire(a, TimerRetry)
		if acts == nil {
			break
		}
		n, _ := publishes(acts)
		if n != 2 {
			t.Fatalf("data phase: %d re-publications, want tree and data", n)
		}
		total++
	}
	if total != 2*retryParts {
		t.Errorf("%d retries, want %d", total, 2*retryParts)
	}
}

// An agent's charge is computed from its mechanisms (AgentRelease): HMax-1
// exponential split levels, the leaf counts and P-1 count levels add up to
// Params.Eps (Thm 3.3), less the geometric mechanism's rounding; a tree
// with more levels than the budget was split for would be charged more.
func TestAgentReleaseChargesItsMechanisms(t *testing.T) {
	for _, p := range []bp.Params{bp.DefaultParams(), {Eps: 4, HMax: 3, T: 10, P: 2}, {Eps: 0.5, HMax: 8, T: 10, P: 9}} {
		m, err := AgentRelease(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Epsilon(); got > p.Eps || got < p.Eps*(1-1e-9) {
			t.Errorf("%+v: charged %v, want %v", p, got, p.Eps)
		}
	}
	bad := bp.DefaultParams()
	m, _ := AgentRelease(bad)
	more := append(m.(release.Sequential), release.Exponential{Coefficient: bad.TreeEps() / 2, Sensitivity: 1})
	if more.Epsilon() <= bad.Eps {
		t.Fatalf("an extra split level is not charged: %v", more.Epsilon())
	}
}

// An agent whose roster partner never shares ends partial after the data
// timeout (it trains on what arrived); with the partner's shares it ends
// complete (the control).
func TestAgentOutcome(t *testing.T) {
	a := newTestAgent(t, alice, protocol.NewMemLedger(10))
	if o := a.Outcome(); o.Kind != 0 {
		t.Fatalf("outcome %q before the session", o)
	}
	handle(a, announcer, announcement(alice, bob))
	fire(a, TimerTrees) // bob's tree never came
	fire(a, TimerData)
	if o := a.Outcome(); o.Kind != protocol.OutcomePartial || o.String() != "partial: 1 of 2 shares (the data timeout fired with the shares of 1 of 2 roster agents)" {
		t.Fatalf("outcome %q", o)
	}
	if a.Refused {
		t.Fatal("a partial session counted as a refusal")
	}

	a = newTestAgent(t, alice, protocol.NewMemLedger(10))
	b := newTestAgent(t, bob, protocol.NewMemLedger(10))
	ann := announcement(alice, bob)
	actsA, actsB := handle(a, announcer, ann), handle(b, announcer, ann)
	// Each agent's publications reach the other, in rounds.
	for i := 0; i < 4 && (a.State() != StateDone || b.State() != StateDone); i++ {
		nextA, nextB := []engine.Effect{}, []engine.Effect{}
		for _, x := range actsA {
			if p, ok := x.(engine.Publish); ok {
				nextB = append(nextB, handle(b, alice, p.Data)...)
			}
		}
		for _, x := range actsB {
			if p, ok := x.(engine.Publish); ok {
				nextA = append(nextA, handle(a, bob, p.Data)...)
			}
		}
		actsA, actsB = nextA, nextB
	}
	if o := a.Outcome(); o.String() != "complete: 2 of 2 shares" {
		t.Fatalf("with both agents' shares: outcome %q (state %s)", o, a.State())
	}
}

// In a PFDS-cv session an agent charges VariantRelease's epsilon before its
// tree (with the counts) leaves, and drops a data share whose leaf sizes
// are not the ones its author's published counts give (share mismatch);
// the author's true share is then taken.
func TestAgentVariantShares(t *testing.T) {
	v := bp.VariantParams{Eps: 1, HMax: 3, MaxLeaves: 16, Threshold: -1, Sample: false}
	ann := EncodeAnnounce(announcer, &Announce{Session: "s1", CV: &v, Learner: bp.LogReg, SchemaDigest: "digest",
		Roster: []protocol.PeerID{alice, bob}, TreeTimeout: 1000, DataTimeout: 1000})
	led := protocol.NewMemLedger(10)
	a := newTestAgent(t, alice, led)
	b := newTestAgent(t, bob, protocol.NewMemLedger(10))
	n, aTree := publishes(handle(a, announcer, ann))
	if n != 1 {
		t.Fatalf("alice published %d messages, want her tree", n)
	}
	want, _ := VariantRelease(v)
	if got := led.Spent(); got != want.Epsilon() {
		t.Fatalf("alice spent %v before her tree left, want %v", got, want.Epsilon())
	}
	_, bTree := publishes(handle(b, announcer, ann))
	handle(a, bob, bTree)
	effs := handle(b, alice, aTree)
	_, bData := publishes(effs)
	if bData == nil || a.State() != StateData {
		t.Fatalf("bob shared no data, or alice in %s", a.State())
	}
	_, d, err := DecodeDataShare(bData, 2)
	if err != nil {
		t.Fatal(err)
	}
	forged := *d
	forged.Counts = append([]int(nil), d.Counts...)
	forged.Labels = append(append([]int(nil), d.Labels...), 0)
	forged.Counts[0]++ // one more record in leaf 0 than bob's counts give
	handle(a, bob, EncodeData(Header{Session: "s1", Author: bob}, &forged))
	if a.Dropped.Get("share mismatch") != 1 || a.State() != StateData {
		t.Fatalf("forged sizes: dropped %s, state %s", a.Dropped.String(), a.State())
	}
	handle(a, bob, bData)
	if a.State() != StateDone || len(a.Shares()) != 2 {
		t.Fatalf("after bob's true share: %s with %d shares (dropped %s)", a.State(), len(a.Shares()), a.Dropped.String())
	}
}

// An agent with an allow list (Config.Admit) refuses a roster that names
// a peer it does not admit, before anything is charged or published.
func TestAgentRefusesUnadmittedRoster(t *testing.T) {
	led := protocol.NewMemLedger(10)
	a, err := NewAgent(Config{ID: alice, Announcer: announcer, Domain: testDomain(), Schema: "digest", Data: testLocal("admit"),
		Ledger: led, Rand: rng.ForName("admit"), Admit: func(p protocol.PeerID) bool { return p != mallory }})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := publishes(handle(a, announcer, announcement(alice, mallory))); n != 0 || a.State() != StateFailed || !a.Refused ||
		!errors.Is(a.Err, ErrNotAdmitted) || led.Spent() != 0 {
		t.Fatalf("published %d, state %s, refused %v, err %v, spent %v", n, a.State(), a.Refused, a.Err, led.Spent())
	}
}
