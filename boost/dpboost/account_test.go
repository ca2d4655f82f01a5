package dpboost

import (
	"math"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

// TestAccount recomputes the budget of each configuration from the paper's
// formulas, independently of Account's loop: per-tree eps_t, eps_t/(2 Depth)
// per depth, eps_t/2 for the leaves, the total by parallel composition inside
// an ensemble and sequential across ensembles and classes, and the naive
// sequential sum.
func TestAccount(t *testing.T) {
	cases := []struct {
		name                 string
		method               Method
		eps                  float64
		trees, te, depth, k  int
		perTree, total, seqv float64
	}{
		// N_e = 1: every tree eps, one ensemble of disjoint subsets.
		{"dpboost-fig2", DPBoost, 1, 50, 50, 6, 1, 1, 1, 50},
		// N_e = ceil(1000/50) = 20: eps_e = 100/20 = 5 per tree.
		{"dpboost-fig3", DPBoost, 100, 1000, 50, 6, 1, 5, 100, 5000},
		// N_e = ceil(120/50) = 3, the last ensemble has 20 trees.
		{"dpboost-ragged", DPBoost, 6, 120, 50, 4, 1, 2, 6, 240},
		{"para", PARA, 2, 50, 0, 6, 1, 2, 2, 100},
		{"seq", SEQ, 2, 50, 0, 6, 1, 2.0 / 50, 2, 2},
		// One-vs-rest with 3 classes: each booster eps/3, all on the same rows.
		{"dpboost-3class", DPBoost, 3, 50, 25, 6, 3, 0.5, 3, 75},
		{"seq-3class", SEQ, 3, 10, 0, 6, 3, 0.1, 3, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Method, cfg.Epsilon, cfg.Trees, cfg.EnsembleSize, cfg.Depth = c.method, c.eps, c.trees, max(c.te, 1), c.depth
			a := AccountClasses(cfg, c.k)
			near := func(what string, got, want float64) {
				t.Helper()
				if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			near("Total", a.Total, c.total)
			near("Sequential", a.Sequential, c.seqv)
			if len(a.PerTree) != c.trees {
				t.Fatalf("%d per-tree budgets, want %d", len(a.PerTree), c.trees)
			}
			for i := range a.PerTree {
				near("PerTree", a.PerTree[i], c.perTree)
				near("SplitPerDepth", a.SplitPerDepth[i], c.perTree/(2*float64(c.depth)))
				near("Leaf", a.Leaf[i], c.perTree/2)
				near("tree = depth levels + leaves", a.SplitPerDepth[i]*float64(c.depth)+a.Leaf[i], a.PerTree[i])
			}
		})
	}
	np := AccountClasses(Config{Method: NP, Trees: 3, Depth: 2}, 1)
	if np.Private || np.Total != 0 {
		t.Errorf("NP accounting %+v, want not private", np)
	}
}

// TestTrainSpendsAccount checks that Train gives every tree the budget
// Account promises and that the subsets of one ensemble are disjoint with
// the geometric sizes of Alg. 2.
func TestTrainSpendsAccount(t *testing.T) {
	X, y := synth(rng.ForName(t.Name()), 2000, 4)
	b, _ := NewBinning(nil, 4, 16)
	data, _ := b.Quantize(X)
	cfg := DefaultConfig()
	cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Epsilon = 10, 4, 3, 6
	a := Account(cfg)
	var sizes []int
	_, err := Train(cfg, b, data, y, rng.ForName(t.Name()), func(ti TreeInfo) {
		if ti.Eps != a.PerTree[ti.Tree-1] {
			t.Errorf("tree %d spent %v, account says %v", ti.Tree, ti.Eps, a.PerTree[ti.Tree-1])
		}
		sizes = append(sizes, ti.Subset)
	})
	if err != nil {
		t.Fatal(err)
	}
	// N_e = 3 ensembles (4, 4, 2 trees), each cutting all 2000 rows.
	want := append(append(subsetBounds(DPBoost, 0.1, 2000, 4)[1:], subsetBounds(DPBoost, 0.1, 2000, 4)[1:]...), subsetBounds(DPBoost, 0.1, 2000, 2)[1:]...)
	got := 0
	for i, s := range sizes {
		lo := 0
		if k := i; k != 0 && k != 4 && k != 8 {
			lo = want[i-1]
		}
		if s != want[i]-lo {
			t.Errorf("tree %d subset %d rows, want %d", i+1, s, want[i]-lo)
		}
		got += s
	}
	if got != 3*2000 {
		t.Errorf("subsets cover %d rows, want 6000 (each ensemble all rows once)", got)
	}
}

func TestSubsetBoundsGeometric(t *testing.T) {
	const n, te, eta = 100000, 20, 0.1
	cut := subsetBounds(DPBoost, eta, n, te)
	if cut[0] != 0 || cut[te] != n {
		t.Fatalf("cuts %v do not span [0, %d]", cut, n)
	}
	for j := range te {
		// |I_t| = |D| eta (1-eta)^j / (1 - (1-eta)^T_e), j from 0; rounding
		// of two cumulative cuts moves it by at most 1.
		want := n * eta * math.Pow(1-eta, float64(j)) / (1 - math.Pow(1-eta, te))
		if got := float64(cut[j+1] - cut[j]); math.Abs(got-want) > 1 {
			t.Errorf("block %d: %v rows, want %.1f", j, got, want)
		}
	}
	eq := subsetBounds(PARA, eta, 1003, 10)
	for j := range 10 {
		if s := eq[j+1] - eq[j]; s != 100 && s != 101 {
			t.Errorf("PARA block %d has %d rows, want 100 or 101", j, s)
		}
	}
}

func TestSensitivities(t *testing.T) {
	cfg := DefaultConfig() // lambda 0.1, eta 0.1
	// Delta G = 3 g*^2 at every lambda (not the slides' (3*0.1+2)/((1.1)(2.1))
	// = 2.3/2.31).
	for _, l := range []float64{0, 0.1, 20} {
		c := cfg
		c.Lambda = l
		if got := c.SplitSensitivity(); got != 3*GStar*GStar {
			t.Errorf("lambda %v: Delta G = %v, want 3 g*^2", l, got)
		}
	}
	for _, c := range []struct {
		t    int
		want float64
	}{
		{1, 1 / 1.1},                   // 2 g* > g*/(1+lambda)
		{8, 1 / 1.1},                   // 2 * 0.9^7 = 0.957 > 0.909
		{9, 2 * math.Pow(0.9, 8)},      // 0.861 < 0.909: GLC takes over
		{50, 2 * math.Pow(0.9, 49)},    // 0.0115
		{1000, 2 * math.Pow(0.9, 999)}, // global t
	} {
		if got := cfg.LeafSensitivity(c.t); math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("Delta V(t=%d) = %v, want %v", c.t, got, c.want)
		}
	}
	cfg.Method = PARA
	if got := cfg.LeafSensitivity(50); got != 1/1.1 {
		t.Errorf("PARA Delta V = %v, want g*/(1+lambda) (no GLC)", got)
	}
	cfg.Method, cfg.ClipPerEnsemble, cfg.EnsembleSize = DPBoost, true, 50
	if got := cfg.LeafSensitivity(51); got != 1/1.1 {
		t.Errorf("per-ensemble GLC at t=51 = %v, want the first tree's", got)
	}
}
