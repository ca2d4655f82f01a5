package fedboost

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/lifecycle"
	"github.com/ppboost/ppboost/protocol/release"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// The owner's transition table in the drand style: from a fresh owner
// brought to its state by the row's setup inputs, one input, to the next
// state and lifecycle phase, the effects, whether the ledger was charged,
// the drop counter it raised and the refusal (errors.Is). After every input
// each phase move it made (an announcement admits then runs; an abort ends
// then leaves) must be one lifecycle allows. It holds every refusal and
// deviation the fedboost tests and the conformance suite play against an
// owner.

// ownerWorld is the session every row plays: 10 owners, two trees of one
// ensemble (disjoint groups of 5), depth 2, noise on; self is the first
// member of tree 1's group and the user is "user".
type ownerWorld struct {
	pub    Public
	self   protocol.PeerID
	data   *dataset.Dataset
	b      *dpboost.Binning
	union  *dataset.Dataset
	others protocol.PeerID // a member of tree 2's group (not of tree 1's)
}

const tableUser protocol.PeerID = "user"

func newOwnerWorld(t *testing.T) *ownerWorld {
	cfg := dpboost.DefaultConfig()
	cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Bins = 2, 2, 2, 8
	return newOwnerWorldFor(t, cfg, 2)
}

// newOwnerWorldFor is the world of a session of cfg (columns per node);
// its data is t's.
func newOwnerWorldFor(t *testing.T, cfg dpboost.Config, columns int) *ownerWorld {
	union, parts := testData(t, 400, 10)
	pub := testPublic(union, parts, cfg, columns, true)
	pub.Session, pub.Beacon = "s", []byte("b")
	for i := range 10 {
		pub.Roster = append(pub.Roster, OwnerID(i))
	}
	if err := pub.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := pub.Binning()
	if err != nil {
		t.Fatal(err)
	}
	w := &ownerWorld{pub: pub, b: b, union: union, self: pub.Group(1)[0], others: pub.Group(2)[0]}
	w.data = parts[slices.Index(pub.Roster, w.self)]
	if !w.pub.Newton() && slices.Contains(pub.Group(2), w.self) {
		t.Fatal("the groups of one ensemble overlap")
	}
	return w
}

// ownerConfig is the owner every row starts from (before its cfg hook).
func (w *ownerWorld) ownerConfig() OwnerConfig {
	return OwnerConfig{User: tableUser, Data: w.data, Ledger: protocol.NewMemLedger(100), MaxEpsilon: 100, MinParties: 3,
		Colluders: 1, NoiseSecret: []byte("table noise"), SumRand: rng.ForName("table sum"), Clock: handClock(), Log: hclog.NewNullLogger()}
}

func (w *ownerWorld) header(session string, round uint32) *wire.Header {
	return &wire.Header{Version: wire.Version, Session: session, Round: round}
}

// control is a message of the control topic from `from`.
func (w *ownerWorld) control(t *testing.T, from protocol.PeerID, env *wire.Envelope) engine.Message {
	t.Helper()
	b, err := wire.Marshal(env, wire.MaxControlBytes)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Message{From: from, Topic: wire.TopicFedControl, Data: b}
}

// sumStream is a message of the fed Shamir protocol from `from`.
func (w *ownerWorld) sumStream(t *testing.T, from protocol.PeerID, env *wire.Envelope) engine.Message {
	t.Helper()
	b, err := wire.Marshal(env, wire.MaxSumFrameBytes)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Message{From: from, Protocol: wire.ProtoFedShamir, Data: b}
}

// announce is the user's FedConfig of p under a header of session.
func (w *ownerWorld) announce(t *testing.T, p Public, session string) engine.Message {
	t.Helper()
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return w.control(t, tableUser, &wire.Envelope{Header: w.header(session, 0), Body: &wire.Envelope_FedConfig{FedConfig: fedConfigOf(t, b)}})
}

// configBytes is the user's FedConfig envelope of p under a header of
// session, as it sends it down the configuration tree (cfgtree.go).
func (w *ownerWorld) configBytes(t *testing.T, p Public, session string, seq uint64) []byte {
	t.Helper()
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	h := w.header(session, 0)
	h.Seq = seq
	return must(wire.Marshal(&wire.Envelope{Header: h, Body: &wire.Envelope_FedConfig{FedConfig: fedConfigOf(t, b)}}, wire.MaxControlBytes))
}

// configHeadMsg is the user's head naming the configuration bytes b, with
// fan-out k.
func (w *ownerWorld) configHeadMsg(t *testing.T, b []byte, n int, k uint32) engine.Message {
	h := configHead(b, n)
	h.Fanout = k
	return w.control(t, tableUser, &wire.Envelope{Header: w.header(w.pub.Session, 0), Body: &wire.Envelope_RosterHead{RosterHead: h}})
}

// sumStart is the SumStart a data user's coordinator sends for the sum of
// tree at node (-1: the leaves), as the user's own coordinator makes it
// (committee digest, threshold, length).
func (w *ownerWorld) sumStart(t *testing.T, tree, node int) engine.Message {
	t.Helper()
	var start *wire.Envelope
	env := securesum.Env{Self: tableUser, Clock: handClock(), Rand: rng.ForName("table coordinator"), Log: hclog.NewNullLogger(),
		System: wire.Fed(), Send: func(_ protocol.PeerID, _ string, env *wire.Envelope) {
			if start == nil {
				start = env
			}
		}}
	l, purpose := w.pub.LeafLayout(tree), leafPurpose(0)
	if node >= 0 {
		l, purpose = w.pub.NodeLayout(w.b, tree, node), nodePurpose(node, 0)
	}
	c := securesum.NewCoordinator(env, w.pub.SumParams(tree))
	if err := c.Sum(securesum.Request{Header: w.header(w.pub.Session, uint32(tree)), Purpose: purpose, Roster: w.pub.Group(tree),
		RosterVersion: 1, Length: l.Length, Beacon: w.pub.Beacon}, func([]float64, int, error) {}); err != nil {
		t.Fatal(err)
	}
	if start == nil || start.GetSumStart() == nil {
		t.Fatal("the coordinator sent no SumStart")
	}
	return w.sumStream(t, tableUser, start)
}

// tree is the user's FedTree of tree t grown to levels (complete with
// leaves at the full depth when complete).
func (w *ownerWorld) tree(t *testing.T, tree, levels int, complete bool) engine.Message {
	t.Helper()
	p := w.partial(levels, complete)
	return w.control(t, tableUser, &wire.Envelope{Header: w.header(w.pub.Session, uint32(tree)), Body: &wire.Envelope_FedTree{FedTree: p.wire()}})
}

func (w *ownerWorld) partial(levels int, complete bool) *partial {
	p := &partial{levels: levels, complete: complete}
	for i := range 1<<levels - 1 {
		p.feature, p.bin = append(p.feature, i%w.b.Features()), append(p.bin, 1)
	}
	if complete {
		for j := range 1 << levels {
			p.leaf = append(p.leaf, 0.01*float64(j+1))
		}
	}
	return p
}

// final is the user's Final carrying a model of two trees, with outcome out
// (nil: none).
func (w *ownerWorld) final(t *testing.T, out *protocol.Outcome) engine.Message {
	t.Helper()
	cfg := w.pub.Boost
	tr := w.partial(cfg.Depth, true).tree()
	m := &dpboost.Model{Format: dpboost.ModelFormat, Version: dpboost.ModelVersion, Config: cfg, Account: dpboost.Account(cfg),
		Schema: w.pub.Schema, Features: w.union.Features, ClassNames: w.union.Classes, Bins: w.b.Bins, Lo: w.b.Lo,
		Boosters: [][]dpboost.Tree{{tr, tr}}}
	f := wire.FinalDPBoost(m, nil)
	if out != nil {
		f.Outcome = out.Wire()
	}
	return w.control(t, tableUser, &wire.Envelope{Header: w.header(w.pub.Session, 2), Body: &wire.Envelope_Final{Final: f}})
}

func (w *ownerWorld) abort(t *testing.T, out protocol.Outcome) engine.Message {
	t.Helper()
	return w.control(t, tableUser, &wire.Envelope{Header: w.header(w.pub.Session, 1),
		Body: &wire.Envelope_Abort{Abort: &wire.Abort{Reason: out.Reason, Outcome: out.Wire()}}})
}

// effectShapes names effects without their bytes: a message by its kind,
// a timer by name (and duration), a notification by event and value; runs
// of the same shape are folded ("send SHAMIR_SHARE ×8").
func effectShapes(effs []engine.Effect) []string {
	out := []string{}
	last, n := "", 0
	flush := func() {
		switch {
		case n == 1:
			out = append(out, last)
		case n > 1:
			out = append(out, fmt.Sprintf("%s ×%d", last, n))
		}
	}
	for _, e := range effs {
		s := effectShape(e)
		if s == last {
			n++
			continue
		}
		flush()
		last, n = s, 1
	}
	flush()
	return out
}

func effectShape(e engine.Effect) string {
	switch e := e.(type) {
	case engine.Send:
		env, err := wire.Unmarshal(e.Data, wire.MaxControlBytes)
		switch {
		case err != nil:
			return "send garbage"
		case env.GetSum() != nil:
			return "send " + env.GetSum().GetKind().String()
		case env.GetSumStart() != nil:
			return "send SumStart"
		case env.GetSumResult() != nil:
			return "send SumResult"
		}
		return "send " + bodyName(env)
	case engine.Publish:
		env, err := wire.Unmarshal(e.Data, wire.MaxControlBytes)
		if err != nil {
			return "publish garbage on " + e.Topic
		}
		return fmt.Sprintf("publish %s", bodyName(env))
	case engine.SetTimer:
		return fmt.Sprintf("set %s %s", e.Name, e.After)
	case engine.CancelTimer:
		return "cancel " + e.Name
	case engine.Notify:
		switch v := e.Value.(type) {
		case protocol.Outcome:
			return fmt.Sprintf("notify %s: %s", e.Event, v)
		case *dpboost.Model:
			return fmt.Sprintf("notify %s: model of %d trees", e.Event, len(v.Boosters[0]))
		case TreeReport:
			return fmt.Sprintf("notify %s: tree %d", e.Event, v.Tree)
		case SumReport:
			return fmt.Sprintf("notify %s: sum of tree %d node %d", e.Event, v.Tree, v.Node)
		case sumPeers:
			ack := ""
			if v.ack != "" {
				ack = ", then ack " + v.ack
			}
			return fmt.Sprintf("prepare %d, expect %d%s", len(v.dial), len(v.expect), ack)
		}
		return "notify " + e.Event.String()
	}
	return fmt.Sprintf("%T", e)
}

func bodyName(env *wire.Envelope) string {
	switch {
	case env.GetFedConfig() != nil:
		return "FedConfig"
	case env.GetFedTree() != nil:
		if env.GetFedTree().GetComplete() {
			return fmt.Sprintf("FedTree %d complete", env.GetHeader().GetRound())
		}
		return fmt.Sprintf("FedTree %d level %d", env.GetHeader().GetRound(), env.GetFedTree().GetLevels())
	case env.GetFinal() != nil:
		return "Final"
	case env.GetAbort() != nil:
		return "Abort"
	case env.GetRosterHead() != nil:
		return "RosterHead"
	case env.GetRosterRequest() != nil:
		return "RosterRequest"
	case env.GetRosterAck() != nil:
		return "RosterAck"
	}
	return fmt.Sprintf("%T", env.GetBody())
}

// checkMoves fails when a transition made a phase move lifecycle forbids.
func checkMoves(t *testing.T, what string, m moves) {
	t.Helper()
	for i := 1; i < len(m); i++ {
		if !m[i-1].CanGo(m[i]) {
			t.Errorf("%s: phase %s → %s is not a valid move (moves %v)", what, m[i-1], m[i], m)
		}
	}
}

func totalDrops(c *protocol.Counters) int {
	n := 0
	for _, v := range c.Snapshot() {
		n += v
	}
	return n
}

func TestOwnerTransitions(t *testing.T) {
	w := newOwnerWorld(t)
	const idle = "set idle 10m0s"
	wrongSession, notUser := protocol.ErrWrongSession.Error(), protocol.ErrNotUser.Error()

	announce := w.announce(t, w.pub, "s")
	root, leaves := w.sumStart(t, 1, 0), w.sumStart(t, 1, -1)
	node1 := w.sumStart(t, 1, 1)
	level1, level2 := w.tree(t, 1, 1, false), w.tree(t, 1, 2, false)
	tree1 := w.tree(t, 1, 2, true)
	// The dealing of one sum: a Shamir share to each other member of the
	// committee (tree 1's group of 5; its own share self keeps).
	deal := fmt.Sprintf("send SHAMIR_SHARE ×%d", len(w.pub.Group(1))-1)
	complete := protocol.NewOutcome(2, 2, OutcomeUnit, nil)
	failed := protocol.Failed(1, 2, OutcomeUnit, fmt.Errorf("%w: tree 1 sum node0/0: too few", protocol.ErrSessionFailed))
	share := func(session string, round uint32) *wire.Envelope {
		return &wire.Envelope{Header: w.header(session, round), Body: &wire.Envelope_Sum{Sum: &wire.Sum{Kind: wire.Sum_SHAMIR_SHARE}}}
	}
	variant := func(f func(*Public)) engine.Message {
		p := w.pub
		f(&p)
		return w.announce(t, p, p.Session)
	}
	full := make([]engine.Input, maxPending)
	for i := range full {
		full[i] = root
	}
	joined := []engine.Input{announce}

	// A Newton session: the beacon draws every tree, one noisy leaf sum
	// per tree over the whole roster, charged once for the session.
	nw := newOwnerWorldFor(t, newtonTestConfig(2, 4), 0)
	nAnnounce, nLeaves1 := nw.announce(t, nw.pub, "s"), nw.sumStart(t, 1, -1)
	nBeacon1 := func() engine.Message {
		p := nw.pub.NewtonTree(nw.b, 1)
		p.leaf, p.complete = make([]float64, 1<<nw.pub.Boost.Depth), true
		return nw.control(t, tableUser, &wire.Envelope{Header: nw.header("s", 1), Body: &wire.Envelope_FedTree{FedTree: p.wire()}})
	}()
	nForged := func() engine.Message {
		p := nw.pub.NewtonTree(nw.b, 1)
		p.feature[0] = (p.feature[0] + 1) % nw.b.Features()
		p.leaf, p.complete = make([]float64, 1<<nw.pub.Boost.Depth), true
		return nw.control(t, tableUser, &wire.Envelope{Header: nw.header("s", 1), Body: &wire.Envelope_FedTree{FedTree: p.wire()}})
	}()
	nCfgB := nw.configBytes(t, nw.pub, nw.pub.Session, 7)
	nPrepared := func(session string) engine.Message {
		return engine.Message{From: nw.self, Protocol: inputPrepared, Data: []byte(session)}
	}
	var nDial, nExpect int
	for c := range nw.pub.LeafLayout(1).Chunks {
		com := securesum.Committee(nw.pub.Group(1), nw.pub.SumParams(1).Committee, nw.pub.Beacon, &wire.Header{Session: nw.pub.Session, Round: 1}, leafPurpose(c), 0)
		d, e := securesum.SumConnections(nw.self, nw.pub.Group(1), securesum.Shamir, com)
		nDial, nExpect = nDial+len(d), nExpect+len(e)
	}
	// The configuration tree's inputs (cfgtree.go).
	cfgB := w.configBytes(t, w.pub, w.pub.Session, 7)
	otherB := w.configBytes(t, w.pub, w.pub.Session, 8) // the same configuration under another header: another digest
	head := w.configHeadMsg(t, cfgB, len(w.pub.Roster), protocol.TreeFanout)
	cfgTimer := engine.TimerFired{Name: timerConfig}
	fwd := func(from protocol.PeerID, b []byte) engine.Message {
		return engine.Message{From: from, Protocol: wire.ProtoFedShamir, Data: b}
	}
	laterPub := w.pub
	laterPub.Session = "later"
	wide := w.pub
	wide.Roster = nil
	for i := range 40 {
		wide.Roster = append(wide.Roster, OwnerID(i))
	}
	wideB := w.configBytes(t, wide, wide.Session, 9)
	bigTree := must(wire.Marshal(&wire.Envelope{Header: w.header(w.pub.Session, 1),
		Body: &wire.Envelope_FedTree{FedTree: &wire.FedTree{Leaf: make([]float64, wire.MaxSumFrameBytes/8+1)}}}, wire.MaxControlBytes))
	nDeal := "send SHAMIR_SHARE ×8" // the committee of 8 drawn from the roster of 10 (by session and purpose), self not among them

	rows := []struct {
		name    string
		world   *ownerWorld // nil: w
		cfg     func(*OwnerConfig)
		self    protocol.PeerID // "" : w.self
		setup   []engine.Input
		in      engine.Input
		state   OwnerState
		effects []string
		charges bool   // the input charges the ledger (the release gate)
		drop    string // the counter the input raises ("": none)
		err     error
		// at is when the input arrives and lastAt when the last setup
		// input did, after t0 (the earlier setup inputs arrive at t0).
		at, lastAt time.Duration
	}{
		// Idle: the announcement and its refusals.
		{name: "announcement", in: announce, state: OwnerJoined, effects: []string{idle}},
		{name: "garbage", in: engine.Message{From: tableUser, Topic: wire.TopicFedControl, Data: []byte{0xff, 1}},
			state: OwnerIdle, drop: "malformed", err: wire.ErrMalformed},
		{name: "control not from the user", in: from(announce, "mallory"), state: OwnerIdle,
			drop: notUser, err: protocol.ErrNotUser},
		{name: "SumStart on the sum stream not from the user", in: from(root, OwnerID(1)), state: OwnerIdle,
			drop: notUser, err: protocol.ErrNotUser},
		{name: "config refused: malformed", in: w.control(t, tableUser, &wire.Envelope{Header: w.header("s", 0),
			Body: &wire.Envelope_FedConfig{FedConfig: &wire.FedConfig{Session: "s"}}}), state: OwnerIdle, drop: "config refused", err: protocol.ErrBadConfig},
		{name: "config refused: another session's header", in: w.announce(t, w.pub, "other"), state: OwnerIdle,
			drop: "config refused", err: protocol.ErrBadConfig},
		{name: "config refused: not in the roster", self: "outsider", in: announce, state: OwnerIdle,
			drop: "config refused", err: protocol.ErrBadConfig},
		{name: "config refused: a roster member not admitted", cfg: func(c *OwnerConfig) {
			c.Admit = func(p protocol.PeerID) bool { return p != OwnerID(3) }
		}, in: announce, state: OwnerIdle, drop: "config refused", err: protocol.ErrBadConfig},
		{name: "config refused: min_parties below the owner's", cfg: func(c *OwnerConfig) { c.MinParties = 50 },
			in: announce, state: OwnerIdle, drop: "config refused", err: protocol.ErrBadConfig},
		{name: "config refused: trust (shares sized for fewer colluders than the owner assumes)",
			cfg: func(c *OwnerConfig) { c.Colluders = boost.ColludersAll }, in: announce, state: OwnerIdle,
			drop: "config refused", err: protocol.ErrBadConfig},
		{name: "config refused: more rows than the session caps", in: variant(func(p *Public) { p.MaxRows = 1 }),
			state: OwnerIdle, drop: "config refused", err: protocol.ErrBadConfig},
		{name: "config refused: no noise", in: variant(func(p *Public) { p.Noise = false }), state: OwnerIdle,
			drop: "config refused", err: protocol.ErrBadConfig},
		{name: "config refused: a tree costs more than the owner's limit", cfg: func(c *OwnerConfig) { c.MaxEpsilon = 0.01 },
			in: announce, state: OwnerIdle, drop: "config refused", err: protocol.ErrBadConfig},
		{name: "config refused: the ensembles cost more than the owner's per-session cap", cfg: func(c *OwnerConfig) { c.SessionMaxEpsilon = 0.01 },
			in: announce, state: OwnerIdle, drop: "config refused", err: protocol.ErrBadConfig},
		{name: "share before any session", in: w.sumStream(t, OwnerID(1), share("s", 1)), state: OwnerIdle,
			drop: wrongSession, err: protocol.ErrWrongSession},
		{name: "Final before any session", in: w.final(t, &complete), state: OwnerIdle, drop: wrongSession, err: protocol.ErrWrongSession},
		{name: "unexpected protocol", in: engine.Message{From: tableUser, Protocol: "/other/1", Data: must(wire.Marshal(share("s", 1), wire.MaxSumFrameBytes))},
			state: OwnerIdle, drop: protocol.ErrUnexpected.Error(), err: protocol.ErrUnexpected},
		{name: "idle timer while idle", in: engine.TimerFired{Name: lifecycle.TimerIdle}, state: OwnerIdle, effects: []string{}},
		{name: "unknown timer", in: engine.TimerFired{Name: "bogus"}, state: OwnerIdle, err: errUnknownTimer},

		// Held: what overtook what it depends on.
		// The configuration tree (cfgtree.go): the user's head names the
		// configuration's bytes; another owner's copy is taken only then.
		{name: "configuration head: the grace to ask armed", in: head, state: OwnerIdle, effects: []string{"set config 4s"}},
		{name: "configuration head with another fan-out: refused", in: w.configHeadMsg(t, cfgB, 10, 8), state: OwnerIdle,
			drop: "malformed", err: protocol.ErrUnexpected},
		{name: "configuration head not from the user", in: from(head, OwnerID(1)), state: OwnerIdle, drop: notUser, err: protocol.ErrNotUser},
		{name: "the user's configuration on the sum stream: joined, the user told", in: fwd(tableUser, cfgB), state: OwnerJoined, effects: []string{idle, "send RosterAck"}},
		{name: "a configuration forwarded by an owner, named by the head: joined", setup: []engine.Input{head}, in: fwd(OwnerID(1), cfgB),
			state: OwnerJoined, effects: []string{idle, "send RosterAck"}},
		{name: "a forwarded configuration the head does not name: refused", setup: []engine.Input{head}, in: fwd(OwnerID(1), otherB),
			state: OwnerIdle, drop: notUser, err: protocol.ErrNotUser},
		{name: "a forwarded configuration before its head: held", in: fwd(OwnerID(1), cfgB), state: OwnerIdle, effects: []string{}},
		{name: "a forwarded configuration of another session than the head's: held for its head", setup: []engine.Input{head},
			in: fwd(OwnerID(1), w.configBytes(t, laterPub, "later", 1)), state: OwnerIdle, effects: []string{}},
		{name: "the head takes the held configuration", setup: []engine.Input{fwd(OwnerID(1), cfgB)}, in: head,
			state: OwnerJoined, effects: []string{idle, "send RosterAck"}},
		{name: "the head refuses a held configuration it does not name", setup: []engine.Input{fwd(OwnerID(1), otherB)}, in: head,
			state: OwnerIdle, effects: []string{"set config 4s"}, drop: notUser},
		{name: "grace over with the head and no configuration: asks the user", setup: []engine.Input{head}, in: engine.TimerFired{Name: timerConfig},
			state: OwnerIdle, effects: []string{"send RosterRequest", "set config 4s"}},
		{name: "no answer: asks again, twice the grace later", setup: []engine.Input{head, cfgTimer}, in: cfgTimer,
			state: OwnerIdle, effects: []string{"send RosterRequest", "set config 8s"}},
		{name: "no answer the third time: asks no more", setup: []engine.Input{head, cfgTimer, cfgTimer}, in: cfgTimer,
			state: OwnerIdle, effects: []string{"send RosterRequest"}},
		{name: "after three asks: nothing", setup: []engine.Input{head, cfgTimer, cfgTimer, cfgTimer}, in: cfgTimer,
			state: OwnerIdle, effects: []string{}},
		{name: "the answer came: asks no more", setup: []engine.Input{head, cfgTimer, fwd(tableUser, cfgB)}, in: cfgTimer,
			state: OwnerJoined, effects: []string{}},
		{name: "grace over after joining: nothing", setup: []engine.Input{head, fwd(OwnerID(1), cfgB)}, in: engine.TimerFired{Name: timerConfig},
			state: OwnerJoined, effects: []string{}},
		{name: "a large message on the sum stream that is not a configuration: malformed", in: fwd(OwnerID(1), bigTree),
			state: OwnerIdle, drop: "malformed", err: protocol.ErrUnexpected},
		// A forwarder (index 0 of 40) sends the bytes, unchanged, to
		// members 32..39, once, whether or not it joins.
		{name: "a forwarder forwards to its children", self: OwnerID(0), in: fwd(tableUser, wideB),
			state: OwnerJoined, effects: []string{idle, "send FedConfig ×8", "send RosterAck"}},
		{name: "a forwarder forwards and acks once", self: OwnerID(0), setup: []engine.Input{fwd(tableUser, wideB)}, in: fwd(tableUser, wideB),
			state: OwnerJoined, effects: []string{}},
		{name: "a forwarder that refuses the configuration forwards it still", self: OwnerID(0), cfg: func(c *OwnerConfig) { c.MaxEpsilon = 0.01 },
			in: fwd(tableUser, wideB), state: OwnerIdle, effects: []string{"send FedConfig ×8", "send RosterAck"}, drop: "config refused", err: protocol.ErrBadConfig},
		{name: "the configuration again from another forwarder: no second ack", setup: []engine.Input{head, fwd(OwnerID(1), cfgB)}, in: fwd(OwnerID(2), cfgB),
			state: OwnerJoined, effects: []string{}},

		// Held, and the owner asks the user for the configuration it
		// lacks, once per session (cfgtree.go).
		{name: "SumStart before the announcement: held, the configuration asked for", in: root, state: OwnerIdle, effects: []string{"send RosterRequest", "set config 4s"}},
		{name: "tree before the announcement: held, the configuration asked for", in: level1, state: OwnerIdle, effects: []string{"send RosterRequest", "set config 4s"}},
		{name: "a second held message: asked once", setup: []engine.Input{root}, in: level1, state: OwnerIdle, effects: []string{}},
		{name: "a held message's request unanswered: asked again", setup: []engine.Input{root}, in: cfgTimer, state: OwnerIdle,
			effects: []string{"send RosterRequest", "set config 8s"}},
		{name: "SumStart before the announcement, with the head: held, asked for (the sum needs it now)", setup: []engine.Input{head}, in: root,
			state: OwnerIdle, effects: []string{"send RosterRequest", "set config 4s"}},
		{name: "the head after the request: no second grace", setup: []engine.Input{root}, in: head, state: OwnerIdle, effects: []string{}},
		{name: "a held SumStart deals once the announcement arrives", setup: []engine.Input{root}, in: announce,
			state: OwnerJoined, effects: []string{idle, deal}, charges: true},
		{name: "held messages beyond the buffer", setup: full, in: level1, state: OwnerIdle,
			drop: "pending buffer full", err: lifecycle.ErrReorderFull},
		{name: "node SumStart before its level: held", setup: joined, in: node1, state: OwnerJoined, effects: []string{}},
		{name: "the level releases the held node SumStart", setup: []engine.Input{announce, node1}, in: level1,
			state: OwnerJoined, effects: []string{deal}, charges: true},
		{name: "tree 2's SumStart before tree 1 is applied: held", setup: joined, in: w.sumStart(t, 2, 0),
			state: OwnerJoined, effects: []string{}},

		// Running: sums, trees and their deviations.
		{name: "re-announcement", setup: joined, in: announce, state: OwnerJoined, effects: []string{}},
		{name: "another session's announcement while joined", setup: joined, in: variant(func(p *Public) { p.Session = "s2" }),
			state: OwnerJoined, drop: wrongSession, err: protocol.ErrWrongSession},
		{name: "control of another session", setup: joined, in: w.control(t, tableUser, &wire.Envelope{Header: w.header("x", 1),
			Body: &wire.Envelope_FedTree{FedTree: w.partial(1, false).wire()}}), state: OwnerJoined, drop: wrongSession, err: protocol.ErrWrongSession},
		{name: "root SumStart: charge, then deal", setup: joined, in: root, state: OwnerJoined, effects: []string{deal}, charges: true},
		{name: "duplicate SumStart", setup: []engine.Input{announce, root}, in: root, state: OwnerJoined,
			effects: []string{}, drop: "sum: duplicate", err: securesum.ErrDuplicate},
		{name: "a later sum of a charged tree deals without a second charge", setup: []engine.Input{announce, root, level1, level2},
			in: leaves, state: OwnerJoined, effects: []string{deal}},
		{name: "SumStart of another group", setup: []engine.Input{announce, tree1}, in: w.sumStart(t, 2, 0), state: OwnerJoined,
			effects: []string{}},
		{name: "ledger refuses: budget", cfg: func(c *OwnerConfig) { c.Ledger = protocol.NewMemLedger(0.001) }, setup: joined,
			in: root, state: OwnerJoined, effects: []string{}, drop: "budget", err: protocol.ErrBudgetExceeded},
		{name: "the ensemble's charge is held (a restart): the sum is dealt under it", cfg: func(c *OwnerConfig) {
			l := protocol.NewMemLedger(100)
			_ = l.Spend(ledgerKey("s", 0), 1, 0, 1)
			c.Ledger = l
		}, setup: joined, in: root, state: OwnerJoined, effects: []string{deal}},
		{name: "the name was bound to another value (a restart with another secret or input)", cfg: func(c *OwnerConfig) {
			l := protocol.NewMemLedger(100)
			_ = l.Spend(ledgerKey("s", 0), 1, 0, 1)
			_ = l.Bind(release.Name{System: "fed", Session: "s", Kind: "node", Round: 1}.String(), []byte("another"))
			c.Ledger = l
		}, setup: joined, in: root, state: OwnerJoined, effects: []string{}, drop: "release: another value under a name", err: protocol.ErrRebound},
		{name: "SumStart of an unknown purpose", setup: joined, in: func() engine.Message {
			m := root
			env, _ := wire.Unmarshal(m.Data, wire.MaxSumFrameBytes)
			env.GetSumStart().Purpose = "steal/0"
			return w.sumStream(t, tableUser, env)
		}(), state: OwnerJoined, effects: []string{}, drop: "outside the plan", err: wire.ErrMalformed},
		{name: "forged tree", setup: joined, in: w.control(t, tableUser, &wire.Envelope{Header: w.header("s", 1),
			Body: &wire.Envelope_FedTree{FedTree: &wire.FedTree{Levels: 1, Feature: []uint32{999}, Bin: []uint32{0}}}}),
			state: OwnerJoined, effects: []string{}, drop: "malformed", err: wire.ErrMalformed},
		{name: "tree out of range", setup: joined, in: w.tree(t, 9, 1, false), state: OwnerJoined, effects: []string{},
			drop: "malformed", err: protocol.ErrWrongRound},
		{name: "a level of tree 1", setup: joined, in: level1, state: OwnerJoined, effects: []string{}},
		{name: "SumResult", setup: []engine.Input{announce, root}, in: w.sumStream(t, tableUser, &wire.Envelope{Header: w.header("s", 1),
			Body: &wire.Envelope_SumResult{SumResult: &wire.SumResult{Purpose: nodePurpose(0, 0)}}}), state: OwnerJoined, effects: []string{}},
		{name: "share of another session", setup: joined, in: w.sumStream(t, OwnerID(1), share("x", 1)), state: OwnerJoined,
			drop: wrongSession, err: protocol.ErrWrongSession},
		{name: "share for a tree out of range", setup: joined, in: w.sumStream(t, OwnerID(1), share("s", 9)), state: OwnerJoined,
			drop: protocol.ErrWrongRound.Error(), err: protocol.ErrWrongRound},

		// The end.
		{name: "idle timer after the user spoke: re-armed for the rest", setup: []engine.Input{announce, level1}, lastAt: 4 * time.Minute,
			in: engine.TimerFired{Name: lifecycle.TimerIdle}, at: 10 * time.Minute, state: OwnerJoined, effects: []string{"set idle 4m0s"}},
		{name: "idle timeout", setup: joined, in: engine.TimerFired{Name: lifecycle.TimerIdle}, at: 10 * time.Minute, state: OwnerIdle,
			effects: []string{"cancel idle", "cancel step",
				"notify aborted: failed: 0 of 2 trees (no message from the data user for 10m0s)", "cancel idle"}},
		{name: "Abort", setup: joined, in: w.abort(t, failed), state: OwnerIdle,
			effects: []string{"cancel idle", "cancel step", "notify aborted: " + failed.String(), "cancel idle"}},
		{name: "Abort claiming a complete outcome", setup: joined, in: w.abort(t, complete), state: OwnerJoined,
			effects: []string{}, drop: "malformed", err: protocol.ErrUnexpected},
		{name: "a new announcement after the Abort", setup: []engine.Input{announce, w.abort(t, failed)}, in: announce,
			state: OwnerJoined, effects: []string{idle}},
		{name: "Final", setup: joined, in: w.final(t, &complete), state: OwnerDone,
			effects: []string{"notify report: model of 2 trees", "cancel idle", "cancel step", "notify final: " + complete.String()}},
		{name: "Final without an outcome", setup: joined, in: w.final(t, nil), state: OwnerDone,
			effects: []string{"notify report: model of 2 trees", "cancel idle", "cancel step", "notify final: " + complete.String()}},
		{name: "Final claiming a failed outcome", setup: joined, in: w.final(t, &failed), state: OwnerJoined,
			effects: []string{}, drop: "malformed", err: protocol.ErrUnexpected},
		{name: "control after the Final", setup: []engine.Input{announce, w.final(t, &complete)}, in: level1, state: OwnerDone,
			drop: wrongSession, err: protocol.ErrWrongSession},
		{name: "another session's announcement after the Final", setup: []engine.Input{announce, w.final(t, &complete)},
			in: variant(func(p *Public) { p.Session = "s2" }), state: OwnerDone, drop: wrongSession, err: protocol.ErrWrongSession},
		{name: "idle timer after the Final", setup: []engine.Input{announce, w.final(t, &complete)},
			in: engine.TimerFired{Name: lifecycle.TimerIdle}, state: OwnerDone, effects: []string{}},

		// Newton.
		{name: "Newton: config refused: the session costs more than the owner's limit", world: nw,
			cfg: func(c *OwnerConfig) { c.MaxEpsilon = 1 }, in: nAnnounce, state: OwnerIdle, drop: "config refused", err: protocol.ErrBadConfig},
		{name: "Newton: the leaves of tree 1: charge the session, then deal", world: nw, setup: []engine.Input{nAnnounce}, in: nLeaves1,
			state: OwnerJoined, effects: []string{nDeal}, charges: true},
		{name: "Newton: config refused: the session costs more than the owner's per-session cap", world: nw,
			cfg: func(c *OwnerConfig) { c.SessionMaxEpsilon = 0.5 }, in: nAnnounce, state: OwnerIdle, drop: "config refused", err: protocol.ErrBadConfig},
		{name: "Newton: tree 1's leaves again under attempt 5: the same named value, no second charge", world: nw,
			setup: []engine.Input{nAnnounce, nLeaves1}, in: resumed(t, nw, nLeaves1, func(h *wire.Header, s *wire.SumStart) { h.Attempt = 5 }),
			// attempt 5's committee does not hold this owner: 8 shares go out
			state: OwnerJoined, effects: []string{"send SHAMIR_SHARE ×8"}},
		{name: "Newton: tree 1's leaves as leaves/00: not canonical, outside the plan", world: nw,
			setup: []engine.Input{nAnnounce, nLeaves1}, in: resumed(t, nw, nLeaves1, func(h *wire.Header, s *wire.SumStart) { s.Purpose = "leaves/00"; h.Attempt = 1 }),
			state: OwnerJoined, effects: []string{}, drop: "outside the plan", err: ErrOutsidePlan},
		{name: "Newton: tree 2's leaves deal without a second charge", world: nw,
			setup: []engine.Input{nAnnounce, nLeaves1, nBeacon1}, in: nw.sumStart(t, 2, -1), state: OwnerJoined, effects: []string{nDeal}},
		{name: "Newton: a node SumStart", world: nw, setup: []engine.Input{nAnnounce}, in: nw.sumStart(t, 1, 0), state: OwnerJoined,
			effects: []string{}, drop: "malformed", err: wire.ErrMalformed},
		{name: "Newton: a tree whose splits are not the beacon's", world: nw, setup: []engine.Input{nAnnounce}, in: nForged,
			state: OwnerJoined, effects: []string{}, drop: "config refused", err: protocol.ErrBadConfig},
		{name: "Newton: the beacon's tree", world: nw, setup: []engine.Input{nAnnounce}, in: nBeacon1,
			state: OwnerJoined, effects: []string{}},
		// A Newton owner opens tree 1's connections when it joins, and
		// tells the user it holds the configuration once those dials have
		// ended (the runner's inputPrepared), not before.
		{name: "Newton: the configuration on the sum stream: joined, tree 1's connections prepared, the ack after them", world: nw,
			in: fwd(tableUser, nCfgB), state: OwnerJoined, effects: []string{idle, fmt.Sprintf("prepare %d, expect %d, then ack s", nDial, nExpect)}},
		{name: "Newton: the dials ended: the ack", world: nw, setup: []engine.Input{fwd(tableUser, nCfgB)}, in: nPrepared("s"),
			state: OwnerJoined, effects: []string{"send RosterAck"}},
		{name: "Newton: the dials ended again: no second ack", world: nw, setup: []engine.Input{fwd(tableUser, nCfgB), nPrepared("s")},
			in: nPrepared("s"), state: OwnerJoined, effects: []string{}},
		{name: "Newton: the dials of another session ended: nothing", world: nw, setup: []engine.Input{fwd(tableUser, nCfgB)},
			in: nPrepared("other"), state: OwnerJoined, effects: []string{}},
		{name: "Newton: a prepared message from another peer: refused", world: nw, setup: []engine.Input{fwd(tableUser, nCfgB)},
			in: from(nPrepared("s"), OwnerID(1)), state: OwnerJoined, drop: "malformed", err: wire.ErrMalformed},
	}
	t0 := time.Unix(1000, 0)
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			w := w
			if r.world != nil {
				w = r.world
			}
			cfg := w.ownerConfig()
			if r.cfg != nil {
				r.cfg(&cfg)
			}
			self := w.self
			if r.self != "" {
				self = r.self
			}
			o, err := NewOwner(self, nopPoster{}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			for i, in := range r.setup {
				at := t0
				if i == len(r.setup)-1 {
					at = t0.Add(r.lastAt)
				}
				if _, err := engine.Step(o, at, in); err != nil {
					t.Fatalf("setup input %d: %v", i, err)
				}
				checkMoves(t, fmt.Sprintf("setup input %d", i), o.moves)
			}
			spent, drops := cfg.Ledger.Spent(), o.stats.Snapshot()
			effs, err := engine.Step(o, t0.Add(r.at), r.in)
			if !errors.Is(err, r.err) || (err != nil) != (r.err != nil) {
				t.Fatalf("error %v, want %v", err, r.err)
			}
			checkMoves(t, "the row's input", o.moves)
			if o.state() != r.state {
				t.Errorf("state %s (phase %s), want %s", o.state(), o.life.Phase(), r.state)
			}
			if got := effectShapes(effs); !reflect.DeepEqual(got, append([]string{}, r.effects...)) {
				t.Errorf("effects %q, want %q", got, r.effects)
			}
			if charged := cfg.Ledger.Spent() > spent; charged != r.charges {
				t.Errorf("ledger %v → %v: charged %v, want %v", spent, cfg.Ledger.Spent(), charged, r.charges)
			}
			after := o.stats.Snapshot()
			if r.drop != "" && after[r.drop] != drops[r.drop]+1 {
				t.Errorf("drop %q not counted: %v", r.drop, after)
			}
			if r.drop == "" && totalDrops(&o.stats) != func() int {
				n := 0
				for _, v := range drops {
					n += v
				}
				return n
			}() {
				t.Errorf("unexpected drops %v (before %v)", after, drops)
			}
		})
	}
}

func from(m engine.Message, p protocol.PeerID) engine.Message {
	m.From = p
	return m
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// resumed re-sends the SumStart m with its header and body changed by f (a
// deviating data user: another attempt, another spelling).
func resumed(t *testing.T, w *ownerWorld, m engine.Message, f func(*wire.Header, *wire.SumStart)) engine.Message {
	t.Helper()
	env, err := wire.Unmarshal(m.Data, wire.MaxSumFrameBytes)
	if err != nil {
		t.Fatal(err)
	}
	h, ss := env.GetHeader(), env.GetSumStart()
	f(h, ss)
	// The data user computes the committee of the copy it sends (it knows
	// the roster and the beacon): the copy reaches the owner's release.
	tree := int(h.GetRound())
	com := securesum.Committee(w.pub.Group(tree), w.pub.SumParams(tree).Committee, w.pub.Beacon, h, ss.GetPurpose(), ss.GetInstance())
	ss.CommitteeDigest = securesum.CommitteeDigest(com)
	return w.sumStream(t, tableUser, env)
}

// TestOwnerDealsOneValuePerName: tree 1's leaf sum asked again under 31
// other attempt numbers gets the value the gate made for the first (one
// fresh value, 31 remembered ones, one charge); with the gate's memory off
// (the negative control) every request draws again.
func TestOwnerDealsOneValuePerName(t *testing.T) {
	nw := newOwnerWorldFor(t, newtonTestConfig(2, 4), 0)
	announce, leaves := nw.announce(t, nw.pub, "s"), nw.sumStart(t, 1, -1)
	for _, forget := range []bool{false, true} {
		cfg := nw.ownerConfig()
		fresh, remembered := 0, 0
		cfg.OnGate = func(g *release.Values) {
			g.Forget = forget
			g.Observe = func(_ release.Name, f bool) {
				if f {
					fresh++
				} else {
					remembered++
				}
			}
		}
		o, err := NewOwner(nw.self, nopPoster{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t0 := handClock().Now()
		for a := uint32(0); a < 32; a++ {
			in := leaves
			if a > 0 {
				in = resumed(t, nw, leaves, func(h *wire.Header, _ *wire.SumStart) { h.Attempt = a })
			}
			if a == 0 {
				if _, err := engine.Step(o, t0, announce); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := engine.Step(o, t0, in); err != nil {
				t.Fatalf("attempt %d: %v", a, err)
			}
		}
		o.Close()
		switch {
		case !forget && (fresh != 1 || remembered != 31):
			t.Fatalf("%d values made, %d remembered; want 1 and 31", fresh, remembered)
		case forget && fresh != 32:
			t.Fatalf("negative control: %d values made for 32 requests without memory", fresh)
		}
		if s := cfg.Ledger.Spent(); !forget && s != cfg.Ledger.(*protocol.MemLedger).KeySpent(newtonLedgerKey("s")) {
			t.Fatalf("spent %v beyond the session's one charge", s)
		}
	}
}

// TestOwnerAsksNoMoreForARefusedConfiguration: an owner that asked for the
// configuration and refused the answer (its limit) does not ask again when
// the retry timer fires: the user would send the same bytes.
func TestOwnerAsksNoMoreForARefusedConfiguration(t *testing.T) {
	w := newOwnerWorld(t)
	cfgB := w.configBytes(t, w.pub, w.pub.Session, 7)
	head := w.configHeadMsg(t, cfgB, len(w.pub.Roster), protocol.TreeFanout)
	timer := engine.TimerFired{Name: timerConfig}
	for _, refuse := range []bool{true, false} {
		cfg := w.ownerConfig()
		cfg.MaxEpsilon = 0.01
		o, err := NewOwner(w.self, nopPoster{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t0 := handClock().Now()
		engine.Step(o, t0, head)
		engine.Step(o, t0, timer)
		if refuse {
			if _, err := engine.Step(o, t0, engine.Message{From: tableUser, Protocol: wire.ProtoFedShamir, Data: cfgB}); !errors.Is(err, protocol.ErrBadConfig) {
				t.Fatalf("answer: %v, want refused", err)
			}
		}
		effs, _ := engine.Step(o, t0, timer)
		o.Close()
		asked := slices.ContainsFunc(effs, func(e engine.Effect) bool { _, ok := e.(engine.Send); return ok })
		if asked == refuse {
			t.Fatalf("refused answer %v: asked again %v (effects %v)", refuse, asked, effs)
		}
	}
}

// TestSessionCapAuto: an owner with SessionCapAuto and no cap of its own
// caps a joined session at the plan's own cost (the Newton charge), so no
// charge beyond the plan can be made; with a cap of its own it keeps it.
func TestSessionCapAuto(t *testing.T) {
	nw := newOwnerWorldFor(t, newtonTestConfig(2, 4), 0)
	for _, c := range []struct {
		own  float64
		want func(worst float64) float64
	}{{0, func(w float64) float64 { return w }}, {50, func(float64) float64 { return 50 }}} {
		cfg := nw.ownerConfig()
		cfg.SessionMaxEpsilon, cfg.SessionCapAuto = c.own, true
		o, err := NewOwner(nw.self, nopPoster{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := engine.Step(o, handClock().Now(), nw.announce(t, nw.pub, "s")); err != nil {
			t.Fatal(err)
		}
		m, err := nw.pub.newtonRelease()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := o.life.Values.SessionMax, c.want(m.Epsilon()); got != want || !(got > 0) {
			t.Errorf("own cap %v: the session's cap is %v, want %v", c.own, got, want)
		}
		o.Close()
	}
}
