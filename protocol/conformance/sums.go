package conformance

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// sumParty is an owner that only takes part in secure sums: it starts its
// securesum.Party on every SumStart from the user with a fixed value.
type sumParty struct {
	loop  *engine.Driver // the party runs on it, as an owner node does
	peer  Peer
	user  protocol.PeerID
	party *securesum.Party
	value []float64

	mu     sync.Mutex
	roster []protocol.PeerID
	starts []*wire.SumStart
	heads  []*wire.Header // of starts
	// victim, if set, says whether this party dies once it has received
	// every dealer's Shamir share (just before handling the last one), so
	// that it dealt and holds shares but never reveals a partial sum.
	victim func(h *wire.Header, start *wire.SumStart) bool
	shares int
	kill   func(protocol.PeerID)
	clock  protocol.Clock
	grace  time.Duration
}

func (p *sumParty) handle(m protocol.Message) {
	env, err := wire.Unmarshal(m.Data, wire.MaxControlBytes)
	if err != nil {
		return
	}
	switch {
	case env.GetSumStart() != nil || env.GetSumResult() != nil:
		// The coordinator sends them on the sum stream; a deviant user
		// may publish a SumStart on the control topic, which an owner
		// takes from the user too.
		if s := env.GetSumStart(); s != nil && m.From == p.user {
			p.mu.Lock()
			p.starts = append(p.starts, s)
			p.heads = append(p.heads, env.GetHeader())
			roster := p.roster
			p.mu.Unlock()
			// Begin refuses an instance this party is excluded from.
			_ = p.party.Begin(env.GetHeader(), s, roster, sumBeacon, p.user, p.value)
		}
	case m.Protocol == wire.ProtoRing || m.Protocol == wire.ProtoShamir:
		if env.GetSum().GetKind() == wire.Sum_SHAMIR_SHARE && p.victim != nil {
			p.mu.Lock()
			p.shares++
			die := p.shares == len(p.roster)-1 && // its own share never crosses the network
				len(p.starts) > 0 && p.victim(p.heads[len(p.heads)-1], p.starts[len(p.starts)-1])
			p.mu.Unlock()
			if die {
				// Die a moment later, so that this member's own shares
				// (posted asynchronously on real transports) are delivered:
				// it dealt, holds shares, and never reports or reveals.
				p.clock.AfterFunc(p.grace, func() { p.kill(p.peer.ID) })
				return
			}
		}
		p.party.Handle(m.From, env)
	}
}

func (p *sumParty) lastStart() *wire.SumStart {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.starts) == 0 {
		return nil
	}
	return p.starts[len(p.starts)-1]
}

// sumCluster wires a coordinator on the user and a sumParty on each owner.
type sumCluster struct {
	c       Cluster
	loop    *engine.Driver // the coordinator's, as on the data user's node
	coord   *securesum.Coordinator
	seenMu  sync.Mutex
	seen    map[wire.Sum_Kind]int // secure-sum messages that reached the user, by kind
	parties []*sumParty
	roster  []protocol.PeerID
	session string
}

func newSumCluster(t *testing.T, c Cluster, p securesum.Params, values [][]float64) *sumCluster {
	t.Helper()
	log := hclog.NewNullLogger()
	user := c.User()
	sc := &sumCluster{c: c, session: "conformance-" + t.Name(), seen: map[wire.Sum_Kind]int{}}
	for _, o := range c.Owners() {
		sc.roster = append(sc.roster, o.ID)
	}
	slices.Sort(sc.roster)
	env := func(peer Peer, loop *engine.Driver, seed uint64) securesum.Env {
		return securesum.PosterEnv(peer.ID, peer.Post, loop, rng.Derive(rng.SeedOf(t.Name()), seed), log)
	}
	sc.loop = engine.NewDriver(engine.Config{Clock: c.Clock()})
	t.Cleanup(func() { sc.loop.Close() })
	sc.coord = securesum.NewCoordinator(env(user, sc.loop, 1<<32), p)
	user.Transport.SetHandler(func(m protocol.Message) {
		if env, err := wire.Unmarshal(m.Data, wire.MaxSumFrameBytes); err == nil {
			sc.seenMu.Lock()
			sc.seen[env.GetSum().GetKind()]++
			sc.seenMu.Unlock()
			sc.loop.Deliver(func() { sc.coord.Handle(m.From, env) })
		}
	})
	for i, o := range c.Owners() {
		sp := &sumParty{peer: o, user: user.ID, value: values[i], roster: sc.roster, loop: engine.NewDriver(engine.Config{Clock: c.Clock()})}
		t.Cleanup(func() { sp.loop.Close() })
		sp.party = securesum.NewParty(env(o, sp.loop, uint64(i)), p)
		sp.party.SetRoster(sc.roster)
		o.Transport.SetHandler(func(m protocol.Message) { sp.loop.Deliver(func() { sp.handle(m) }) })
		if err := o.Transport.Join(wire.TopicControl); err != nil {
			t.Fatal(err)
		}
		sc.parties = append(sc.parties, sp)
	}
	c.Ready(t)
	return sc
}

type sumOutcome struct {
	mu      sync.Mutex
	done    bool
	total   []float64
	parties int
	err     error
}

func (o *sumOutcome) finished() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.done
}

// start begins one sum instance and returns its outcome holder.
func (sc *sumCluster) start(t *testing.T, purpose string, length int) *sumOutcome {
	t.Helper()
	out := &sumOutcome{}
	h := &wire.Header{Version: wire.Version, Session: sc.session, Round: 1}
	var err error
	sc.loop.Call(context.Background(), func() {
		err = sc.coord.Sum(securesum.Request{Header: h, Purpose: purpose, Roster: sc.roster, Length: length, Beacon: sumBeacon}, func(total []float64, parties int, err error) {
			out.mu.Lock()
			out.done, out.total, out.parties, out.err = true, total, parties, err
			out.mu.Unlock()
		})
	})
	if err != nil {
		t.Fatalf("start sum: %v", err)
	}
	return out
}

// sumBeacon is the public randomness of the suite's sums (a session derives
// it from the roster's join nonces).
var sumBeacon = []byte("conformance beacon")

// testParams are the defaults (majority threshold, at least 3 contributors)
// with the committee capped at n.
func testParams(method string, n int) securesum.Params {
	p := securesum.DefaultParams()
	p.Method = method
	p.Committee = min(p.Committee, n)
	return p
}

func sizes(h Harness, want []int) []int {
	var out []int
	for _, n := range want {
		if n <= h.MaxOwners() {
			out = append(out, n)
		}
	}
	return out
}

// values gives party i a distinct two-coordinate vector, one coordinate
// negative, so that sign handling is exercised.
func values(n int) ([][]float64, []float64) {
	v := make([][]float64, n)
	sum := make([]float64, 2)
	for i := range v {
		v[i] = []float64{0.25 + float64(i)/7, -float64(i%5) / 3}
		sum[0] += v[i][0]
		sum[1] += v[i][1]
	}
	return v, sum
}

func checkTotal(t *testing.T, out *sumOutcome, want []float64, parties int, scaleBits uint) {
	t.Helper()
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.err != nil {
		t.Fatalf("sum failed: %v", out.err)
	}
	if out.parties != parties {
		t.Fatalf("sum covers %d parties, want %d", out.parties, parties)
	}
	// Each party's value is rounded to the nearest 1/S: the total is off by
	// at most parties/(2S).
	tol := float64(parties) / (2 * math.Ldexp(1, int(scaleBits)))
	for i := range want {
		if math.Abs(out.total[i]-want[i]) > tol+1e-12 {
			t.Fatalf("total[%d] = %.9f, want %.9f (tolerance %.2g)", i, out.total[i], want[i], tol)
		}
	}
}

func sumTimeout(c Cluster, p securesum.Params) time.Duration {
	return 20*p.Timeout + 2000*c.Scale()
}

func testSumsExact(t *testing.T, h Harness) {
	for _, method := range []string{"ring", "shamir"} {
		for _, n := range sizes(h, []int{3, 5, 8, 16, 33, 64}) {
			t.Run(fmt.Sprintf("%s/n=%d", method, n), func(t *testing.T) {
				c := h.Start(t, n)
				p := testParams(method, n)
				vals, want := values(n)
				sc := newSumCluster(t, c, p, vals)
				out := sc.start(t, "test", 2)
				if !c.Run(out.finished, sumTimeout(c, p)) {
					t.Fatal("sum did not finish")
				}
				checkTotal(t, out, want, n, p.ScaleBits)
			})
		}
	}
}

func testShamirSurvivesKills(t *testing.T, h Harness) {
	n := min(12, h.MaxOwners())
	p := testParams("shamir", n)
	p.Committee, p.Threshold = min(8, n), min(5, n)
	for _, kills := range []int{p.Committee - p.Threshold, p.Committee - p.Threshold + 1} {
		t.Run(fmt.Sprintf("kill=%d", kills), func(t *testing.T) {
			c := h.Start(t, n)
			vals, want := values(n)
			sc := newSumCluster(t, c, p, vals)
			// The first `kills` committee members die as soon as every
			// dealer's share has reached them: sharing is complete, but they
			// never report or reveal.
			for _, sp := range sc.parties {
				sp.kill, sp.clock, sp.grace = c.Kill, c.Clock(), 50*c.Scale()
				id := string(sp.peer.ID)
				sp.victim = func(h *wire.Header, s *wire.SumStart) bool {
					excl, _ := securesum.Excluded(s, len(sc.roster))
					com := securesum.Committee(partsWithout(sc, excl), p.Committee, sumBeacon, h, s.GetPurpose(), s.GetInstance())
					i := slices.Index(com, protocol.PeerID(id))
					return i >= 0 && i < kills
				}
			}
			out := sc.start(t, "test", 2)
			if !c.Run(out.finished, sumTimeout(c, p)) {
				t.Fatal("sum neither finished nor failed")
			}
			if kills <= p.Committee-p.Threshold {
				// Killed members had already dealt: the total still covers all n.
				checkTotal(t, out, want, n, p.ScaleBits)
				return
			}
			out.mu.Lock()
			defer out.mu.Unlock()
			if out.err == nil {
				t.Fatalf("sum with %d of %d committee members alive (t=%d) succeeded", p.Committee-kills, p.Committee, p.Threshold)
			}
		})
	}
}

func testRingReforms(t *testing.T, h Harness) {
	n := min(6, h.MaxOwners())
	c := h.Start(t, n)
	p := testParams("ring", n)
	vals, _ := values(n)
	sc := newSumCluster(t, c, p, vals)
	victim := 2
	c.Kill(sc.parties[victim].peer.ID)
	want := make([]float64, 2)
	alive := 0
	for i, sp := range sc.parties {
		if i != victim {
			want[0] += sp.value[0]
			want[1] += sp.value[1]
			alive++
		}
	}
	out := sc.start(t, "test", 2)
	if !c.Run(out.finished, sumTimeout(c, p)) {
		t.Fatal("ring sum did not finish after a member was killed")
	}
	checkTotal(t, out, want, alive, p.ScaleBits)
	vi, _ := slices.BinarySearch(sc.roster, sc.parties[victim].peer.ID)
	s := sc.parties[0].lastStart()
	excl, _ := securesum.Excluded(s, len(sc.roster))
	if s == nil || s.GetInstance() == 0 || len(excl) <= vi/8 || excl[vi/8]&(1<<(vi%8)) == 0 {
		t.Fatalf("ring was not re-formed without the killed member: last start %v", s)
	}
}
