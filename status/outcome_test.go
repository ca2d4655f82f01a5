package status

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/session"
)

// The outcomes and modes the page is checked on. Every session plans 3
// rounds and starts at outcomeT0; its first attempt selects owners after
// the join wait, each attempt takes attemptTime, and the session ends
// endAfter its start.
var (
	outcomeT0   = time.Unix(1_700_000_000, 0)
	joinWait    = 50 * time.Second
	attemptTime = 2 * time.Second
	endAfter    = 65 * time.Second
)

// outcomeCase is one way a session ends: its attempts (true: kept), the
// state the session is in at the end (a partial session stopped early
// is in state failed), the outcome it stated.
type outcomeCase struct {
	name     string
	attempts []bool // in order; rounds advance after each kept one
	state    session.UserState
	outcome  protocol.Outcome
	kept     int
	dropped  int
}

var outcomeCases = []outcomeCase{
	{name: "complete", attempts: []bool{true, false, true, true}, state: session.UserDone,
		outcome: protocol.NewOutcome(3, 3, "", nil), kept: 3, dropped: 1},
	{name: "partial", attempts: []bool{true, true, false, false}, state: session.UserFailed,
		outcome: protocol.NewOutcome(2, 3, "", errNoLearner(3)), kept: 2, dropped: 2},
	{name: "failed", attempts: []bool{false, false}, state: session.UserFailed,
		outcome: protocol.NewOutcome(0, 3, "", errNoLearner(1)), kept: 0, dropped: 2},
}

func errNoLearner(round int) error {
	return fmt.Errorf("round %d: no learner accepted in 2 attempts", round)
}

// modeCase is how a session computes err_m and protects the releases.
type modeCase struct {
	name      string
	alpha     boost.AlphaMode
	privacy   boost.Privacy
	secureSum string   // what the page must name ("" : no sum runs)
	sums      []string // what it sums
}

var modeCases = []modeCase{
	{name: "validation ldp", alpha: boost.AlphaValidation, privacy: boost.PrivacyLDP},
	{name: "securesum ldp", alpha: boost.AlphaSecureSum, privacy: boost.PrivacyLDP, secureSum: "shamir", sums: []string{"err_m"}},
	{name: "validation distributed", alpha: boost.AlphaValidation, privacy: boost.PrivacyDistributed, secureSum: "shamir",
		sums: []string{"shares"}},
	{name: "securesum distributed", alpha: boost.AlphaSecureSum, privacy: boost.PrivacyDistributed, secureSum: "shamir",
		sums: []string{"err_m", "shares"}},
}

// Each share costs its owner shareEps, each err dealing errEps; 9 owners
// in the roster, 2 per round.
const (
	shareEps = 5.0
	errEps   = 0.5
	roster   = 9
)

// endedBoard is a data user's board that saw oc's attempts in mode mc and
// the session's end, with its clock at the end plus linger; the clock can
// be moved on.
func endedBoard(oc outcomeCase, mc modeCase, linger time.Duration) (*Board, *time.Time) {
	now := outcomeT0
	snap := session.UserSnapshot{Session: "s-" + oc.name, State: session.UserShares, Started: outcomeT0,
		Config: session.SessionSummary{Learner: "stump", Mechanism: "pm", Epsilon: shareEps, Rounds: 3, OwnersPerRound: 2,
			Alpha: string(mc.alpha), SumMethod: "shamir", Privacy: string(mc.privacy), ErrEpsilon: errEps},
		Joined: roster, Roster: roster}
	b := NewUserBoard("12D3KooWuser", func() session.UserSnapshot { return snap }, nil)
	b.SetClock(func() time.Time { return now })
	round, attempt := 1, 0
	at := joinWait
	for _, kept := range oc.attempts {
		at += attemptTime
		now = outcomeT0.Add(at)
		rep := session.RoundReport{RoundInfo: boost.RoundInfo{Round: round, Attempt: attempt, Owners: 2, Err: 0.3, Alpha: 0.4,
			Accepted: kept, Elapsed: at}, Selected: 2, Answered: 2, Took: attemptTime}
		if mc.alpha == boost.AlphaSecureSum {
			rep.ErrDealers = roster
		}
		if !kept {
			rep.Alpha, rep.Why = -0.1, "alpha <= 0"
		}
		b.Round(rep)
		snap.Round, snap.Attempt, snap.Used = round, attempt, snap.Used+2
		if kept {
			snap.Ensemble.Rounds = append(snap.Ensemble.Rounds, boost.ModelRound{Alpha: 0.4})
			round, attempt = round+1, 0
		} else {
			attempt++
		}
	}
	end := outcomeT0.Add(endAfter)
	snap.State, snap.Outcome, snap.Ended = oc.state, oc.outcome, end
	if oc.state == session.UserFailed {
		snap.Err = oc.outcome.Reason
	}
	now = end.Add(linger)
	return b, &now
}

// statusJSON is s as /status.json serves it, decoded into a map (to check
// which fields exist).
func statusJSON(t *testing.T, b *Board) (Status, map[string]any) {
	t.Helper()
	s := getStatus(t, b)
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return s, m
}

// Every outcome in every mode: the badge is the outcome's kind (a partial
// session is in state failed, its badge is partial), rounds are kept of
// planned with the dropped attempts apart, a secure sum is named only when
// one runs, epsilon is per owner, each attempt's time is its own, and the
// session's length stays put after its end.
func TestStatusOutcomeAndMode(t *testing.T) {
	for _, oc := range outcomeCases {
		for _, mc := range modeCases {
			t.Run(oc.name+"/"+mc.name, func(t *testing.T) {
				b, clock := endedBoard(oc, mc, 30*time.Second)
				s, raw := statusJSON(t, b)
				kind := oc.outcome.Kind.String()
				if s.Badge != kind || s.OutcomeKind != kind || !strings.HasPrefix(s.Outcome, kind+": ") {
					t.Fatalf("badge %q, outcome kind %q, outcome %q; want %s", s.Badge, s.OutcomeKind, s.Outcome, kind)
				}
				if oc.name == "partial" && (s.State != "failed" || s.Badge == "failed" || strings.HasPrefix(s.Outcome, "failed")) {
					t.Fatalf("partial session: state %q badge %q outcome %q", s.State, s.Badge, s.Outcome)
				}
				if s.Kept != oc.kept || s.Planned != 3 || s.DroppedAttempts != oc.dropped {
					t.Fatalf("kept %d of %d, %d dropped; want %d of 3, %d dropped", s.Kept, s.Planned, s.DroppedAttempts, oc.kept, oc.dropped)
				}
				// The mode.
				m := s.Mode
				if m == nil || m.ErrFrom != string(mc.alpha) || m.Privacy != string(mc.privacy) || m.SecureSum != mc.secureSum ||
					strings.Join(m.Sums, ",") != strings.Join(mc.sums, ",") {
					t.Fatalf("mode %+v, want err from %s, privacy %s, sum %q of %v", m, mc.alpha, mc.privacy, mc.secureSum, mc.sums)
				}
				// Epsilon per owner: one share each, one err dealing per
				// attempt with an err sum; no field sums over owners.
				want := shareEps
				if mc.alpha == boost.AlphaSecureSum {
					want += errEps * float64(len(oc.attempts))
				}
				bu := s.Budget
				if float64(bu.PerOwnerMax) != want || bu.SharesIn != 2*len(oc.attempts) || bu.SharesDropped != 2*oc.dropped {
					t.Fatalf("budget %+v, want %v per owner at most", bu, want)
				}
				budget := raw["budget"].(map[string]any)
				for _, summed := range []string{"owners_eps_spent", "owners_eps_dropped"} {
					if _, ok := budget[summed]; ok {
						t.Fatalf("the budget carries %s, a sum over owners", summed)
					}
				}
				for i, r := range s.Rounds {
					if _, ok := raw["rounds"].([]any)[i].(map[string]any)["owners_eps"]; ok {
						t.Fatalf("round %d carries owners_eps, a sum over owners", i)
					}
					if float64(r.ShareEps) != shareEps || (mc.alpha == boost.AlphaSecureSum) != (float64(r.ErrEps) == errEps && r.ErrDealers == roster) {
						t.Fatalf("round %d: ε %+v", i, r)
					}
					// Its own time, not counted from the session's start.
					at := (joinWait + time.Duration(i+1)*attemptTime).Seconds()
					if float64(r.ElapsedS) != attemptTime.Seconds() || float64(r.AtS) != at {
						t.Fatalf("round %d: elapsed %v s, at %v s; want %v, %v", i, r.ElapsedS, r.AtS, attemptTime.Seconds(), at)
					}
				}
				// Ended: its length, which stays put as the page lingers.
				if !s.Ended || s.EndedAt == nil || !s.EndedAt.Equal(outcomeT0.Add(endAfter)) || float64(s.Elapsed) != endAfter.Seconds() {
					t.Fatalf("ended %v at %v after %v s; want after %v s", s.Ended, s.EndedAt, s.Elapsed, endAfter.Seconds())
				}
				*clock = clock.Add(time.Minute)
				if s2 := getStatus(t, b); float64(s2.Elapsed) != endAfter.Seconds() || !s2.Ended {
					t.Fatalf("a minute later: elapsed %v s, ended %v", s2.Elapsed, s2.Ended)
				}
			})
		}
	}
}

// While the session runs the badge is its state, the clock runs, and
// nothing says it ended.
func TestStatusOutcomeRunning(t *testing.T) {
	now := outcomeT0.Add(20 * time.Second)
	snap := session.UserSnapshot{Session: "s", State: session.UserShares, Started: outcomeT0, Round: 2, Attempt: 1,
		Config:   session.SessionSummary{Learner: "stump", Mechanism: "pm", Epsilon: 5, Rounds: 3, Alpha: "validation", SumMethod: "shamir"},
		Ensemble: boost.Ensemble{Rounds: make([]boost.ModelRound, 1)}}
	b := NewUserBoard("p", func() session.UserSnapshot { return snap }, nil)
	b.SetClock(func() time.Time { return now })
	s := getStatus(t, b)
	if s.Badge != "shares" || s.OutcomeKind != "" || s.Ended || s.EndedAt != nil || s.Elapsed != 20 || s.Kept != 1 || s.Round != 2 {
		t.Fatalf("running: %+v", s)
	}
	if s.Mode == nil || s.Mode.SecureSum != "" || len(s.Mode.Sums) != 0 {
		t.Fatalf("errₘ from the validation set under LDP names a secure sum: %+v", s.Mode)
	}
	now = now.Add(10 * time.Second)
	if s := getStatus(t, b); s.Elapsed != 30 {
		t.Fatalf("10 s later: elapsed %v", s.Elapsed)
	}
}

// End (the CLI: the outcome its exit status comes from) sets the badge,
// whatever the board read from the snapshot.
func TestStatusOutcomeEnd(t *testing.T) {
	for _, oc := range outcomeCases {
		t.Run(oc.name, func(t *testing.T) {
			snap := session.UserSnapshot{Session: "s", State: session.UserFailed, Started: outcomeT0,
				Config: session.SessionSummary{Rounds: 3}}
			b := NewUserBoard("p", func() session.UserSnapshot { return snap }, nil)
			b.SetClock(func() time.Time { return outcomeT0.Add(time.Minute) })
			b.End(oc.outcome)
			s := getStatus(t, b)
			if s.Badge != oc.outcome.Kind.String() || s.Outcome != oc.outcome.String() || !s.Ended {
				t.Fatalf("badge %q outcome %q ended %v; want %q", s.Badge, s.Outcome, s.Ended, oc.outcome)
			}
		})
	}
}

// An owner's page: the badge is the outcome it logged, and its time is the
// session's, from joining to leaving, however long the page lingers.
func TestStatusOutcomeOwner(t *testing.T) {
	for _, oc := range outcomeCases {
		t.Run(oc.name, func(t *testing.T) {
			now := outcomeT0
			snap := session.OwnerSnapshot{Session: "s", State: session.OwnerJoined, Spent: 5, Budget: 10,
				Config: session.SessionSummary{Learner: "stump", Mechanism: "pm", Epsilon: 5, Rounds: 3, Alpha: "validation",
					SumMethod: "shamir", Privacy: "ldp"}}
			b := NewOwnerBoard("o", func() session.OwnerSnapshot { return snap })
			b.SetClock(func() time.Time { return now })
			now = outcomeT0.Add(10 * time.Second)
			b.OwnerEvent(session.OwnerEvent{Time: now, Kind: session.OwnerEventJoined, Session: "s"})
			now = now.Add(5 * time.Second)
			if s := getStatus(t, b); s.Badge != "joined" || s.Ended || s.Elapsed != 5 {
				t.Fatalf("in the session: badge %q ended %v elapsed %v", s.Badge, s.Ended, s.Elapsed)
			}
			now = outcomeT0.Add(40 * time.Second)
			b.OwnerEvent(session.OwnerEvent{Time: now, Kind: session.OwnerEventLeft, Session: "s", Detail: oc.outcome.String()})
			snap.State, snap.Outcome = session.OwnerIdle, oc.outcome
			if oc.outcome.Kind != protocol.OutcomeFailed {
				snap.State, snap.FinalRounds = session.OwnerDone, oc.kept
			}
			now = now.Add(2 * time.Minute)
			s := getStatus(t, b)
			kind := oc.outcome.Kind.String()
			if s.Badge != kind || s.Kept != oc.kept || s.Planned != 3 || !s.Ended || s.Elapsed != 30 {
				t.Fatalf("badge %q (want %s), kept %d of %d, ended %v after %v s (want 30)", s.Badge, kind, s.Kept, s.Planned, s.Ended, s.Elapsed)
			}
			if s.Mode == nil || s.Mode.SecureSum != "" {
				t.Fatalf("owner mode %+v", s.Mode)
			}
		})
	}
}
