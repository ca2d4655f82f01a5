package fedboost

import (
	"fmt"
	"math"
	"testing"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/rdp"
	"github.com/ppboost/ppboost/crypto/rng"
)

func newtonTestConfig(eps float64, trees int) dpboost.Config {
	return dpboost.Config{Method: dpboost.Newton, Epsilon: eps, Trees: trees, Depth: 3, LearningRate: 0.3, Lambda: 5,
		Bins: 16, Delta: 1e-6, HessianShare: 0.1, LeafMax: 2, EnsembleSize: 1}
}

// The design meets its budget: the T-fold curve converts to at most eps and
// a scale 2 % smaller would not (tau is the smallest that fits); the
// integer sensitivities follow the codec's scale. The negative control is
// the design's own conversion with half the trees counted, which must come
// out below eps (a composition that dropped trees would look cheaper).
func TestNewtonDesignMeetsBudget(t *testing.T) {
	for _, c := range []struct {
		eps   float64
		trees int
	}{{1, 50}, {0.1, 100}, {5, 10}} {
		pub := Public{Boost: newtonTestConfig(c.eps, c.trees)}
		pub.Sum.ScaleBits = 20
		d, err := pub.NewtonDesign()
		if err != nil {
			t.Fatal(err)
		}
		codec, _ := field.NewCodec(20)
		if d.KG != int64(codec.Scale())+1 || d.KH != int64(math.Ceil(d.Kappa*codec.Scale()/4))+1 {
			t.Fatalf("sensitivities %d, %d", d.KG, d.KH)
		}
		got := rdp.Epsilon(d.Curve(c.trees), d.Delta)
		if got > c.eps*(1+1e-9) || math.Abs(got-d.Eps) > 1e-12 {
			t.Fatalf("eps %g: design converts to %g (reported %g)", c.eps, got, d.Eps)
		}
		tight := d
		tight.Tau *= 0.98
		if e := rdp.Epsilon(tight.Curve(c.trees), d.Delta); e <= c.eps {
			t.Fatalf("eps %g: a 2%% smaller scale still fits (%g): tau is not the smallest", c.eps, e)
		}
		if e := rdp.Epsilon(d.Curve(c.trees/2), d.Delta); e >= c.eps {
			t.Fatalf("negative control: half the trees costs %g, not below %g", e, c.eps)
		}
	}
}

// A private Newton session over 24 owners: every owner is charged the
// design's eps exactly once (one ledger key for the session, before its
// first share), the model's account states it, and the model learns (its
// training error within 0.05 of the one-process Newton trainer's on the
// union at the same eps; both are noisy, the margin is about 5 sds of the
// difference over this seed's run).
func TestNewtonFederatedSession(t *testing.T) {
	const owners = 24
	union, parts := testData(t, 6000, owners)
	cfg := newtonTestConfig(4, 12)
	pub := testPublic(union, parts, cfg, 0, true)
	res, err := Simulate(SimOptions{Public: pub, Owners: parts, Seed: 3, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	full := pub
	full.Session = fmt.Sprintf("fed-%016x", 3)
	d, err := full.NewtonDesign()
	if err != nil {
		t.Fatal(err)
	}
	for i, led := range res.Ledgers {
		if s := led.Spent(); math.Abs(s-d.Eps) > 1e-9 {
			t.Fatalf("owner %d spent %v, want the design's %v", i, s, d.Eps)
		}
		if !led.Contributed(newtonLedgerKey(full.Session)) {
			t.Fatalf("owner %d: no ledger record", i)
		}
	}
	if res.Model.Account.Newton == nil || math.Abs(res.Model.Account.Total-d.Eps) > 1e-12 {
		t.Fatalf("model account %+v", res.Model.Account)
	}
	one, err := dpboost.TrainClassifier(cfg, union, rng.Seeded(5), nil)
	if err != nil {
		t.Fatal(err)
	}
	fe, oe := res.Model.Error(union), one.Error(union)
	if fe > oe+0.05 || fe > 0.3 {
		t.Fatalf("federated training error %.3f, one-process %.3f", fe, oe)
	}
	t.Logf("federated %.3f, one-process %.3f, eps %.4g, tau %.4g (%.3g decoded), %.1f msgs and %.0f bytes per owner per tree",
		fe, oe, d.Eps, d.Tau, d.Tau/math.Ldexp(1, int(pub.Sum.ScaleBits)), res.MsgsPerOwnerTree, res.BytesPerOwnerTree)
}

// Noisy sums are single-instance for both trainers (an owner deals each
// noisy vector once: a re-opened sum, a deviating user's or a re-formed
// one, is refused by the party rather than released twice under one
// charge; securesum's own tests and conformance.DistributedSubtests play
// the refusal); the non-private baseline may re-form.
func TestNoisySumsAreSingleInstance(t *testing.T) {
	union, parts := testData(t, 400, 10)
	for _, c := range []struct {
		cfg   dpboost.Config
		noise bool
	}{{newtonTestConfig(1, 4), true}, {func() dpboost.Config {
		c := dpboost.DefaultConfig()
		c.Trees, c.EnsembleSize, c.Depth = 2, 2, 2
		return c
	}(), true}, {func() dpboost.Config { c := dpboost.DefaultConfig(); c.Method = dpboost.NP; return c }(), false}} {
		pub := testPublic(union, parts, c.cfg, 0, c.noise)
		for i := range 10 {
			pub.Roster = append(pub.Roster, OwnerID(i))
		}
		if got := pub.SumParams(1).SingleInstance; got != c.noise {
			t.Errorf("%v, noise %v: SingleInstance %v", c.cfg.Method, c.noise, got)
		}
	}
}
