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
//
//
// K > 2 classes (softmax, K boosters, as the one-process trainer): round t
// fits one tree per class, each drawn from the beacon under (t, k), and
// costs one secure sum under the same name: the vector (G_{k,j} for every
// class k and leaf j, then kappa H_{k,j}), class-major. A row is in one
// leaf of each class's tree and moves the K gradient coordinates by
// g_k = p_k - [y = k] (L1 norm 2(1 - p_y) < 2, L2 norm at most sqrt(2):
// (1-p_y)^2 + sum_{k != y} p_k^2 <= 2 (1-p_y)^2) and the K hessian
// coordinates by kappa h_k, h_k = p_k(1 - p_k) (sum h_k = 1 - sum p_k^2 <=
// 1 - 1/K, sum h_k^2 <= max_k h_k sum_k p_k <= 1/4). Encoding moves each
// coordinate by less than one more unit, so the integer shifts have L1
// norms at most KG = ceil(2S) + K and KH = ceil(kappa (1 - 1/K) S) + K and
// L2 norms at most L2G = sqrt(2) S + sqrt(K) and L2H = kappa S/2 + sqrt(K)
// (the one-process trainer's sensitivities). DLap(tau) on every coordinate
// makes each half of the vector (K1/tau)-DP and K2^2/(2 tau^2)-zCDP
// (rdp.PureZCDP), so a round costs PureZCDP(KG/tau, L2G^2/(2 tau^2)) +
// PureZCDP(KH/tau, L2H^2/(2 tau^2)). kappa = 2 sqrt(2) sqrt(s/(1-s)) puts
// L2H at sqrt(s/(1-s)) of L2G (up to the rounding terms), the one-process
// trainer's split of a round's zCDP between gradients and hessians.

// NewtonDesign is the noise design of a federated Newton session.
type NewtonDesign struct {
	Tau    float64 // DLap scale, encoded units
	Kappa  float64 // the hessian sums are sent times kappa
	KG, KH int64   // integer sensitivities of a G and an H coordinate
	Eps    float64 // the (eps, Delta) guarantee of the whole session
	Delta  float64
	// Boosters is 1 for two classes (logistic) and K for K > 2 classes
	// (softmax): a round's vector carries one tree's leaves per booster,
	// KG, KH are the integer L1 sensitivities of its gradient and hessian
	// halves and L2G, L2H their L2 sensitivities (0 for one booster).
	Boosters int
	L2G, L2H float64
}

// Curve is the session's composed Renyi curve (all trees): the exact DLap
// curves of the two coordinates a row changes for two classes, the pure-DP
// curves of the gradient and hessian halves (pure DP from their L1, zCDP
// from their L2 sensitivities) for K > 2.
func (d NewtonDesign) Curve(trees int) rdp.Curve {
	if d.Boosters > 1 {
		half := func(k1 int64, k2 float64) rdp.Curve {
			return rdp.PureZCDP(float64(k1)/d.Tau, k2*k2/(2*d.Tau*d.Tau))
		}
		return rdp.Times(rdp.Sum(half(d.KG, d.L2G), half(d.KH, d.L2H)), float64(trees))
	}
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
	boost    dpboost.Config
	bits     uint
	boosters int
	d        NewtonDesign
}

// NewtonDesign derives the design from the public configuration.
func (p *Public) NewtonDesign() (NewtonDesign, error) {
	if m := p.newton; m != nil && m.boost == p.Boost && m.bits == p.Sum.ScaleBits && m.boosters == p.Boosters() {
		return m.d, nil
	}
	d, err := p.newtonDesign()
	if err == nil {
		p.newton = &newtonMemo{boost: p.Boost, bits: p.Sum.ScaleBits, boosters: p.Boosters(), d: d}
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
	d := NewtonDesign{Kappa: 4 * math.Sqrt(s/(1-s)), Delta: cfg.Delta, Boosters: p.Boosters()}
	d.KG = int64(math.Ceil(S)) + 1
	d.KH = int64(math.Ceil(d.Kappa*S/4)) + 1
	if K := d.Boosters; K > 1 {
		kf := float64(K)
		d.Kappa = 2 * math.Sqrt2 * math.Sqrt(s/(1-s))
		d.KG = int64(math.Ceil(2*S)) + int64(K)
		d.KH = int64(math.Ceil(d.Kappa*(1-1/kf)*S)) + int64(K)
		d.L2G = math.Sqrt2*S + math.Sqrt(kf)
		d.L2H = d.Kappa*S/2 + math.Sqrt(kf)
	}
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

// NewtonTree is round t's structure, drawn from the beacon: one tree for
// two classes, and for K > 2 the K classes' trees (class k's drawn under
// (t, k)), their splits concatenated class by class.
func (p *Public) NewtonTree(b *dpboost.Binning, t int) *partial {
	B := p.Boosters()
	if B == 1 {
		tr := dpboost.RandomTree(p.Schema, b, p.Boost.Depth, p.seeded("fedboost/newton-tree", uint64(t)))
		return &partial{levels: p.Boost.Depth, feature: tr.Feature, bin: tr.Bin}
	}
	out := &partial{levels: p.Boost.Depth, boosters: B}
	for k := range B {
		tr := dpboost.RandomTree(p.Schema, b, p.Boost.Depth, p.seeded("fedboost/newton-tree", uint64(t), uint64(k)))
		out.feature = append(out.feature, tr.Feature...)
		out.bin = append(out.bin, tr.Bin...)
	}
	return out
}

// Classes is the number of classes of the session's schema (0 without one).
func (p *Public) Classes() int {
	if p.Schema == nil {
		return 0
	}
	return len(p.Schema.Classes)
}

// Boosters is the number of boosters the session trains: K for a Newton
// session of K > 2 classes (softmax), 1 otherwise.
func (p *Public) Boosters() int {
	if p.Newton() && p.Classes() > 2 {
		return p.Classes()
	}
	return 1
}

// newtonRelease is everything an owner releases in a Newton session: the
// T leaf sums, composed in Renyi DP.
func (p *Public) newtonRelease() (release.Mechanism, error) {
	d, err := p.NewtonDesign()
	if err != nil {
		return nil, err
	}
	label := fmt.Sprintf("%d newton leaf sums", p.Boost.Trees)
	if d.Boosters > 1 {
		label = fmt.Sprintf("%d newton leaf sums of %d classes each", p.Boost.Trees, d.Boosters)
	}
	return release.Renyi{Curve: d.Curve(p.Boost.Trees), Delta: d.Delta, Label: label}, nil
}

// newtonLedgerKey is the one spend of a Newton session per owner.
func newtonLedgerKey(session string) string { return session + "/newton" }

// newtonAccount is the model file's account of a federated Newton session.
func (p *Public) newtonAccount() dpboost.Accounting {
	d, _ := p.NewtonDesign()
	return dpboost.Accounting{Method: dpboost.Newton, Private: true, Classes: p.Boosters(), Ensembles: p.Boost.Trees,
		PerTree: make([]float64, p.Boost.Trees), SplitPerDepth: make([]float64, p.Boost.Trees), Leaf: make([]float64, p.Boost.Trees),
		Sequential: d.Eps, Total: d.Eps,
		Newton: &dpboost.NewtonAccount{Epsilon: d.Eps, Delta: d.Delta, Unit: math.Ldexp(1, int(p.Sum.ScaleBits))}}
}

// NewtonLambda is dpboost.NewtonRule's lambda for this design: twice the
// noise sd of a leaf's hessian sum as the user receives it. Any h =
// Honest(1) honest shares add up to DLap(tau) in encoded units (sd
// sqrt(2 a)/(1 - a), a = exp(-1/tau)); every roster owner deals one share
// of variance 1/h of it, so the total over the roster carries
// |roster|/h times that variance (20 times with 20 owners and colluders
// all, where each share is the whole noise; about 1 with colluders 1).
// H's noise sd is the total's over kappa S. (Sized for one DLap(tau), as
// it was, lambda was sqrt(|roster|/h) times too small for the noise the
// sums carry: with colluders all the federated model fell to near the
// majority class.)
func (p *Public) NewtonLambda() (float64, error) {
	if len(p.Roster) == 0 {
		return 0, fmt.Errorf("fedboost: the Newton rule's lambda needs the roster (how many owners deal noise)")
	}
	d, err := p.NewtonDesign()
	if err != nil {
		return 0, err
	}
	a := math.Exp(-1 / d.Tau)
	sd := math.Sqrt(2*a) / (1 - a) / math.Ldexp(1, int(p.Sum.ScaleBits)) / d.Kappa
	sd *= math.Sqrt(p.NoiseMultiplier())
	return max(1, 2*sd), nil
}

// NoiseMultiplier is the variance of the noise in a total over the whole
// roster against one DLap(tau): |roster| / Honest(1) (each owner's share
// has 1/h of it).
func (p *Public) NoiseMultiplier() float64 {
	return float64(len(p.Roster)) / float64(p.Honest(1))
}
