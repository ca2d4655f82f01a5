package fedboost

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/lifecycle"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// The data user's transition table (smaller than the owner's: its inputs
// are its start, its timers and the sum traffic its coordinators judge):
// from a fresh user brought to its state by the setup inputs, one input,
// to the next state and phase, the effects, the drop and the refusal; each
// phase move checked with CanGo.
func TestUserTransitions(t *testing.T) {
	w := newOwnerWorld(t)
	newUser := func(t *testing.T) *User {
		u, err := NewUser(tableUser, nopPoster{}, UserConfig{Public: &w.pub, ClassNames: w.union.Classes, Features: w.union.Features,
			AnnounceDelay: 100 * time.Millisecond, SumRand: rng.ForName("table user"), Clock: handClock(), Log: hclog.NewNullLogger()})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	start := engine.Message{From: tableUser, Protocol: inputStart}
	announced := engine.TimerFired{Name: TimerAnnounce}
	step := engine.TimerFired{Name: lifecycle.TimerStep}
	// Tree 1's root sum: one instance, its timer named under the tree's prefix.
	rootTimer := "tree1/sum/node0/0/1/0"
	share := func(round uint32) engine.Message {
		return w.sumStream(t, OwnerID(1), &wire.Envelope{Header: w.header("s", round), Body: &wire.Envelope_Sum{Sum: &wire.Sum{Kind: wire.Sum_SHAMIR_HOLDING}}})
	}
	// The probe of the committee (the SumStart again, then a report request
	// to each member) waits the RTO of peers never sampled (the ping
	// timeout) plus the processing of one message per dealer.
	sp := w.pub.SumParams(1)
	probe := sp.PingTimeout + time.Duration(len(w.pub.Group(1)))*sp.Processing
	stepFor := max(w.pub.StepTimeout, 2*w.pub.Sum.Cap())
	failed := protocol.Failed(0, 2, OutcomeUnit, fmt.Errorf("%w: tree 1 level 0 did not finish within %v", protocol.ErrSessionFailed, stepFor))
	running := []engine.Input{start, announced}
	ask := func(from protocol.PeerID, session string) engine.Message {
		return w.sumStream(t, from, &wire.Envelope{Header: w.header(session, 0), Body: &wire.Envelope_RosterRequest{RosterRequest: &wire.RosterRequest{Version: 1}}})
	}

	ack := func(from protocol.PeerID, session string) engine.Message {
		return w.sumStream(t, from, &wire.Envelope{Header: w.header(session, 0), Body: &wire.Envelope_RosterAck{RosterAck: &wire.RosterAck{Version: 1}}})
	}
	allButOne := []engine.Input{start}
	for _, p := range w.pub.Roster[1:] {
		allButOne = append(allButOne, ack(p, "s"))
	}
	tree1 := []string{fmt.Sprintf("set step %s", stepFor), fmt.Sprintf("send SumStart ×%d", len(w.pub.Group(1))),
		fmt.Sprintf("set %s %s", rootTimer, w.pub.SumParams(1).Timeout)}

	rows := []struct {
		name    string
		setup   []engine.Input
		in      engine.Input
		state   UserState
		phase   lifecycle.Phase
		effects []string
		drop    string
		err     error
	}{
		{name: "start: announce, wait for gossip", in: start, state: UserIdle, phase: lifecycle.Admitting,
			effects: []string{"publish RosterHead", "send FedConfig ×10", "set announce 100ms"}},
		{name: "a second start", setup: []engine.Input{start}, in: start, state: UserIdle, phase: lifecycle.Admitting, err: errStarted},
		{name: "a start from another peer", in: from(start, OwnerID(1)), state: UserIdle, phase: lifecycle.Idle,
			drop: protocol.ErrUnexpected.Error(), err: protocol.ErrUnexpected},
		{name: "announce timer before the start", in: announced, state: UserIdle, phase: lifecycle.Idle, effects: []string{}},
		{name: "tree 1 starts: its root sum", setup: []engine.Input{start}, in: announced, state: UserLevel, phase: lifecycle.Running,
			effects: []string{fmt.Sprintf("set step %s", stepFor), fmt.Sprintf("send SumStart ×%d", len(w.pub.Group(1))),
				fmt.Sprintf("set %s %s", rootTimer, w.pub.SumParams(1).Timeout)}},
		// The members' configuration acks (cfgtree.go): tree 1 starts when
		// every member holds the configuration.
		{name: "a member holds the configuration: tree 1 waits for the rest", setup: []engine.Input{start}, in: ack(w.pub.Roster[0], "s"),
			state: UserIdle, phase: lifecycle.Admitting, effects: []string{"set announce 100ms"}},
		{name: "the same member's ack again: nothing", setup: []engine.Input{start, ack(w.pub.Roster[0], "s")}, in: ack(w.pub.Roster[0], "s"),
			state: UserIdle, phase: lifecycle.Admitting, effects: []string{}},
		{name: "every member holds the configuration: tree 1 starts at once", setup: allButOne, in: ack(w.pub.Roster[0], "s"),
			state: UserLevel, phase: lifecycle.Running, effects: append([]string{"cancel announce"}, tree1...)},
		{name: "an ack before the start: nothing", in: ack(w.pub.Roster[0], "s"), state: UserIdle, phase: lifecycle.Idle, effects: []string{}},
		{name: "an ack after tree 1 started: nothing", setup: running, in: ack(w.pub.Roster[0], "s"), state: UserLevel, phase: lifecycle.Running,
			effects: []string{}},
		{name: "an ack from an outsider: refused", setup: []engine.Input{start}, in: ack("mallory", "s"), state: UserIdle, phase: lifecycle.Admitting,
			drop: protocol.ErrUnexpected.Error(), err: protocol.ErrUnexpected},
		{name: "an ack of another session: refused", setup: []engine.Input{start}, in: ack(w.pub.Roster[0], "other"), state: UserIdle,
			phase: lifecycle.Admitting, drop: protocol.ErrUnexpected.Error(), err: protocol.ErrUnexpected},
		{name: "announce timer again", setup: running, in: announced, state: UserLevel, phase: lifecycle.Running, effects: []string{}},
		{name: "the root sum's dealing times out: ask the committee what it holds", setup: running,
			in: engine.TimerFired{Name: rootTimer}, state: UserLevel, phase: lifecycle.Running,
			effects: []string{fmt.Sprintf("send SumStart ×%d", len(w.pub.Group(1))), fmt.Sprintf("send SHAMIR_REPORT ×%d", len(w.pub.Group(1))),
				fmt.Sprintf("set %s %s", rootTimer, probe)}},
		{name: "an earlier tree's sum timer", setup: running, in: engine.TimerFired{Name: "tree0/sum/node0/0/0/0"},
			state: UserLevel, phase: lifecycle.Running, effects: []string{}},
		{name: "unknown timer", setup: running, in: engine.TimerFired{Name: "bogus"}, state: UserLevel, phase: lifecycle.Running,
			err: errUnknownTimer},
		{name: "step timeout: Abort (the tree's running sum stops)", setup: running, in: step, state: UserFailed, phase: lifecycle.Aborted,
			effects: []string{"cancel " + rootTimer, "publish Abort", "cancel idle", "cancel step", "notify aborted: " + failed.String()}},
		{name: "a stopped sum's timer after the Abort", setup: []engine.Input{start, announced, step}, in: engine.TimerFired{Name: rootTimer},
			state: UserFailed, phase: lifecycle.Aborted, effects: []string{}},
		{name: "step timer before the trees", setup: []engine.Input{start}, in: step, state: UserIdle, phase: lifecycle.Admitting,
			effects: []string{}},
		{name: "step timer after the Abort", setup: []engine.Input{start, announced, step}, in: step, state: UserFailed,
			phase: lifecycle.Aborted, effects: []string{}},
		{name: "garbage on the sum stream", setup: running, in: engine.Message{From: OwnerID(1), Protocol: wire.ProtoFedShamir, Data: []byte{0xff, 1}},
			state: UserLevel, phase: lifecycle.Running, drop: "malformed", err: wire.ErrMalformed},
		{name: "a sum message of another tree", setup: running, in: share(2), state: UserLevel, phase: lifecycle.Running,
			drop: "sum: late", err: securesum.ErrLate},
		{name: "a sum message before the trees", setup: []engine.Input{start}, in: share(1), state: UserIdle, phase: lifecycle.Admitting,
			drop: "sum: late", err: securesum.ErrLate},
		// An owner whose parent in the configuration tree forwarded nothing
		// asks (cfgtree.go): sent at most maxConfigAsks times per member and
		// announcement.
		{name: "a member asks for the configuration: sent", setup: running, in: ask(OwnerID(1), "s"), state: UserLevel, phase: lifecycle.Running,
			effects: []string{"send FedConfig"}},
		{name: "a member asks again (the answer was lost): sent again", setup: append(slices.Clone(running), ask(OwnerID(1), "s")), in: ask(OwnerID(1), "s"),
			state: UserLevel, phase: lifecycle.Running, effects: []string{"send FedConfig"}},
		{name: "a member asks a fourth time: refused", setup: append(slices.Clone(running), ask(OwnerID(1), "s"), ask(OwnerID(1), "s"), ask(OwnerID(1), "s")),
			in: ask(OwnerID(1), "s"), state: UserLevel, phase: lifecycle.Running, drop: "configuration asked again", err: protocol.ErrUnexpected},
		{name: "an outsider asks for the configuration: refused", setup: running, in: ask("mallory", "s"), state: UserLevel, phase: lifecycle.Running,
			drop: protocol.ErrUnexpected.Error(), err: protocol.ErrUnexpected},
		{name: "a member asks for another session's configuration: refused", setup: running, in: ask(OwnerID(1), "other"), state: UserLevel,
			phase: lifecycle.Running, drop: protocol.ErrUnexpected.Error(), err: protocol.ErrUnexpected},
		{name: "a control message", setup: running, in: w.announce(t, w.pub, "s"), state: UserLevel, phase: lifecycle.Running,
			drop: protocol.ErrUnexpected.Error(), err: protocol.ErrUnexpected},
	}
	t0 := time.Unix(1000, 0)
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			u := newUser(t)
			defer u.Close()
			for i, in := range r.setup {
				if _, err := engine.Step(u, t0, in); err != nil {
					t.Fatalf("setup input %d: %v", i, err)
				}
				checkMoves(t, fmt.Sprintf("setup input %d", i), u.moves)
			}
			drops := u.stats.Snapshot()
			effs, err := engine.Step(u, t0, r.in)
			if !errors.Is(err, r.err) || (err != nil) != (r.err != nil) {
				t.Fatalf("error %v, want %v", err, r.err)
			}
			checkMoves(t, "the row's input", u.moves)
			if u.state != r.state || u.life.Phase() != r.phase {
				t.Errorf("state %s phase %s, want %s %s", u.state, u.life.Phase(), r.state, r.phase)
			}
			if got := effectShapes(effs); !reflect.DeepEqual(got, append([]string{}, r.effects...)) {
				t.Errorf("effects %q, want %q", got, r.effects)
			}
			if after := u.stats.Snapshot(); r.drop != "" && after[r.drop] != drops[r.drop]+1 {
				t.Errorf("drop %q not counted: %v", r.drop, after)
			}
		})
	}
}

// TestMachinesPlayASessionByHand: the data user and the ten owners of the
// table's session, driven by engine.Step alone — no driver, no transport,
// no clock but the time each input carries — finish the session: every
// effect a machine returns is all it does. Messages are delivered in the
// order they were emitted (control publications to every owner, sends to
// their recipient); when none is in flight the earliest pending timer
// fires. A machine that read a clock, armed a timer or called back outside
// its effects would stall here or finish differently.
func TestMachinesPlayASessionByHand(t *testing.T) {
	w := newOwnerWorld(t)
	t0 := time.Unix(1000, 0)
	type node struct {
		m      engine.Machine
		timers map[string]time.Time
	}
	nodes := map[protocol.PeerID]*node{}
	var notes []engine.Notify
	u, err := NewUser(tableUser, nopPoster{}, UserConfig{Public: &w.pub, ClassNames: w.union.Classes, Features: w.union.Features,
		AnnounceDelay: 100 * time.Millisecond, SumRand: rng.ForName("hand user"), Clock: handClock(), Log: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	nodes[tableUser] = &node{m: u, timers: map[string]time.Time{}}
	_, parts := testData(t, 400, 10) // newOwnerWorld's data: the same test name
	ledgers := map[protocol.PeerID]protocol.Ledger{}
	for i, id := range w.pub.Roster {
		cfg := w.ownerConfig()
		cfg.Data, cfg.NoiseSecret, cfg.SumRand = parts[i], rng.SecretOf(1, uint64(i)), rng.Derive(2, uint64(i))
		o, err := NewOwner(id, nopPoster{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		nodes[id], ledgers[id] = &node{m: o, timers: map[string]time.Time{}}, cfg.Ledger
	}
	type delivery struct {
		to protocol.PeerID
		in engine.Input
	}
	now := t0
	queue := []delivery{{tableUser, engine.Message{From: tableUser, Protocol: inputStart}}}
	refused := map[protocol.PeerID]int{}
	for steps := 0; ; steps++ {
		if steps > 200000 {
			t.Fatal("the session did not end")
		}
		if len(queue) == 0 { // nothing in flight: the earliest timer
			var who protocol.PeerID
			var name string
			var at time.Time
			for id, n := range nodes {
				for tn, when := range n.timers {
					if name == "" || when.Before(at) || (when.Equal(at) && (id < who || id == who && tn < name)) {
						who, name, at = id, tn, when
					}
				}
			}
			if name == "" {
				break
			}
			delete(nodes[who].timers, name)
			now = at
			queue = append(queue, delivery{who, engine.TimerFired{Name: name}})
		}
		d := queue[0]
		queue = queue[1:]
		n := nodes[d.to]
		effs, err := engine.Step(n.m, now, d.in)
		if err != nil {
			refused[d.to]++
		}
		for _, e := range effs {
			switch e := e.(type) {
			case engine.Send:
				if nodes[e.To] == nil {
					t.Fatalf("%s sent to unknown peer %s", d.to, e.To)
				}
				queue = append(queue, delivery{e.To, engine.Message{From: d.to, Protocol: e.Protocol, Data: e.Data}})
			case engine.Publish:
				for _, id := range w.pub.Roster {
					queue = append(queue, delivery{id, engine.Message{From: d.to, Topic: e.Topic, Data: e.Data}})
				}
			case engine.SetTimer:
				n.timers[e.Name] = now.Add(e.After)
			case engine.CancelTimer:
				delete(n.timers, e.Name)
			case engine.Notify:
				if d.to == tableUser {
					notes = append(notes, e)
				}
			}
		}
	}
	if u.state != UserDone || u.life.Phase() != lifecycle.Done {
		t.Fatalf("user %s (%s), err %v; refused %v", u.state, u.life.Phase(), u.err, refused)
	}
	if len(u.model.Boosters[0]) != w.pub.Boost.Trees {
		t.Fatalf("model of %d trees, want %d", len(u.model.Boosters[0]), w.pub.Boost.Trees)
	}
	// The user drops only what comes after a sum it already revealed (the
	// partial sums beyond the threshold, reports after the dealer set).
	for reason := range u.stats.Snapshot() {
		if reason != "sum: late" && reason != "late" {
			t.Errorf("the user dropped %q: %v", reason, u.stats.String())
		}
	}
	var events []string
	for _, n := range notes {
		events = append(events, effectShape(n))
	}
	want := []string{"notify round done: tree 1", "notify round done: tree 2", "notify final: complete: 2 of 2 trees"}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("user notifications %q, want %q", events, want)
	}
	epsT := w.pub.TreeEpsilon(1)
	for _, id := range w.pub.Roster {
		o := nodes[id].m.(*Owner)
		if o.state() != OwnerDone || o.life.Phase() != lifecycle.Done {
			t.Errorf("owner %s: %s (%s), drops %v", id, o.state(), o.life.Phase(), o.stats.String())
		}
		// One tree of the one ensemble: its eps_t, once.
		if s := ledgers[id].Spent(); s < epsT*(1-1e-9) || s > epsT*(1+1e-9) {
			t.Errorf("owner %s spent %v, want %v", id, s, epsT)
		}
	}
	t.Logf("virtual time %v; refused inputs %v", now.Sub(t0), refused)
}

// TestUserWaitsQuietForConfigurationAcks: while members' acks come in,
// tree 1 waits as long again as the configuration has been out since the
// last ack (at least AnnounceDelay), never past configWait after the
// announcement; every member's ack starts it at once (TestUserTransitions).
func TestUserWaitsQuietForConfigurationAcks(t *testing.T) {
	w := newOwnerWorld(t)
	u, err := NewUser(tableUser, nopPoster{}, UserConfig{Public: &w.pub, ClassNames: w.union.Classes, Features: w.union.Features,
		AnnounceDelay: 100 * time.Millisecond, SumRand: rng.ForName("table user"), Clock: handClock(), Log: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	t0 := time.Unix(1000, 0)
	if _, err := engine.Step(u, t0, engine.Message{From: tableUser, Protocol: inputStart}); err != nil {
		t.Fatal(err)
	}
	wait := u.configWait()
	if wait <= 4*time.Second {
		t.Fatalf("configWait %v: the rows below need more than 4 s", wait)
	}
	for i, c := range []struct {
		at   time.Duration
		want string
	}{
		{50 * time.Millisecond, "set announce 100ms"}, // AnnounceDelay, the floor
		{3 * time.Second, "set announce 3s"},          // as long again as the configuration has been out
		{wait - time.Second, "set announce 1s"},       // never past configWait
	} {
		p := w.pub.Roster[i]
		effs, err := engine.Step(u, t0.Add(c.at), w.sumStream(t, p, &wire.Envelope{Header: w.header("s", 0),
			Body: &wire.Envelope_RosterAck{RosterAck: &wire.RosterAck{Version: 1}}}))
		if err != nil {
			t.Fatal(err)
		}
		if got := effectShapes(effs); !reflect.DeepEqual(got, []string{c.want}) {
			t.Errorf("ack %d at %v: effects %q, want %q", i+1, c.at, got, c.want)
		}
	}
	if u.state != UserIdle {
		t.Fatalf("state %s before every member acked, want %s", u.state, UserIdle)
	}
}
