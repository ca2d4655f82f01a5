package audit

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/rdp"
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
	return out, nil
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
