package fedboost_test

import (
	"fmt"
	"github.com/ppboost/ppboost/boost"
	"math"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/simulate"
)

// kClassData is a small K-class problem in the shape of the CLI tests'
// raw CSV (cmd/ppboost/cli's rawCSV): class y = i mod K, two informative
// features whose class bands overlap (x0 = y + U(0, 1.5), x1 = 2y + U(0, 4),
// both scaled to [-1, 1]) and one pure-noise feature; rows rows, the first
// train of them for training.
func kClassData(t *testing.T, k, rows, train int) (tr, te *dataset.Dataset) {
	t.Helper()
	r := rng.ForName(fmt.Sprintf("%s/%d", t.Name(), k))
	d := &dataset.Dataset{Name: fmt.Sprintf("k%d", k), Features: []string{"a", "b", "noise"}}
	for c := range k {
		d.Classes = append(d.Classes, fmt.Sprintf("c%d", c))
	}
	scale := func(v, hi float64) float64 { return 2*v/hi - 1 }
	perm := r.Perm(rows)
	for _, i := range perm {
		y := i % k
		d.X = append(d.X, []float64{scale(float64(y)+1.5*r.Float64(), float64(k)+0.5), scale(2*float64(y)+4*r.Float64(), 2*float64(k)+2), 2*r.Float64() - 1})
		d.Y = append(d.Y, y)
	}
	d.Schema = d.IdentitySchema()
	return d.Split(train)
}

// majority is the test error of always predicting the training data's
// most frequent class.
func majority(train, test *dataset.Dataset) float64 {
	counts := make([]int, train.NumClasses())
	for _, y := range train.Y {
		counts[y]++
	}
	best := 0
	for c := range counts {
		if counts[c] > counts[best] {
			best = c
		}
	}
	wrong := 0
	for _, y := range test.Y {
		if y != best {
			wrong++
		}
	}
	return float64(wrong) / float64(test.Len())
}

// Federated Newton on K > 2 classes (K boosters, softmax), 20 owners at
// eps 1, the Newton rule (as ppboost fed; 200 trees under -short): the session completes, every
// owner is charged the design's eps once, the model has K boosters of T
// trees and an account of K classes, its test error beats the majority
// class by at least 10 points and is within 0.02 (three classes; ten:
// see gap) of the one-process Newton trainer's (ppboost dpboost) at the
// same eps and public row bound. The trust setting is colluders 1 (a
// closed deployment: shares sized for m_t - 1 honest dealers, so a total
// carries about one whole noise, as the one-process trainer's release
// does). The seeds are fixed; RESULTS.md reports three seeds of each
// trainer on these and the example files.
func TestNewtonKClasses(t *testing.T) {
	for _, c := range []struct {
		k     int
		short bool
		// gap is how far the federated test error may lie above the
		// one-process trainer's: 0.02 for three classes; ten classes on
		// this generator's low-signal data (two informative features,
		// about 37 rows per leaf and class) pay for the federation's noise
		// design: DLap at the same zCDP has twice a Gaussian's variance
		// (rdp.PureZCDP, tight to first order) and a total of 20 shares
		// sized for 17 honest dealers 20/17 of it, so a leaf's gradient
		// sum has sd 293 against the one-process trainer's 244 (whose
		// fixed-point rounding terms inflate its Gaussian), which is the
		// one-process trainer at eps 0.83: 0.269-0.282 on this data over
		// three seeds, against 0.246-0.263 at eps 1 and 0.302 federated
		// (RESULTS.md, "Federated Newton on K classes").
		gap float64
	}{{3, true, 0.02}, {10, false, 0.07}} {
		t.Run(fmt.Sprintf("k%d", c.k), func(t *testing.T) {
			if testing.Short() && !c.short {
				t.Skip("-short: ten classes take about 25 s")
			}
			const owners, eps = 20, 1.0
			train, test := kClassData(t, c.k, 4000, 3000)
			parts, err := train.Partition(owners, nil, 7)
			if err != nil {
				t.Fatal(err)
			}
			maxRows := fedboost.DefaultMaxRows(owners)
			cfg := dpboost.NewtonRule(eps, owners*maxRows, c.k)
			cfg.Lambda = 1
			if testing.Short() {
				// 200 rounds (both trainers): under -race the rule's 800
				// take minutes.
				cfg.Trees, cfg.EnsembleSize = 200, 200
			}
			pub := fedboost.TestPublic(train, parts, cfg, 0, true)
			pub.MaxRows, pub.Sum.Bound = maxRows, float64(maxRows)
			pub.Colluders, pub.DropFraction = 1, 0.1
			for i := range parts {
				pub.Roster = append(pub.Roster, simulate.OwnerID(i)) // RunFed's names: the rule's lambda reads the roster's size
			}
			if pub.Boost.Lambda, err = pub.NewtonLambda(); err != nil {
				t.Fatal(err)
			}
			d, err := pub.NewtonDesign()
			if err != nil {
				t.Fatal(err)
			}
			if d.Boosters != c.k {
				t.Fatalf("design for %d boosters, want %d", d.Boosters, c.k)
			}
			res, err := simulate.RunFed(simulate.FedOptions{Public: pub, Owners: parts, Seed: 1, Log: fedboost.TestLog(t)})
			if err != nil {
				t.Fatal(err)
			}
			m := res.Model
			if len(m.Boosters) != c.k || len(m.Boosters[c.k-1]) != cfg.Trees || m.Account.Classes != c.k {
				t.Fatalf("model of %d boosters (%d trees in the last), account classes %d", len(m.Boosters), len(m.Boosters[len(m.Boosters)-1]), m.Account.Classes)
			}
			for i, led := range res.Ledgers {
				if s := led.Spent(); math.Abs(s-d.Eps) > 1e-9 || d.Eps > eps*(1+1e-9) {
					t.Fatalf("owner %d spent %v, want the design's %v (<= %v)", i, s, d.Eps, eps)
				}
			}
			one := dpboost.NewtonRule(eps, dpboost.DefaultRowBound, c.k)
			one.Trees, one.EnsembleSize = cfg.Trees, cfg.Trees
			if one.Lambda, err = dpboost.NewtonLambda(one, c.k); err != nil {
				t.Fatal(err)
			}
			ref, err := dpboost.TrainClassifier(one, train, rng.Seeded(1), nil)
			if err != nil {
				t.Fatal(err)
			}
			fe, oe, base := m.Error(test), ref.Error(test), majority(train, test)
			t.Logf("K=%d: federated %.4f, one-process %.4f, majority %.4f (eps %.4g, tau %.4g decoded, lambda %.4g; %.1f msgs, %.0f bytes per owner per round)",
				c.k, fe, oe, base, d.Eps, d.Tau/math.Ldexp(1, int(pub.Sum.ScaleBits)), pub.Boost.Lambda, res.MsgsPerOwnerTree, res.BytesPerOwnerTree)
			if fe > base-0.10 {
				t.Errorf("federated test error %.4f does not beat the majority class's %.4f by 10 points", fe, base)
			}
			if fe > oe+c.gap {
				t.Errorf("federated test error %.4f, one-process %.4f: more than %v apart", fe, oe, c.gap)
			}
			// Every owner's scores are the model's on its rows (K per row).
			for i, ow := range res.Owners {
				F := ow.Predictions()
				x := parts[i].X[0]
				s := m.Scores(x, nil)
				for k := range c.k {
					if math.Abs(F[k]-s[k]) > 1e-6 {
						t.Fatalf("owner %d row 0 class %d: score %v, model %v", i, k, F[k], s[k])
					}
				}
			}
		})
	}
}

// What the data user sees in a K-class Newton session is the exact round
// vector plus the designed noise: for every round, the revealed vector
// minus the owners' exact sums (fedboost.ExactNewtonSums, from the model's
// earlier rounds), has mean 0 and the variance of |G| shares sized for
// h = m - c (DLap(tau): 2a/(1-a)^2 encoded, a = e^(-1/tau)) on every
// coordinate, gradient and kappa-hessian halves alike. Tolerances
// as TestUserSeesDesignedNoise's (5 sd; excess kurtosis of the sum of
// shares <= 3). Negative control: the residuals are rejected as the noise
// of the one-process trainer's Gaussian at the same sd over sqrt(2) (a
// design that delivered half the variance).
func TestNewtonKClassesSeeDesignedNoise(t *testing.T) {
	const owners, k = 20, 10
	train, _ := kClassData(t, k, 2000, 2000)
	parts, err := train.Partition(owners, nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	cfg := dpboost.NewtonRule(1, owners*fedboost.DefaultMaxRows(owners), k)
	cfg.Trees, cfg.EnsembleSize, cfg.Lambda = 30, 30, 50
	pub := fedboost.TestPublic(train, parts, cfg, 0, true)
	pub.Colluders, pub.DropFraction = 1, 0.1
	sums := map[int][]float64{}
	res, err := simulate.RunFed(simulate.FedOptions{Public: pub, Owners: parts, Seed: 2, Log: fedboost.TestLog(t),
		OnSum: func(tree, node int, v []float64) { sums[tree] = v }})
	if err != nil {
		t.Fatal(err)
	}
	full := pub
	full.Session, full.Beacon = res.Session, []byte(fmt.Sprintf("beacon-%d", 2))
	for i := range owners {
		full.Roster = append(full.Roster, simulate.OwnerID(i))
	}
	exact, err := fedboost.ExactNewtonSums(&full, parts, res.Model)
	if err != nil {
		t.Fatal(err)
	}
	d, err := full.NewtonDesign()
	if err != nil {
		t.Fatal(err)
	}
	S := math.Ldexp(1, int(full.Sum.ScaleBits))
	np := d.NoiseParams(full.Honest(1))
	want := np.SumVariance(owners) / (S * S) // encoded units -> decoded
	var z []float64
	for tr := 1; tr <= cfg.Trees; tr++ {
		v := sums[tr]
		if len(v) != len(exact[tr-1]) {
			t.Fatalf("round %d: %d coordinates revealed, %d exact", tr, len(v), len(exact[tr-1]))
		}
		for j := range v {
			z = append(z, (v[j]-exact[tr-1][j])/math.Sqrt(want))
		}
	}
	n := float64(len(z))
	mean, v := meanVar(z)
	t.Logf("%d coordinates: residual mean %.3f sd, variance %.3f of the design's (sd %.4g decoded, tau %.4g)", len(z), mean, v, math.Sqrt(want), d.Tau/S)
	if math.Abs(mean) > 5/math.Sqrt(n) {
		t.Fatalf("residual mean %.3f sd, want 0 +- %.3f", mean, 5/math.Sqrt(n))
	}
	if tol := 5 * math.Sqrt((2+3)/n); math.Abs(v-1) > tol {
		t.Fatalf("residual variance %.3f of the design's, want 1 +- %.3f", v, tol)
	}
	if tol := 5 * math.Sqrt((2+3)/n); math.Abs(2*v-1) <= tol {
		t.Fatalf("negative control: half the variance accepted (%.3f)", 2*v)
	}
}

// TestNewtonLambdaReadsTheDealers: the rule's lambda is twice the noise sd
// of a leaf's hessian sum as the user receives it: a total over the roster
// of shares sized for h honest dealers carries |roster|/h times one
// DLap(tau)'s variance, so colluders all (h = 1) takes sqrt(20/1) times
// the lambda one DLap(tau) would give and colluders 1 (h = 17 with 20
// owners and drop fraction 0.1) sqrt(20/17). Without a roster it says so.
// (Sized for one DLap(tau), as it was, the federated model at colluders
// all fell to 0.73 on activity.csv against a majority of 0.79; 0.59 now.)
func TestNewtonLambdaReadsTheDealers(t *testing.T) {
	const owners, k = 20, 3
	train, _ := kClassData(t, k, 400, 100)
	parts, err := train.Partition(owners, nil, 7)
	if err != nil {
		t.Fatal(err)
	}
	pub := fedboost.TestPublic(train, parts, dpboost.NewtonRule(1, owners*fedboost.DefaultMaxRows(owners), k), 0, true)
	pub.DropFraction = 0.1
	if _, err := pub.NewtonLambda(); err == nil || !strings.Contains(err.Error(), "needs the roster") {
		t.Fatalf("no roster: %v", err)
	}
	for i := range owners {
		pub.Roster = append(pub.Roster, simulate.OwnerID(i))
	}
	lambda := func(colluders int) float64 {
		p := pub
		p.Colluders = colluders
		l, err := p.NewtonLambda()
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	all, one := lambda(boost.ColludersAll), lambda(1)
	// Both are far above the floor of 1, so their ratio is the sds'.
	if want := math.Sqrt(17); math.Abs(all/one-want) > 1e-9*want || one < 10 {
		t.Fatalf("lambda colluders all %v, colluders 1 %v: ratio %v, want sqrt(20/1)/sqrt(20/17) = %v", all, one, all/one, want)
	}
}
