package boost

import (
	"testing"

	"github.com/ppboost/ppboost/crypto/ldp"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
)

// CheckShare refuses values outside the mechanism's output range (a forged
// or broken share of 1e12 would otherwise decide a learner) and accepts
// every real share, whose values lie inside it by construction.
func TestCheckShareRange(t *testing.T) {
	d, err := dataset.Synthetic(dataset.DefaultSynthetic(200, 3))
	if err != nil {
		t.Fatal(err)
	}
	for _, learner := range []Learner{Stump, NCC, LogReg} {
		for _, mech := range []ldp.Kind{ldp.Piecewise, ldp.Hybrid, ldp.Duchi, ldp.Laplace} {
			cfg := DefaultConfig()
			cfg.Learner, cfg.Mechanism, cfg.Epsilon = learner, mech.String(), 2
			var eta []Split
			if learner == Stump {
				eta = PerFeature(make([]float64, d.Dim()))
			}
			spec, err := cfg.Spec(2, d.Dim(), eta)
			if err != nil {
				t.Fatal(err)
			}
			o, err := NewOwner(d.Subset([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 50; i++ {
				sh, err := o.LocalShare(&spec, rng.Seeded(uint64(i)))
				if err != nil {
					t.Fatal(err)
				}
				if err := CheckShare(&spec, sh); err != nil {
					t.Fatalf("%s/%s: a real share refused: %v", learner, mech, err)
				}
				if i == 0 {
					sh.Values[0] = 1e12
					if err := CheckShare(&spec, sh); err == nil {
						t.Fatalf("%s/%s: a share value of 1e12 accepted", learner, mech)
					}
				}
			}
		}
	}
}
