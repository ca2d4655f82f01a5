package fedboost

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/rdp"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
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

// A Newton owner refuses what a deviating user could send: a session whose
// eps is above its own limit (refused at join, nothing charged), and a
// FedTree whose splits are not the beacon's (dropped and counted; the
// owner's predictions stay as they were).
func TestNewtonOwnerRefusesDeviations(t *testing.T) {
	union, parts := testData(t, 400, 10)
	pub := testPublic(union, parts, newtonTestConfig(2, 4), 0, true)
	pub.Session, pub.Beacon = "s", []byte("b")
	for i := range 10 {
		pub.Roster = append(pub.Roster, OwnerID(i))
	}
	good, err := pub.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ctl := func(env *wire.Envelope) protocol.Message {
		b, err := wire.Marshal(env, wire.MaxControlBytes)
		if err != nil {
			t.Fatal(err)
		}
		return protocol.Message{From: "user", Topic: wire.TopicFedControl, Data: b}
	}
	hdr := func(round uint32) *wire.Header {
		return &wire.Header{Version: wire.Version, Session: "s", Round: round}
	}
	announce := ctl(&wire.Envelope{Header: hdr(0), Body: &wire.Envelope_FedConfig{FedConfig: fedConfigOf(t, good)}})

	led := protocol.NewMemLedger(100)
	poor, err := NewOwner(OwnerID(0), &recorder{}, OwnerConfig{User: "user", Data: parts[0], Ledger: led, MaxEpsilon: 1, MinParties: 3, Colluders: 1, Clock: handClock()})
	if err != nil {
		t.Fatal(err)
	}
	poor.Handle(announce)
	if poor.State() != OwnerIdle || led.Spent() != 0 {
		t.Fatalf("an owner with limit 1 joined a session of eps 2: state %s, spent %v", poor.State(), led.Spent())
	}

	o, err := NewOwner(OwnerID(1), &recorder{}, OwnerConfig{User: "user", Data: parts[1], Ledger: protocol.NewMemLedger(100), MaxEpsilon: 100, MinParties: 3, Colluders: 1, Clock: handClock()})
	if err != nil {
		t.Fatal(err)
	}
	o.Handle(announce)
	if o.State() != OwnerJoined {
		t.Fatalf("did not join: %v", o.Stats())
	}
	b, err := pub.Binning()
	if err != nil {
		t.Fatal(err)
	}
	forged := pub.NewtonTree(b, 1)
	forged.feature[0] = (forged.feature[0] + 1) % b.Features()
	forged.leaf, forged.complete = make([]float64, 1<<pub.Boost.Depth), true
	for i := range forged.leaf {
		forged.leaf[i] = 1
	}
	total := func() int {
		n := 0
		for _, v := range o.Stats().Snapshot() {
			n += v
		}
		return n
	}
	before := total()
	o.Handle(ctl(&wire.Envelope{Header: hdr(1), Body: &wire.Envelope_FedTree{FedTree: forged.wire()}}))
	if total() != before+1 {
		t.Fatalf("the forged tree was not dropped: %v", o.Stats())
	}
	for _, f := range o.Predictions() {
		if f != 0 {
			t.Fatal("a forged tree moved the owner's predictions")
		}
	}
	// The control: the beacon's own tree with the same leaves is applied.
	honest := pub.NewtonTree(b, 1)
	honest.leaf, honest.complete = forged.leaf, true
	o.Handle(ctl(&wire.Envelope{Header: hdr(1), Body: &wire.Envelope_FedTree{FedTree: honest.wire()}}))
	if f := o.Predictions(); len(f) == 0 || f[0] != 1 {
		t.Fatalf("the beacon's tree was not applied: %v", f[:min(3, len(f))])
	}
}

// The K-class design (K boosters, softmax) meets its budget with the
// smallest tau, its sensitivities follow the codec's scale (L1: ceil(2S) +
// K and ceil(kappa (1 - 1/K) S) + K; L2: sqrt(2) S + sqrt(K) and kappa S/2 +
// sqrt(K)), kappa keeps the L2 ratio sqrt(s/(1-s)), and the curve is the
// PureZCDP bound of the two halves. Negative control: the binary curve
// (one coordinate of each kind, kG = S + 1) under the same tau converts to
// less than the K-class design's eps (a K-class round that were accounted
// as a binary one would look cheaper than it is). Two classes keep the
// binary design (Boosters 1).
func TestNewtonDesignKClasses(t *testing.T) {
	for _, k := range []int{3, 10} {
		pub := Public{Boost: newtonTestConfig(1, 50), Schema: &dataset.Schema{Classes: make([]string, k)}}
		pub.Sum.ScaleBits = 20
		d, err := pub.NewtonDesign()
		if err != nil {
			t.Fatal(err)
		}
		S := math.Ldexp(1, 20)
		kf := float64(k)
		s := pub.Boost.HessianShare
		switch {
		case d.Boosters != k:
			t.Fatalf("K=%d: %d boosters", k, d.Boosters)
		case math.Abs(d.Kappa-2*math.Sqrt2*math.Sqrt(s/(1-s))) > 1e-12:
			t.Fatalf("K=%d: kappa %v", k, d.Kappa)
		case d.KG != int64(math.Ceil(2*S))+int64(k) || d.KH != int64(math.Ceil(d.Kappa*(1-1/kf)*S))+int64(k):
			t.Fatalf("K=%d: L1 sensitivities %d, %d", k, d.KG, d.KH)
		case d.L2G != math.Sqrt2*S+math.Sqrt(kf) || d.L2H != d.Kappa*S/2+math.Sqrt(kf):
			t.Fatalf("K=%d: L2 sensitivities %v, %v", k, d.L2G, d.L2H)
		case math.Abs((d.L2H-math.Sqrt(kf))/(d.L2G-math.Sqrt(kf))-math.Sqrt(s/(1-s))) > 1e-12:
			t.Fatalf("K=%d: L2 ratio %v", k, d.L2H/d.L2G)
		}
		got := rdp.Epsilon(d.Curve(50), d.Delta)
		if got > 1+1e-9 || math.Abs(got-d.Eps) > 1e-12 {
			t.Fatalf("K=%d: design converts to %g (reported %g)", k, got, d.Eps)
		}
		tight := d
		tight.Tau *= 0.98
		if e := rdp.Epsilon(tight.Curve(50), d.Delta); e <= 1 {
			t.Fatalf("K=%d: a 2%% smaller scale still fits (%g)", k, e)
		}
		for _, a := range []float64{1.5, 8, 64} {
			want := min(float64(d.KG)/d.Tau, a*d.L2G*d.L2G/(2*d.Tau*d.Tau)) + min(float64(d.KH)/d.Tau, a*d.L2H*d.L2H/(2*d.Tau*d.Tau))
			if c := d.Curve(1)(a); math.Abs(c-want) > 1e-12*want {
				t.Fatalf("K=%d: curve at %v is %v, want %v", k, a, c, want)
			}
		}
		binary := NewtonDesign{Tau: d.Tau, Kappa: 4 * math.Sqrt(s/(1-s)), KG: int64(S) + 1, KH: int64(math.Ceil(4*math.Sqrt(s/(1-s))*S/4)) + 1, Delta: d.Delta}
		if e := rdp.Epsilon(binary.Curve(50), d.Delta); e >= d.Eps {
			t.Fatalf("negative control: the binary accounting at the K=%d tau costs %g, not below %g", k, e, d.Eps)
		}
	}
	two := Public{Boost: newtonTestConfig(1, 50), Schema: &dataset.Schema{Classes: make([]string, 2)}}
	two.Sum.ScaleBits = 20
	if d, err := two.NewtonDesign(); err != nil || d.Boosters != 1 || d.L2G != 0 {
		t.Fatalf("two classes: design %+v, %v", d, err)
	}
}

// Federated DPBoost and np refuse K > 2 classes at Validate, naming the
// trainers that take them; Newton accepts them (up to MaxClasses).
func TestKClassesNeedNewton(t *testing.T) {
	union, parts := testData(t, 400, 10)
	for _, c := range []struct {
		method dpboost.Method
		k      int
		refuse string
	}{{dpboost.DPBoost, 3, "ppboost dpboost"}, {dpboost.NP, 4, "ppboost fed --method newton"}, {dpboost.Newton, 3, ""}, {dpboost.Newton, MaxClasses + 1, "limit"}} {
		cfg := dpboost.DefaultConfig()
		cfg.Trees, cfg.EnsembleSize, cfg.Depth = 2, 2, 2
		if c.method == dpboost.Newton {
			cfg = newtonTestConfig(1, 4)
		}
		cfg.Method = c.method
		pub := testPublic(union, parts, cfg, 0, c.method != dpboost.NP)
		schema := *pub.Schema
		schema.Classes = make([]string, c.k)
		for i := range schema.Classes {
			schema.Classes[i] = fmt.Sprintf("c%d", i)
		}
		pub.Schema, pub.Session, pub.Beacon = &schema, "s", []byte("b")
		for i := range 10 {
			pub.Roster = append(pub.Roster, OwnerID(i))
		}
		err := pub.Validate()
		switch {
		case c.refuse == "" && err != nil:
			t.Errorf("%v, %d classes: %v", c.method, c.k, err)
		case c.refuse != "" && (err == nil || !strings.Contains(err.Error(), c.refuse)):
			t.Errorf("%v, %d classes: %v, want a refusal naming %q", c.method, c.k, err, c.refuse)
		}
	}
}
