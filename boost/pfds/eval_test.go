package pfds

import (
	"math"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

// TestEmptyLeafShare: rows that are the other agent's own training rows
// never fall into an empty leaf of its tree (share 0); as a negative
// control, a tree whose agent holds no rows has every leaf empty (share 1
// for the pairs with that tree, and the agent without rows shares no rows).
func TestEmptyLeafShare(t *testing.T) {
	dom := mixedDomain()
	data := mixedData(200, t.Name())
	p := DefaultParams()
	p.HMax = 4
	tree := MakeTree(dom, data.X, data.Y, p, rng.ForName(t.Name()))
	pub := tree.Public()
	shares := []Shared{{Tree: pub, Rows: data.X}, {Tree: pub, Rows: data.X}}
	if got := emptyLeafShare(dom, []Local{data, data}, shares); got != 0 {
		t.Errorf("rows of the agents' own data: empty-leaf share %v, want 0", got)
	}
	shares[1].Rows = nil
	if got := emptyLeafShare(dom, []Local{data, {}}, shares); got != 1 {
		t.Errorf("other agent holds no rows: empty-leaf share %v, want 1", got)
	}
}

// TestDiagnoseControls: Vote-relabel with trees that label exactly as the
// data (one-split trees on x0 > 0.2, category ignored) learns about as well
// as the real labels allow, and Oracle-label on rows labelled by the
// non-private model learns that model: both errors must be far below the
// majority class's. As a negative control, trees that all vote class 0
// make Vote-relabel the majority class exactly.
func TestDiagnoseControls(t *testing.T) {
	dom := mixedDomain()
	train := mixedData(2000, t.Name()+"train")
	test := mixedData(2000, t.Name()+"test")
	stump := &Tree{Nodes: []Node{
		{Attr: 0, Split: 0.2, Children: []int32{1, 2}, Level: 1},
		{Attr: Leaf, Level: 2, Label: 0},
		{Attr: Leaf, Level: 2, Label: 1},
	}}
	zero := &Tree{Nodes: []Node{{Attr: Leaf, Level: 1, Label: 0}}}
	cfg := DefaultEval()
	cfg.Learners = []Learner{LogReg}
	m, err := Fit(LogReg, train.X, train.Y, nil, cfg.Lambda)
	if err != nil {
		t.Fatal(err)
	}
	shares := []Shared{{Tree: stump, Rows: train.X[:500], Data: &DataShare{Labels: make([]int, 500)}}}
	majority := 0.0
	for _, y := range test.Y {
		majority += float64(y)
	}
	majority = math.Min(majority, float64(len(test.Y))-majority) / float64(len(test.Y))
	res, err := diagnose(dom, train, shares, []*Tree{stump}, map[Learner]*Model{LogReg: m}, cfg, 1, test)
	if err != nil {
		t.Fatal(err)
	}
	// The labels are y = [x0 > 0.2 and c != 2]: the stump is wrong on the
	// third of x0 > 0.2 with c = 2 (0.4/3 = 0.13 of the rows), so
	// no model learned from its labels should do much better or worse than
	// that; the majority class errs about 0.27.
	for _, r := range res {
		if r.Err > majority-0.08 {
			t.Errorf("%s: error %.3f, majority class %.3f", r.Method, r.Err, majority)
		}
	}
	res, err = diagnose(dom, train, shares, []*Tree{zero}, map[Learner]*Model{LogReg: m}, cfg, 1, test)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Method != MethodVoteRelabel || math.Abs(res[0].Err-majority) > 1e-12 || res[0].Positive != 0 {
		t.Errorf("all-zero trees: %s error %v positive %v, want the majority class's %v and 0", res[0].Method, res[0].Err, res[0].Positive, majority)
	}
}
