package audit

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/rdp"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol/fedboost"
)

// newtonAuditDelta is the delta the Newton entries are audited at. A
// Gaussian-type release is (eps(delta), delta)-DP for every delta on its
// curve; at the trainer's delta of 1e-6 the events that show the loss have
// probability near 1e-6, beyond any draw count, so the audit checks the
// same release's claim at delta = 1e-2, where a violation (the half-noise
// controls) is visible in 20,000 draws.
const newtonAuditDelta = 1e-2

// newtonEntries audits the Newton trainer's leaf release (one process:
// exact discrete Gaussian on the fixed-point sums, dpboost.NewtonGrid) and
// the federated Newton leaf sum (distributed discrete Laplace shares,
// fedboost.NewtonDesign), each for one round of a budget large enough that
// one round's loss is measurable: eps = 3 over one tree at the trainer's
// delta (its rho then gives the claim at newtonAuditDelta).
func newtonEntries() ([]Entry, error) {
	cfg := dpboost.NewtonRule(3, 1000, 2)
	cfg.Trees, cfg.EnsembleSize, cfg.Lambda = 1, 1, 1
	grid, err := dpboost.PlanGrid(cfg, 2)
	if err != nil {
		return nil, err
	}
	claim := rdp.ZCDPEpsilon(grid.Rho(), newtonAuditDelta)
	half := grid
	half.SG, half.SH = max(1, grid.SG/4), max(1, grid.SH/4)
	out := []Entry{{
		Name:    "dpboost/newton/leaf",
		Epsilon: claim,
		Delta:   newtonAuditDelta,
		Neighbours: fmt.Sprintf("an empty leaf (G = H = 0) vs one row with g = -1, h = 1/4 (the largest shift of both "+
			"sums: DeltaG = %g, DeltaH = %g units, unit %g); statistic: the log-likelihood-ratio direction "+
			"-G DeltaG/SG + H DeltaH/SH of the released sums (rho %.4g per round)", grid.DeltaG, grid.DeltaH, grid.Unit, grid.Rho()),
		Release:  newtonLeafSampler(grid),
		Controls: []Control{{Name: "quarter variance (half noise sd)", Release: newtonLeafSampler(half)}},
	}}

	pub := fedboost.Public{Boost: cfg}
	pub.Sum.ScaleBits = 8 // a coarse codec keeps the DLap scale small enough to sample fast
	d, err := pub.NewtonDesign()
	if err != nil {
		return nil, err
	}
	fclaim := rdp.Epsilon(d.Curve(1), newtonAuditDelta)
	fhalf := d
	fhalf.Tau /= 2
	out = append(out, Entry{
		Name:    "fed/newton/leaves",
		Epsilon: fclaim,
		Delta:   newtonAuditDelta,
		Neighbours: fmt.Sprintf("one dealer's encoded leaf sums (G, kappa H) = (0, 0) vs (-kG, kH) = (-%d, %d), the integer "+
			"shifts of one row after fixed-point encoding at 2^8, each plus its share for h = 1 (DLap(tau = %.4g) from "+
			"dpnoise.Params.Noise); statistic: the log-likelihood-ratio direction -G + H", d.KG, d.KH, d.Tau),
		Release:  fedNewtonSampler(d),
		Controls: []Control{{Name: "half tau", Release: fedNewtonSampler(fhalf)}},
	})
	k3, err := fedNewtonK3()
	if err != nil {
		return nil, err
	}
	return append(out, k3), nil
}

// fedNewtonK3 audits the federated Newton round of K = 3 classes (softmax:
// one vector of the three trees' leaf sums, NewtonDesign's PureZCDP
// curve): one dealer's encoded shift at the design's bounds, the gradient
// half (-(S+1), S+1, 0) (a row with p = e_1 and y = 0: L1 2S+2 <= kG, L2
// sqrt(2)(S+1) <= lG) and the hessian half (floor(lH), 0, 0) (L1 <= kH, L2
// <= lH), each coordinate plus its share for h = 1.
func fedNewtonK3() (Entry, error) {
	cfg := dpboost.NewtonRule(3, 1000, 3)
	cfg.Trees, cfg.EnsembleSize, cfg.Lambda = 1, 1, 1
	pub := fedboost.Public{Boost: cfg, Schema: &dataset.Schema{Classes: []string{"a", "b", "c"}}}
	pub.Sum.ScaleBits = 8
	d, err := pub.NewtonDesign()
	if err != nil {
		return Entry{}, err
	}
	S := int64(math.Ldexp(1, 8))
	shift := []int64{-(S + 1), S + 1, 0, int64(math.Floor(d.L2H)), 0, 0}
	if l1 := -shift[0] + shift[1]; l1 > d.KG || math.Hypot(float64(shift[0]), float64(shift[1])) > d.L2G || shift[3] > d.KH {
		return Entry{}, fmt.Errorf("audit: k3 shift %v outside the design's bounds (kG %d, lG %.4g, kH %d)", shift, d.KG, d.L2G, d.KH)
	}
	half := d
	half.Tau /= 2
	return Entry{
		Name:    "fed/newton/leaves-k3",
		Epsilon: rdp.Epsilon(d.Curve(1), newtonAuditDelta),
		Delta:   newtonAuditDelta,
		Neighbours: fmt.Sprintf("one dealer's encoded round vector of K = 3 classes (G_0, G_1, G_2, kappa H_0, kappa H_1, kappa H_2) = 0 vs %v, "+
			"the design's bounds at 2^8 (kG %d, lG %.4g, kH %d, lH %.4g), each plus its share for h = 1 (DLap(tau = %.4g)); "+
			"statistic: the log-likelihood-ratio direction (the shift's signs)", shift, d.KG, d.L2G, d.KH, d.L2H, d.Tau),
		Release:  fedNewtonVectorSampler(d, shift),
		Controls: []Control{{Name: "half tau", Release: fedNewtonVectorSampler(half, shift)}},
	}, nil
}

// fedNewtonVectorSampler releases shift (neighbour 1) or 0 (neighbour 0)
// plus DLap shares, and reports sum_i sign(shift_i) x_i.
func fedNewtonVectorSampler(d fedboost.NewtonDesign, shift []int64) Sampler {
	p := d.NoiseParams(1)
	enc := make([]field.Elem, len(shift))
	return func(r *rand.Rand, nb int) float64 {
		for i, s := range shift {
			enc[i] = field.FromInt(int64(nb) * s)
		}
		if err := p.Noise(r)(enc); err != nil {
			return math.NaN()
		}
		stat := 0.0
		for i, s := range shift {
			switch {
			case s > 0:
				stat += float64(enc[i].Int())
			case s < 0:
				stat -= float64(enc[i].Int())
			}
		}
		return stat
	}
}

func newtonLeafSampler(g dpboost.NewtonGrid) Sampler {
	return func(r *rand.Rand, nb int) float64 {
		var G, H int64
		if nb == 1 {
			G, H = g.Encode(-1, r), g.Encode(0.25, r)
		}
		gs, hs := g.Release(G, H, r)
		return -gs*g.Unit*g.DeltaG/float64(g.SG) + hs*g.Unit*g.DeltaH/float64(g.SH)
	}
}

func fedNewtonSampler(d fedboost.NewtonDesign) Sampler {
	p := d.NoiseParams(1)
	enc := make([]field.Elem, 2)
	return func(r *rand.Rand, nb int) float64 {
		enc[0], enc[1] = field.FromInt(-int64(nb)*d.KG), field.FromInt(int64(nb)*d.KH)
		if err := p.Noise(r)(enc); err != nil {
			return math.NaN()
		}
		return float64(-enc[0].Int() + enc[1].Int())
	}
}
