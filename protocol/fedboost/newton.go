package fedboost

import (
	"fmt"
	"math"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/dpnoise"
	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/rdp"
	"github.com/ppboost/ppboost/protocol/release"
)

// Federated Newton (dpboost's Newton trainer over the mesh). Every tree
// uses every owner; its splits are drawn from the beacon (they do not look
// at the data), so a tree costs one secure sum: the leaves' vector (G_1..G_L,
// kappa H_1..kappa H_L) of gradient and hessian sums, to which every owner
// adds its share of distributed discrete-Laplace noise of scale tau (in
// encoded units; any h honest shares add up to DLap(tau) exactly,
// crypto/dpnoise). A row changes one G coordinate by |g| < 1 and one H
// coordinate by kappa h <= kappa/4; after fixed-point encoding at scale S
// the integer shifts are at most kG = ceil(S) + 1 and kH = ceil(kappa S/4) +
// 1. The per-tree Renyi curve is DLap(tau, kG) + DLap(tau, kH) (independent
// coordinates), T trees compose by adding curves, and tau is the smallest
// scale whose T-fold curve converts to (Epsilon, Delta)-DP. kappa = 4
// sqrt(s/(1-s)) for the hessian share s puts the hessian coordinate's
// sensitivity at sqrt(s/(1-s)) of the gradient's: the same split of the
// budget as the one-process trainer's zCDP shares.

// NewtonDesign is the noise design of a federated Newton session.
type NewtonDesign struct {
	Tau    float64 // DLap scale, encoded units
	Kappa  float64 // the hessian sums are sent times kappa
	KG, KH int64   // integer sensitivities of a G and an H coordinate
	Eps    float64 // the (eps, Delta) guarantee of the whole session
	Delta  float64
}

// Curve is the session's composed Renyi curve (all trees).
func (d NewtonDesign) Curve(trees int) rdp.Curve {
	return rdp.Times(rdp.Sum(rdp.DLap(d.Tau, d.KG), rdp.DLap(d.Tau, d.KH)), float64(trees))
}

// NoiseParams is the per-share design for h honest dealers.
func (d NewtonDesign) NoiseParams(h int) dpnoise.Params {
	return dpnoise.Params{Scale: d.Tau, Honest: h}
}

// Newton reports whether the session runs the Newton trainer.
func (p *Public) Newton() bool { return p.Boost.Method == dpboost.Newton }

// newtonMemo caches a design with the inputs it was derived from: the
// search costs a few milliseconds and owners consult the design on every
// sum. Validate fills it; a copy of the Public whose inputs changed
// recomputes.
type newtonMemo struct {
	boost dpboost.Config
	bits  uint
	d     NewtonDesign
}

// NewtonDesign derives the design from the public configuration.
func (p *Public) NewtonDesign() (NewtonDesign, error) {
	if m := p.newton; m != nil && m.boost == p.Boost && m.bits == p.Sum.ScaleBits {
		return m.d, nil
	}
	d, err := p.newtonDesign()
	if err == nil {
		p.newton = &newtonMemo{boost: p.Boost, bits: p.Sum.ScaleBits, d: d}
	}
	return d, err
}

func (p *Public) newtonDesign() (NewtonDesign, error) {
	cfg := p.Boost
	codec, err := field.NewCodec(p.Sum.ScaleBits)
	if err != nil {
		return NewtonDesign{}, err
	}
	S := codec.Scale()
	s := cfg.HessianShare
	d := NewtonDesign{Kappa: 4 * math.Sqrt(s/(1-s)), Delta: cfg.Delta}
	d.KG = int64(math.Ceil(S)) + 1
	d.KH = int64(math.Ceil(d.Kappa*S/4)) + 1
	eps := func(tau float64) float64 {
		d.Tau = tau
		return rdp.Epsilon(d.Curve(cfg.Trees), cfg.Delta)
	}
	// eps falls as tau grows: the smallest tau within the budget is
	// 1/(the largest 1/tau whose eps fits).
	inv := rdp.Largest(func(x float64) float64 { return eps(1 / x) }, cfg.Epsilon, 1/float64(d.KG))
	if !(inv > 0) {
		return NewtonDesign{}, fmt.Errorf("%w: no noise scale meets eps %v", ErrConfig, cfg.Epsilon)
	}
	d.Tau = 1 / inv
	if d.Tau > dpnoise.MaxScale {
		return NewtonDesign{}, fmt.Errorf("%w: the noise scale %.3g is beyond dpnoise's range: raise eps or lower the trees", ErrConfig, d.Tau)
	}
	d.Eps = eps(d.Tau)
	return d, nil
}

// NewtonTree is tree t's structure, drawn from the beacon.
func (p *Public) NewtonTree(b *dpboost.Binning, t int) *partial {
	tr := dpboost.RandomTree(p.Schema, b, p.Boost.Depth, p.seeded("fedboost/newton-tree", uint64(t)))
	return &partial{levels: p.Boost.Depth, feature: tr.Feature, bin: tr.Bin}
}

// newtonRelease is everything an owner releases in a Newton session: the
// T leaf sums, composed in Renyi DP.
func (p *Public) newtonRelease() (release.Mechanism, error) {
	d, err := p.NewtonDesign()
	if err != nil {
		return nil, err
	}
	return release.Renyi{Curve: d.Curve(p.Boost.Trees), Delta: d.Delta, Label: fmt.Sprintf("%d newton leaf sums", p.Boost.Trees)}, nil
}

// newtonLedgerKey is the one spend of a Newton session per owner.
func newtonLedgerKey(session string) string { return session + "/newton" }

// newtonAccount is the model file's account of a federated Newton session.
func (p *Public) newtonAccount() dpboost.Accounting {
	d, _ := p.NewtonDesign()
	return dpboost.Accounting{Method: dpboost.Newton, Private: true, Classes: 1, Ensembles: p.Boost.Trees,
		PerTree: make([]float64, p.Boost.Trees), SplitPerDepth: make([]float64, p.Boost.Trees), Leaf: make([]float64, p.Boost.Trees),
		Sequential: d.Eps, Total: d.Eps,
		Newton: &dpboost.NewtonAccount{Epsilon: d.Eps, Delta: d.Delta, Unit: math.Ldexp(1, int(p.Sum.ScaleBits))}}
}

// NewtonLambda is dpboost.NewtonRule's lambda for this design: twice the
// noise sd of a leaf's hessian sum. The hessian coordinate carries kappa H
// plus DLap(tau) in encoded units (sd sqrt(2 a)/(1 - a) tau-ish, a =
// exp(-1/tau)), so H's noise sd is that over kappa S.
func (p *Public) NewtonLambda() (float64, error) {
	d, err := p.NewtonDesign()
	if err != nil {
		return 0, err
	}
	a := math.Exp(-1 / d.Tau)
	sd := math.Sqrt(2*a) / (1 - a) / math.Ldexp(1, int(p.Sum.ScaleBits)) / d.Kappa
	return max(1, 2*sd), nil
}
