package conformance

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/pfds"
)

// Cluster is a started network of Agents()+2 peers: the agents, then the
// announcer, then an attacker.
type Cluster interface {
	Transport(i int) protocol.Transport
	Clock(i int) protocol.Clock
	Poster(i int) protocol.Poster
	Kill(i int)
	// RunUntil advances the network (virtual or real time) until cond
	// holds or max elapses.
	RunUntil(cond func() bool, max time.Duration) error
}

// Settler is implemented by clusters whose pubsub needs time to form a
// mesh (gossipsub): Settle returns once the announcer sees every other peer
// on the topic. The suite calls it after every peer joined.
type Settler interface {
	Settle(t *testing.T, topic string, peers int)
}

// Harness starts clusters.
type Harness interface {
	Start(t *testing.T, agents int) Cluster
}

// Subtests is the suite.
var Subtests = []struct {
	Name string
	Run  func(*testing.T, Harness)
}{
	{"EqualsReference", testEqualsReference},
	{"KilledAgent", testKilledAgent},
	{"GarbageMessages", testGarbage},
	{"DuplicateShares", testDuplicates},
}

const (
	agents    = 6
	seed      = 20261123
	session   = "pfds-conformance"
	treeWait  = 2 * time.Second
	dataWait  = 2 * time.Second
	runBudget = 30 * time.Second
)

// world is the data, parameters and the oracle's result.
type world struct {
	dom    *bp.Domain
	schema string
	locals []bp.Local
	params bp.Params
	ref    []bp.Shared
}

func newWorld(t *testing.T) *world {
	d, err := dataset.Adult()
	if err != nil {
		t.Fatal(err)
	}
	d, _ = d.Shuffle(seed).Split(1800)
	dom, err := bp.NewDomain(d)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := bp.NonIID(dom, d.X, agents, 0, seed)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{dom: dom, schema: d.Schema.Digest()}
	for _, idx := range parts {
		var l bp.Local
		for _, k := range idx {
			l.X, l.Y = append(l.X, d.X[k]), append(l.Y, d.Y[k])
		}
		w.locals = append(w.locals, l)
	}
	w.params = bp.DefaultParams()
	w.params.HMax, w.params.MaxLeaves = 5, 256
	if w.ref, err = bp.Simulate(dom, w.locals, w.params, bp.Full, seed); err != nil {
		t.Fatal(err)
	}
	return w
}

func peerName(i int) protocol.PeerID { return protocol.PeerID(fmt.Sprintf("agent-%02d", i)) }

// run is a started session.
type run struct {
	c       Cluster
	ids     []protocol.PeerID
	drivers []*pfds.Driver
	ledgers []*protocol.MemLedger
	ann     []byte
}

func start(t *testing.T, h Harness, w *world) *run {
	c := h.Start(t, agents)
	r := &run{c: c}
	for i := 0; i < agents; i++ {
		r.ids = append(r.ids, c.Transport(i).ID())
	}
	announcer := c.Transport(agents).ID()
	// The announcer joins first so that every agent that joins later finds
	// it subscribed and grafts it into its gossipsub mesh at once.
	for _, i := range []int{agents, agents + 1} {
		if err := c.Transport(i).Join(pfds.Topic); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < agents; i++ {
		led := protocol.NewMemLedger(10)
		a, err := pfds.NewAgent(pfds.Config{ID: r.ids[i], Announcer: announcer, Domain: w.dom, Schema: w.schema,
			Data: w.locals[i], Ledger: led, Rand: bp.AgentRand(seed, i),
			Log: hclog.New(&hclog.LoggerOptions{Name: "pfds", Output: testWriter{t}, Level: hclog.Warn}).With("agent", i)})
		if err != nil {
			t.Fatal(err)
		}
		d, err := pfds.NewDriver(a, c.Transport(i), c.Clock(i), c.Poster(i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
		r.drivers, r.ledgers = append(r.drivers, d), append(r.ledgers, led)
	}
	if st, ok := c.(Settler); ok {
		st.Settle(t, pfds.Topic, agents+1)
	}
	r.ann = pfds.EncodeAnnounce(announcer, &pfds.Announce{Session: session, Params: w.params, Learner: bp.LogReg,
		SchemaDigest: w.schema, Roster: r.ids, TreeTimeout: uint32(treeWait.Milliseconds()), DataTimeout: uint32(dataWait.Milliseconds())})
	return r
}

func (r *run) announce(t *testing.T) {
	if err := r.c.Transport(agents).Publish(context.Background(), pfds.Topic, r.ann); err != nil {
		t.Fatal(err)
	}
}

func (r *run) state(i int) (s pfds.State) {
	r.drivers[i].Agent(func(a *pfds.Agent) { s = a.State() })
	return s
}

func (r *run) waitAll(t *testing.T, live []int, want pfds.State) {
	t.Helper()
	err := r.c.RunUntil(func() bool {
		for _, i := range live {
			// States only move forward: Idle, Trees, Data, Done.
			if s := r.state(i); s < want || s == pfds.StateFailed {
				return false
			}
		}
		return true
	}, runBudget)
	if err != nil {
		for _, i := range live {
			t.Logf("agent %d in %s", i, r.state(i))
		}
		t.Fatalf("agents did not reach %s: %v", want, err)
	}
}

// checkAgainst compares what agent i received from author j with the
// oracle's share j, and its ledger with the session's epsilon.
func (r *run) checkShares(t *testing.T, w *world, i int, authors []int, labels func(j int, s bp.Shared) []int) {
	t.Helper()
	r.drivers[i].Agent(func(a *pfds.Agent) {
		shares := a.Shares()
		if len(shares) != len(authors) {
			t.Fatalf("agent %d has %d shares, want %d (from %v; dropped %v)", i, len(shares), len(authors), a.Authors(), a.Dropped)
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
	if got := r.ledgers[i].Spent(); got > w.params.Eps || got < w.params.Eps*(1-1e-9) {
		t.Errorf("agent %d: ledger spent %v, want %v", i, got, w.params.Eps)
	}
}

func all() []int {
	out := make([]int, agents)
	for i := range out {
		out[i] = i
	}
	return out
}

func oracleLabels(_ int, s bp.Shared) []int { return s.Data.Labels }

func testEqualsReference(t *testing.T, h Harness) {
	w := newWorld(t)
	r := start(t, h, w)
	r.announce(t)
	r.waitAll(t, all(), pfds.StateDone)
	for i := 0; i < agents; i++ {
		r.checkShares(t, w, i, all(), oracleLabels)
	}
}

func testKilledAgent(t *testing.T, h Harness) {
	w := newWorld(t)
	r := start(t, h, w)
	const dead = 2
	r.c.Kill(dead)
	r.announce(t)
	var live []int
	var liveTrees []*bp.Tree
	for i := 0; i < agents; i++ {
		if i != dead {
			live = append(live, i)
			liveTrees = append(liveTrees, w.ref[i].Tree)
		}
	}
	r.waitAll(t, live, pfds.StateDone)
	// Trees, counts and seeds do not depend on the others; labels are the
	// vote of the live agents' trees.
	relabel := func(j int, s bp.Shared) []int { return bp.Vote(w.dom, liveTrees, s.Rows) }
	for _, i := range live {
		r.checkShares(t, w, i, live, relabel)
	}
	if got := r.ledgers[dead].Spent(); got != 0 {
		t.Errorf("killed agent spent %v", got)
	}
}

func testGarbage(t *testing.T, h Harness) {
	w := newWorld(t)
	r := start(t, h, w)
	mallory := r.c.Transport(agents + 1)
	ctx := context.Background()
	r.announce(t)
	// Let the announcement land, then inject before the trees arrive.
	r.waitAll(t, all(), pfds.StateTrees)
	tree := bp.AppendTree(nil, w.ref[1].Tree, w.dom)
	for _, msg := range [][]byte{
		[]byte("garbage"),
		{pfds.Version, pfds.KindTree, 0xff, 0xff, 0xff, 0xff, 0xff},
		pfds.EncodeTree(pfds.Header{Session: session, Author: r.ids[0]}, tree),                              // spoofed author
		pfds.EncodeTree(pfds.Header{Session: session, Author: mallory.ID()}, tree),                          // not in the roster
		pfds.EncodeTree(pfds.Header{Session: session, Author: mallory.ID()}, tree[:3]),                      // truncated
		pfds.EncodeAnnounce(mallory.ID(), &pfds.Announce{Session: "evil", Params: w.params, Roster: r.ids}), // not the announcer
	} {
		if err := mallory.Publish(ctx, pfds.Topic, msg); err != nil {
			t.Fatal(err)
		}
	}
	r.waitAll(t, all(), pfds.StateDone)
	for i := 0; i < agents; i++ {
		r.checkShares(t, w, i, all(), oracleLabels)
	}
}

func testDuplicates(t *testing.T, h Harness) {
	w := newWorld(t)
	r := start(t, h, w)
	ctx := context.Background()
	r.announce(t)
	// Once everyone holds every tree, agent 0 publishes a second, different
	// tree and the announcer replays the announcement: both are ignored.
	// (Before that point a transport may reorder the two trees, and then the
	// first to arrive wins; that is allowed.)
	r.waitAll(t, all(), pfds.StateData)
	other := bp.MakeTree(w.dom, w.locals[0].X, w.locals[0].Y, w.params, bp.AgentRand(seed+1, 0))
	zero := r.c.Transport(0)
	if err := zero.Publish(ctx, pfds.Topic, pfds.EncodeTree(pfds.Header{Session: session, Author: r.ids[0]}, bp.AppendTree(nil, other, w.dom))); err != nil {
		t.Fatal(err)
	}
	if err := r.c.Transport(agents).Publish(ctx, pfds.Topic, r.ann); err != nil {
		t.Fatal(err)
	}
	r.waitAll(t, all(), pfds.StateDone)
	// A second data share with flipped labels, after the first landed.
	ds := *w.ref[0].Data
	ds.Labels = append([]int(nil), ds.Labels...)
	for k := range ds.Labels {
		ds.Labels[k] = 1 - ds.Labels[k]
	}
	if err := zero.Publish(ctx, pfds.Topic, pfds.EncodeData(pfds.Header{Session: session, Author: r.ids[0]}, &ds)); err != nil {
		t.Fatal(err)
	}
	deadline := 0
	_ = r.c.RunUntil(func() bool { deadline++; return deadline > 10000 }, time.Second)
	for i := 0; i < agents; i++ {
		r.checkShares(t, w, i, all(), oracleLabels)
	}
	// Agent 0's ledger refuses the same session twice.
	if err := r.ledgers[0].Spend(session, 0, 0, w.params.Eps); err == nil {
		t.Error("ledger accepted the session twice")
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(b))
	return len(b), nil
}
