package fedboost

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
)

// testData is a small synthetic binary problem cut into owners.
func testData(t *testing.T, rows, owners int) (*dataset.Dataset, []*dataset.Dataset) {
	t.Helper()
	cfg := dataset.DefaultSynthetic(rows, rng.SeedOf(t.Name()))
	cfg.Features, cfg.Informative, cfg.Redundant = 6, 4, 2
	d, err := dataset.Synthetic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d.Schema = d.IdentitySchema()
	parts, err := d.Partition(owners, nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	return d, parts
}

func testPublic(d *dataset.Dataset, parts []*dataset.Dataset, boost dpboost.Config, columns int, noise bool) Public {
	maxRows := 0
	for _, p := range parts {
		maxRows = max(maxRows, p.Len())
	}
	sum := securesum.DefaultParams()
	sum.Committee = 8
	sum.MinParties = 4
	sum.Bound = float64(maxRows)
	sum.Timeout, sum.PingTimeout = 500*time.Millisecond, 200*time.Millisecond
	return Public{Boost: boost, Schema: d.Schema, Dim: d.Dim(), ColumnsPerNode: columns, Noise: noise, Colluders: 1, DropFraction: 0.25,
		Sum: sum, MaxRows: maxRows, StepTimeout: time.Minute, IdleTimeout: 10 * time.Minute}
}

func testLog(t *testing.T) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: hclogWriter{t}, Level: hclog.Warn})
}

type hclogWriter struct{ t *testing.T }

func (w hclogWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// The plan: groups of one ensemble partition the roster, and a
// configuration whose smallest group would fall below min_parties is
// refused.
func TestGroupsPartitionTheRoster(t *testing.T) {
	union, parts := testData(t, 2000, 100)
	cfg := dpboost.DefaultConfig()
	cfg.Trees, cfg.EnsembleSize = 20, 10
	p := testPublic(union, parts, cfg, 1, true)
	p.Session, p.Beacon = "s", []byte("b")
	for i := range 100 {
		p.Roster = append(p.Roster, OwnerID(i))
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for e := range 2 {
		seen := map[protocol.PeerID]int{}
		for j := range 10 {
			for _, id := range p.Group(e*10 + j + 1) {
				seen[id]++
			}
		}
		if len(seen) != 100 {
			t.Fatalf("ensemble %d covers %d owners", e, len(seen))
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("ensemble %d: %s in %d groups", e, id, n)
			}
		}
	}
	p.Boost.EnsembleSize = 20 // the 20th group: 100 * 0.1 * 0.9^19 / 0.88 = 1.5 owners
	if err := p.Validate(); !errors.Is(err, ErrConfig) {
		t.Fatalf("tiny groups accepted: %v", err)
	}
}

func privateSetup(t *testing.T, owners int) (*dataset.Dataset, []*dataset.Dataset, dpboost.Config) {
	union, parts := testData(t, 100*owners, owners)
	cfg := dpboost.DefaultConfig()
	cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Bins, cfg.Lambda, cfg.Epsilon, cfg.ClipGradients = 6, 3, 2, 8, 20, 12, true
	return union, parts, cfg
}
