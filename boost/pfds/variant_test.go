package pfds

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/ppboost/ppboost/crypto/dlap"
	"github.com/ppboost/ppboost/crypto/rng"
)

// sameStructure reports whether two trees have the same nodes apart from
// the leaf counts and labels.
func sameStructure(a, b *Tree) bool {
	if len(a.Nodes) != len(b.Nodes) {
		return false
	}
	for i := range a.Nodes {
		x, y := a.Nodes[i], b.Nodes[i]
		if x.Attr != y.Attr || x.Split != y.Split || x.Level != y.Level || !slices.Equal(x.Children, y.Children) {
			return false
		}
	}
	return true
}

// TestVariantChargeEqualsReleases: the variant's charge is the geometric
// mechanism's epsilon at Eps, and that is all it releases. With the same
// randomness, a neighbouring dataset (one row removed) gives the same tree
// structure (the splits never read the rows) and leaf counts that differ
// in exactly one (leaf, class) cell, by exactly 1: the counts are one
// histogram of L1 sensitivity 1, so DLap(1/Eps) on each cell is Eps-DP in
// all. Sizes, rows and labels are computed by VariantSizes, Sample and
// CountVote, which take no private argument.
func TestVariantChargeEqualsReleases(t *testing.T) {
	dom := mixedDomain()
	data := mixedData(120, t.Name())
	for _, eps := range []float64{1, 0.5, 0.1} {
		v := VariantParams{Eps: eps, HMax: 4, MaxLeaves: 64, Threshold: 2, Sample: true}
		charge, err := v.Charge()
		if err != nil {
			t.Fatal(err)
		}
		m, _ := dlap.NewInt(1, eps)
		if charge != m.Epsilon() || charge > eps*(1+1e-12) {
			t.Errorf("eps %g: charge %v, the leaf counts' mechanism costs %v", eps, charge, m.Epsilon())
		}
		for k := 0; k < len(data.X); k += 7 {
			seed := uint64(1000*eps) + uint64(k)
			a, err := MakeVariantTree(dom, data.X, data.Y, v, rng.Derive(seed))
			if err != nil {
				t.Fatal(err)
			}
			X := slices.Delete(slices.Clone(data.X), k, k+1)
			Y := slices.Delete(slices.Clone(data.Y), k, k+1)
			b, _ := MakeVariantTree(dom, X, Y, v, rng.Derive(seed))
			if !sameStructure(a, b) {
				t.Fatalf("eps %g row %d: the structure depends on the rows", eps, k)
			}
			diff := 0.0
			for i := range a.Nodes {
				for l := range a.Nodes[i].Counts {
					diff += math.Abs(a.Nodes[i].Counts[l] - b.Nodes[i].Counts[l])
				}
			}
			if diff != 1 {
				t.Fatalf("eps %g row %d: neighbouring counts differ by %v in L1, want 1", eps, k, diff)
			}
		}
	}
	if _, err := (VariantParams{Eps: 0, HMax: 4}).Charge(); !errors.Is(err, ErrParams) {
		t.Errorf("eps 0 charged: %v", err)
	}
}

// TestVariantCountNoise: with HMax = 1 the root is a leaf whose class
// counts carry DLap(1/Eps), variance 1/(2 sinh^2(Eps/2)): the variant
// spends the whole budget on them. The sample variance of N draws has
// relative sd sqrt((kurtosis-1)/N) <= sqrt(5/N) (Laplace kurtosis 6); we
// allow 5 sds. Negative control: the faithful tree's leaves at the same
// Eps (Eps/2 for the tree, eps' = Eps/2 with HMax = 1) have 4x the
// variance; the same statistic rejects it.
func TestVariantCountNoise(t *testing.T) {
	dom := mixedDomain()
	data := mixedData(50, t.Name())
	truth := 0.0
	for _, y := range data.Y {
		truth += float64(y)
	}
	v := VariantParams{Eps: 0.8, HMax: 1}
	r := rng.ForName(t.Name())
	const N = 8000
	var sum, sq float64
	for i := 0; i < N; i++ {
		tr, err := MakeVariantTree(dom, data.X, data.Y, v, r)
		if err != nil {
			t.Fatal(err)
		}
		e := tr.Nodes[0].Counts[1] - truth
		sum += e
		sq += e * e
	}
	mean := sum / N
	variance := sq/N - mean*mean
	want := 1 / (2 * math.Pow(math.Sinh(v.Eps/2), 2))
	if math.Abs(mean) > 5*math.Sqrt(want/N) {
		t.Errorf("noise mean %v, want 0 within %v", mean, 5*math.Sqrt(want/N))
	}
	tol := 5 * math.Sqrt(5.0/N)
	if math.Abs(variance/want-1) > tol {
		t.Errorf("noise variance %v, want %v within %.3f relative", variance, want, tol)
	}
	faithful := 1 / (2 * math.Pow(math.Sinh(v.Eps/4), 2))
	if math.Abs(variance/faithful-1) <= tol {
		t.Errorf("variance %v also matches the faithful leaves' %v", variance, faithful)
	}
}

// TestVariantLabelsCarrySignal: 20 agents of 300 rows of mixedData (label
// 1 iff x0 > 0.2 and c != 2), eps 1, labels drawn from the pooled counts.
// The statistic is the gap P(label 1 | rule 1) - P(label 1 | rule 0) over
// the ~6,000 synthetic rows (~1,600 with rule 1): its sd is at most
// sqrt(1/4/1600 + 1/4/4400) < 0.015. The gap must exceed 0.2 (over 13
// sds); the negative control (each agent's labels shuffled, so independent
// of x) must stay within 4 sds of 0.
func TestVariantLabelsCarrySignal(t *testing.T) {
	dom := mixedDomain()
	rule := func(x []float64) int {
		if x[0] > 0.2 && x[4] == 0 {
			return 1
		}
		return 0
	}
	gap := func(shuffle bool) float64 {
		agents := make([]Local, 20)
		r := rng.ForName(t.Name())
		for i := range agents {
			agents[i] = mixedData(300, t.Name()+string(rune('a'+i)))
			if shuffle {
				r.Shuffle(len(agents[i].Y), func(a, b int) { agents[i].Y[a], agents[i].Y[b] = agents[i].Y[b], agents[i].Y[a] })
			}
		}
		shares, err := SimulateVariant(dom, agents, VariantParams{Eps: 1, HMax: 5, MaxLeaves: 64, Threshold: 2, Sample: true}, 7)
		if err != nil {
			t.Fatal(err)
		}
		var pos, n [2]float64
		for _, s := range shares {
			for i, x := range s.Rows {
				y := rule(x)
				pos[y] += float64(s.Data.Labels[i])
				n[y]++
			}
		}
		if n[0] < 1000 || n[1] < 1000 {
			t.Fatalf("only %v synthetic rows per rule class", n)
		}
		return pos[1]/n[1] - pos[0]/n[0]
	}
	signal, control := gap(false), gap(true)
	if signal < 0.2 {
		t.Errorf("P(label 1 | rule 1) - P(label 1 | rule 0) = %.3f, want > 0.2", signal)
	}
	if math.Abs(control) > 4*0.015 {
		t.Errorf("negative control: gap %.3f on shuffled labels, want within 0.06 of 0", control)
	}
	t.Logf("gap %.3f, shuffled control %.3f", signal, control)
}

// TestVariantShareIsPublic: anyone holding the published trees (with their
// counts) and a share's seed regenerates its rows and labels.
func TestVariantShareIsPublic(t *testing.T) {
	dom := mixedDomain()
	agents := []Local{mixedData(100, t.Name()+"a"), mixedData(100, t.Name()+"b"), mixedData(100, t.Name()+"c")}
	v := VariantParams{Eps: 1, HMax: 3, MaxLeaves: 16, Threshold: 2, Sample: true}
	shares, err := SimulateVariant(dom, agents, v, 3)
	if err != nil {
		t.Fatal(err)
	}
	var trees []*Tree
	for _, s := range shares {
		trees = append(trees, s.Tree)
	}
	for i, s := range shares {
		rows, err := s.Data.Rows(dom, s.Tree)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(rows, s.Rows, slices.Equal[[]float64]) {
			t.Errorf("agent %d: rows not regenerated", i)
		}
		if got := CountVote(dom, trees, rows, v, s.Data.Seed); !slices.Equal(got, s.Data.Labels) {
			t.Errorf("agent %d: labels not regenerated", i)
		}
	}
	if _, err := Simulate(dom, agents, DefaultParams(), Variant, 1); !errors.Is(err, ErrParams) {
		t.Errorf("Simulate ran mode %s: %v", Variant, err)
	}
}
