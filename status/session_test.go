package status

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
	"github.com/ppboost/ppboost/protocol/session"
)

// memSession is a real session (the protocol's user and owner state
// machines over the in-memory network, virtual time) with a status board on
// the user and on owner 0.
type memSession struct {
	user      *session.User
	userBoard *Board
	owner0    *Board
	owners    []*session.Owner
	reports   []session.RoundReport
	midway    []Status // the user's status as each round report arrived
	model     *boost.Model
	err       error
	killed    []int
}

// runMemSession runs 3 rounds of 2 owners (mechanism none) with 10 owners,
// the last of which will not join (it releases no noiseless shares). The
// two owners the first attempt selects die after joining, so that attempt
// is dropped without shares and the round is retried.
func runMemSession(t *testing.T) *memSession {
	t.Helper()
	cfg := boost.DefaultConfig()
	cfg.Learner, cfg.Mechanism, cfg.Alpha = boost.Stump, "none", boost.AlphaValidation
	cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = 2, 3, 11
	data, err := boost.Prepare(boost.DataSpec{Source: "synthetic", Owners: 10, SamplesPerOwner: 40,
		UserSamples: 400, TestSamples: 400, Seed: 11}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	net := memnet.New(memnet.Options{Seed: 11, Deterministic: true, Delay: time.Millisecond})
	defer net.Close()
	clock := net.Clock()
	ms := &memSession{}
	n := len(data.Owners)
	for i, d := range data.Owners {
		id := protocol.PeerID(fmt.Sprintf("owner-%02d", i))
		ep, err := net.Join(id)
		if err != nil {
			t.Fatal(err)
		}
		oc := session.DefaultOwnerConfig()
		oc.User, oc.Data, oc.Ledger, oc.AllowNone, oc.NoneCharge = "user", d, protocol.NewMemLedger(3), i != n-1, 1
		var o *session.Owner
		if i == 0 {
			ms.owner0 = NewOwnerBoard(string(id), func() session.OwnerSnapshot { return o.Snapshot() })
			ms.owner0.SetClock(clock.Now)
			oc.Observe = ms.owner0.OwnerEvent
		}
		// The endpoint's clock and an inline poster (session.StartOwner);
		// the board reads o only once the network runs.
		if o, err = session.StartOwner(ep, oc); err != nil {
			t.Fatal(err)
		}
		ms.owners = append(ms.owners, o)
	}
	uep, err := net.Join("user")
	if err != nil {
		t.Fatal(err)
	}
	done := false
	uc := session.DefaultUserConfig()
	uc.Session, uc.Boost, uc.Own, uc.Test, uc.ExpectedOwners = "status-test", cfg, data.User, data.Test, n-1
	uc.Timing.AnnounceInterval, uc.Timing.JoinTimeout = 100*time.Millisecond, time.Minute
	uc.OnRound = func(r session.RoundReport) {
		ms.reports = append(ms.reports, r)
		ms.userBoard.Round(r)
		ms.midway = append(ms.midway, getStatus(t, ms.userBoard))
	}
	uc.OnDone = func(m *boost.Model, err error) { ms.model, ms.err, done = m, err, true }
	// The user announces as it starts; its rounds (and the board) come
	// only when the network runs.
	if ms.user, err = session.StartUser(uep, uc); err != nil {
		t.Fatal(err)
	}
	ms.userBoard = NewUserBoard("user", ms.user.Snapshot, data.User)
	ms.userBoard.SetClock(clock.Now)
	// The roster is the 9 joiners in id order; round 1 attempt 0 selects
	// these two (boost.SelectOwners on the public seed). They die after
	// joining (the join window is 3 announce intervals).
	for _, i := range boost.SelectOwners(cfg.Seed, 1, 0, n-1, cfg.OwnersPerRound) {
		if i == 0 {
			t.Fatal("owner 0, whose board is checked, would be killed: pick another seed")
		}
		ms.killed = append(ms.killed, i)
		id := protocol.PeerID(fmt.Sprintf("owner-%02d", i))
		clock.AfterFunc(250*time.Millisecond, func() { net.Kill(id) })
	}
	if err := net.RunUntil(func() bool { return done }, time.Hour); err != nil {
		t.Fatal(err)
	}
	// Let the owners take the final model.
	_ = net.RunUntil(func() bool {
		for i, o := range ms.owners[:n-1] {
			if s, _ := o.State(); s != session.OwnerDone && !slices.Contains(ms.killed, i) {
				return false
			}
		}
		return true
	}, time.Minute)
	return ms
}

// getStatus fetches /status.json through the handler.
func getStatus(t *testing.T, b *Board) Status {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler(b).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /status.json: %d %s", rec.Code, rec.Body)
	}
	var s Status
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		t.Fatalf("status.json: %v\n%s", err, rec.Body)
	}
	return s
}

func TestMemnetSessionFeedsTheBoards(t *testing.T) {
	ms := runMemSession(t)
	if ms.err != nil || ms.model == nil || len(ms.model.Rounds) != 3 {
		t.Fatalf("session: err %v, model %v", ms.err, ms.model)
	}
	s := getStatus(t, ms.userBoard)
	if s.State != "done" || s.Outcome != "complete: 3 of 3 rounds" || s.Badge != "complete" || s.Kept != 3 || s.DroppedAttempts != 1 || !s.Ended {
		t.Fatalf("state %q outcome %q", s.State, s.Outcome)
	}
	if len(s.Rounds) != len(ms.reports) || len(s.Rounds) != 4 {
		t.Fatalf("%d rounds on the page, %d reports, want 4 (one dropped attempt)", len(s.Rounds), len(ms.reports))
	}
	if d := s.Rounds[0]; d.Accepted || d.Verdict != "dropped" || d.Owners != 0 || !strings.HasPrefix(d.Why, "no shares (0 of 2 refused") {
		t.Fatalf("first attempt %+v, want dropped without shares", d)
	}
	// The validation accuracy of each kept round is the ensemble of the
	// rounds kept so far on the user's own data: recompute it.
	kept := 0
	for i, r := range s.Rounds {
		rep := ms.reports[i]
		if r.Round != rep.Round || r.Attempt != rep.Attempt || r.Accepted != rep.Accepted || float64(r.Alpha) != rep.Alpha {
			t.Fatalf("row %d %+v, report %+v", i, r, rep)
		}
		// The attempt's own time, not counted from the session's start
		// (which includes the join wait of 3 announce intervals).
		if float64(r.ElapsedS) != rep.Took.Seconds() || rep.Took <= 0 || rep.Took >= rep.Elapsed ||
			float64(r.AtS) != rep.Elapsed.Seconds() || (i == 0 && rep.Elapsed-rep.Took < 300*time.Millisecond) {
			t.Fatalf("row %d: elapsed %v s at %v s; report took %v at %v", i, r.ElapsedS, r.AtS, rep.Took, rep.Elapsed)
		}
		if !r.Accepted {
			if r.Why == "" || r.Verdict != "dropped" {
				t.Fatalf("dropped row %d without a reason: %+v", i, r)
			}
			continue
		}
		kept++
		ens := boost.Ensemble{Classes: ms.model.Classes, Rounds: ms.model.Rounds[:kept]}
		ev, err := boost.Evaluate(ms.userBoard.val.X, ms.userBoard.val.Y, ens.Classes, ens.Predict)
		if err != nil {
			t.Fatal(err)
		}
		if float64(r.ValAccuracy) != ev.Accuracy || r.Verdict != "kept" {
			t.Fatalf("round %d: validation accuracy %v, recomputed %v", r.Round, r.ValAccuracy, ev.Accuracy)
		}
		if float64(r.TestAccuracy) != rep.TestAccuracy {
			t.Fatalf("round %d: test accuracy %v, report %v", r.Round, r.TestAccuracy, rep.TestAccuracy)
		}
	}
	if len(s.Curves) != 2 || len(s.Curves[0].Points) != 3 || len(s.Curves[1].Points) != 3 || s.Curves[0].Colour != CurveColour {
		t.Fatalf("curves %+v", s.Curves)
	}
	// Owners: 9 joined, the 10th said why it would not.
	o := s.Owners
	if o == nil || o.Joined != 9 || o.Roster != 9 || o.NotJoined != 1 || len(o.Reasons) != 1 ||
		!strings.Contains(o.Reasons[0].Reason, "without noise") {
		t.Fatalf("owners %+v", o)
	}
	// One by one: the owner that would not join first, then the 9 by id.
	if len(o.Peers) != 10 || o.PeersOmitted != 0 || o.Peers[0].ID != "owner-09" || o.Peers[0].Joined ||
		!strings.Contains(o.Peers[0].Reason, "without noise") || o.Peers[1].ID != "owner-00" || !o.Peers[1].Joined {
		t.Fatalf("peers %+v", o.Peers)
	}
	// Every share of mechanism none is charged 1 (NoneCharge) to its owner:
	// 3 kept attempts of 2 shares (the dropped one received none).
	if s.Budget.SharesIn != 6 || s.Budget.SharesDropped != 0 || s.Budget.PerOwnerMax != 1 || o.Used != 8 || s.Budget.UnusedOwners != 1 {
		t.Fatalf("budget %+v, %d attempts", s.Budget, len(ms.reports))
	}
	// Mechanism none: the page counts releases, not epsilon.
	if !s.Budget.Exact {
		t.Fatalf("budget %+v: a session without noise is not marked as counting exact releases", s.Budget)
	}
	// Midway: the status taken at each report shows the rounds so far and
	// a running state.
	for i, m := range ms.midway {
		if len(m.Rounds) != i+1 || (i < len(ms.midway)-1 && m.State == "done") {
			t.Fatalf("status at report %d: %d rounds, state %s", i, len(m.Rounds), m.State)
		}
	}

	// Owner 0's page: its session as it saw it, its own ledger, its events.
	os := getStatus(t, ms.owner0)
	if os.Role != "owner" || os.State != "done" || os.Session != "status-test" || os.Outcome != "complete: 3 of 3 rounds" ||
		os.Badge != "complete" || !os.Ended || os.Kept != 3 {
		t.Fatalf("owner status %+v", os)
	}
	spent := ms.owners[0].Snapshot().Spent
	if float64(os.Budget.Spent) != spent || float64(os.Budget.Total) != 3 || float64(os.Budget.Left) != 3-spent {
		t.Fatalf("owner budget %+v, ledger spent %v", os.Budget, spent)
	}
	kinds := map[string]int{}
	for _, e := range os.Events {
		kinds[e.Kind]++
	}
	if kinds[session.OwnerEventJoined] != 1 || kinds[session.OwnerEventLeft] != 1 || kinds[session.OwnerEventCharged] != int(spent) ||
		kinds[session.OwnerEventSelected] != int(spent) {
		t.Fatalf("owner events %v (spent %v)", kinds, spent)
	}
	keptAlpha := 0
	for _, r := range os.Rounds {
		if r.Accepted {
			keptAlpha++
			if float64(r.Alpha) != ms.model.Rounds[keptAlpha-1].Alpha {
				t.Fatalf("owner round %+v, model alpha %v", r, ms.model.Rounds[keptAlpha-1].Alpha)
			}
		}
		// Nothing of the user's aggregates or of the owner's data.
		if r.Err != 0 || r.ValAccuracy != 0 || r.TestAccuracy != 0 || r.Owners != 0 {
			t.Fatalf("owner round shows the user's numbers: %+v", r)
		}
	}
	if keptAlpha != 3 || os.Owners != nil {
		t.Fatalf("owner page: %d kept rounds, owners %+v", keptAlpha, os.Owners)
	}
}
