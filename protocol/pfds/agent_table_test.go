package pfds

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/lifecycle"
)

// The agent's transition table in the drand style: from a named state, one
// input, to the next state (and its lifecycle phase), the effects, whether
// the ledger was charged, and the refusal (an error, the state unchanged).
// Every row starts from a fresh agent brought to its state by the same
// inputs, so a row reads on its own; after every row the phase change it
// caused must be one lifecycle allows (CanGo).

// tableAgent is alice (or bob) with fixed data and noise, whatever the test.
func tableAgent(t *testing.T, id protocol.PeerID, budget float64) *Agent {
	t.Helper()
	a, _ := tableAgentLedger(t, id, budget)
	return a
}

func tableAgentLedger(t *testing.T, id protocol.PeerID, budget float64) (*Agent, *protocol.MemLedger) {
	t.Helper()
	led := protocol.NewMemLedger(budget)
	a, err := NewAgent(Config{ID: id, Announcer: announcer, Domain: testDomain(), Schema: "digest",
		Data: testLocal("table" + string(id)), Ledger: led, Rand: rng.ForName("table" + string(id))})
	if err != nil {
		t.Fatal(err)
	}
	return a, led
}

// shape names an effect without its bytes: a publication by the kind of
// message it carries, a timer by name and duration.
func shape(e engine.Effect) string {
	switch e := e.(type) {
	case engine.Publish:
		h, err := DecodeHeader(e.Data)
		if err != nil || e.Topic != Topic {
			return fmt.Sprintf("publish garbage on %s", e.Topic)
		}
		return fmt.Sprintf("publish %s by %s", map[byte]string{KindAnnounce: "announcement", KindTree: "tree", KindData: "data"}[h.Kind], h.Author)
	case engine.SetTimer:
		return fmt.Sprintf("set %s %s", e.Name, e.After)
	case engine.CancelTimer:
		return "cancel " + e.Name
	case engine.Notify:
		if o, ok := e.Value.(protocol.Outcome); ok {
			return fmt.Sprintf("notify %s: %s", e.Event, o)
		}
		return "notify " + e.Event.String()
	}
	return fmt.Sprintf("%T", e)
}

func shapes(effs []engine.Effect) []string {
	out := []string{}
	for _, e := range effs {
		out = append(out, shape(e))
	}
	return out
}

func msg(from protocol.PeerID, data []byte) engine.Input {
	return engine.Message{From: from, Topic: Topic, Data: data}
}

func TestAgentTransitions(t *testing.T) {
	ann := announcement(alice, bob) // tree and data timeouts 1 s: retries every 250 ms
	// Bob's messages, from bob's own agent.
	b := tableAgent(t, bob, 10)
	_, treeB := publishes(handle(b, announcer, ann))
	// Bob's data share needs some tree of alice's (the votes are not
	// checked by alice; the share's fit to bob's tree is).
	_, treeA := publishes(handle(tableAgent(t, alice, 10), announcer, ann))
	_, dataB := publishes(handle(b, alice, treeA))
	if treeB == nil || dataB == nil {
		t.Fatal("bob made no tree or data share")
	}
	// A well-formed tree of the session by a peer outside alice's roster.
	_, foreignTree := publishes(handle(tableAgent(t, mallory, 10), announcer, announcement(alice, bob, mallory)))
	// Bob's tree under another session, and cut short.
	hB, tB, err := DecodeTreeShare(treeB, testDomain(), testParams().HMax, testParams().MaxLeaves)
	if err != nil {
		t.Fatal(err)
	}
	otherSession := EncodeTree(Header{Session: "s2", Author: bob}, bp.AppendTree(nil, tB, testDomain()), nil)
	truncated := treeB[:len(treeB)-3]
	// Bob's data share with one leaf count too many: it does not fit his tree.
	_, dB, err := DecodeDataShare(dataB, testDomain().Classes)
	if err != nil {
		t.Fatal(err)
	}
	misfit := *dB
	misfit.Counts = append(append([]int(nil), dB.Counts...), 0)
	misfitB := EncodeData(hB, &misfit)

	// The states, each reached from idle by the inputs listed.
	states := map[State][]engine.Input{
		StateIdle:  nil,
		StateTrees: {msg(announcer, ann)},
		StateData:  {msg(announcer, ann), msg(bob, treeB)},
		StateDone:  {msg(announcer, ann), msg(bob, treeB), msg(bob, dataB)},
	}
	rows := []struct {
		name    string
		from    State
		budget  float64 // alice's ledger (10 if 0)
		in      engine.Input
		to      State
		effects []string
		charges bool   // the row charges alice's ledger (the release gate)
		drop    string // the Dropped reason the row counts ("": none)
		err     error
	}{
		{name: "announcement", from: StateIdle, in: msg(announcer, ann), to: StateTrees, charges: true,
			effects: []string{"notify report", "publish tree by alice", "set trees 1s", "set retry 250ms"}},
		{name: "announcement by another peer", from: StateIdle,
			in: msg(mallory, EncodeAnnounce(mallory, &Announce{Session: "s1", Params: testParams(), SchemaDigest: "digest", Roster: []protocol.PeerID{alice}})),
			to: StateIdle, drop: "not announcer", err: ErrNotAnnouncer},
		{name: "refused: not in the roster", from: StateIdle, in: msg(announcer, announcement(bob)), to: StateFailed,
			effects: []string{"cancel idle", "cancel step", "notify aborted: failed: 0 of 1 shares (pfds: author not in the roster: alice)"}},
		{name: "refused: another schema", from: StateIdle,
			in: msg(announcer, EncodeAnnounce(announcer, &Announce{Session: "s1", Params: testParams(), SchemaDigest: "other",
				Roster: []protocol.PeerID{alice, bob}, TreeTimeout: 1000, DataTimeout: 1000})), to: StateFailed,
			effects: []string{"cancel idle", "cancel step", "notify aborted: failed: 0 of 2 shares (pfds: schema digest differs from ours: announced other, ours digest)"}},
		{name: "refused: the ledger cannot pay", from: StateIdle, budget: 0.5, in: msg(announcer, ann), to: StateFailed,
			effects: []string{"cancel idle", "cancel step", "notify aborted: failed: 0 of 2 shares (ledger: spend 1 with 0 of 0.5 spent: privacy budget exceeded)"}},
		{name: "second announcement", from: StateTrees, in: msg(announcer, ann), to: StateTrees, drop: "duplicate", err: ErrDuplicate},
		{name: "tree before the announcement", from: StateIdle, in: msg(bob, treeB), to: StateIdle, drop: "no session", err: ErrWrongSession},
		{name: "garbage", from: StateTrees, in: msg(bob, []byte{1, 2, 3}), to: StateTrees, drop: "malformed", err: ErrMalformed},
		{name: "other topic", from: StateTrees, in: engine.Message{From: bob, Topic: "elsewhere", Data: treeB}, to: StateTrees, err: ErrOtherTopic},
		{name: "spoofed tree", from: StateTrees, in: msg(mallory, treeB), to: StateTrees, drop: "spoofed", err: ErrSpoofed},
		{name: "tree from outside the roster", from: StateTrees, in: msg(mallory, foreignTree), to: StateTrees, drop: "not in roster", err: ErrNotInRoster},
		{name: "tree of another session", from: StateTrees, in: msg(bob, otherSession), to: StateTrees, drop: "wrong session", err: ErrWrongSession},
		{name: "truncated tree", from: StateTrees, in: msg(bob, truncated), to: StateTrees, drop: "malformed", err: ErrMalformed},
		{name: "last tree", from: StateTrees, in: msg(bob, treeB), to: StateData,
			effects: []string{"publish data by alice", "set data 1s"}},
		{name: "early data share kept", from: StateTrees, in: msg(bob, dataB), to: StateTrees, effects: []string{}},
		{name: "stale data timer", from: StateTrees, in: engine.TimerFired{Name: TimerData}, to: StateTrees, effects: []string{}},
		{name: "tree timeout", from: StateTrees, in: engine.TimerFired{Name: TimerTrees}, to: StateData,
			effects: []string{"publish data by alice", "set data 1s"}},
		{name: "retry in the trees phase", from: StateTrees, in: engine.TimerFired{Name: TimerRetry}, to: StateTrees,
			effects: []string{"publish tree by alice", "set retry 250ms"}},
		{name: "duplicate tree", from: StateData, in: msg(bob, treeB), to: StateData, drop: "duplicate", err: ErrDuplicate},
		{name: "data share that does not fit the author's tree", from: StateData, in: msg(bob, misfitB), to: StateData, drop: "share mismatch", err: ErrShareMismatch},
		{name: "last data share", from: StateData, in: msg(bob, dataB), to: StateDone,
			effects: []string{"cancel idle", "cancel step", "notify final: complete: 2 of 2 shares"}},
		{name: "data timeout", from: StateData, in: engine.TimerFired{Name: TimerData}, to: StateDone,
			effects: []string{"cancel idle", "cancel step", "notify final: partial: 1 of 2 shares (the data timeout fired with the shares of 1 of 2 roster agents)"}},
		{name: "unknown timer", from: StateData, in: engine.TimerFired{Name: "bogus"}, to: StateData, err: errUnknownTimer},
		{name: "duplicate data share", from: StateDone, in: msg(bob, dataB), to: StateDone, drop: "duplicate", err: ErrDuplicate},
		{name: "retry after the end", from: StateDone, in: engine.TimerFired{Name: TimerRetry}, to: StateDone,
			effects: []string{"publish tree by alice", "publish data by alice", "set retry 250ms"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			budget := r.budget
			if budget == 0 {
				budget = 10
			}
			a, led := tableAgentLedger(t, alice, budget)
			for i, in := range states[r.from] {
				if _, err := engine.Step(a, time.Time{}, in); err != nil {
					t.Fatalf("reaching %s, input %d: %v", r.from, i, err)
				}
				checkMoves(t, fmt.Sprintf("reaching %s, input %d", r.from, i), a.Moves())
			}
			if a.State() != r.from || a.Phase() != PhaseOf(r.from) {
				t.Fatalf("setup reached %s (%s), want %s (%s)", a.State(), a.Phase(), r.from, PhaseOf(r.from))
			}
			spent, drops := led.Spent(), a.Dropped.Snapshot()
			effs, err := engine.Step(a, time.Time{}, r.in)
			if !errors.Is(err, r.err) || (err != nil) != (r.err != nil) {
				t.Fatalf("error %v, want %v", err, r.err)
			}
			if a.State() != r.to {
				t.Errorf("state %s, want %s", a.State(), r.to)
			}
			if after := a.Phase(); after != PhaseOf(r.to) {
				t.Errorf("phase %s, want %s", after, PhaseOf(r.to))
			}
			checkMoves(t, "the row's input", a.Moves())
			if got := a.Dropped.Snapshot(); r.drop != "" && got[r.drop] != drops[r.drop]+1 || r.drop == "" && !reflect.DeepEqual(got, drops) {
				t.Errorf("dropped %v → %v, want one more %q", drops, got, r.drop)
			}
			if charged := led.Spent() > spent; charged != r.charges {
				t.Errorf("ledger spent %v → %v, want a charge: %v", spent, led.Spent(), r.charges)
			}
			if r.err != nil {
				if len(effs) != 0 {
					t.Errorf("a refused input had effects %v", shapes(effs))
				}
				return
			}
			if got := shapes(effs); !reflect.DeepEqual(got, r.effects) {
				t.Errorf("effects %q, want %q", got, r.effects)
			}
		})
	}
}

// checkMoves fails when a transition made a phase move lifecycle forbids.
func checkMoves(t *testing.T, what string, m []lifecycle.Phase) {
	t.Helper()
	for i := 1; i < len(m); i++ {
		if !m[i-1].CanGo(m[i]) {
			t.Errorf("%s: phase %s → %s is not a valid move (moves %v)", what, m[i-1], m[i], m)
		}
	}
}
