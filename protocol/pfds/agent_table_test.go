package pfds

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
)

// The agent's transition table in the drand style: from a named state, one
// input, to the next state, the effects and the refusal (an error, the
// state unchanged). Every row starts from a fresh agent brought to its
// state by the same inputs, so a row reads on its own.

// tableAgent is alice (or bob) with fixed data and noise, whatever the test.
func tableAgent(t *testing.T, id protocol.PeerID, budget float64) *Agent {
	t.Helper()
	a, err := NewAgent(Config{ID: id, Announcer: announcer, Domain: testDomain(), Schema: "digest",
		Data: testLocal("table" + string(id)), Ledger: protocol.NewMemLedger(budget), Rand: rng.ForName("table" + string(id))})
	if err != nil {
		t.Fatal(err)
	}
	return a
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
	case engine.Notify:
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
		err     error
	}{
		{name: "announcement", from: StateIdle, in: msg(announcer, ann), to: StateTrees,
			effects: []string{"publish tree by alice", "set trees 1s", "set retry 250ms"}},
		{name: "announcement by another peer", from: StateIdle,
			in: msg(mallory, EncodeAnnounce(mallory, &Announce{Session: "s1", Params: testParams(), SchemaDigest: "digest", Roster: []protocol.PeerID{alice}})),
			to: StateIdle, err: ErrNotAnnouncer},
		{name: "refused: not in the roster", from: StateIdle, in: msg(announcer, announcement(bob)), to: StateFailed,
			effects: []string{"notify aborted"}},
		{name: "refused: the ledger cannot pay", from: StateIdle, budget: 0.5, in: msg(announcer, ann), to: StateFailed,
			effects: []string{"notify aborted"}},
		{name: "tree before the announcement", from: StateIdle, in: msg(bob, treeB), to: StateIdle, err: ErrWrongSession},
		{name: "garbage", from: StateTrees, in: msg(bob, []byte{1, 2, 3}), to: StateTrees, err: ErrMalformed},
		{name: "other topic", from: StateTrees, in: engine.Message{From: bob, Topic: "elsewhere", Data: treeB}, to: StateTrees, err: ErrOtherTopic},
		{name: "spoofed tree", from: StateTrees, in: msg(mallory, treeB), to: StateTrees, err: ErrSpoofed},
		{name: "tree from outside the roster", from: StateTrees, in: msg(mallory, foreignTree), to: StateTrees, err: ErrNotInRoster},
		{name: "last tree", from: StateTrees, in: msg(bob, treeB), to: StateData,
			effects: []string{"publish data by alice", "set data 1s"}},
		{name: "early data share kept", from: StateTrees, in: msg(bob, dataB), to: StateTrees, effects: []string{}},
		{name: "stale data timer", from: StateTrees, in: engine.TimerFired{Name: TimerData}, to: StateTrees, effects: []string{}},
		{name: "tree timeout", from: StateTrees, in: engine.TimerFired{Name: TimerTrees}, to: StateData,
			effects: []string{"publish data by alice", "set data 1s"}},
		{name: "retry in the trees phase", from: StateTrees, in: engine.TimerFired{Name: TimerRetry}, to: StateTrees,
			effects: []string{"publish tree by alice", "set retry 250ms"}},
		{name: "duplicate tree", from: StateData, in: msg(bob, treeB), to: StateData, err: ErrDuplicate},
		{name: "last data share", from: StateData, in: msg(bob, dataB), to: StateDone, effects: []string{"notify final"}},
		{name: "data timeout", from: StateData, in: engine.TimerFired{Name: TimerData}, to: StateDone, effects: []string{"notify final"}},
		{name: "duplicate data share", from: StateDone, in: msg(bob, dataB), to: StateDone, err: ErrDuplicate},
		{name: "retry after the end", from: StateDone, in: engine.TimerFired{Name: TimerRetry}, to: StateDone,
			effects: []string{"publish tree by alice", "publish data by alice", "set retry 250ms"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			budget := r.budget
			if budget == 0 {
				budget = 10
			}
			a := tableAgent(t, alice, budget)
			for i, in := range states[r.from] {
				if _, err := engine.Step(a, time.Time{}, in); err != nil {
					t.Fatalf("reaching %s, input %d: %v", r.from, i, err)
				}
			}
			if a.State() != r.from {
				t.Fatalf("setup reached %s, want %s", a.State(), r.from)
			}
			effs, err := engine.Step(a, time.Time{}, r.in)
			if !errors.Is(err, r.err) || (err != nil) != (r.err != nil) {
				t.Fatalf("error %v, want %v", err, r.err)
			}
			if a.State() != r.to {
				t.Errorf("state %s, want %s", a.State(), r.to)
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
