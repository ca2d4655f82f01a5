package fedboost_test

import (
	"runtime"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/simulate"
)

// BenchmarkFedNewtonSession: one private federated Newton session (40
// owners, 60 trees) over memnet, with its allocations and the largest heap
// seen at a tree's end (peakheapMB): what the machines, their drivers and
// the network hold while a session runs.
//
//	go test ./protocol/fedboost -run XXX -bench FedNewtonSession -benchtime 3x
func BenchmarkFedNewtonSession(b *testing.B) {
	cfg := dataset.DefaultSynthetic(6000, rng.SeedOf(b.Name()))
	cfg.Features, cfg.Informative, cfg.Redundant = 6, 4, 2
	union, err := dataset.Synthetic(cfg)
	if err != nil {
		b.Fatal(err)
	}
	union.Schema = union.IdentitySchema()
	parts, err := union.Partition(40, nil, 7)
	if err != nil {
		b.Fatal(err)
	}
	pub := fedboost.TestPublic(union, parts, fedboost.NewtonTestConfig(4, 60), 0, true)
	b.ReportAllocs()
	var peak uint64
	for range b.N {
		res, err := simulate.RunFed(simulate.FedOptions{Public: pub, Owners: parts, Seed: 3, Log: hclog.NewNullLogger(),
			OnTree: func(fedboost.TreeReport) {
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapAlloc)
			}})
		if err != nil || res.Model == nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peakheapMB")
}
