package simulate

import (
	"testing"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol/securesum"
)

// BenchmarkRun3000 is a small version of the README's 12,000- and
// 100,000-owner runs (Shamir err sums over the whole roster, one owner
// silenced per round): `go test -run XXX -bench Run3000 -benchmem
// ./protocol/simulate`. Its allocations are a machine-independent figure
// for comparing runner changes; its time depends on the machine's load.
func BenchmarkRun3000(b *testing.B) {
	cfg := boost.DefaultConfig()
	cfg.Learner, cfg.Mechanism, cfg.Alpha, cfg.ErrEpsilon = boost.Stump, "pm", boost.AlphaSecureSum, 20
	cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = 300, 5, 1
	data, err := boost.Prepare(boost.DataSpec{Source: "synthetic", Owners: 3000, SamplesPerOwner: 20,
		UserSamples: 1000, TestSamples: 1000, Seed: 1}, cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		res, err := Run(Options{Boost: cfg, Sum: securesum.DefaultParams(), Data: data, SilentPerRound: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.OwnerMsgs, "msgs/owner")
		b.ReportMetric(float64(len(res.Rounds)), "rounds")
	}
}
