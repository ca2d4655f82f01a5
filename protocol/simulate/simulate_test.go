package simulate

import (
	"testing"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol/conformance"
	"github.com/ppboost/ppboost/protocol/securesum"
)

// TestSimulateEqualsReferenceTrainer: with mechanism none and the same seed
// the distributed protocol (what `ppboost simulate` runs) gives the model of
// boost.Train (what `ppboost sim` runs), for every learner, both alpha modes
// and both secure sums: conformance.SameModel compares every base learner
// (stumps exactly, centroids and parameters to the fixed-point drift) and
// every alpha (to the derived fixed-point bound).
func TestSimulateEqualsReferenceTrainer(t *testing.T) {
	for _, learner := range []boost.Learner{boost.Stump, boost.NCC, boost.LogReg} {
		for _, alpha := range []boost.AlphaMode{boost.AlphaSecureSum, boost.AlphaValidation} {
			for _, method := range []string{securesum.Ring, securesum.Shamir} {
				t.Run(string(learner)+"/"+string(alpha)+"/"+method, func(t *testing.T) {
					cfg := boost.DefaultConfig()
					cfg.Learner, cfg.Alpha, cfg.Mechanism = learner, alpha, "none"
					cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = 10, 4, 3
					res := sameAsReference(t, cfg, method, 30)
					if res.OwnerMsgs == 0 || res.TotalMsgs == 0 {
						t.Fatal("no traffic measured")
					}
				})
			}
		}
	}
}

// sameAsReference runs cfg through the protocol (secure sums of the given
// method) and boost.Train on the same synthetic data, and fails t unless
// both end alike with the same model (at least one accepted round).
func sameAsReference(t *testing.T, cfg boost.Config, method string, samples int) *Result {
	t.Helper()
	data, err := boost.Prepare(boost.DataSpec{Source: "synthetic", SamplesPerOwner: samples,
		UserSamples: 1000, TestSamples: 1000, Seed: cfg.Seed}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, refErr := boost.Train(cfg, data, nil)
	p := securesum.DefaultParams()
	p.Method = method
	res, err := Run(Options{Boost: cfg, Sum: p, Data: data})
	if (err == nil) != (refErr == nil) {
		t.Fatalf("simulate error %v, reference error %v", err, refErr)
	}
	if len(ref.Rounds) == 0 {
		t.Fatal("the reference accepted no round: nothing compared")
	}
	conformance.SameModel(t, ref, res.Model)
	return res
}

// Owners normalize their logistic parameters when the announced session
// says so (wire.SessionConfig.logreg_normalize): the protocol then equals
// the reference trainer with Config.LogRegNormalize.
func TestSimulateLogRegNormalize(t *testing.T) {
	cfg := boost.DefaultConfig()
	cfg.Learner, cfg.Mechanism, cfg.LogRegNormalize = boost.LogReg, "none", true
	cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = 10, 3, 4
	data, err := boost.Prepare(boost.DataSpec{Source: "synthetic", SamplesPerOwner: 30, UserSamples: 1000, TestSamples: 1000, Seed: 4}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := boost.Train(cfg, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(Options{Boost: cfg, Sum: securesum.DefaultParams(), Data: data})
	if err != nil {
		t.Fatal(err)
	}
	conformance.SameModel(t, ref, res.Model)
}

// Distributed privacy (issue 15 item 3): the selected owners' statistics go
// through the share sum with their noise shares instead of being published.
// With seeded noise streams the protocol computes exactly the total that
// boost.Train computes (the same encoded values and noise shares, summed in
// the field), so the models are the same with noise on as well as off, for
// stumps and logistic regression over both secure sums.
func TestSimulateDistributedPrivacyEqualsReference(t *testing.T) {
	for _, learner := range []boost.Learner{boost.Stump, boost.LogReg} {
		for _, mech := range []string{"none", "pm"} {
			for _, method := range []string{securesum.Shamir} { // distributed privacy refuses rings
				t.Run(string(learner)+"/"+mech+"/"+method, func(t *testing.T) {
					cfg := boost.DefaultConfig()
					cfg.Learner, cfg.Mechanism, cfg.Privacy, cfg.Epsilon = learner, mech, boost.PrivacyDistributed, 2
					cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = 20, 3, 5
					sameAsReference(t, cfg, method, 20)
				})
			}
		}
	}
}
