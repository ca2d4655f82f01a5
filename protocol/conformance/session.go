package conformance

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/protobuf/proto"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Subtests is the conformance suite.
var Subtests = []Subtest{
	{"SumsExact", testSumsExact},
	{"ShamirSurvivesCommitteeKills", testShamirSurvivesKills},
	{"RingReformsAfterKill", testRingReforms},
	{"OwnerContributesOnceWithinBudget", testOwnerOnceWithinBudget},
	{"GarbageIsIgnored", testGarbageIgnored},
	{"SessionMatchesReferenceTrainer", testSessionMatchesReference},
	{"DeviatingCoordinatorLearnsNothing", testDeviatingCoordinator},
	{"OutsidersStayOut", testOutsiders},
	{"DistributedPrivacyMatchesReference", testDistributedMatchesReference},
	{"ShareSumIsDealtOnce", testShareSumDealtOnce},
	{"ErrSumAttacks", testErrSumAttacks},
}

// sessionData is a small synthetic run: owners x per samples.
func sessionData(t *testing.T, owners, per int) boost.Data {
	t.Helper()
	syn, err := dataset.Synthetic(dataset.DefaultSynthetic(owners*per+2000, 11))
	if err != nil {
		t.Fatal(err)
	}
	test, rest := syn.Split(1000)
	user, rest := rest.Split(1000)
	shards, err := rest.Partition(owners, nil, 11)
	if err != nil {
		t.Fatal(err)
	}
	return boost.Data{Owners: shards, User: user, Test: test}
}

// run is a running data user and owners on a cluster.
type run struct {
	c      Cluster
	user   *session.User
	owners []*session.Owner
	mu     sync.Mutex
	done   bool
	model  *boost.Model
	err    error
	rounds []session.RoundReport
}

func (s *run) finished() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

func sessionTiming(c Cluster) session.Timing {
	return session.Timing{AnnounceInterval: 200 * c.Scale(), JoinTimeout: 20000 * c.Scale(), ShareTimeout: 2000 * c.Scale()}
}

func sumParams(c Cluster, method string, n int) securesum.Params {
	p := testParams(method, n)
	p.Timeout = 1000 * c.Scale()
	return p
}

// startSession attaches a session.User and one session.Owner per owner
// peer. Owner i uses the reproducible noise stream of index i, so the run
// is comparable with boost.Train on the same data.
//
// admit, if set, is the admission rule of the user and of every owner.
func startSession(t *testing.T, c Cluster, cfg boost.Config, sum securesum.Params, data boost.Data, admit func(protocol.PeerID) bool) *run {
	t.Helper()
	s := &run{c: c}
	log := hclog.NewNullLogger()
	if testing.Verbose() {
		log = hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Info, Output: tWriter{t}})
	}
	user := c.User()
	// Owners must be ordered like data.Owners; Train's owner i is the i-th
	// owner in peer-id order, which is how the user selects.
	peers := sortedOwners(c)
	for i, p := range peers {
		idx := i
		led := protocol.NewMemLedger(cfg.OwnerWorstCase(1))
		ocfg := session.DefaultOwnerConfig()
		ocfg.User, ocfg.Data, ocfg.Ledger, ocfg.MaxEpsilon = user.ID, data.Owners[i], led, math.Max(math.Max(cfg.Epsilon, cfg.ErrEpsilon), 1)
		ocfg.AllowNone, ocfg.NoneCharge, ocfg.Admit = cfg.Mechanism == "none", 1, admit
		ocfg.Noise = func(r, a int) *rand.Rand { return boost.NoiseStream(cfg.Seed, r, a, idx) }
		ocfg.ErrNoise = func(r, a int) *rand.Rand { return boost.ErrNoiseStream(cfg.Seed, r, a, idx) }
		ocfg.SumRand, ocfg.Clock, ocfg.Log = rng.Derive(cfg.Seed, 99, uint64(i)), c.Clock(), log.Named("owner")
		o, err := session.StartOwner(p.Transport, ocfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		s.owners = append(s.owners, o)
	}
	ucfg := session.DefaultUserConfig()
	ucfg.Session, ucfg.Boost, ucfg.Sum, ucfg.Timing, ucfg.Admit = "conformance", cfg, sum, sessionTiming(c), admit
	ucfg.Own, ucfg.Test, ucfg.ExpectedOwners = data.User, data.Test, len(peers)
	ucfg.SumRand, ucfg.Clock, ucfg.Log = rng.Derive(cfg.Seed, 98), c.Clock(), log.Named("user")
	ucfg.OnRound = func(r session.RoundReport) { s.mu.Lock(); s.rounds = append(s.rounds, r); s.mu.Unlock() }
	ucfg.OnDone = func(m *boost.Model, err error) {
		s.mu.Lock()
		s.done, s.model, s.err = true, m, err
		s.mu.Unlock()
	}
	c.Ready(t) // the user announces as it starts
	u, err := session.StartUser(user.Transport, ucfg)
	if err != nil {
		t.Fatal(err)
	}
	s.user = u
	t.Cleanup(func() { u.Close() })
	return s
}

func sortedOwners(c Cluster) []Peer {
	ps := append([]Peer(nil), c.Owners()...)
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j].ID < ps[j-1].ID; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
	return ps
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func testSessionMatchesReference(t *testing.T, h Harness) {
	n := min(12, h.MaxOwners())
	for _, learner := range []boost.Learner{boost.Stump, boost.NCC, boost.LogReg} {
		for _, alpha := range []boost.AlphaMode{boost.AlphaSecureSum, boost.AlphaValidation} {
			t.Run(string(learner)+"/"+string(alpha), func(t *testing.T) {
				c := h.Start(t, n)
				data := sessionData(t, n, 30)
				cfg := boost.DefaultConfig()
				cfg.Learner, cfg.Alpha, cfg.Mechanism = learner, alpha, "none"
				cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = 3, 3, 5
				ref, err := boost.Train(cfg, data, nil)
				if err != nil {
					t.Fatalf("reference: %v", err)
				}
				s := startSession(t, c, cfg, sumParams(c, "shamir", n), data, nil)
				if !c.Run(s.finished, min(200000*c.Scale(), 3*time.Minute)) {
					st, err := s.user.State()
					t.Fatalf("session did not finish: user %s, %v", st, err)
				}
				if s.err != nil {
					t.Fatalf("session failed: %v", s.err)
				}
				sameModel(t, ref, s.model)
			})
		}
	}
}

// alphaTolerance bounds |alpha_dist - alpha_ref|. The err sum rounds each of
// L owners' two values to the nearest 1/S (S = 2^24): the numerator and the
// denominator (about L, the renormalized total) move by at most L/(2S), so
// err moves by at most (1 + err)/(2S) <= 1/S, and alpha = log((1-err)/err)
// by at most that over err(1-err), i.e. 101/S ~ 6e-6 for err in
// [0.01, 0.99]. Renormalizing from the rounded pair scales every weight by
// the same factor, which leaves later errs unchanged. With alpha mode
// validation the user's err is exact and alphas agree to float rounding.
const alphaTolerance = 1e-5

// SameModel fails t unless got equals the reference trainer's model:
// stumps exactly, NCC centroids and logistic parameters to closeMatrix's
// tolerance, alphas to alphaTolerance.
func SameModel(t testing.TB, ref, got *boost.Model) { sameModel(t, ref, got) }

func sameModel(t testing.TB, ref, got *boost.Model) {
	t.Helper()
	if len(ref.Rounds) != len(got.Rounds) {
		t.Fatalf("distributed model has %d rounds, reference %d", len(got.Rounds), len(ref.Rounds))
	}
	for i := range ref.Rounds {
		r, g := ref.Rounds[i], got.Rounds[i]
		if math.Abs(r.Alpha-g.Alpha) > alphaTolerance {
			t.Errorf("round %d: alpha %v, reference %v", i+1, g.Alpha, r.Alpha)
		}
		if !sameBase(r.Base, g.Base) {
			t.Errorf("round %d: base learner %+v, reference %+v", i+1, g.Base, r.Base)
		}
	}
}

func sameBase(a, b boost.Base) bool {
	switch {
	case a.Stump != nil:
		return b.Stump != nil && *a.Stump == *b.Stump
	case a.NCC != nil:
		return b.NCC != nil && closeMatrix(a.NCC.Centroids, b.NCC.Centroids)
	case a.LogReg != nil:
		return b.LogReg != nil && closeMatrix(a.LogReg.Theta, b.LogReg.Theta)
	}
	return false
}

// closeMatrix allows the relative drift that renormalizing with a
// fixed-point weight total (relative error ~ n/(2 S W)) causes in later
// rounds' weighted statistics.
func closeMatrix(a, b [][]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if math.Abs(a[i][j]-b[i][j]) > 1e-5*(1+math.Abs(a[i][j])) {
				return false
			}
		}
	}
	return true
}

// testOwnerOnceWithinBudget plays a deviating data user that selects the same
// owner again, in a second round and in a second session, asks for more
// epsilon than the owner has left, and asks for shares without noise. The
// owner must release exactly one share and spend exactly its epsilon.
func testOwnerOnceWithinBudget(t *testing.T, h Harness) {
	c := h.Start(t, 1)
	data := sessionData(t, 1, 20)
	owner := c.Owners()[0]
	user := c.User()
	ledger := protocol.NewMemLedger(3)
	ocfg := session.DefaultOwnerConfig()
	ocfg.User, ocfg.Data, ocfg.Ledger, ocfg.MaxEpsilon, ocfg.Clock = user.ID, data.Owners[0], ledger, 3, c.Clock()
	o, err := session.StartOwner(owner.Transport, ocfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	var mu sync.Mutex
	shares, refusals, joins := 0, 0, 0
	user.Transport.SetHandler(func(m protocol.Message) {
		env, err := wire.Unmarshal(m.Data, wire.MaxControlBytes)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case env.GetShare() != nil:
			shares++
		case env.GetRefuse() != nil:
			refusals++
		case env.GetJoin() != nil:
			joins++
		}
	})
	if err := user.Transport.Join(wire.TopicShares); err != nil {
		t.Fatal(err)
	}
	c.Ready(t)
	count := func() (int, int, int) { mu.Lock(); defer mu.Unlock(); return shares, refusals, joins }
	var seq uint64
	publish := func(session string, round, attempt uint32, body proto.Message) {
		seq++
		env, err := wire.Wrap(&wire.Header{Version: wire.Version, Session: session, Round: round, Attempt: attempt, Seq: seq}, body)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := wire.Marshal(env, wire.MaxControlBytes)
		if err != nil {
			t.Fatal(err)
		}
		user.Post.Publish(wire.TopicControl, raw)
	}
	d := data.Owners[0]
	ann := func(mech string, eps float64) *wire.Announce {
		eta := make([]float64, d.Dim())
		return &wire.Announce{Config: &wire.SessionConfig{Learner: "stump", Mechanism: mech, Epsilon: eps,
			Rounds: 3, OwnersPerRound: 1, Classes: 2, Features: uint32(d.Dim()), Thresholds: eta,
			AlphaMode: "validation", SumMethod: "ring", SumCommittee: 1, ScaleBits: 24, MinParties: 3,
			SchemaDigest: d.Schema.Digest()}}
	}
	sel := &wire.Select{Selected: []string{string(owner.ID)}, RosterVersion: 1}
	wait := func(what string, want func(s, r, j int) bool) {
		t.Helper()
		if !c.Run(func() bool { return want(count()) }, 5000*c.Scale()) {
			s, r, j := count()
			t.Fatalf("%s: shares %d, refusals %d, joins %d", what, s, r, j)
		}
	}
	publish("s1", 0, 0, ann("pm", 2))
	wait("join", func(s, r, j int) bool { return j >= 1 })
	publish("s1", 1, 0, sel)
	wait("first share", func(s, r, j int) bool { return s == 1 })
	publish("s1", 1, 1, sel) // the same owner again, next attempt
	wait("next attempt", func(s, r, j int) bool { return r == 1 })
	publish("s1", 1, 2, sel) // and again
	wait("third attempt", func(s, r, j int) bool { return r == 2 })
	// A later round before this one was settled: held, never answered.
	publish("s1", 2, 0, sel)
	// A malformed Final is dropped (counted) and the session stays open.
	dropped := func() int { return o.Stats().Get(protocol.ErrUnexpected.Error()) }
	before := dropped()
	publish("s1", 3, 0, &wire.Final{Model: &wire.Final_Wc{Wc: &wire.WCModel{Classes: 2}}})
	if !c.Run(func() bool { return dropped() > before }, 5000*c.Scale()) {
		t.Fatal("malformed final was not dropped")
	}
	if st, _ := o.State(); st != session.OwnerJoined {
		t.Fatalf("owner state %s after a malformed final", st)
	}
	// The user aborts s1; the owner goes back to idle.
	publish("s1", 3, 0, &wire.Abort{Reason: "test"})
	if !c.Run(func() bool { st, _ := o.State(); return st == session.OwnerIdle }, 5000*c.Scale()) {
		t.Fatal("owner did not return to idle on Abort")
	}
	// s2 asks for 2 more epsilon: 1 of the lifetime budget of 3 is left, so
	// the owner does not join. s3 asks for shares without noise; s4 for more
	// than the owner's per-share limit; s1 again (already contributed).
	// Selections that follow find no joined owner.
	publish("s2", 0, 0, ann("pm", 2))
	publish("s3", 0, 0, ann("none", 0))
	publish("s4", 0, 0, ann("pm", 5))
	publish("s1", 0, 0, ann("pm", 0.5))
	for _, s := range []string{"s2", "s3", "s4", "s1"} {
		publish(s, 1, 0, sel)
	}
	c.Run(func() bool { return false }, 2000*c.Scale())
	if s, _, j := count(); s != 1 || j != 1 {
		t.Fatalf("%d shares released and %d joins, want 1 and 1", s, j)
	}
	if st, sess := o.State(); st != session.OwnerIdle {
		t.Fatalf("owner %s in session %s, want idle", st, sess)
	}
	if got := ledger.Spent(); math.Abs(got-2) > 1e-9 {
		t.Fatalf("ledger spent %v, want 2", got)
	}
}

// testGarbageIgnored runs a session while an attacker peer publishes forged
// control messages, fake and oversized shares, replays and random bytes; the
// session must still finish and the drops must be counted.
func testGarbageIgnored(t *testing.T, h Harness) {
	n := min(6, h.MaxOwners())
	c := h.Start(t, n)
	attacker := c.Extra(t)
	data := sessionData(t, n, 20)
	cfg := boost.DefaultConfig()
	cfg.Mechanism, cfg.OwnersPerRound, cfg.Rounds, cfg.Alpha = "none", 2, 2, boost.AlphaSecureSum
	s := startSession(t, c, cfg, sumParams(c, "ring", n), data, nil)
	hdr := func(round uint32) *wire.Header {
		return &wire.Header{Version: wire.Version, Session: "conformance", Round: round, Seq: uint64(time.Now().UnixNano())}
	}
	forged := []*wire.Envelope{
		{Header: hdr(1), Body: &wire.Envelope_Alpha{Alpha: &wire.Alpha{Alpha: 50, Accepted: true}}},
		{Header: hdr(1), Body: &wire.Envelope_Select{Select: &wire.Select{Selected: []string{string(c.Owners()[0].ID)}}}},
		{Header: hdr(1), Body: &wire.Envelope_Share{Share: &wire.Share{Values: []float64{1e300}}}},
	}
	for _, e := range forged {
		raw, _ := wire.Marshal(e, wire.MaxControlBytes)
		attacker.Post.Publish(wire.TopicControl, raw)
		attacker.Post.Publish(wire.TopicShares, raw)
		attacker.Post.Send(c.User().ID, wire.ProtoSession, raw)
		attacker.Post.Send(c.Owners()[0].ID, wire.ProtoRing, raw)
	}
	junk := []byte{0xff, 0x01, 0x02, 0x03}
	attacker.Post.Publish(wire.TopicControl, junk)
	attacker.Post.Send(c.User().ID, wire.ProtoShamir, junk)
	attacker.Post.Send(c.Owners()[1].ID, wire.ProtoSession, junk)
	// A share-sized message from a peer that was never selected.
	big := &wire.Envelope{Header: hdr(1), Body: &wire.Envelope_Share{Share: &wire.Share{Values: make([]float64, 40)}}}
	raw, _ := wire.Marshal(big, wire.MaxShareBytes)
	attacker.Post.Publish(wire.TopicShares, raw)

	if !c.Run(s.finished, min(200000*c.Scale(), 3*time.Minute)) {
		st, err := s.user.State()
		t.Fatalf("session did not finish under garbage: user %s, %v", st, err)
	}
	if s.err != nil {
		t.Fatalf("session failed under garbage: %v", s.err)
	}
	ref, err := boost.Train(cfg, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameModel(t, ref, s.model)
	// Each kind of garbage is counted where it landed, by the validator or
	// by the state machine (transports without validators deliver it).
	owners := func(reasons ...string) int {
		n := 0
		for _, o := range s.owners {
			for _, r := range reasons {
				n += o.Stats().Get(r)
			}
		}
		return n
	}
	us := s.user.Stats()
	// The garbage is sent asynchronously: on a real network some of it may
	// still be arriving when the session ends.
	for _, check := range []struct {
		what string
		n    func() int
	}{
		{"forged control messages at the owners", func() int { return owners("validator: control not from user", protocol.ErrNotUser.Error()) }},
		{"shares from a peer never selected, at the user", func() int {
			return us.Get("validator: share from unselected peer") + us.Get(protocol.ErrNotSelected.Error())
		}},
		{"junk on the user's secure-sum stream", func() int { return us.Get("malformed") }},
		{"junk on an owner's session stream", func() int { return owners("malformed") }},
	} {
		if !c.Run(func() bool { return check.n() > 0 }, 5000*c.Scale()) {
			t.Errorf("%s: none counted (user %v)", check.what, us)
		}
	}
}
