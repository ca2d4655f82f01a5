package conformance

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/pfds"
	"github.com/ppboost/ppboost/protocol/role"
)

// The PFDS session's subtests (protocol/pfds: the run equals the
// one-process reference, a killed agent, garbage and spoofed messages,
// duplicate shares). A transport opts in by giving its harness a StartPFDS
// (memnet in protocol/memnet/pfds_test.go, libp2p hosts in
// node/pfds_conformance_test.go).

// PFDSCluster is a started network of agents+2 peers: the agents, then the
// announcer, then an attacker.
type PFDSCluster interface {
	Transport(i int) protocol.Transport
	// Clock is peer i's clock; the suite starts agents with pfds.Start,
	// which chooses their poster from the transport (role.NewPost).
	Clock(i int) protocol.Clock
	Kill(i int)
	// RunUntil advances the network (virtual or real time) until cond
	// holds or max elapses.
	RunUntil(cond func() bool, max time.Duration) error
}

// PFDSSettler is implemented by clusters whose pubsub needs time to form a
// mesh (gossipsub): Settle returns once the announcer sees every other peer
// on the topic. The suite calls it after every peer joined.
type PFDSSettler interface {
	Settle(t *testing.T, topic string, peers int)
}

// PFDSHarness starts PFDS clusters.
type PFDSHarness interface {
	StartPFDS(t *testing.T, agents int) PFDSCluster
}

// PFDSSubtests is the PFDS suite.
var PFDSSubtests = []struct {
	Name string
	Run  func(*testing.T, PFDSHarness)
}{
	{"EqualsReference", pfdsPlay(false, testPFDSEqualsReference)},
	{"KilledAgent", pfdsPlay(false, testPFDSKilledAgent)},
	{"GarbageMessages", pfdsPlay(false, testPFDSGarbage)},
	{"DuplicateShares", pfdsPlay(false, testPFDSDuplicates)},
	// The same plays in PFDS-cv sessions (published leaf counts, shares
	// regenerated from published values), and an agent restarted after
	// its charge.
	{"CV/EqualsReference", pfdsPlay(true, testPFDSEqualsReference)},
	{"CV/KilledAgent", pfdsPlay(true, testPFDSKilledAgent)},
	{"CV/GarbageMessages", pfdsPlay(true, testPFDSGarbage)},
	{"CV/DuplicateShares", pfdsPlay(true, testPFDSDuplicates)},
	{"CV/RestartedAgent", pfdsPlay(true, testPFDSRestarted)},
}

// pfdsPlay runs play in a world of the paper's PFDS, or of PFDS-cv.
func pfdsPlay(cv bool, play func(*testing.T, PFDSHarness, *pfdsWorld)) func(*testing.T, PFDSHarness) {
	return func(t *testing.T, h PFDSHarness) { play(t, h, newPFDSWorld(t, cv)) }
}

// RunPFDS runs PFDSSubtests against h.
func RunPFDS(t *testing.T, h PFDSHarness) {
	for _, s := range PFDSSubtests {
		t.Run(s.Name, func(t *testing.T) { s.Run(t, h) })
	}
}

const (
	pfdsAgents    = 6
	pfdsSeed      = 20261123
	pfdsSession   = "pfds-conformance"
	pfdsTreeWait  = 2 * time.Second
	pfdsDataWait  = 2 * time.Second
	pfdsRunBudget = 30 * time.Second
)

// pfdsWorld is the data, parameters and the oracle's result.
type pfdsWorld struct {
	dom    *bp.Domain
	schema string
	locals []bp.Local
	params bp.Params
	cv     *bp.VariantParams // PFDS-cv: params are pfds.VariantParams(*cv)
	ref    []bp.Shared
}

// eps is what one agent's session charges (less the geometric
// mechanism's rounding).
func (w *pfdsWorld) eps() float64 { return w.params.Eps }

// tree is a tree agent i could publish from rng r: the world's kind.
func (w *pfdsWorld) tree(i int, r *rand.Rand) *bp.Tree {
	if w.cv != nil {
		t, err := bp.MakeVariantTree(w.dom, w.locals[i].X, w.locals[i].Y, *w.cv, r)
		if err != nil {
			panic(err)
		}
		return t
	}
	return bp.MakeTree(w.dom, w.locals[i].X, w.locals[i].Y, w.params, r)
}

// treeMsg encodes t as author's tree share in the world's session kind.
func (w *pfdsWorld) treeMsg(author protocol.PeerID, t *bp.Tree) []byte {
	var counts []int64
	if w.cv != nil {
		var err error
		if counts, err = bp.LeafCounts(t, w.dom.Classes); err != nil {
			panic(err)
		}
	}
	return pfds.EncodeTree(pfds.Header{Session: pfdsSession, Author: author}, bp.AppendTree(nil, t, w.dom), counts)
}

// vote labels rows with the trees as the world's agents do.
func (w *pfdsWorld) vote(trees []*bp.Tree, s bp.Shared) []int {
	if w.cv != nil {
		return bp.CountVote(w.dom, trees, s.Rows, *w.cv, s.Data.Seed)
	}
	return bp.Vote(w.dom, trees, s.Rows)
}

func newPFDSWorld(t *testing.T, cv bool) *pfdsWorld {
	d, err := dataset.Adult()
	if err != nil {
		t.Fatal(err)
	}
	d, _ = d.Shuffle(pfdsSeed).Split(1800)
	dom, err := bp.NewDomain(d)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := bp.NonIID(dom, d.X, pfdsAgents, 0, pfdsSeed)
	if err != nil {
		t.Fatal(err)
	}
	w := &pfdsWorld{dom: dom, schema: d.Schema.Digest()}
	for _, idx := range parts {
		var l bp.Local
		for _, k := range idx {
			l.X, l.Y = append(l.X, d.X[k]), append(l.Y, d.Y[k])
		}
		w.locals = append(w.locals, l)
	}
	w.params = bp.DefaultParams()
	w.params.HMax, w.params.MaxLeaves = 5, 256
	if cv {
		v := bp.DefaultVariant()
		v.HMax, v.MaxLeaves, v.Threshold = 5, 256, 2
		w.cv, w.params = &v, pfds.VariantParams(v)
		w.ref, err = bp.SimulateVariant(dom, w.locals, v, pfdsSeed)
	} else {
		w.ref, err = bp.Simulate(dom, w.locals, w.params, bp.Full, pfdsSeed)
	}
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// pfdsRun is a started session.
type pfdsRun struct {
	c       PFDSCluster
	ids     []protocol.PeerID
	drivers []*pfds.Driver
	ledgers []*protocol.MemLedger
	ann     []byte
}

func startPFDS(t *testing.T, h PFDSHarness, w *pfdsWorld) *pfdsRun {
	c := h.StartPFDS(t, pfdsAgents)
	r := &pfdsRun{c: c}
	for i := 0; i < pfdsAgents; i++ {
		r.ids = append(r.ids, c.Transport(i).ID())
	}
	announcer := c.Transport(pfdsAgents).ID()
	// The announcer joins first so that every agent that joins later finds
	// it subscribed and grafts it into its gossipsub mesh at once.
	for _, i := range []int{pfdsAgents, pfdsAgents + 1} {
		if err := c.Transport(i).Join(pfds.Topic); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < pfdsAgents; i++ {
		led := protocol.NewMemLedger(10)
		a, err := pfds.NewAgent(pfds.Config{ID: r.ids[i], Announcer: announcer, Domain: w.dom, Schema: w.schema,
			Data: w.locals[i], Ledger: led, Rand: bp.AgentRand(pfdsSeed, i),
			Log: hclog.New(&hclog.LoggerOptions{Name: "pfds", Output: tWriter{t}, Level: hclog.Warn}).With("agent", i)})
		if err != nil {
			t.Fatal(err)
		}
		d, err := pfds.Start(c.Transport(i), a, nil, role.WithClock(c.Clock(i)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
		r.drivers, r.ledgers = append(r.drivers, d), append(r.ledgers, led)
	}
	if st, ok := c.(PFDSSettler); ok {
		st.Settle(t, pfds.Topic, pfdsAgents+1)
	}
	a := &pfds.Announce{Session: pfdsSession, Params: w.params, CV: w.cv, Learner: bp.LogReg,
		SchemaDigest: w.schema, Roster: r.ids, TreeTimeout: uint32(pfdsTreeWait.Milliseconds()), DataTimeout: uint32(pfdsDataWait.Milliseconds())}
	// The announcer relays where the agents listen, as `pfds announce`
	// does (a transport that knows no addresses relays none).
	if look, ok := c.Transport(pfdsAgents).(protocol.AddressLookup); ok {
		a.RosterAddrs = pfds.RosterAddrsOf(look, r.ids)
	}
	r.ann = pfds.EncodeAnnounce(announcer, a)
	return r
}

func (r *pfdsRun) announce(t *testing.T) {
	if err := r.c.Transport(pfdsAgents).Publish(context.Background(), pfds.Topic, r.ann); err != nil {
		t.Fatal(err)
	}
}

func (r *pfdsRun) state(i int) (s pfds.State) {
	r.drivers[i].Agent(func(a *pfds.Agent) { s = a.State() })
	return s
}

func (r *pfdsRun) waitAll(t *testing.T, live []int, want pfds.State) {
	t.Helper()
	err := r.c.RunUntil(func() bool {
		for _, i := range live {
			// States only move forward: Idle, Trees, Data, Done.
			if s := r.state(i); s < want || s == pfds.StateFailed {
				return false
			}
		}
		return true
	}, pfdsRunBudget)
	if err != nil {
		for _, i := range live {
			t.Logf("agent %d in %s", i, r.state(i))
		}
		t.Fatalf("agents did not reach %s: %v", want, err)
	}
}

// checkAgainst compares what agent i received from author j with the
// oracle's share j, and its ledger with the session's epsilon.
func (r *pfdsRun) checkShares(t *testing.T, w *pfdsWorld, i int, authors []int, labels func(j int, s bp.Shared) []int) {
	t.Helper()
	r.drivers[i].Agent(func(a *pfds.Agent) {
		shares := a.Shares()
		if len(shares) != len(authors) {
			t.Fatalf("agent %d has %d shares, want %d (from %v; dropped %v)", i, len(shares), len(authors), a.Authors(), a.Dropped.String())
		}
		for k, j := range authors {
			s, ref := shares[k], w.ref[j]
			if !reflect.DeepEqual(s.Tree, ref.Tree) {
				t.Errorf("agent %d: tree of %d differs from the oracle", i, j)
			}
			if !reflect.DeepEqual(s.Data.Counts, ref.Data.Counts) || s.Data.Seed != ref.Data.Seed {
				t.Errorf("agent %d: counts or seed of %d differ from the oracle", i, j)
			}
			if want := labels(j, ref); !reflect.DeepEqual(s.Data.Labels, want) {
				t.Errorf("agent %d: labels of %d differ from the expected vote", i, j)
			}
			if !reflect.DeepEqual(s.Rows, ref.Rows) {
				t.Errorf("agent %d: regenerated rows of %d differ", i, j)
			}
		}
	})
	// The charge is the agent's mechanisms' own (pfds agent AgentRelease):
	// Eps, less the geometric mechanism's rounding (below 1e-9 of it).
	if got := r.ledgers[i].Spent(); got > w.eps() || got < w.eps()*(1-1e-9) {
		t.Errorf("agent %d: ledger spent %v, want %v", i, got, w.eps())
	}
}

func pfdsAll() []int {
	out := make([]int, pfdsAgents)
	for i := range out {
		out[i] = i
	}
	return out
}

func pfdsOracleLabels(_ int, s bp.Shared) []int { return s.Data.Labels }

func testPFDSEqualsReference(t *testing.T, h PFDSHarness, w *pfdsWorld) {
	r := startPFDS(t, h, w)
	r.announce(t)
	r.waitAll(t, pfdsAll(), pfds.StateDone)
	for i := 0; i < pfdsAgents; i++ {
		r.checkShares(t, w, i, pfdsAll(), pfdsOracleLabels)
	}
}

func testPFDSKilledAgent(t *testing.T, h PFDSHarness, w *pfdsWorld) {
	r := startPFDS(t, h, w)
	const dead = 2
	r.c.Kill(dead)
	r.announce(t)
	var live []int
	var liveTrees []*bp.Tree
	for i := 0; i < pfdsAgents; i++ {
		if i != dead {
			live = append(live, i)
			liveTrees = append(liveTrees, w.ref[i].Tree)
		}
	}
	r.waitAll(t, live, pfds.StateDone)
	// Trees, counts and seeds do not depend on the others; labels are the
	// vote of the live agents' trees.
	relabel := func(j int, s bp.Shared) []int { return w.vote(liveTrees, s) }
	for _, i := range live {
		r.checkShares(t, w, i, live, relabel)
	}
	if got := r.ledgers[dead].Spent(); got != 0 {
		t.Errorf("killed agent spent %v", got)
	}
}

func testPFDSGarbage(t *testing.T, h PFDSHarness, w *pfdsWorld) {
	r := startPFDS(t, h, w)
	mallory := r.c.Transport(pfdsAgents + 1)
	ctx := context.Background()
	r.announce(t)
	// Let the announcement land, then inject before the trees arrive.
	r.waitAll(t, pfdsAll(), pfds.StateTrees)
	tree := bp.AppendTree(nil, w.ref[1].Tree, w.dom)
	// A share of the other kind: a PFDS tree in a PFDS-cv session comes
	// without its counts, a PFDS-cv tree in a PFDS session with them.
	other := pfds.EncodeTree(pfds.Header{Session: pfdsSession, Author: mallory.ID()}, tree, []int64{1, 2})
	if w.cv != nil {
		other = pfds.EncodeTree(pfds.Header{Session: pfdsSession, Author: mallory.ID()}, tree, nil)
	}
	for _, msg := range [][]byte{
		other,
		[]byte("garbage"),
		{pfds.Version, pfds.KindTree, 0xff, 0xff, 0xff, 0xff, 0xff},
		pfds.EncodeTree(pfds.Header{Session: pfdsSession, Author: r.ids[0]}, tree, nil),                     // spoofed author
		pfds.EncodeTree(pfds.Header{Session: pfdsSession, Author: mallory.ID()}, tree, nil),                 // not in the roster
		pfds.EncodeTree(pfds.Header{Session: pfdsSession, Author: mallory.ID()}, tree[:3], nil),             // truncated
		pfds.EncodeAnnounce(mallory.ID(), &pfds.Announce{Session: "evil", Params: w.params, Roster: r.ids}), // not the announcer
	} {
		if err := mallory.Publish(ctx, pfds.Topic, msg); err != nil {
			t.Fatal(err)
		}
	}
	r.waitAll(t, pfdsAll(), pfds.StateDone)
	for i := 0; i < pfdsAgents; i++ {
		r.checkShares(t, w, i, pfdsAll(), pfdsOracleLabels)
	}
}

func testPFDSDuplicates(t *testing.T, h PFDSHarness, w *pfdsWorld) {
	r := startPFDS(t, h, w)
	ctx := context.Background()
	r.announce(t)
	// Once everyone holds every tree, agent 0 publishes a second, different
	// tree and the announcer replays the announcement: both are ignored.
	// (Before that point a transport may reorder the two trees, and then the
	// first to arrive wins; that is allowed.)
	r.waitAll(t, pfdsAll(), pfds.StateData)
	other := w.tree(0, bp.AgentRand(pfdsSeed+1, 0))
	zero := r.c.Transport(0)
	if err := zero.Publish(ctx, pfds.Topic, w.treeMsg(r.ids[0], other)); err != nil {
		t.Fatal(err)
	}
	if err := r.c.Transport(pfdsAgents).Publish(ctx, pfds.Topic, r.ann); err != nil {
		t.Fatal(err)
	}
	r.waitAll(t, pfdsAll(), pfds.StateDone)
	// A second data share with flipped labels, after the first landed.
	ds := *w.ref[0].Data
	ds.Labels = append([]int(nil), ds.Labels...)
	for k := range ds.Labels {
		ds.Labels[k] = 1 - ds.Labels[k]
	}
	if err := zero.Publish(ctx, pfds.Topic, pfds.EncodeData(pfds.Header{Session: pfdsSession, Author: r.ids[0]}, &ds)); err != nil {
		t.Fatal(err)
	}
	deadline := 0
	_ = r.c.RunUntil(func() bool { deadline++; return deadline > 10000 }, time.Second)
	for i := 0; i < pfdsAgents; i++ {
		r.checkShares(t, w, i, pfdsAll(), pfdsOracleLabels)
	}
	// Agent 0's ledger refuses the same session twice.
	if err := r.ledgers[0].Spend(pfdsSession, 0, 0, w.params.Eps); err == nil {
		t.Error("ledger accepted the session twice")
	}
}

// testPFDSRestarted plays an agent that crashed after its charge and came
// back: a fresh agent over the ledger that already holds the session (what
// a restart finds). It refuses the session rather than publish a second
// tree with fresh noise (the budget would be spent twice), and the others
// finish without it, their labels the vote of the trees that came.
func testPFDSRestarted(t *testing.T, h PFDSHarness, w *pfdsWorld) {
	r := startPFDS(t, h, w)
	const back = 3
	if err := r.ledgers[back].Spend(pfdsSession, 0, 0, w.eps()); err != nil {
		t.Fatal(err)
	}
	r.announce(t)
	var live []int
	var liveTrees []*bp.Tree
	for i := 0; i < pfdsAgents; i++ {
		if i != back {
			live = append(live, i)
			liveTrees = append(liveTrees, w.ref[i].Tree)
		}
	}
	err := r.c.RunUntil(func() bool { return r.state(back) == pfds.StateFailed }, pfdsRunBudget)
	if err != nil {
		t.Fatalf("restarted agent in %s, want failed: %v", r.state(back), err)
	}
	r.drivers[back].Agent(func(a *pfds.Agent) {
		if !a.Refused || !errors.Is(a.Err, protocol.ErrAlreadyContributed) {
			t.Errorf("restarted agent: refused %v, err %v; want a refusal for the session it already paid", a.Refused, a.Err)
		}
		if tr, ds := a.Own(); tr != nil || ds != nil {
			t.Error("restarted agent made a share")
		}
	})
	r.waitAll(t, live, pfds.StateDone)
	for _, i := range live {
		r.checkShares(t, w, i, live, func(j int, s bp.Shared) []int { return w.vote(liveTrees, s) })
	}
	if got := r.ledgers[back].Spent(); got != w.eps() {
		t.Errorf("restarted agent's ledger spent %v, want the one charge %v", got, w.eps())
	}
}
