package session

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// A hand-driven world: every message is queued and delivered in order by
// flush, a test may drop or hold any of them, and time moves only when the
// test advances the manual clock.

type msg struct {
	at       time.Time // delivery time
	from, to protocol.PeerID
	topic    string
	proto    string
	data     []byte
}

func (m msg) env() *wire.Envelope {
	e, _ := wire.Unmarshal(m.data, wire.MaxControlBytes)
	return e
}

type world struct {
	t        *testing.T
	clock    *protocol.ManualClock
	q        []msg
	handlers map[protocol.PeerID]func(protocol.Message)
	subs     map[string][]protocol.PeerID
	drop     func(msg) bool // lose a message
	paused   map[protocol.PeerID][]msg
	dead     map[protocol.PeerID]bool
	log      []msg // everything delivered
}

func newWorld(t *testing.T) *world {
	return &world{t: t, clock: protocol.NewManualClock(time.Unix(1_700_000_000, 0)), handlers: map[protocol.PeerID]func(protocol.Message){},
		subs: map[string][]protocol.PeerID{}, paused: map[protocol.PeerID][]msg{}, dead: map[protocol.PeerID]bool{}}
}

// transport is a peer's Transport and Poster in the world.
type transport struct {
	w    *world
	self protocol.PeerID
}

func (p transport) ID() protocol.PeerID { return p.self }
func (p transport) Join(topic string) error {
	p.w.subs[topic] = append(p.w.subs[topic], p.self)
	return nil
}
func (p transport) Publish(_ context.Context, topic string, data []byte) error {
	p.publish(topic, data)
	return nil
}
func (p transport) Send(_ context.Context, to protocol.PeerID, proto string, data []byte) error {
	p.w.q = append(p.w.q, msg{at: p.w.clock.Now().Add(latency), from: p.self, to: to, proto: proto, data: data})
	return nil
}

// latency is every message's delivery delay.
const latency = time.Millisecond

func (p transport) SetHandler(h func(protocol.Message)) { p.w.handlers[p.self] = h }
func (p transport) Close() error                        { return nil }

// Poster side.
func (p transport) publish(topic string, data []byte) {
	for _, s := range p.w.subs[topic] {
		if s != p.self {
			p.w.q = append(p.w.q, msg{at: p.w.clock.Now().Add(latency), from: p.self, to: s, topic: topic, data: data})
		}
	}
}

type poster struct{ transport }

func (p poster) Send(to protocol.PeerID, proto string, data []byte) {
	p.transport.Send(context.Background(), to, proto, data)
}
func (p poster) Publish(topic string, data []byte) { p.publish(topic, data) }

// flush delivers the queued messages that are due.
func (w *world) flush() {
	for len(w.q) > 0 && !w.q[0].at.After(w.clock.Now()) {
		m := w.q[0]
		w.q = w.q[1:]
		if w.dead[m.to] || w.dead[m.from] || (w.drop != nil && w.drop(m)) {
			continue
		}
		if held, ok := w.paused[m.to]; ok {
			w.paused[m.to] = append(held, m)
			continue
		}
		w.log = append(w.log, m)
		if h := w.handlers[m.to]; h != nil {
			h(protocol.Message{From: m.from, Topic: m.topic, Protocol: m.proto, Data: m.data})
		}
	}
}

// advance moves time forward by d, delivering messages and firing timers
// in time order.
func (w *world) advance(d time.Duration) {
	limit := w.clock.Now().Add(d)
	for {
		w.flush()
		at, due := w.clock.NextDue(limit)
		var msgAt time.Time
		if len(w.q) > 0 {
			msgAt = w.q[0].at
		}
		switch {
		case len(w.q) > 0 && !msgAt.After(limit) && (!due || !at.Before(msgAt)):
			w.clock.Set(msgAt)
		case due:
			w.clock.Set(at)
			w.clock.FireDue()
		default:
			w.clock.Set(limit)
			return
		}
	}
}

// pause holds a peer's inbound messages until resume.
func (w *world) pause(p protocol.PeerID) { w.paused[p] = nil }

func (w *world) resume(p protocol.PeerID) {
	held := w.paused[p]
	delete(w.paused, p)
	for i := range held {
		held[i].at = w.clock.Now()
	}
	w.q = append(held, w.q...)
	w.flush()
}

// count returns how many delivered messages match.
func (w *world) count(f func(msg, *wire.Envelope) bool) int {
	n := 0
	for _, m := range w.log {
		if e := m.env(); e != nil && f(m, e) {
			n++
		}
	}
	return n
}

// cluster is a user and owners in a world.
type cluster struct {
	w       *world
	cfg     boost.Config
	sum     securesum.Params
	timing  Timing
	data    boost.Data
	user    *User
	owners  []*Owner
	ids     []protocol.PeerID
	ledgers []*protocol.MemLedger
	done    bool
	open    bool // the user admits anyone (UserConfig.Admit nil)
	// userCfg, if set, changes the user's configuration before it starts.
	userCfg func(*UserConfig)
	model   *boost.Model
	err     error
	cps     []Checkpoint
}

const userID protocol.PeerID = "user"

// ownerBudget is the hand-driven owners' lifetime budget: room for a share
// and the err dealings of a few dozen attempts.
const ownerBudget = 40

func testTiming() Timing {
	return Timing{AnnounceInterval: 100 * time.Millisecond, JoinTimeout: 5 * time.Second, ShareTimeout: 2 * time.Second,
		IdleTimeout: time.Minute}
}

func newCluster(t *testing.T, owners int, mutate func(*boost.Config, *securesum.Params)) *cluster {
	t.Helper()
	cfg := boost.DefaultConfig()
	cfg.Learner, cfg.Mechanism, cfg.Alpha = boost.Stump, "none", boost.AlphaSecureSum
	cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = 2, 2, 5
	sum := securesum.DefaultParams()
	sum.Method, sum.Committee, sum.Timeout = securesum.Ring, 8, time.Second
	if mutate != nil {
		mutate(&cfg, &sum)
	}
	data, err := boost.Prepare(boost.DataSpec{Source: "synthetic", Owners: owners, SamplesPerOwner: 20, UserSamples: 300,
		TestSamples: 300, Seed: 5}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{w: newWorld(t), cfg: cfg, sum: sum, timing: testTiming(), data: data}
	for i := range data.Owners {
		id := protocol.PeerID(fmt.Sprintf("owner-%02d", i))
		c.ids = append(c.ids, id)
		// One share (1) and the err dealings of every attempt (1 each with
		// mechanism none).
		led := protocol.NewMemLedger(ownerBudget)
		c.ledgers = append(c.ledgers, led)
		idx := i
		o, err := NewOwner(id, poster{transport{c.w, id}}, OwnerConfig{User: userID, Data: data.Owners[i], Ledger: led,
			MaxEpsilon: 1, AllowNone: true, NoneCharge: 1,
			Noise:    func(r, a int) *rand.Rand { return boost.NoiseStream(cfg.Seed, r, a, idx) },
			ErrNoise: func(r, a int) *rand.Rand { return boost.ErrNoiseStream(cfg.Seed, r, a, idx) },
			SumRand:  rng.Derive(cfg.Seed, 9, uint64(i)), Clock: c.w.clock, Log: testLog(t, string(id))})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Attach(transport{c.w, id}); err != nil {
			t.Fatal(err)
		}
		c.owners = append(c.owners, o)
	}
	return c
}

func testLog(t *testing.T, name string) hclog.Logger {
	if !testing.Verbose() {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Debug, Output: tw{t}})
}

type tw struct{ t *testing.T }

func (w tw) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

// startUser attaches a data user (resuming from cp if set).
func (c *cluster) startUser(t *testing.T, resume *Checkpoint) {
	t.Helper()
	c.done, c.model, c.err = false, nil, nil
	// The hand-driven world's owners are known: a closed session, which
	// starts as soon as they all joined (no join window).
	known := map[protocol.PeerID]bool{}
	for _, id := range c.ids {
		known[id] = true
	}
	ucfg := UserConfig{Session: "hand", Boost: c.cfg, Sum: c.sum,
		Admit:  func(p protocol.PeerID) bool { return known[p] },
		Timing: c.timing, Own: c.data.User, Test: c.data.Test, ExpectedOwners: len(c.owners), Resume: resume,
		SumRand: rng.Derive(c.cfg.Seed, 8), Clock: c.w.clock, Log: testLog(t, "user"),
		Checkpoint: func(cp Checkpoint) { c.cps = append(c.cps, cloneCheckpoint(t, cp)) },
		OnDone:     func(m *boost.Model, err error) { c.done, c.model, c.err = true, m, err }}
	if c.open {
		ucfg.Admit = nil
	}
	if c.userCfg != nil {
		c.userCfg(&ucfg)
	}
	u, err := NewUser(userID, poster{transport{c.w, userID}}, ucfg)
	if err != nil {
		t.Fatal(err)
	}
	c.user = u
	if err := u.Attach(transport{c.w, userID}); err != nil {
		t.Fatal(err)
	}
}

// run advances time in steps until the user is done or limit passes.
func (c *cluster) run(limit time.Duration) {
	for end := c.w.clock.Now().Add(limit); !c.done && c.w.clock.Now().Before(end); {
		c.w.advance(100 * time.Millisecond)
	}
}

// ownersLeft reports whether every live owner has left the session.
func (c *cluster) ownersLeft() bool {
	for i, o := range c.owners {
		if st, _ := o.State(); st == OwnerJoined && !c.w.dead[c.ids[i]] {
			return false
		}
	}
	return true
}

func (c *cluster) releases() (n int) {
	for _, l := range c.ledgers {
		if l.Contributed("hand") {
			n++
		}
	}
	return n
}

func sameAsReference(t *testing.T, c *cluster) {
	t.Helper()
	ref, err := boost.Train(c.cfg, c.data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.model == nil || len(c.model.Rounds) != len(ref.Rounds) {
		t.Fatalf("model %v, reference has %d rounds", c.model, len(ref.Rounds))
	}
	for i := range ref.Rounds {
		if *ref.Rounds[i].Base.Stump != *c.model.Rounds[i].Base.Stump || ref.Rounds[i].Alpha-c.model.Rounds[i].Alpha > 1e-4 ||
			c.model.Rounds[i].Alpha-ref.Rounds[i].Alpha > 1e-4 {
			t.Fatalf("round %d: %+v alpha %v, reference %+v alpha %v", i+1, *c.model.Rounds[i].Base.Stump, c.model.Rounds[i].Alpha,
				*ref.Rounds[i].Base.Stump, ref.Rounds[i].Alpha)
		}
	}
}

// cloneCheckpoint keeps a checkpoint as node/ would write it: serialized at
// once (the live one shares the user's growing model).
func cloneCheckpoint(t *testing.T, cp Checkpoint) Checkpoint {
	b, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	var out Checkpoint
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// selectedIn are the owners the Select in e names: its indices resolved in
// the roster version it names, as the user's Roster chunks in the log
// carried it (nil if they are not there).
func (c *cluster) selectedIn(e *wire.Envelope) []string {
	s := e.GetSelect()
	var a rosterAssembly
	done := false
	for _, m := range c.w.log {
		if r := m.env().GetRoster(); m.from == userID && r != nil && r.GetVersion() == s.GetRosterVersion() && !done {
			done, _ = a.add(r, nil)
		}
	}
	if !done {
		sel, _ := selectedIDs(s, nil) // by id, or nil
		return sel
	}
	r := &Roster{Version: a.version}
	for _, ch := range a.chunks {
		for _, id := range ch.GetIds() {
			r.IDs = append(r.IDs, protocol.PeerID(id))
		}
	}
	sel, err := selectedIDs(s, r)
	if err != nil {
		panic(err)
	}
	return sel
}
