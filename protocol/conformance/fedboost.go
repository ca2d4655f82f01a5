package conformance

import (
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/securesum"
)

// FedBoostSubtests run federated DPBoost (protocol/fedboost) on a
// transport: its own list, so that transports opt in (memnet in
// protocol/memnet/fedboost_test.go, libp2p in node/fedboost_test.go).
var FedBoostSubtests = []Subtest{
	{"FedNoNoiseEqualsTrainer", testFedNoNoise},
	{"FedPrivateCompletes", testFedPrivate},
	{"FedNewtonCompletes", testFedNewton},
	{"FedNewtonKClasses", testFedNewtonKClasses},
}

// RunFedBoost runs FedBoostSubtests against h.
func RunFedBoost(t *testing.T, h Harness) {
	for _, s := range FedBoostSubtests {
		t.Run(s.Name, func(t *testing.T) { s.Run(t, h) })
	}
}

type fedOutcome struct {
	mu    sync.Mutex
	done  bool
	model *dpboost.Model
	err   error
}

func (o *fedOutcome) finished() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.done
}

// runFed starts one federated session on a fresh cluster of the harness.
func runFed(t *testing.T, h Harness, owners int, cfg dpboost.Config, noise bool) (*fedOutcome, *dataset.Dataset, []*dataset.Dataset) {
	t.Helper()
	return runFedK(t, h, owners, cfg, noise, 2)
}

// runFedK is runFed on data of the given number of classes.
func runFedK(t *testing.T, h Harness, owners int, cfg dpboost.Config, noise bool, classes int) (*fedOutcome, *dataset.Dataset, []*dataset.Dataset) {
	t.Helper()
	c := h.Start(t, owners)
	f := startFedK(t, c, cfg, noise, classes)
	c.Ready(t)
	f.user.Start()
	if !c.Run(f.out.finished, f.limit) {
		t.Fatal("federated session did not end")
	}
	return f.out, f.union, f.parts
}

// fedRun is a federated session attached to a cluster, not yet started.
type fedRun struct {
	out   *fedOutcome
	user  *fedboost.User
	union *dataset.Dataset
	parts []*dataset.Dataset
	limit time.Duration // how long the session may take
}

// startFed attaches a federated DPBoost user and one owner per owner peer
// of c (the peers' data: a synthetic set cut among them).
func startFed(t *testing.T, c Cluster, cfg dpboost.Config, noise bool) *fedRun {
	t.Helper()
	return startFedK(t, c, cfg, noise, 2)
}

// startFedK is startFed on synthetic data of the given number of classes.
func startFedK(t *testing.T, c Cluster, cfg dpboost.Config, noise bool, classes int) *fedRun {
	t.Helper()
	owners := len(c.Owners())
	scfg := dataset.DefaultSynthetic(120*owners, rng.SeedOf(t.Name()))
	scfg.Features, scfg.Informative, scfg.Redundant, scfg.Classes = 5, 4, 1, classes
	union, err := dataset.Synthetic(scfg)
	if err != nil {
		t.Fatal(err)
	}
	union.Schema = union.IdentitySchema()
	parts, err := union.Partition(owners, nil, 5)
	if err != nil {
		t.Fatal(err)
	}
	log := hclog.NewNullLogger()
	maxRows := 0
	for _, p := range parts {
		maxRows = max(maxRows, p.Len())
	}
	sum := securesum.DefaultParams()
	sum.Committee, sum.MinParties, sum.Bound = owners, 3, float64(maxRows)
	sum.Timeout, sum.PingTimeout = 400*c.Scale(), 200*c.Scale()
	pub := &fedboost.Public{Session: "conformance-" + t.Name(), Boost: cfg, Schema: union.Schema, Dim: union.Dim(),
		ColumnsPerNode: 0, SplitFraction: 0.8, Noise: noise, Colluders: 1, DropFraction: 0.25, Sum: sum, MaxRows: maxRows,
		Beacon: []byte("conformance fed beacon"), StepTimeout: 30 * sum.Timeout, IdleTimeout: time.Hour}
	for _, o := range c.Owners() {
		pub.Roster = append(pub.Roster, o.ID)
	}
	slices.Sort(pub.Roster)
	for i, o := range c.Owners() {
		ocfg := fedboost.DefaultOwnerConfig()
		ocfg.User, ocfg.Data, ocfg.Ledger, ocfg.MaxEpsilon = c.User().ID, parts[i], protocol.NewMemLedger(1e9), 1e9
		ocfg.AllowNoNoise, ocfg.NoneCharge = !noise, 1
		ocfg.NoiseSecret, ocfg.SumRand = rng.SecretOf(rng.SeedOf(t.Name()), 1, uint64(i)), rng.Derive(rng.SeedOf(t.Name()), 2, uint64(i))
		ocfg.Colluders = 1 // the Public announces one colluder: a closed deployment
		ocfg.Clock, ocfg.Log = c.Clock(), log
		ow, err := fedboost.StartOwner(o.Transport, ocfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ow.Close() })
	}
	out := &fedOutcome{}
	u, err := fedboost.StartUser(c.User().Transport, fedboost.UserConfig{Public: pub, ClassNames: union.Classes,
		Features: union.Features, AnnounceDelay: 100 * c.Scale(), SumRand: rng.Derive(rng.SeedOf(t.Name()), 3),
		Clock: c.Clock(), Log: log,
		OnDone: func(m *dpboost.Model, err error) {
			out.mu.Lock()
			out.done, out.model, out.err = true, m, err
			out.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	return &fedRun{out: out, user: u, union: union, parts: parts, limit: time.Duration(cfg.Trees) * (1 << cfg.Depth) * 40 * sum.Timeout}
}

// testFedNoNoise: with noise off (np) the federated model equals
// dpboost.TrainClassifier on the union of the owners' rows: every row
// reaches the same leaf of every tree, and the leaves agree within the
// fixed-point tolerance eta L/(2 S lambda) T (each owner's cells are rounded
// to 1/S before they are summed).
func testFedNoNoise(t *testing.T, h Harness) {
	owners := min(8, h.MaxOwners())
	cfg := dpboost.DefaultConfig()
	cfg.Method, cfg.Trees, cfg.Depth, cfg.Bins, cfg.Lambda = dpboost.NP, 3, 2, 8, 1
	out, union, parts := runFed(t, h, owners, cfg, false)
	if out.err != nil {
		t.Fatal(out.err)
	}
	var X [][]float64
	var Y []int
	for _, p := range parts {
		X, Y = append(X, p.X...), append(Y, p.Y...)
	}
	all := &dataset.Dataset{Name: "union", X: X, Y: Y, Classes: union.Classes, Features: union.Features, Schema: union.Schema}
	want, err := dpboost.TrainClassifier(cfg, all, rng.ForName(t.Name()), nil)
	if err != nil {
		t.Fatal(err)
	}
	tol := cfg.LearningRate * float64(owners) / (2 * math.Ldexp(1, field.DefaultScaleBits) * cfg.Lambda) * float64(cfg.Trees)
	for r, x := range all.X {
		if a, b := out.model.Value(x), want.Value(x); math.Abs(a-b) > tol {
			t.Fatalf("row %d: federated %v, one-process %v (tolerance %.2g)", r, a, b, tol)
		}
	}
}

// testFedPrivate: a private run with distributed noise completes on the
// transport and produces a model of the configured shape.
func testFedPrivate(t *testing.T, h Harness) {
	owners := min(12, h.MaxOwners())
	cfg := dpboost.DefaultConfig()
	cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Bins, cfg.Lambda, cfg.Epsilon, cfg.ClipGradients = 2, 2, 2, 8, 20, 8, true
	out, _, _ := runFed(t, h, owners, cfg, true)
	if out.err != nil {
		t.Fatal(out.err)
	}
	if n := len(out.model.Boosters[0]); n != cfg.Trees {
		t.Fatalf("%d trees, want %d", n, cfg.Trees)
	}
}

// testFedNewton: a private federated Newton run (beacon-drawn trees, one
// noisy leaf sum per tree) completes on the transport with the configured
// number of trees and states its (eps, delta) account.
func testFedNewton(t *testing.T, h Harness) {
	owners := min(12, h.MaxOwners())
	cfg := dpboost.NewtonRule(4, 120*owners, 2)
	cfg.Trees, cfg.EnsembleSize, cfg.Bins, cfg.Lambda = 4, 4, 8, 5
	out, _, _ := runFed(t, h, owners, cfg, true)
	if out.err != nil {
		t.Fatal(out.err)
	}
	if n := len(out.model.Boosters[0]); n != cfg.Trees {
		t.Fatalf("%d trees, want %d", n, cfg.Trees)
	}
	if a := out.model.Account; a.Newton == nil || !(a.Total > 0 && a.Total <= cfg.Epsilon) {
		t.Fatalf("account %+v", a)
	}
}

// testFedNewtonKClasses: a private federated Newton run on three classes
// (K boosters, softmax: one vector of the three trees' leaf sums per round)
// completes on the transport with three boosters of the configured number
// of trees and an account of three classes.
func testFedNewtonKClasses(t *testing.T, h Harness) {
	owners := min(12, h.MaxOwners())
	cfg := dpboost.NewtonRule(4, 120*owners, 3)
	cfg.Trees, cfg.EnsembleSize, cfg.Bins, cfg.Lambda = 4, 4, 8, 5
	out, _, _ := runFedK(t, h, owners, cfg, true, 3)
	if out.err != nil {
		t.Fatal(out.err)
	}
	if len(out.model.Boosters) != 3 || out.model.Classes() != 3 {
		t.Fatalf("%d boosters, %d classes, want 3", len(out.model.Boosters), out.model.Classes())
	}
	for k, b := range out.model.Boosters {
		if len(b) != cfg.Trees {
			t.Fatalf("booster %d: %d trees, want %d", k, len(b), cfg.Trees)
		}
	}
	if a := out.model.Account; a.Newton == nil || a.Classes != 3 || !(a.Total > 0 && a.Total <= cfg.Epsilon) {
		t.Fatalf("account %+v", a)
	}
}
