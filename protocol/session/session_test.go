package session

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

func TestHappyPathEqualsReference(t *testing.T) {
	for _, method := range []string{securesum.Ring, securesum.Shamir} {
		for _, alpha := range []boost.AlphaMode{boost.AlphaSecureSum, boost.AlphaValidation} {
			t.Run(method+"/"+string(alpha), func(t *testing.T) {
				c := newCluster(t, 8, func(cfg *boost.Config, p *securesum.Params) { cfg.Alpha, p.Method = alpha, method })
				c.startUser(t, nil)
				c.run(time.Minute)
				if !c.done || c.err != nil {
					t.Fatalf("done %v, err %v", c.done, c.err)
				}
				sameAsReference(t, c)
				c.w.advance(time.Second)
				if !c.ownersLeft() {
					t.Fatal("owners still in the session after Final")
				}
				// One secure sum per round in alpha mode securesum (the err
				// sum), none in alpha mode validation: owners renormalize
				// from alpha alone.
				want := c.cfg.Rounds
				if alpha == boost.AlphaValidation {
					want = 0
				}
				starts := c.w.count(func(m msg, e *wire.Envelope) bool { return m.to == c.ids[0] && e.GetSumStart() != nil })
				if starts != want {
					t.Fatalf("owner 0 saw %d SumStarts for %d rounds, want %d", starts, c.cfg.Rounds, want)
				}
			})
		}
	}
}

func TestJoinTimeoutFailsAndSaysWhy(t *testing.T) {
	c := newCluster(t, 8, nil)
	for _, id := range c.ids {
		c.w.dead[id] = true // no owner answers
	}
	c.startUser(t, nil)
	c.run(time.Minute)
	if !c.done || !errors.Is(c.err, protocol.ErrSessionFailed) || !strings.Contains(c.err.Error(), "0 owners joined") {
		t.Fatalf("done %v, err %v", c.done, c.err)
	}
	if st, _ := c.user.State(); st != UserFailed {
		t.Fatalf("user state %s", st)
	}
}

// Every share of round 1 attempt 0 is lost: the user waits the share
// timeout, then retries with fresh owners.
func TestNoShareRetriesWithFreshOwners(t *testing.T) {
	c := newCluster(t, 8, nil)
	c.w.drop = func(m msg) bool {
		e := m.env()
		return m.topic == wire.TopicShares && e.GetHeader().GetRound() == 1 && e.GetHeader().GetAttempt() == 0
	}
	var reports []RoundReport
	c.startUser(t, nil)
	c.user.cfg.OnRound = func(r RoundReport) { reports = append(reports, r) }
	c.run(time.Minute)
	if !c.done || c.err != nil {
		t.Fatalf("done %v, err %v", c.done, c.err)
	}
	if len(reports) == 0 || reports[0].Attempt != 0 || reports[0].Owners != 0 || reports[1].Attempt != 1 {
		t.Fatalf("reports %+v", reports)
	}
	// The two owners of the lost attempt spent their budget and are used.
	if got, want := c.releases(), c.cfg.OwnersPerRound*(c.cfg.Rounds+1); got != want {
		t.Fatalf("%d owners released a share, want %d", got, want)
	}
}

// A user whose validation labels are the owners' flipped gets alpha <= 0 on
// every attempt: each retry takes fresh owners, and after MaxAttempts the
// session fails, the owners are told (Abort) and leave.
func TestAlphaNotPositiveRetriesThenFails(t *testing.T) {
	c := newCluster(t, 12, func(cfg *boost.Config, p *securesum.Params) {
		cfg.Alpha, cfg.MaxAttempts, cfg.Rounds = boost.AlphaValidation, 3, 2
	})
	flipped := *c.data.User
	flipped.Y = append([]int(nil), c.data.User.Y...)
	for i := range flipped.Y {
		flipped.Y[i] = 1 - flipped.Y[i]
	}
	c.data.User = &flipped
	c.startUser(t, nil)
	c.run(time.Minute)
	if !c.done || !errors.Is(c.err, boost.ErrNoProgress) || !strings.Contains(c.err.Error(), "attempt 2: alpha") {
		t.Fatalf("done %v, err %v (want each attempt's outcome named)", c.done, c.err)
	}
	if got := c.releases(); got != 3*c.cfg.OwnersPerRound {
		t.Fatalf("%d releases, want %d (3 attempts)", got, 3*c.cfg.OwnersPerRound)
	}
	if n := c.w.count(func(m msg, e *wire.Envelope) bool { return e.GetAbort() != nil }); n == 0 {
		t.Fatal("no Abort published")
	}
	c.w.advance(time.Second)
	if !c.ownersLeft() {
		t.Fatal("owners still joined after the Abort")
	}
}

// A roster with no room for a dropped attempt (5 owners, 3 rounds of 2) is
// refused before the first Select: nobody spends (issue 19 item 7).
func TestPlanWithoutRetryRoomSpendsNothing(t *testing.T) {
	c := newCluster(t, 5, func(cfg *boost.Config, p *securesum.Params) { cfg.OwnersPerRound, cfg.Rounds = 2, 3 })
	c.startUser(t, nil)
	c.run(time.Minute)
	if !c.done || !errors.Is(c.err, boost.ErrNoRetryRoom) || !strings.Contains(c.err.Error(), "admit at least 8 owners") {
		t.Fatalf("done %v, err %v", c.done, c.err)
	}
	for i, l := range c.ledgers {
		if l.Spent() != 0 {
			t.Fatalf("owner %d spent %v", i, l.Spent())
		}
	}
	if n := c.w.count(func(m msg, e *wire.Envelope) bool { return e.GetSelect() != nil }); n != 0 {
		t.Fatalf("%d Selects published", n)
	}
}

// A plan with room for one dropped attempt still runs out when every
// attempt is dropped (no learner passes a significance level of 1e-300):
// the session fails with ErrOutOfOwners and no round.
func TestOutOfOwnersFails(t *testing.T) {
	c := newCluster(t, 8, func(cfg *boost.Config, p *securesum.Params) {
		cfg.OwnersPerRound, cfg.Rounds, cfg.Significance = 2, 3, 1e-300
	})
	c.startUser(t, nil)
	c.run(time.Minute)
	if !c.done || !errors.Is(c.err, boost.ErrOutOfOwners) {
		t.Fatalf("done %v, err %v", c.done, c.err)
	}
	if len(c.model.Rounds) != 0 {
		t.Fatalf("model keeps %d accepted rounds, want 0", len(c.model.Rounds))
	}
}

// Every secure-sum message to the user is lost: the sum fails on its
// timers (no other message arrives to move anything), the user fails with
// the sum's error and the owners go back to idle.
func TestFailedSumEndsTheSession(t *testing.T) {
	c := newCluster(t, 8, nil)
	c.w.drop = func(m msg) bool { return m.to == userID && m.proto == wire.ProtoRing }
	c.startUser(t, nil)
	c.run(10 * time.Minute)
	if !c.done || !errors.Is(c.err, securesum.ErrTooFew) {
		t.Fatalf("done %v, err %v", c.done, c.err)
	}
	c.w.advance(time.Second)
	if !c.ownersLeft() {
		t.Fatal("owners still joined after the failed sum")
	}
}

// The user dies without a word: the owners leave after the idle timeout.
func TestOwnersLeaveAfterIdleTimeout(t *testing.T) {
	c := newCluster(t, 8, nil)
	c.w.drop = func(m msg) bool {
		if m.from == userID && m.env().GetSelect() != nil {
			c.w.dead[userID] = true // dies as it selects round 1's owners
		}
		return false
	}
	c.startUser(t, nil)
	c.w.advance(time.Second)
	if !c.w.dead[userID] {
		t.Fatal("no Select")
	}
	c.w.advance(c.timing.IdleTimeout - 2*time.Second)
	if c.ownersLeft() {
		t.Fatal("owners left before the idle timeout")
	}
	c.w.advance(2 * time.Second)
	if !c.ownersLeft() {
		t.Fatal("owners still joined after the idle timeout")
	}
}

func TestMalformedFinalIsDropped(t *testing.T) {
	c := newCluster(t, 8, nil)
	c.w.drop = func(m msg) bool { return m.topic == wire.TopicShares } // the session stalls in round 1
	c.startUser(t, nil)
	c.w.advance(100 * time.Millisecond)
	before := c.owners[0].Stats().Get(protocol.ErrUnexpected.Error())
	env, _ := wire.Wrap(&wire.Header{Version: wire.Version, Session: "hand"}, &wire.Final{Model: &wire.Final_Wc{Wc: &wire.WCModel{Classes: 2}}})
	b, _ := wire.Marshal(env, wire.MaxControlBytes)
	poster{transport{c.w, userID}}.Publish(wire.TopicControl, b)
	c.w.advance(10 * time.Millisecond)
	if got := c.owners[0].Stats().Get(protocol.ErrUnexpected.Error()); got != before+1 {
		t.Fatalf("malformed final counted %d times", got-before)
	}
	if st, _ := c.owners[0].State(); st != OwnerJoined {
		t.Fatalf("owner %s after a malformed final", st)
	}
}

// One owner misses the roster chunks and round 1's Select: it asks the
// user for the roster when the next Select names a version it lacks, and
// takes part in the sums from then on; the session finishes.
func TestLostSelectAndRoster(t *testing.T) {
	c := newCluster(t, 8, nil)
	victim := c.ids[3]
	c.w.drop = func(m msg) bool {
		e := m.env()
		return m.to == victim && (e.GetRoster() != nil || (e.GetSelect() != nil && e.GetHeader().GetRound() == 1))
	}
	c.startUser(t, nil)
	c.w.advance(20 * time.Millisecond)
	c.w.drop = nil
	c.run(time.Minute)
	if !c.done || c.err != nil {
		t.Fatalf("done %v, err %v", c.done, c.err)
	}
	asked := c.w.count(func(m msg, e *wire.Envelope) bool { return m.from == victim && e.GetRosterRequest() != nil })
	if asked == 0 {
		t.Fatal("the owner never asked for the roster")
	}
	if c.owners[3].roster == nil {
		t.Fatal("the owner never got the roster")
	}
}

// An owner paused past its Select's deadline spends nothing when it
// resumes: the user has moved on.
func TestStaleSelectSpendsNothing(t *testing.T) {
	c := newCluster(t, 8, nil)
	// Find who round 1 selects, then pause one of them before it hears.
	var victim protocol.PeerID
	c.w.drop = func(m msg) bool {
		if e := m.env(); victim == "" && e.GetSelect() != nil {
			victim = protocol.PeerID(c.selectedIn(e)[0])
			c.w.pause(victim)
			if m.to == victim {
				c.w.paused[victim] = append(c.w.paused[victim], m)
				return true
			}
		}
		return false
	}
	c.startUser(t, nil)
	c.w.advance(100 * time.Millisecond)
	if victim == "" {
		t.Fatal("no Select seen")
	}
	c.w.drop = nil
	c.w.advance(c.timing.ShareTimeout + time.Second)
	c.w.resume(victim)
	c.w.advance(10 * time.Millisecond)
	i := indexOf(c.ids, victim)
	if c.ledgers[i].Contributed("hand") {
		t.Fatal("the paused owner spent its budget on a stale Select")
	}
	if n := c.w.count(func(m msg, e *wire.Envelope) bool {
		return m.from == victim && e.GetRefuse() != nil && strings.Contains(e.GetRefuse().GetReason(), "deadline")
	}); n != 1 {
		t.Fatalf("%d deadline refusals", n)
	}
}

func indexOf(ids []protocol.PeerID, id protocol.PeerID) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// The user is killed after round 1 and restarted from its checkpoint: no
// accepted round is redone, no owner releases twice, and the model equals an
// uninterrupted run.
func TestUserRestartResumes(t *testing.T) {
	for _, alpha := range []boost.AlphaMode{boost.AlphaSecureSum, boost.AlphaValidation} {
		t.Run(string(alpha), func(t *testing.T) {
			c := newCluster(t, 10, func(cfg *boost.Config, p *securesum.Params) { cfg.Rounds, cfg.Alpha = 3, alpha })
			// The user dies as it selects round 2's owners: the checkpoint
			// written before that Select says round 1 is accepted and
			// attempt 0 of round 2 was started.
			var lost []string
			cp := crashUser(t, c, true, func(e *wire.Envelope) bool {
				if e.GetSelect() != nil && e.GetHeader().GetRound() == 2 {
					lost = c.selectedIn(e)
					return true
				}
				return false
			})
			if len(lost) == 0 {
				t.Fatal("no lost selection")
			}
			for _, p := range lost {
				if !slices.Contains(cp.Used, p) {
					t.Fatalf("owner %s of the started attempt is not in the checkpoint's used owners", p)
				}
			}
			ref, err := boost.Train(c.cfg, c.data, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.w.handlers[userID] = nil
			c.startUser(t, &cp)
			c.run(time.Minute)
			if !c.done || c.err != nil {
				t.Fatalf("resumed: done %v, err %v", c.done, c.err)
			}
			// Round 1 (accepted before the crash) is the reference's; the
			// resumed round 2 runs as attempt 1 with fresh owners, so from
			// there the model is another valid run.
			if len(c.model.Rounds) != c.cfg.Rounds || *c.model.Rounds[0].Base.Stump != *ref.Rounds[0].Base.Stump {
				t.Fatalf("resumed model: %d rounds, first %+v, reference first %+v", len(c.model.Rounds), c.model.Rounds[0].Base, ref.Rounds[0].Base)
			}
			// Every owner released at most once (the ledger), exactly the
			// owners whose selection reached them: the restart cost the
			// started attempt's owners that had their Select before the
			// crash (the Select goes to each selected owner directly, the
			// first of them before the crash here), and no more.
			reached := map[protocol.PeerID]bool{}
			for _, m := range c.w.log {
				if e := m.env(); m.from == userID && e.GetSelect() != nil && slices.Contains(c.selectedIn(e), string(m.to)) {
					reached[m.to] = true
				}
			}
			if got, want := c.releases(), len(reached); got != want || want < c.cfg.OwnersPerRound*c.cfg.Rounds+1 {
				t.Fatalf("%d owners released shares, want %d, the owners a Select reached (at least %d: every round's and one of the lost attempt's)",
					got, want, c.cfg.OwnersPerRound*c.cfg.Rounds+1)
			}
			for _, m := range c.w.log {
				// Only the crashed incarnation's Select names attempt 0 of round 2.
				if e := m.env(); m.from == userID && e.GetSelect() != nil && e.GetHeader().GetRound() == 2 && e.GetHeader().GetAttempt() == 0 &&
					!slices.Equal(c.selectedIn(e), lost) {
					t.Fatal("the resumed user re-ran attempt 0 of round 2")
				}
			}
		})
	}
}

// crashUser starts c's user and kills it at the first message kill names
// (sent when sendFirst, else lost with the rest); the user's loop runs on
// in the void for 3 s. It revives the user's node and returns the
// checkpoint a real crash would have left: the last one written before that
// message, round 1 accepted and attempt 1 of round 2 next.
func crashUser(t *testing.T, c *cluster, sendFirst bool, kill func(*wire.Envelope) bool) Checkpoint {
	t.Helper()
	c.w.drop = func(m msg) bool {
		if m.from == userID && kill(m.env()) {
			c.w.dead[userID] = true
			return !sendFirst
		}
		return false
	}
	c.startUser(t, nil)
	c.w.advance(3 * time.Second)
	c.w.drop = nil
	delete(c.w.dead, userID)
	for _, x := range c.cps {
		if x.Round == 1 && x.Attempt == 1 {
			return x
		}
	}
	t.Fatalf("no checkpoint of round 1 with attempt 1 next among %d", len(c.cps))
	return Checkpoint{}
}

// The data user stops after it checkpointed an accepted round and before
// that round's Alpha left (the checkpoint is written in the step whose
// effects carry the Alpha): no owner has the round's weights. The resumed
// user sends the round's Learner and Alpha again ahead of its resume
// announcement, so the owners settle the round and the session completes.
// Without the copies every owner leaves ("no longer has that round's
// weights") and the resumed session fails.
func TestUserRestartBeforeTheAcceptedAlphaResumes(t *testing.T) {
	for _, alpha := range []boost.AlphaMode{boost.AlphaSecureSum, boost.AlphaValidation} {
		t.Run(string(alpha), func(t *testing.T) {
			c := newCluster(t, 10, func(cfg *boost.Config, p *securesum.Params) { cfg.Rounds, cfg.Alpha = 3, alpha })
			// The user dies as round 1's accepted Alpha leaves: that
			// message and everything after it are lost.
			cp := crashUser(t, c, false, func(e *wire.Envelope) bool {
				return e.GetAlpha().GetAccepted() && e.GetHeader().GetRound() == 1
			})
			for i := range c.owners {
				if c.owners[i].settled != 0 {
					t.Fatalf("owner %d settled round %d before the restart; want none (the Alpha was lost)", i, c.owners[i].settled)
				}
			}
			c.w.handlers[userID] = nil
			c.startUser(t, &cp)
			c.run(time.Minute)
			if !c.done || c.err != nil {
				t.Fatalf("resumed: done %v, err %v", c.done, c.err)
			}
			if len(c.model.Rounds) != c.cfg.Rounds {
				t.Fatalf("resumed model: %d rounds, want %d", len(c.model.Rounds), c.cfg.Rounds)
			}
		})
	}
}

// A data user that re-announces its session as resumed cannot make the
// owners deal a completed sum again: their secure-sum parties outlive the
// resume and refuse a second instance of it (the user could subtract the
// totals). Played by hand: round 2's err sum completes, then the user
// re-announces "resume after round 1", re-publishes round 2's learner and
// opens round 2's err sum again without owner 0.
func TestResumeDoesNotReopenDealtSums(t *testing.T) {
	c := newCluster(t, 10, func(cfg *boost.Config, p *securesum.Params) { cfg.Rounds, p.Method = 3, securesum.Shamir })
	c.w.drop = func(m msg) bool { // nothing of the user reaches the owners after round 2's err sum
		e := m.env()
		r := e.GetHeader().GetRound()
		return m.from == userID && (r > 2 || e.GetAbort() != nil || (r == 2 && (e.GetAlpha() != nil || e.GetSumResult() != nil)))
	}
	c.startUser(t, nil)
	c.w.advance(10 * time.Second)
	var announce, learner, start *wire.Envelope
	for _, m := range c.w.log {
		e := m.env()
		switch {
		case m.from != userID:
		case e.GetAnnounce() != nil && announce == nil:
			announce = e
		case e.GetLearner() != nil && e.GetHeader().GetRound() == 2 && learner == nil:
			learner = e
		case e.GetSumStart().GetPurpose() == PurposeErr && e.GetHeader().GetRound() == 2 && start == nil:
			start = e
		}
	}
	if announce == nil || learner == nil || start == nil {
		t.Fatal("round 2 did not reach its err sum")
	}
	dealt := func(from int, instance uint32) (n int) {
		for _, m := range c.w.log[from:] {
			if e := m.env(); e.GetSum().GetKind() == wire.Sum_SHAMIR_SHARE && e.GetHeader().GetRound() == 2 && e.GetSum().GetInstance() == instance {
				n++
			}
		}
		return n
	}
	if dealt(0, start.GetSumStart().GetInstance()) == 0 {
		t.Fatal("round 2's err sum dealings were not observed")
	}
	c.w.dead[userID] = true // the honest user is gone; the deviant speaks as it
	c.w.drop = nil
	pub := func(e *wire.Envelope) {
		e = proto.Clone(e).(*wire.Envelope)
		e.Header.Seq += 1 << 20
		raw, err := wire.Marshal(e, wire.MaxControlBytes)
		if err != nil {
			t.Fatal(err)
		}
		delete(c.w.dead, userID)
		poster{transport{c.w, userID}}.Publish(wire.TopicControl, raw)
		c.w.advance(100 * time.Millisecond)
	}
	resume := proto.Clone(announce).(*wire.Envelope)
	resume.GetAnnounce().Config.Resume, resume.GetAnnounce().Config.ResumeAfterRound = true, 1
	pub(resume)
	pub(learner)
	roster := c.user.roster
	excluded := make([]byte, (len(roster.IDs)+7)/8)
	excluded[0] = 1
	next := start.GetSumStart().GetInstance() + 1
	com := securesum.Committee(roster.IDs[1:], c.sum.Committee, roster.Beacon, start.GetHeader(), PurposeErr, next)
	again := proto.Clone(start).(*wire.Envelope)
	ss := again.GetSumStart()
	ss.Instance, ss.Excluded, ss.Committee = next, excluded, nil
	ss.Threshold = uint32(c.sum.ThresholdFor(len(com)))
	for _, m := range com {
		ss.Committee = append(ss.Committee, string(m))
	}
	before := len(c.w.log)
	pub(again)
	c.w.advance(time.Second)
	if n := dealt(before, next); n != 0 {
		t.Fatalf("%d Shamir shares dealt in a re-opened round-2 err sum after a re-announced resume", n)
	}
	evaluated := 0
	for _, o := range c.owners {
		o.call(func() {
			if r := o.rounds[roundKey{2, 0}]; r != nil && r.base != nil {
				evaluated++
			}
		})
	}
	if evaluated == 0 {
		t.Fatal("no owner took the re-published learner: the play did not reach the sum")
	}
}

// Owners whose limits the session exceeds do not join, say why in their log
// and to the user, and the user's failure names the reason.
func TestRefusedJoinsAreExplained(t *testing.T) {
	c := newCluster(t, 8, func(cfg *boost.Config, p *securesum.Params) { cfg.Mechanism, cfg.Epsilon = "pm", 5 })
	c.startUser(t, nil)
	c.run(time.Minute)
	if !c.done || !errors.Is(c.err, protocol.ErrSessionFailed) {
		t.Fatalf("done %v, err %v", c.done, c.err)
	}
	if !strings.Contains(c.err.Error(), "8 refused (8: ") || !strings.Contains(c.err.Error(), "epsilon 5 above this owner's limit 1") {
		t.Fatalf("the failure does not say why the owners stayed out: %v", c.err)
	}
}
