package simulate

import (
	"math"
	"testing"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol/securesum"
)

// TestSimulateEqualsReferenceTrainer: with mechanism none and the same seed
// the distributed protocol (what `ppboost simulate` runs) gives the model of
// boost.Train (what `ppboost sim` runs), for every learner, both alpha modes
// and both secure sums. Alphas may differ by fixed-point rounding of the
// err sum: each of L owners' values is rounded to 1/S (S = 2^24), so err
// moves by at most ~L/S ~ 4e-6 here and alpha by that over err(1-err); 1e-4
// bounds it.
func TestSimulateEqualsReferenceTrainer(t *testing.T) {
	for _, learner := range []boost.Learner{boost.Stump, boost.NCC, boost.LogReg} {
		for _, alpha := range []boost.AlphaMode{boost.AlphaSecureSum, boost.AlphaValidation} {
			for _, method := range []string{securesum.Ring, securesum.Shamir} {
				t.Run(string(learner)+"/"+string(alpha)+"/"+method, func(t *testing.T) {
					cfg := boost.DefaultConfig()
					cfg.Learner, cfg.Alpha, cfg.Mechanism = learner, alpha, "none"
					cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = 10, 4, 3
					data, err := boost.Prepare(boost.DataSpec{Source: "synthetic", SamplesPerOwner: 30,
						UserSamples: 1000, TestSamples: 1000, Seed: 3}, cfg, nil)
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
					if len(res.Model.Rounds) != len(ref.Rounds) {
						t.Fatalf("%d rounds, reference %d", len(res.Model.Rounds), len(ref.Rounds))
					}
					for i := range ref.Rounds {
						r, g := ref.Rounds[i], res.Model.Rounds[i]
						if math.Abs(r.Alpha-g.Alpha) > 1e-4 {
							t.Errorf("round %d: alpha %v, reference %v", i+1, g.Alpha, r.Alpha)
						}
						if r.Base.Stump != nil && *r.Base.Stump != *g.Base.Stump {
							t.Errorf("round %d: stump %+v, reference %+v", i+1, *g.Base.Stump, *r.Base.Stump)
						}
					}
					if res.OwnerMsgs == 0 || res.TotalMsgs == 0 {
						t.Fatal("no traffic measured")
					}
				})
			}
		}
	}
}
