package conformance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
)

// The err sum against a data user that chooses who is in a total (issue
// 19). Before the err dealings were noisy and charged, each of these plays
// gave the data user one owner's exact pair (sum w_i I(miss), sum w_i) with
// nothing in its ledger:
//
//   - sybils: the user admits the victim and two owners of its own, so the
//     total minus its own owners' dealings is the victim's pair;
//   - never selected: an owner that never releases a share deals into every
//     err sum, and its ledger stayed at 0;
//   - cross-session: two sessions whose rosters differ by the victim;
//   - re-announced: the same session id announced again after Final, so
//     owners with a fresh secure-sum party dealt the same sum again.
//
// Now every err dealing is charged under its own ledger key before it
// leaves and carries a noise share sized for one honest dealer (owners
// default to colluders "all"), and no (session, round, attempt) is dealt
// twice. The subtests play each attack through the real session state
// machines and check exactly that, and that what the user recovers in the
// sybil play is the victim's noisy dealing, not its pair.

// dealing is one err dealing an owner reported (OnErrDealing).
type dealing struct {
	session          string
	round, attempt   int
	exact, noisy     []float64
	chargedBeforeOut bool
}

// attackRig runs sessions of a deviating user over long-lived owners.
type attackRig struct {
	t       *testing.T
	c       Cluster
	cfg     boost.Config
	sum     securesum.Params
	data    boost.Data
	peers   []Peer
	ledgers []*protocol.MemLedger
	owners  []*session.Owner

	mu       sync.Mutex
	dealings map[protocol.PeerID][]dealing
	totals   map[string]map[[2]int][]float64 // session -> (round, attempt) -> err total
}

func errAttackConfig() boost.Config {
	cfg := boost.DefaultConfig()
	cfg.Learner, cfg.Mechanism, cfg.Epsilon, cfg.Alpha = boost.Stump, "pm", 5, boost.AlphaSecureSum
	cfg.ErrEpsilon = 0.5
	cfg.OwnersPerRound, cfg.Rounds, cfg.MaxAttempts, cfg.Seed = 1, 2, 2, 7
	return cfg
}

func newAttackRig(t *testing.T, h Harness, owners int, method string) *attackRig {
	c := h.Start(t, owners)
	r := &attackRig{t: t, c: c, cfg: errAttackConfig(), data: sessionData(t, owners, 20),
		dealings: map[protocol.PeerID][]dealing{}, totals: map[string]map[[2]int][]float64{}}
	r.sum = sumParams(c, method, owners)
	r.sum.MinParties = 3
	r.peers = sortedOwners(c)
	for i, p := range r.peers {
		led := protocol.NewMemLedger(100)
		id, idx := p.ID, i
		draws := uint64(0) // fresh err noise for every dealing, as rng.Secure gives
		// An owner on its defaults (session.DefaultOwnerConfig): it trusts
		// no one, so every err dealing carries noise for all co-dealers.
		cfg := session.DefaultOwnerConfig()
		cfg.User, cfg.Data, cfg.Ledger = c.User().ID, r.data.Owners[i], led
		cfg.Noise = func(rd, a int) *rand.Rand { return boost.NoiseStream(r.cfg.Seed, rd, a, idx) }
		cfg.ErrNoise = func(rd, a int) *rand.Rand { draws++; return rng.Derive(r.cfg.Seed, 95, uint64(idx), draws) }
		cfg.SumRand, cfg.Clock, cfg.Log = rng.Derive(r.cfg.Seed, 97, uint64(i)), c.Clock(), hclog.NewNullLogger()
		cfg.OnErrDealing = func(s string, rd, a int, exact, noisy []float64) {
			charged := led.Contributed(fmt.Sprintf("%s/err/%d/%d", s, rd, a))
			r.mu.Lock()
			r.dealings[id] = append(r.dealings[id], dealing{s, rd, a, exact, noisy, charged})
			r.mu.Unlock()
		}
		o, err := session.StartOwner(p.Transport, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		r.ledgers, r.owners = append(r.ledgers, led), append(r.owners, o)
	}
	return r
}

// session runs one session of the user admitting only the owners in
// admitted (indices) and waits for its end (a model or a failure).
func (r *attackRig) session(id string, admitted ...int) {
	r.sessionExpecting(id, len(admitted), admitted...)
}

// sessionExpecting is session with the number of Joins the user waits for
// (owners that released a share in a session of this id do not join it
// again).
func (r *attackRig) sessionExpecting(id string, expected int, admitted ...int) {
	r.t.Helper()
	ok := map[protocol.PeerID]bool{}
	for _, i := range admitted {
		ok[r.peers[i].ID] = true
	}
	var mu sync.Mutex
	done := false
	r.mu.Lock()
	r.totals[id] = map[[2]int][]float64{}
	r.mu.Unlock()
	user := r.c.User()
	ucfg := session.DefaultUserConfig()
	ucfg.Session, ucfg.Boost, ucfg.Sum, ucfg.Timing = id, r.cfg, r.sum, sessionTiming(r.c)
	ucfg.Admit = func(p protocol.PeerID) bool { return ok[p] }
	ucfg.Own, ucfg.ExpectedOwners, ucfg.SumRand, ucfg.Clock = r.data.User, expected, rng.Derive(r.cfg.Seed, 96), r.c.Clock()
	ucfg.Log, ucfg.Unchecked = hclog.NewNullLogger(), true // a hostile user runs whatever plan it likes
	ucfg.OnSum = func(purpose string, rd, a int, total []float64, _ int) {
		r.mu.Lock()
		r.totals[id][[2]int{rd, a}] = total
		r.mu.Unlock()
	}
	ucfg.OnDone = func(*boost.Model, error) { mu.Lock(); done = true; mu.Unlock() }
	r.c.Ready(r.t) // the user announces as it starts
	u, err := session.StartUser(user.Transport, ucfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { u.Close() })
	if !r.c.Run(func() bool { mu.Lock(); defer mu.Unlock(); return done }, min(200000*r.c.Scale(), 2*time.Minute)) {
		r.t.Fatalf("session %s did not end", id)
	}
	// Let owners see the Final or Abort.
	r.c.Run(func() bool { return false }, 500*r.c.Scale())
}

func (r *attackRig) of(i int) []dealing {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]dealing(nil), r.dealings[r.peers[i].ID]...)
}

// checkDealings: every dealing of owner i is charged before it leaves, is
// noisy (its noise is far above the fixed-point step), no (session, round,
// attempt) twice, and the ledger holds exactly eps per dealing beyond its
// share. It returns the dealings.
func (r *attackRig) checkDealings(i int) []dealing {
	r.t.Helper()
	ds := r.of(i)
	seen := map[string]bool{}
	for _, d := range ds {
		key := fmt.Sprintf("%s/%d/%d", d.session, d.round, d.attempt)
		if seen[key] {
			r.t.Errorf("owner %d dealt %s twice", i, key)
		}
		seen[key] = true
		if !d.chargedBeforeOut {
			r.t.Errorf("owner %d: dealing %s without a ledger charge", i, key)
		}
		// The noise is DLap with scale 2C/eps = 8 per coordinate here; a
		// draw below 1e-3 in both coordinates has probability ~1e-8.
		if l1(d.noisy, d.exact) < 1e-3 {
			r.t.Errorf("owner %d: dealing %s is exact: %v", i, key, d.exact)
		}
	}
	return ds
}

func l1(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += math.Abs(a[i] - b[i])
	}
	return s
}

func testErrSumAttacks(t *testing.T, h Harness) {
	if h.MaxOwners() < 6 {
		t.Skip("needs 6 owners")
	}
	for _, method := range []string{"ring", "shamir"} {
		t.Run("sybils/"+method, func(t *testing.T) { errSumSybils(t, h, method) })
	}
	t.Run("never-selected", func(t *testing.T) { errSumNeverSelected(t, h) })
	t.Run("cross-session", func(t *testing.T) { errSumCrossSession(t, h) })
	t.Run("re-announced", func(t *testing.T) { errSumReannounced(t, h) })
}

// errSumSybils: owner 0 is the victim; owners 1 and 2 are the user's (their
// noisy dealings are known to it: the hook stands for that). Subtracting
// them from a total gives the user the victim's noisy dealing, never its
// exact pair, and the victim's ledger holds every dealing.
func errSumSybils(t *testing.T, h Harness, method string) {
	r := newAttackRig(t, h, 3, method)
	r.session("sybil", 0, 1, 2)
	victim := r.checkDealings(0)
	if len(victim) == 0 {
		t.Fatal("no err sum ran")
	}
	if recovered := r.recoverDealings(victim, append(r.of(1), r.of(2)...)); recovered == 0 {
		t.Fatal("no total to attack")
	}
	if got, want := r.ledgers[0].Spent(), r.cfg.ErrEpsilon*float64(len(victim))+shareSpent(r, 0); math.Abs(got-want) > 1e-9 {
		t.Errorf("victim's ledger %v, want %v (%d dealings)", got, want, len(victim))
	}
}

// recoverDealings plays the user's attack on every victim dealing whose
// total it saw with both sybils' dealings: total minus the sybils'. What it
// gets must be the victim's noisy dealing (to the fixed-point step of three
// dealings), never its pair. It returns the dealings attacked.
func (r *attackRig) recoverDealings(victim, sybils []dealing) int {
	recovered := 0
	for _, d := range victim {
		r.mu.Lock()
		total := r.totals[d.session][[2]int{d.round, d.attempt}]
		r.mu.Unlock()
		if total == nil {
			continue
		}
		est := append([]float64(nil), total...)
		n := 0
		for _, s := range sybils {
			if s.session == d.session && s.round == d.round && s.attempt == d.attempt {
				est[0] -= s.noisy[0]
				est[1] -= s.noisy[1]
				n++
			}
		}
		if n != 2 {
			continue
		}
		recovered++
		if l1(est, d.noisy) > 1e-5 {
			r.t.Errorf("round %d: recovered %v, victim dealt %v", d.round, est, d.noisy)
		}
		if l1(est, d.exact) < 1e-3 {
			r.t.Errorf("round %d: the user recovered the victim's exact pair %v", d.round, d.exact)
		}
	}
	return recovered
}

// errSumNeverSelected: an owner never selected for a share still pays eps
// for every err dealing, and only for those.
func errSumNeverSelected(t *testing.T, h Harness) {
	r := newAttackRig(t, h, 6, "shamir")
	r.cfg.Rounds = 1
	r.session("unselected", 0, 1, 2, 3, 4, 5)
	checked := 0
	for i := range r.peers {
		if shareSpent(r, i) > 0 {
			continue
		}
		ds := r.checkDealings(i)
		if len(ds) == 0 {
			continue
		}
		checked++
		if got, want := r.ledgers[i].Spent(), r.cfg.ErrEpsilon*float64(len(ds)); math.Abs(got-want) > 1e-9 || got == 0 {
			t.Errorf("owner %d, never selected, dealt %d times: ledger %v, want %v", i, len(ds), got, want)
		}
	}
	if checked == 0 {
		t.Fatal("every owner was selected")
	}
}

// errSumCrossSession: an owner deals in a session only if it is in its
// roster, and sessions do not share dealings.
func errSumCrossSession(t *testing.T, h Harness) {
	r := newAttackRig(t, h, 4, "shamir")
	r.session("A", 0, 1, 2, 3)
	r.session("B", 1, 2, 3)
	for i := range r.peers {
		ds := r.checkDealings(i)
		sessions := map[string]bool{}
		for _, d := range ds {
			sessions[d.session] = true
		}
		if i > 0 && !(sessions["A"] && sessions["B"]) {
			t.Errorf("owner %d dealt in sessions %v, want A and B", i, sessions)
		}
		if i == 0 && (sessions["B"] || !sessions["A"]) {
			t.Errorf("victim dealt in sessions %v, want A only", sessions)
		}
	}
}

// errSumReannounced: the same session id announced again after its end
// gets no second dealing of any (session, round, attempt).
func errSumReannounced(t *testing.T, h Harness) {
	r := newAttackRig(t, h, 5, "shamir")
	r.cfg.Rounds = 1
	all := []int{0, 1, 2, 3, 4}
	r.session("again", all...)
	before := make([]int, len(r.peers))
	rejoin := 0
	for i := range r.peers {
		before[i] = len(r.of(i))
		if shareSpent(r, i) == 0 {
			rejoin++ // owners without a share in "again" join it again
		}
	}
	if rejoin < 3 {
		t.Fatalf("only %d owners can rejoin", rejoin)
	}
	r.sessionExpecting("again", rejoin, all...) // the same session id after its end
	for i := range r.peers {
		r.checkDealings(i) // fails on a second dealing of a key
		if got := len(r.of(i)); got != before[i] {
			t.Errorf("owner %d dealt %d times after the re-announcement, %d before", i, got, before[i])
		}
	}
}

// shareSpent is what owner i spent on shares (its ledger minus its err
// dealings).
func shareSpent(r *attackRig, i int) float64 {
	return r.ledgers[i].Spent() - r.cfg.ErrEpsilon*float64(len(r.of(i)))
}
