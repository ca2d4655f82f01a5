package fedboost

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/ppboost/ppboost/crypto/field"
)

// What the data user sees is the exact aggregate plus the designed noise:
// the root histograms' count cells of every tree (exact counts are known:
// the group's rows per bin) minus the exact counts have mean 0 and the
// variance of the sum of |G_t| shares sized for h_t = m_t - c at the root's
// budget. Tolerances: the sample mean has sd sigma/sqrt(n); the sample
// variance sd sigma^2 sqrt((2 + ex)/n) with ex <= 3 h/k + small (the excess
// kurtosis of NB(k/h) - NB(k/h), see crypto/dpnoise); both within 5 sd.
// Negative control: the same residuals are rejected as the noise of a
// design sized for one honest owner.
func TestUserSeesDesignedNoise(t *testing.T) {
	const owners = 60
	union, parts, cfg := privateSetup(t, owners)
	cfg.Trees, cfg.EnsembleSize = 12, 3
	cfg.Epsilon = 30
	pub := testPublic(union, parts, cfg, 0, true)
	roots := map[int][]float64{}
	res, err := Simulate(SimOptions{Public: pub, Owners: parts, Seed: 5, Log: testLog(t),
		OnSum: func(tree, node int, v []float64) {
			if node == 0 {
				roots[tree] = v
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	full := pub
	full.Session, full.Beacon = res.Session, []byte(fmt.Sprintf("beacon-%d", 5))
	for i := range owners {
		full.Roster = append(full.Roster, OwnerID(i))
	}
	b, _ := full.Binning()
	cols := columnsOf(full.Schema, b)
	S := math.Ldexp(1, field.DefaultScaleBits)
	var z []float64 // residual / expected sd
	var wantVar float64
	for tr := 1; tr <= cfg.Trees; tr++ {
		v, ok := roots[tr]
		if !ok {
			t.Fatalf("no root sum for tree %d", tr)
		}
		C := len(v) / 2
		exact := make([]float64, C)
		group := full.Group(tr)
		for i, p := range parts {
			if !slices.Contains(group, OwnerID(i)) {
				continue
			}
			data, _ := b.Quantize(p.X)
			for r := range data.Rows {
				row := data.Idx[r*data.Features : (r+1)*data.Features]
				off := 0
				for _, c := range cols {
					exact[off+c.cell(row)]++
					off += c.cells(b)
				}
			}
		}
		np, _, err := full.NoiseFor(tr, full.NodeLayout(b, tr, 0))
		if err != nil {
			t.Fatal(err)
		}
		want := np.SumVariance(len(group)) / (S * S)
		wantVar = want
		for i := range exact {
			z = append(z, (v[C+i]-exact[i])/math.Sqrt(want))
		}
	}
	n := float64(len(z))
	mean, m2 := 0.0, 0.0
	for _, x := range z {
		mean += x
	}
	mean /= n
	for _, x := range z {
		m2 += (x - mean) * (x - mean)
	}
	v := m2 / (n - 1)
	if math.Abs(mean) > 5/math.Sqrt(n) {
		t.Fatalf("residual mean %.3f sd, want 0 +- %.3f", mean, 5/math.Sqrt(n))
	}
	if tol := 5 * math.Sqrt((2+3.5)/n); math.Abs(v-1) > tol {
		t.Fatalf("residual variance %.3f of the design's, want 1 +- %.3f", v, tol)
	}
	// Negative control: measured against shares sized for one honest
	// owner (h = 1: h_t times more variance expected), the same residuals
	// are rejected.
	h := float64(full.Honest(1))
	if vw := v / h; math.Abs(vw-1) <= 5*math.Sqrt((2+3.5)/n) {
		t.Fatalf("a design sized for one honest owner is accepted (variance ratio %.3f)", vw)
	}
	t.Logf("%d root count cells: residual mean %.3f sd, variance %.3f of the design's (cell sd %.3g, h_1 = %v)", len(z), mean, v, math.Sqrt(wantVar), h)
}
