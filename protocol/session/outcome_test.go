package session

import (
	"strings"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// outcomes records the outcome every owner of c reports.
func outcomes(c *cluster) map[protocol.PeerID]protocol.Outcome {
	got := map[protocol.PeerID]protocol.Outcome{}
	for i, o := range c.owners {
		id := c.ids[i]
		o.call(func() {
			o.cfg.OnOutcome = func(_ string, out protocol.Outcome) { got[id] = out }
		})
	}
	return got
}

// checkAgreement: the user and every owner state the same outcome, in the
// same words, of the wanted kind and rounds.
func checkAgreement(t *testing.T, c *cluster, got map[protocol.PeerID]protocol.Outcome, kind protocol.OutcomeKind, rounds int) protocol.Outcome {
	t.Helper()
	c.w.advance(time.Second) // the last message reaches the owners
	want := c.user.Outcome()
	if want.Kind != kind || want.Rounds != rounds || want.Planned != c.cfg.Rounds {
		t.Fatalf("user outcome %q, want %s with %d of %d rounds", want, kind, rounds, c.cfg.Rounds)
	}
	if len(got) != len(c.owners) {
		t.Fatalf("%d of %d owners reported an outcome: %v", len(got), len(c.owners), got)
	}
	for id, o := range got {
		if o.String() != want.String() || o != want {
			t.Fatalf("owner %s: outcome %q, user %q", id, o, want)
		}
	}
	return want
}

func TestOutcomeCompleteAgrees(t *testing.T) {
	c := newCluster(t, 8, nil)
	got := outcomes(c)
	c.startUser(t, nil)
	c.run(time.Minute)
	out := checkAgreement(t, c, got, protocol.OutcomeComplete, c.cfg.Rounds)
	if out.String() != "complete: 2 of 2 rounds" || c.err != nil || c.model.Partial != nil {
		t.Fatalf("outcome %q, err %v, label %v", out, c.err, c.model.Partial)
	}
	for i, o := range c.owners {
		if m := o.Final(); m == nil || len(m.Rounds) != 2 || m.Partial != nil {
			t.Fatalf("owner %d final model %v", i, m)
		}
	}
}

// Round 1 is accepted, then every share is lost: the user runs out of
// attempts in round 2 and ends partial with round 1's model, which it
// publishes (labelled partial) in Final: every owner ends with the same
// outcome and the same labelled model.
func TestOutcomePartialAgrees(t *testing.T) {
	c := newCluster(t, 12, func(cfg *boost.Config, p *securesum.Params) { cfg.Rounds, cfg.MaxAttempts = 3, 2 })
	c.w.drop = func(m msg) bool {
		return m.topic == wire.TopicShares && m.env().GetHeader().GetRound() >= 2
	}
	got := outcomes(c)
	c.startUser(t, nil)
	c.run(5 * time.Minute)
	out := checkAgreement(t, c, got, protocol.OutcomePartial, 1)
	if !strings.HasPrefix(out.String(), "partial: 1 of 3 rounds (round 2: no learner accepted in 2 attempts") {
		t.Fatalf("outcome %q", out)
	}
	p := c.model.Partial
	if p == nil || p.Rounds != 1 || p.Planned != 3 || p.Reason != out.Reason || len(c.model.Rounds) != 1 {
		t.Fatalf("user model label %+v with %d rounds", p, len(c.model.Rounds))
	}
	if n := c.w.count(func(m msg, e *wire.Envelope) bool { return e.GetAbort() != nil }); n != 0 {
		t.Fatalf("%d Aborts published for a partial session", n)
	}
	for i, o := range c.owners {
		m := o.Final()
		if m == nil || m.Partial == nil || *m.Partial != *p {
			t.Fatalf("owner %d final model %v", i, m)
		}
		if st, _ := o.State(); st != OwnerDone {
			t.Fatalf("owner %d state %s", i, st)
		}
	}
}

// Every attempt's learner is dropped (the user's labels are flipped): no
// round, the outcome is failed, Abort carries it and every owner says the
// same.
func TestOutcomeFailedAgrees(t *testing.T) {
	c := newCluster(t, 12, func(cfg *boost.Config, p *securesum.Params) {
		cfg.Alpha, cfg.MaxAttempts, cfg.Rounds = boost.AlphaValidation, 3, 2
	})
	flipped := *c.data.User
	flipped.Y = append([]int(nil), c.data.User.Y...)
	for i := range flipped.Y {
		flipped.Y[i] = 1 - flipped.Y[i]
	}
	c.data.User = &flipped
	got := outcomes(c)
	c.startUser(t, nil)
	c.run(time.Minute)
	out := checkAgreement(t, c, got, protocol.OutcomeFailed, 0)
	if !strings.HasPrefix(out.String(), "failed: 0 of 2 rounds (round 1: no learner accepted in 3 attempts") {
		t.Fatalf("outcome %q", out)
	}
	if st, _ := c.user.State(); st != UserFailed {
		t.Fatalf("user state %s", st)
	}
	for i, o := range c.owners {
		if st, _ := o.State(); st != OwnerIdle || o.Final() != nil {
			t.Fatalf("owner %d state %s", i, st)
		}
	}
}

// An outcome that does not fit the session (a complete Final of fewer
// rounds than planned; a partial Abort) is dropped: the owner stays in the
// session.
func TestOutcomeMismatchIsDropped(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    *wire.Outcome
	}{
		{"complete with fewer rounds", &wire.Outcome{Kind: wire.Outcome_COMPLETE, Rounds: 1, Planned: 3}},
		{"partial with every round", &wire.Outcome{Kind: wire.Outcome_PARTIAL, Rounds: 3, Planned: 3}},
		{"another plan", &wire.Outcome{Kind: wire.Outcome_FAILED, Rounds: 0, Planned: 9}},
		{"no kind", &wire.Outcome{Rounds: 0, Planned: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := protocol.OutcomeFromWire(tc.w, 3, ""); err == nil {
				t.Fatalf("outcome %v accepted", tc.w)
			}
		})
	}
	if _, err := protocol.OutcomeFromWire(&wire.Outcome{Kind: wire.Outcome_PARTIAL, Rounds: 2, Planned: 3, Reason: "x"}, 3, ""); err != nil {
		t.Fatal(err)
	}
}

// An owner the roster does not name (drawn out by the roster cap) leaves
// the session at the first Select, saying why through OnRefuse, instead of
// waiting out the idle timeout; the session goes on without it.
func TestOwnerNotInRosterLeaves(t *testing.T) {
	c := newCluster(t, 9, nil)
	c.userCfg = func(u *UserConfig) { u.MaxRoster = 8 }
	refused := map[protocol.PeerID]string{}
	for i, o := range c.owners {
		id := c.ids[i]
		o.call(func() { o.cfg.OnRefuse = func(_, why string) { refused[id] = why } })
	}
	got := outcomes(c)
	c.startUser(t, nil)
	c.run(time.Minute)
	if c.err != nil || c.user.Outcome().Kind != protocol.OutcomeComplete {
		t.Fatalf("session: %v", c.err)
	}
	if len(refused) != 1 || len(got) != 8 {
		t.Fatalf("%d owners left as not in the roster (%v), %d reported the outcome; want 1 and 8", len(refused), refused, len(got))
	}
	for id, why := range refused {
		if _, ok := got[id]; ok || !strings.Contains(why, "does not name this owner") {
			t.Fatalf("owner %s: %q, outcome %v", id, why, got[id])
		}
		for i, o := range c.owners {
			if c.ids[i] == id {
				if st, _ := o.State(); st != OwnerIdle {
					t.Fatalf("owner %s is %s", id, st)
				}
			}
		}
	}
}
