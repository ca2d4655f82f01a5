package conformance

import (
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// testDistributedMatchesReference runs sessions with distributed privacy
// (the selected owners' statistics go through one share sum per attempt,
// each with its noise share): with the owners' seeded noise streams the
// session computes the totals boost.Train computes, so the models agree,
// with noise on and off, for stumps and logistic regression.
func testDistributedMatchesReference(t *testing.T, h Harness) {
	n := min(12, h.MaxOwners())
	for _, learner := range []boost.Learner{boost.Stump, boost.LogReg} {
		for _, mech := range []string{"none", "pm"} {
			t.Run(string(learner)+"/"+mech, func(t *testing.T) {
				c := h.Start(t, n)
				data := sessionData(t, n, 30)
				cfg := boost.DefaultConfig()
				cfg.Learner, cfg.Mechanism, cfg.Privacy, cfg.Epsilon = learner, mech, boost.PrivacyDistributed, 20
				cfg.OwnersPerRound, cfg.Rounds, cfg.Seed, cfg.Significance = 4, 2, 5, 0
				ref, refErr := boost.Train(cfg, data, nil)
				if len(ref.Rounds) == 0 {
					t.Fatalf("the reference accepted no round (%v): nothing to compare", refErr)
				}
				s := startSession(t, c, cfg, sumParams(c, "shamir", n), data, nil)
				if !c.Run(s.finished, min(200000*c.Scale(), 3*time.Minute)) {
					st, err := s.user.State()
					t.Fatalf("session did not finish: user %s, %v", st, err)
				}
				if (s.err == nil) != (refErr == nil) {
					t.Fatalf("session error %v, reference error %v", s.err, refErr)
				}
				sameModel(t, ref, s.model)
			})
		}
	}
}

// testShareSumDealtOnce plays a data user that runs a share sum (single
// instance, as distributed privacy announces) to completion and then opens
// a second instance of the same sum without one owner: the two totals would
// differ by that owner's value with only its own noise share. No owner may
// deal in the second instance. Control: with SingleInstance off the same
// play makes the owners deal again, so the check does observe dealing.
func testShareSumDealtOnce(t *testing.T, h Harness) {
	n := min(6, h.MaxOwners())
	for _, single := range []bool{true, false} {
		name := "single-instance"
		if !single {
			name = "control-reforms-allowed"
		}
		t.Run(name, func(t *testing.T) {
			c := h.Start(t, n)
			p := testParams("shamir", n)
			p.SingleInstance, p.MinParties = single, n-1
			vals, _ := values(n)
			sc := newSumCluster(t, c, p, vals)
			d := &deviant{sc: sc}
			hdr := &wire.Header{Version: wire.Version, Session: sc.session, Round: 1}
			start := func(instance uint32, excluded []byte) *wire.SumStart {
				com := securesum.Committee(partsWithout(sc, excluded), p.Committee, sumBeacon, hdr, "share", instance)
				s := &wire.SumStart{Purpose: "share", Instance: instance, Method: "shamir", Length: 2,
					Threshold: uint32(p.ThresholdFor(len(com))), Excluded: excluded}
				for _, m := range com {
					s.Committee = append(s.Committee, string(m))
				}
				return s
			}
			d.publish(t, start(0, nil))
			if !sc.c.Run(func() bool { return sc.count(wire.Sum_SHAMIR_HOLDING) >= n }, 5000*sc.c.Scale()) {
				t.Fatalf("first instance: %d holding reports, want %d", sc.count(wire.Sum_SHAMIR_HOLDING), n)
			}
			before := sc.count(wire.Sum_SHAMIR_HOLDING)
			d.publish(t, start(1, bitmapOf(n, 0)))
			sc.c.Run(func() bool { return false }, 1000*sc.c.Scale())
			again := sc.count(wire.Sum_SHAMIR_HOLDING) - before
			switch {
			case single && again != 0:
				t.Fatalf("%d members report holding shares of a second instance of a single-instance sum", again)
			case !single && again == 0:
				t.Fatal("control: with re-forms allowed no member dealt a second instance; the check observes nothing")
			}
		})
	}
}

// partsWithout is the sorted roster minus the excluded bitmap.
func partsWithout(sc *sumCluster, excluded []byte) []protocol.PeerID {
	var out []protocol.PeerID
	for i, p := range sc.roster {
		if excluded != nil && excluded[i/8]&(1<<(i%8)) != 0 {
			continue
		}
		out = append(out, p)
	}
	return out
}
