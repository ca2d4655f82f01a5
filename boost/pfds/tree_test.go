package pfds

import (
	"math"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
)

// mixedDomain is two numeric attributes and one categorical with 3
// categories: features [x0, x1, c=0, c=1, c=2].
func mixedDomain() *Domain {
	return &Domain{Dim: 5, Classes: 2, Attrs: []Attribute{
		{Name: "x0", Offset: 0}, {Name: "x1", Offset: 1}, {Name: "c", Offset: 2, Cats: 3},
	}}
}

// mixedData: label 1 iff x0 > 0.2 (with category 2 always 0).
func mixedData(n int, seed string) Local {
	r := rng.ForName(seed)
	var l Local
	for i := 0; i < n; i++ {
		x := make([]float64, 5)
		x[0], x[1] = 2*r.Float64()-1, 2*r.Float64()-1
		c := r.IntN(3)
		x[2+c] = 1
		y := 0
		if x[0] > 0.2 && c != 2 {
			y = 1
		}
		l.X, l.Y = append(l.X, x), append(l.Y, y)
	}
	return l
}

func TestDomainFromSchema(t *testing.T) {
	dom, err := DomainOf(dataset.AdultSchema(), 108, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(dom.Attrs) != 14 {
		t.Fatalf("%d attributes, want 14", len(dom.Attrs))
	}
	nc := 0
	for _, a := range dom.Attrs {
		if a.Categorical() {
			nc++
		}
	}
	if nc != 8 || dom.Attrs[13].Cats != 42 || dom.Attrs[13].Offset != 66 {
		t.Errorf("categorical %d, native-country %+v", nc, dom.Attrs[13])
	}
	if _, err := DomainOf(dataset.AdultSchema(), 107, 2); err == nil {
		t.Error("dimension mismatch accepted")
	}
}

// TestLeafLaplaceVariance: with HMax = 1 the root is a leaf whose class
// counts carry DLap(1/eps') noise (the geometric mechanism), eps' = Eps/2:
// mean 0 and variance 2a/(1-a)^2 = 1/(2 sinh^2(eps'/2)), a = e^-eps' (0.987
// of Lap(1/eps')'s 2/eps'^2 at eps' = 0.4). Its excess kurtosis is at most
// Laplace's 3, so the sample variance of N draws has relative standard
// deviation at most sqrt(5/N) ~ 0.025 at N = 8000; we allow 5 of them
// (0.125). The mean has sd sqrt(var/N); allow 5 sd. The released count is an
// integer.
func TestLeafLaplaceVariance(t *testing.T) {
	dom := mixedDomain()
	data := mixedData(50, t.Name())
	truth := []float64{0, 0}
	for _, y := range data.Y {
		truth[y]++
	}
	p := DefaultParams()
	p.HMax, p.P, p.Eps = 1, 2, 0.8
	epsLeaf := p.Eps / 2
	r := rng.ForName(t.Name())
	const N = 8000
	var sum, sq float64
	for i := 0; i < N; i++ {
		tr := MakeTree(dom, data.X, data.Y, p, r)
		if len(tr.Nodes) != 1 {
			t.Fatalf("HMax 1 tree has %d nodes", len(tr.Nodes))
		}
		e := tr.Nodes[0].Counts[1] - truth[1]
		if e != math.Trunc(e) {
			t.Fatalf("released count %v is not an integer", tr.Nodes[0].Counts[1])
		}
		sum += e
		sq += e * e
	}
	mean := sum / N
	variance := sq/N - mean*mean
	want := 1 / (2 * math.Pow(math.Sinh(epsLeaf/2), 2))
	if math.Abs(mean) > 5*math.Sqrt(want/N) {
		t.Errorf("noise mean %v, want 0 within %v", mean, 5*math.Sqrt(want/N))
	}
	tol := 5 * math.Sqrt(5.0/N)
	if math.Abs(variance/want-1) > tol {
		t.Errorf("noise variance %v, want %v within %.3f relative", variance, want, tol)
	}
	// Negative control: the budget of the whole tree (Eps instead of
	// Eps/2) would predict a variance 4x smaller; the same statistic
	// rejects it.
	wrong := 2 / (p.Eps * p.Eps)
	if math.Abs(variance/wrong-1) <= tol {
		t.Errorf("variance %v also matches the wrong scale %v", variance, wrong)
	}
}

// TestExpMechFrequencies: index i is drawn with probability
// exp(eps u_i / 2) / Z. Each frequency of N draws has sd sqrt(p(1-p)/N);
// allow 5 sd.
func TestExpMechFrequencies(t *testing.T) {
	u := []float64{0, 1, 2, 4}
	eps := 0.9
	r := rng.ForName(t.Name())
	const N = 40000
	counts := make([]float64, len(u))
	for i := 0; i < N; i++ {
		counts[expMech(r, u, eps, 1)]++
	}
	check := func(scale float64) (worst float64) {
		z := 0.0
		for _, v := range u {
			z += math.Exp(scale * v)
		}
		for i, v := range u {
			p := math.Exp(scale*v) / z
			sd := math.Sqrt(p * (1 - p) / N)
			worst = math.Max(worst, math.Abs(counts[i]/N-p)/sd)
		}
		return worst
	}
	if z := check(eps / 2); z > 5 {
		t.Errorf("frequencies %v deviate %.1f sd from exp(eps u/2)", counts, z)
	}
	// Negative control: without the factor 1/2 (sensitivity 1 taken as 1/2)
	// the frequencies are far off.
	if z := check(eps); z <= 5 {
		t.Errorf("frequencies also match exp(eps u): %.1f sd", z)
	}
}

// TestSplitSelection: with a large budget the exponential mechanism picks
// the candidate with the best Max utility; with a tiny one it picks
// candidates nearly uniformly (the chosen split is as often left of the
// class boundary as a uniform draw would be).
func TestSplitSelection(t *testing.T) {
	dom := &Domain{Dim: 1, Classes: 2, Attrs: []Attribute{{Name: "x", Offset: 0}}}
	var l Local
	for i := 0; i < 400; i++ {
		x := -1 + 2*(float64(i)+0.5)/400
		y := 0
		if x >= 0.3 {
			y = 1
		}
		l.X, l.Y = append(l.X, []float64{x}), append(l.Y, y)
	}
	r := rng.ForName(t.Name())
	dist := func(eps float64) float64 {
		p := DefaultParams()
		p.HMax, p.P, p.T, p.Eps = 2, 2, 10, eps
		s := 0.0
		const reps = 300
		for i := 0; i < reps; i++ {
			tr := MakeTree(dom, l.X, l.Y, p, r)
			s += math.Abs(tr.Nodes[0].Split - 0.3)
		}
		return s / reps
	}
	sharp, blunt := dist(2000), dist(1e-6)
	// A uniform pick among 10 uniform candidates lands on average ~0.6 from
	// 0.3; the best of 10 candidates is within ~0.1.
	if sharp > 0.12 {
		t.Errorf("high-budget split %.3f from the boundary on average", sharp)
	}
	if blunt < 0.4 {
		t.Errorf("no-budget split %.3f from the boundary: not uniform", blunt)
	}
}

func TestTreeStructure(t *testing.T) {
	dom := mixedDomain()
	data := mixedData(300, t.Name())
	r := rng.ForName(t.Name())
	for trial := 0; trial < 50; trial++ {
		p := DefaultParams()
		p.HMax, p.MaxLeaves = 4, 0
		if trial%2 == 1 {
			p.MaxLeaves = 7
		}
		tr := MakeTree(dom, data.X, data.Y, p, r)
		leaves := tr.Leaves()
		if p.MaxLeaves > 0 && len(leaves) > p.MaxLeaves {
			t.Fatalf("%d leaves over the cap %d", len(leaves), p.MaxLeaves)
		}
		var walk func(i int, usedCat bool)
		walk = func(i int, usedCat bool) {
			n := &tr.Nodes[i]
			if n.Attr == Leaf {
				if p.MaxLeaves == 0 && n.Level != p.HMax {
					t.Fatalf("leaf at level %d, want %d", n.Level, p.HMax)
				}
				if len(n.Counts) != 2 || n.Label != argmax(n.Counts) {
					t.Fatalf("leaf counts %v label %d", n.Counts, n.Label)
				}
				return
			}
			if dom.Attrs[n.Attr].Cats > 0 {
				if usedCat {
					t.Fatalf("categorical attribute reused on a path")
				}
				if len(n.Children) != 3 {
					t.Fatalf("categorical node has %d children", len(n.Children))
				}
			} else if len(n.Children) != 2 {
				t.Fatalf("numeric node has %d children", len(n.Children))
			}
			for _, ch := range n.Children {
				if int(ch) <= i || tr.Nodes[ch].Level != n.Level+1 {
					t.Fatalf("child %d of %d not in preorder or wrong level", ch, i)
				}
				walk(int(ch), usedCat || dom.Attrs[n.Attr].Cats > 0)
			}
		}
		walk(0, false)
		// Rows sampled in leaf j fall into leaf j.
		s := &Sizes{Leaves: leaves, Counts: make([]int, len(leaves))}
		for j := range s.Counts {
			s.Counts[j] = 3
		}
		rows := Sample(dom, tr, s, uint64(trial))
		k := 0
		for j, l := range leaves {
			for c := 0; c < s.Counts[j]; c++ {
				if got := tr.leafOf(dom, rows[k]); got != l {
					t.Fatalf("row sampled in leaf %d routes to %d", l, got)
				}
				k++
			}
		}
	}
}

func TestLeafSizes(t *testing.T) {
	dom := mixedDomain()
	data := mixedData(500, t.Name())
	r := rng.ForName(t.Name())
	for _, opt := range []bool{true, false} {
		p := DefaultParams()
		p.HMax, p.P, p.Optimize = 5, 3, opt
		// A huge budget: sizes close to the truth.
		p.Eps = 1e6
		tr := MakeTree(dom, data.X, data.Y, p, r)
		s, err := LeafSizes(dom, tr, data.X, data.Y, p, r)
		if err != nil {
			t.Fatal(err)
		}
		if s.Total() != 500 {
			t.Errorf("optimize %v: total %d at eps 1e6, want 500", opt, s.Total())
		}
		// A small budget: sizes non-negative, integers summing to the
		// rounded real total.
		p.Eps = 0.1
		tr = MakeTree(dom, data.X, data.Y, p, r)
		s, err = LeafSizes(dom, tr, data.X, data.Y, p, r)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for j, v := range s.Real {
			if v < 0 || s.Counts[j] < 0 {
				t.Fatalf("negative size %v / %d", v, s.Counts[j])
			}
			sum += v
		}
		if s.Total() != int(math.Round(sum)) {
			t.Errorf("total %d, real sum %v", s.Total(), sum)
		}
	}
}

// TestOptimizeReducesSizeError: the paper's Fig. 3a claim on a small case:
// post-processing brings the synthetic total closer to the true size than
// the clipped noisy leaves (PFDS-), which overestimate it.
func TestOptimizeReducesSizeError(t *testing.T) {
	dom := mixedDomain()
	data := mixedData(300, t.Name())
	r := rng.ForName(t.Name())
	var errOpt, errMinus float64
	const reps = 30
	for i := 0; i < reps; i++ {
		p := DefaultParams()
		p.HMax, p.P, p.Eps = 6, 4, 1
		tr := MakeTree(dom, data.X, data.Y, p, r)
		s, err := LeafSizes(dom, tr, data.X, data.Y, p, r)
		if err != nil {
			t.Fatal(err)
		}
		errOpt += math.Abs(float64(s.Total()) - 300)
		p.Optimize = false
		s, _ = LeafSizes(dom, tr, data.X, data.Y, p, r)
		errMinus += math.Abs(float64(s.Total()) - 300)
	}
	if errOpt >= errMinus/2 {
		t.Errorf("mean size error %.1f with the optimization, %.1f without", errOpt/reps, errMinus/reps)
	}
}

func TestVoteTies(t *testing.T) {
	dom := &Domain{Dim: 1, Classes: 3, Attrs: []Attribute{{Name: "x", Offset: 0}}}
	leaf := func(l int) *Tree { return &Tree{Nodes: []Node{{Attr: Leaf, Level: 1, Label: l}}} }
	rows := [][]float64{{0}}
	for _, tc := range []struct {
		labels []int
		want   int
	}{
		{[]int{2, 1, 2}, 2},
		{[]int{2, 1}, 1}, // tie -> smaller class
		{[]int{0, 2, 2, 0}, 0},
		{[]int{1}, 1},
	} {
		var trees []*Tree
		for _, l := range tc.labels {
			trees = append(trees, leaf(l))
		}
		if got := Vote(dom, trees, rows)[0]; got != tc.want {
			t.Errorf("votes %v: got %d, want %d", tc.labels, got, tc.want)
		}
	}
}

func TestSimulateDeterministic(t *testing.T) {
	dom := mixedDomain()
	var agents []Local
	for i := 0; i < 4; i++ {
		agents = append(agents, mixedData(80, t.Name()+string(rune('a'+i))))
	}
	p := DefaultParams()
	p.HMax = 4
	a, err := Simulate(dom, agents, p, Full, 42)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Simulate(dom, agents, p, Full, 42)
	c, _ := Simulate(dom, agents, p, Full, 43)
	same := func(x, y []Shared) bool {
		for i := range x {
			if x[i].Data.Seed != y[i].Data.Seed || len(x[i].Rows) != len(y[i].Rows) {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("same seed, different runs")
	}
	if same(a, c) {
		t.Error("different seeds, same runs (negative control)")
	}
	for i, s := range a {
		rows, err := s.Data.Rows(dom, s.Tree)
		if err != nil {
			t.Fatal(err)
		}
		for k := range rows {
			for j := range rows[k] {
				if rows[k][j] != s.Rows[k][j] {
					t.Fatalf("agent %d: regenerated row %d differs", i, k)
				}
			}
		}
	}
}

// TestLevelCountVariance: the internal node counts of Alg. 5 carry
// Lap((P-1)/(Eps/2)) noise: variance 2((P-1)/(Eps/2))^2. We draw the root's
// noisy count N times on one tree (relative sd of the sample variance
// sqrt(5/N), allow 5 of them) and, as a negative control, reject the scale
// P/(Eps/2) a budget split over P levels would give.
func TestLevelCountVariance(t *testing.T) {
	dom := mixedDomain()
	data := mixedData(200, t.Name())
	p := DefaultParams()
	p.HMax, p.P, p.Eps = 4, 3, 1.5
	r := rng.ForName(t.Name())
	tr := MakeTree(dom, data.X, data.Y, p, r)
	leaves := tr.Leaves()
	noisyLeaf := make([]float64, len(leaves))
	const N = 6000
	var sum, sq float64
	for i := 0; i < N; i++ {
		_, c, _, keep := collapsed(dom, tr, data.X, noisyLeaf, leaves, p, r)
		e := c[keep[0]] - float64(len(data.X))
		sum += e
		sq += e * e
	}
	mean := sum / N
	variance := sq/N - mean*mean
	b := float64(p.P-1) / (p.Eps / 2)
	want := 2 * b * b
	tol := 5 * math.Sqrt(5.0/N)
	if math.Abs(variance/want-1) > tol {
		t.Errorf("root count noise variance %v, want %v within %.3f relative", variance, want, tol)
	}
	if math.Abs(mean) > 5*math.Sqrt(want/N) {
		t.Errorf("root count noise mean %v", mean)
	}
	bw := float64(p.P) / (p.Eps / 2)
	if math.Abs(variance/(2*bw*bw)-1) <= tol {
		t.Errorf("variance %v also matches the wrong scale", variance)
	}
}
