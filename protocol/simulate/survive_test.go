package simulate

import (
	"slices"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// silentAfterJoin is a network tap under which owner victim joins the
// session, answers the data user's liveness check, and then falls silent
// for good: nothing it sends after its LiveEcho leaves it, nothing reaches
// it (a process that died after joining). An owner that died before
// echoing would be ranked last by selection (issue 31 item 4) and never
// be selected here.
func silentAfterJoin(victim protocol.PeerID) func(from, to protocol.PeerID, topic bool, name string, data []byte) [][]byte {
	joined := false
	return func(from, to protocol.PeerID, topic bool, name string, data []byte) [][]byte {
		if joined && (from == victim || to == victim) {
			return nil
		}
		if from == victim && to == UserID && name == wire.ProtoSession {
			if env, err := wire.Unmarshal(data, wire.MaxControlBytes); err == nil && env.GetLiveEcho() != nil {
				joined = true // its echo (after its Join)
			}
		}
		return [][]byte{data}
	}
}

// Issue 32 item 11 (a user report): with --privacy distributed and 3 owners
// per round, one selected owner that died after joining cost the attempt
// and its owners' budget ("0/3 owners answered ... no answer"). The round's
// share sum now completes without it: the attempt's other owners deal, the
// model gets the round from attempt 0, the report names the silent owner,
// and every dealer is charged once.
func TestDistributedSurvivesASilentOwner(t *testing.T) {
	cfg := boost.DefaultConfig()
	cfg.Learner, cfg.Mechanism, cfg.Privacy, cfg.Epsilon = boost.Stump, "pm", boost.PrivacyDistributed, 5
	cfg.OwnersPerRound, cfg.Rounds, cfg.Seed, cfg.Significance = 3, 2, 11, 0
	data, err := boost.Prepare(boost.DataSpec{Source: "synthetic", Owners: 24, SamplesPerOwner: 30,
		UserSamples: 500, TestSamples: 500, Seed: cfg.Seed}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	// H = 3 with min parties 3: four owners selected, any three deal.
	floor, selected, tol := boost.DealerPlan(cfg.OwnersPerRound, cfg.DropFraction, securesum.DefaultMinParties)
	if floor != 3 || selected != 4 || tol != 1 {
		t.Fatalf("DealerPlan(3, %v, 3) = floor %d, %d selected, tolerance %d; want 3, 4, 1", cfg.DropFraction, floor, selected, tol)
	}
	n := len(data.Owners)
	sel := boost.SelectOwners(cfg.Seed, 1, 0, n, selected)
	victim := OwnerID(sel[0])
	t.Logf("round 1 attempt 0 selects %v (floor %d); owner %s falls silent after joining", sel, floor, victim)
	res, err := Run(Options{Boost: cfg, Sum: securesum.DefaultParams(), Data: data, Tap: silentAfterJoin(victim)})
	if err != nil {
		t.Fatalf("session failed: %v", err)
	}
	if len(res.Model.Rounds) != cfg.Rounds {
		t.Fatalf("model has %d rounds, want %d", len(res.Model.Rounds), cfg.Rounds)
	}
	first := res.Rounds[0]
	if first.Round != 1 || first.Attempt != 0 || first.Owners != len(sel)-1 {
		t.Fatalf("round 1's first report: round %d attempt %d, a total over %d owners; want round 1 attempt 0 over %d (%+v)",
			first.Round, first.Attempt, first.Owners, len(sel)-1, first)
	}
	if !slices.Equal(first.Silent, []string{string(victim)}) {
		t.Errorf("report names %v as silent, want [%s]", first.Silent, victim)
	}
	if a := first.Absent(); !strings.Contains(a, string(victim)) || !strings.Contains(a, "did not deal") {
		t.Errorf("report says %q, not that %s did not deal", a, victim)
	}
	for _, i := range sel {
		want := 1
		if OwnerID(i) == victim {
			want = 0
		}
		if res.Releases[i] != want {
			t.Errorf("owner %d: %d share charges, want %d", i, res.Releases[i], want)
		}
	}
	for i := range res.Releases {
		if res.Releases[i] > 1 {
			t.Errorf("owner %d charged %d shares", i, res.Releases[i])
		}
	}
}

// A distributed round of 3 owners selects a spare (boost.DealerPlan); the
// reference trainer selects the same four, so without faults the session
// still equals boost.Train, with noise on and off.
func TestDistributedSparesEqualReference(t *testing.T) {
	for _, mech := range []string{"none", "pm"} {
		t.Run(mech, func(t *testing.T) {
			cfg := boost.DefaultConfig()
			cfg.Learner, cfg.Mechanism, cfg.Privacy, cfg.Epsilon = boost.Stump, mech, boost.PrivacyDistributed, 5
			cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = 3, 3, 5
			res := sameAsReference(t, cfg, securesum.Shamir, 20)
			for _, r := range res.Rounds {
				if r.Selected != 4 || len(r.Silent) != 0 {
					t.Errorf("round %d attempt %d: %d selected, silent %v; want 4 and none", r.Round, r.Attempt, r.Selected, r.Silent)
				}
			}
		})
	}
}

// The control: drop fraction 0 asks every selected owner to deal (no
// tolerance, no spare), so the same silent owner fails round 1's first
// attempt, as every attempt did before DealerPlan. The report now names it
// ("did not deal") and counts what the two dealers were charged; the next
// attempt's fresh owners give the round, and nobody is charged twice.
func TestDistributedWithoutToleranceNamesTheSilentOwner(t *testing.T) {
	cfg := boost.DefaultConfig()
	cfg.Learner, cfg.Mechanism, cfg.Privacy, cfg.Epsilon = boost.Stump, "pm", boost.PrivacyDistributed, 5
	cfg.OwnersPerRound, cfg.Rounds, cfg.Seed, cfg.Significance, cfg.DropFraction = 3, 2, 11, 0, 0
	data, err := boost.Prepare(boost.DataSpec{Source: "synthetic", Owners: 24, SamplesPerOwner: 30,
		UserSamples: 500, TestSamples: 500, Seed: cfg.Seed}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	sel := boost.SelectOwners(cfg.Seed, 1, 0, len(data.Owners), 3)
	victim := OwnerID(sel[0])
	res, err := Run(Options{Boost: cfg, Sum: securesum.DefaultParams(), Data: data, Tap: silentAfterJoin(victim)})
	if err != nil {
		t.Fatalf("session failed: %v", err)
	}
	first := res.Rounds[0]
	if first.Attempt != 0 || first.Owners != 0 || first.Accepted {
		t.Fatalf("round 1 attempt 0 completed without %s although every owner must deal: %+v", victim, first)
	}
	if !slices.Equal(first.Silent, []string{string(victim)}) || !strings.Contains(first.Why, "did not deal: "+string(victim)) {
		t.Errorf("report: silent %v, why %q; want %s named as not dealing", first.Silent, first.Why, victim)
	}
	if want := 2 * cfg.Epsilon; first.Charged != want {
		t.Errorf("report charges %v for the failed attempt, want %v (the two owners that dealt)", first.Charged, want)
	}
	if second := res.Rounds[1]; second.Round != 1 || second.Attempt != 1 || second.Owners != 3 {
		t.Errorf("round 1's second attempt: %+v", second)
	}
	for i, n := range res.Releases {
		if n > 1 {
			t.Errorf("owner %d charged %d shares", i, n)
		}
	}
}
