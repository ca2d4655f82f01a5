package experiment

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
)

// DPBoost experiments (Li, Wu, Wen & He, AAAI 2020): Fig. 2 (test error vs
// total eps, T = 50, N_e = 1), Fig. 3 (convergence with N_e = 20, T = 1000,
// eps = 100) and Table 2 (training time per tree), on UCI Adult.

func init() {
	Register(Spec{Name: "dpboost-fig2", Paper: "Li et al. 2020 (DPBoost), Fig. 2 (adult)",
		Summary: "DPBoost, PARA, SEQ, NP: Adult test error vs total eps in {1,2,4,6,8,10}, T = 50, N_e = 1", Run: runDPBoostFig2})
	Register(Spec{Name: "dpboost-fig3", Paper: "Li et al. 2020 (DPBoost), Fig. 3 (adult)",
		Summary: "DPBoost (N_e = 20), PARA, SEQ, NP: Adult test error after each of T = 1000 trees, eps = 100", Run: runDPBoostFig3})
	Register(Spec{Name: "dpboost-time", Paper: "Li et al. 2020 (DPBoost), Table 2 (adult)",
		Summary: "DPBoost and the baselines: training time per tree on Adult", Run: runDPBoostTime})
}

// Reference numbers.
const (
	// adultMajorityError: 1 - 24,720/32,561 rows labelled <=50K.
	adultMajorityError = 0.241
	// adultXGBoostError: XGBoost 1.7.4 (Debian package, CLI) with the same
	// setting as NP (50 rounds, depth 6, eta 0.1, lambda 0.1, tree_method
	// hist, max_bin 255, binary:logistic) on the seed-1 split (Shuffle(1),
	// first 26,000 rows train, 6,561 test): test error 0.1344. Measured by
	// hand; see RESULTS.md.
	adultXGBoostError = 0.1344
	adultTrain        = 26000 // the data README's split: 26,000 train / 6,561 test
)

// adultSplit shuffles Adult with seed and splits it 26,000 / 6,561 (short: a
// 3,000 / 1,000 sample).
func adultSplit(r *Run, seed uint64) (train, test *dataset.Dataset, err error) {
	d, err := dataset.Adult()
	if err != nil {
		return nil, nil, err
	}
	d = d.Shuffle(seed)
	if r.Short {
		train, rest := d.Split(3000)
		test, _ = rest.Split(1000)
		return train, test, nil
	}
	train, test = d.Split(adultTrain)
	return train, test, nil
}

// seedsOf: the run's seeds (default 1..5; the first only when short).
func seedsOf(r *Run) []uint64 {
	s := r.Seeds
	if len(s) == 0 {
		s = []uint64{1, 2, 3, 4, 5}
	}
	if r.Short {
		return s[:1]
	}
	return s
}

// setting is one choice of the knobs that matter most on Adult, shared by
// all four methods: lambda, and gradient filtering (the paper's GDF) or
// clipping. lambda 20 makes the leaf noise Delta V/(eps_t/2) = 2/(eps_t
// (1+lambda)) 11x smaller than lambda 0.1 while leaves of hundreds of rows
// keep their values; clipping keeps the misclassified rows that GDF leaves
// out (see RESULTS.md). lambda 20 was picked on the seed-1 split, before
// issue 19, with the slides' split sensitivity (0.134 at lambda 20 instead
// of the correct 3), so part of its advantage then came from that error.
type setting struct {
	lambda float64
	clip   bool
}

func (s setting) String() string {
	g := "GDF"
	if s.clip {
		g = "clipped gradients"
	}
	return fmt.Sprintf("lambda %g, %s", s.lambda, g)
}

func (s setting) file() string {
	g := "gdf"
	if s.clip {
		g = "clip"
	}
	return fmt.Sprintf("lambda%g-%s", s.lambda, g)
}

var settings = []setting{{0.1, false}, {20, false}, {0.1, true}, {20, true}}

func runDPBoostFig2(r *Run) error {
	epsList := []float64{1, 2, 4, 6, 8, 10}
	trees, depth := 50, 6
	if r.Short {
		epsList, trees, depth = []float64{1, 10}, 5, 3
	}
	seeds := seedsOf(r)
	type key struct {
		set setting
		eps float64
		m   dpboost.Method
	}
	errs := map[key][]float64{}
	r.Progress.Start("dpboost-fig2", len(seeds)*len(settings)*len(epsList)*len(dpboost.Methods()))
	for _, seed := range seeds {
		train, test, err := adultSplit(r, seed)
		if err != nil {
			return err
		}
		for si, set := range settings {
			for _, eps := range epsList {
				for _, m := range dpboost.Methods() {
					cfg := dpboost.DefaultConfig()
					cfg.Method, cfg.Epsilon, cfg.Trees, cfg.EnsembleSize, cfg.Depth = m, eps, trees, trees, depth
					cfg.Lambda, cfg.ClipGradients = set.lambda, set.clip
					k := key{set, eps, m}
					if m == dpboost.NP && eps != epsList[0] {
						errs[k] = errs[key{set, epsList[0], m}] // NP ignores eps: train it once
						r.Progress.Step()
						continue
					}
					model, err := dpboost.TrainClassifier(cfg, train, rng.Derive(seed, uint64(m), math.Float64bits(eps), uint64(si)), nil)
					if err != nil {
						return err
					}
					errs[k] = append(errs[k], model.Error(test))
					r.Progress.Step()
				}
			}
		}
	}
	var rows [][]string
	for _, set := range settings {
		fig := Figure{Title: fmt.Sprintf("DPBoost Fig. 2, Adult, T = %d, N_e = 1, %v", trees, set),
			X: "total privacy budget eps", Y: "test error", ErrBars: sdBars(len(seeds), "seeds")}
		for _, m := range dpboost.Methods() {
			s := Series{Name: m.String()}
			for _, eps := range epsList {
				e := errs[key{set, eps, m}]
				mean, std := MeanStd(e)
				s.X, s.Y, s.Err = append(s.X, eps), append(s.Y, mean), append(s.Err, std)
				rows = append(rows, []string{F(set.lambda), gradMode(set), F(eps), m.String(), F(mean), F(std), strconv.Itoa(len(e))})
				r.Logf("%v: eps %g %-7s test error %.4f +- %.4f", set, eps, m, mean, std)
			}
			fig.Series = append(fig.Series, s)
		}
		lo, hi := epsList[0], epsList[len(epsList)-1]
		fig.Series = append(fig.Series,
			Series{Name: "majority class", X: []float64{lo, hi}, Y: []float64{adultMajorityError, adultMajorityError}, Dashed: true, NoPoint: true},
			Series{Name: "XGBoost 1.7.4 (seed-1 split)", X: []float64{lo, hi}, Y: []float64{adultXGBoostError, adultXGBoostError}, Dashed: true, NoPoint: true})
		if err := r.Plot("dpboost-fig2-"+set.file(), fig); err != nil {
			return err
		}
	}
	return r.Table("dpboost-fig2", []string{"lambda", "gradients", "eps", "method", "test_error_mean", "test_error_std", "runs"}, rows)
}

func gradMode(s setting) string {
	if s.clip {
		return "clip"
	}
	return "gdf"
}

// fig3Variant is one curve of Fig. 3.
type fig3Variant struct {
	name   string
	method dpboost.Method
	perEns bool // GLC index restarts in each ensemble
}

func runDPBoostFig3(r *Run) error {
	trees, ne, eps, depth, every := 1000, 20, 100.0, 6, 10
	if r.Short {
		trees, ne, depth, every = 20, 4, 3, 5
	}
	variants := []fig3Variant{{"dpboost", dpboost.DPBoost, false}, {"dpboost (GLC per ensemble)", dpboost.DPBoost, true},
		{"para", dpboost.PARA, false}, {"seq", dpboost.SEQ, false}, {"np", dpboost.NP, false}}
	seeds := seedsOf(r)
	type key struct {
		set setting
		v   int
	}
	curves := map[key][][]float64{} // per seed, error after every `every` trees
	r.Progress.Start("dpboost-fig3", len(seeds)*len(settings)*len(variants))
	for _, seed := range seeds {
		train, test, err := adultSplit(r, seed)
		if err != nil {
			return err
		}
		for si, set := range settings {
			for vi, v := range variants {
				cfg := dpboost.DefaultConfig()
				cfg.Method, cfg.Epsilon, cfg.Trees, cfg.Depth, cfg.Lambda = v.method, eps, trees, depth, set.lambda
				cfg.EnsembleSize, cfg.ClipPerEnsemble, cfg.ClipGradients = trees/ne, v.perEns, set.clip
				model, err := dpboost.TrainClassifier(cfg, train, rng.Derive(seed, uint64(vi), uint64(si)), nil)
				if err != nil {
					return err
				}
				k := key{set, vi}
				curves[k] = append(curves[k], stagedErrors(model, test, every))
				r.Progress.Step()
			}
		}
	}
	var rows [][]string
	for _, set := range settings {
		fig := Figure{Title: fmt.Sprintf("DPBoost Fig. 3, Adult, eps = %g, N_e = %d (DPBoost), %v", eps, ne, set),
			X: "number of trees", Y: "test error (mean over seeds; spread in the CSV)"}
		for vi, v := range variants {
			s := Series{Name: v.name}
			runs := curves[key{set, vi}]
			for j := range runs[0] {
				col := make([]float64, len(runs))
				for i := range runs {
					col[i] = runs[i][j]
				}
				mean, std := MeanStd(col)
				n := (j + 1) * every
				s.X, s.Y = append(s.X, float64(n)), append(s.Y, mean)
				rows = append(rows, []string{F(set.lambda), gradMode(set), v.name, strconv.Itoa(n), F(mean), F(std)})
			}
			r.Logf("%v: %-27s error after %d trees %.4f (after %d: %.4f, best %.4f)", set, v.name, trees, s.Y[len(s.Y)-1], every, s.Y[0], minOf(s.Y))
			s.NoPoint = true
			fig.Series = append(fig.Series, s)
		}
		fig.Series = append(fig.Series, Series{Name: "majority class", X: []float64{float64(every), float64(trees)},
			Y: []float64{adultMajorityError, adultMajorityError}, Dashed: true, NoPoint: true})
		if err := r.Plot("dpboost-fig3-"+set.file(), fig); err != nil {
			return err
		}
	}
	return r.Table("dpboost-fig3", []string{"lambda", "gradients", "method", "trees", "test_error_mean", "test_error_std"}, rows)
}

func minOf(v []float64) float64 {
	m := math.Inf(1)
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

// stagedErrors is the test error of a binary model after every `every`
// trees.
func stagedErrors(m *dpboost.Model, test *dataset.Dataset, every int) []float64 {
	b := m.Binning()
	score := make([]float64, test.Len())
	var out []float64
	for t := range m.Boosters[0] {
		for i, x := range test.X {
			score[i] += m.Boosters[0][t].Value(b, x)
		}
		if (t+1)%every == 0 {
			wrong := 0
			for i, s := range score {
				if (s > 0) != (test.Y[i] == 1) {
					wrong++
				}
			}
			out = append(out, float64(wrong)/float64(test.Len()))
		}
	}
	return out
}

// timeVariant is one row of the timing table.
type timeVariant struct {
	name   string
	method dpboost.Method
	clip   bool
	paper  string
}

func runDPBoostTime(r *Run) error {
	trees, depth, reps := 50, 6, 3
	if r.Short {
		trees, depth, reps = 5, 3, 1
	}
	train, _, err := adultSplit(r, 1)
	if err != nil {
		return err
	}
	// DPBoost trains each tree on its geometric subset (N_e = 1: 2,600 rows
	// for the first tree, 15 for the last), so its time per tree is below
	// NP's; SEQ with clipped gradients grows every private tree on all the
	// rows, as NP does, and isolates the cost of the mechanisms.
	variants := []timeVariant{{"dpboost", dpboost.DPBoost, false, "0.019"}, {"para", dpboost.PARA, false, ""},
		{"seq", dpboost.SEQ, false, ""}, {"seq, clipped gradients (all rows)", dpboost.SEQ, true, ""}, {"np", dpboost.NP, false, "0.007"}}
	perTree := make([][]float64, len(variants))
	rowsPer := make([]int, len(variants))
	r.Progress.Start("dpboost-time", reps*len(variants))
	for rep := range reps {
		for vi, v := range variants {
			cfg := dpboost.DefaultConfig()
			cfg.Method, cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.ClipGradients = v.method, trees, trees, depth, v.clip
			var total time.Duration
			var rowsSeen int
			_, err := dpboost.TrainClassifier(cfg, train, rng.Derive(uint64(rep), uint64(vi)), func(ti dpboost.TreeInfo) {
				total += ti.Elapsed
				rowsSeen += ti.Subset - ti.Filtered
			})
			if err != nil {
				return err
			}
			perTree[vi] = append(perTree[vi], total.Seconds()/float64(trees))
			rowsPer[vi] = rowsSeen / trees
			r.Progress.Step()
		}
	}
	np, _ := MeanStd(perTree[len(variants)-1])
	fig := Figure{Title: "DPBoost Table 2: training time per tree, Adult (T = 50, depth 6)",
		X: "variant (0 dpboost, 1 para, 2 seq, 3 seq all rows, 4 np)", Y: "seconds per tree", ErrBars: sdBars(reps, "repetitions")}
	s := Series{Name: "this implementation"}
	var rows [][]string
	for vi, v := range variants {
		mean, std := MeanStd(perTree[vi])
		rows = append(rows, []string{v.name, strconv.Itoa(rowsPer[vi]), F(mean), F(std), F(mean / np), v.paper})
		r.Logf("%-34s %6d rows/tree  %.5f s per tree (x%.2f NP); paper %s", v.name, rowsPer[vi], mean, mean/np, v.paper)
		s.X, s.Y, s.Err = append(s.X, float64(vi)), append(s.Y, mean), append(s.Err, std)
	}
	fig.Series = []Series{s, {Name: "paper (dpboost, np)", X: []float64{0, 4}, Y: []float64{0.019, 0.007}, Dashed: true}}
	if err := r.Plot("dpboost-time", fig); err != nil {
		return err
	}
	return r.Table("dpboost-time", []string{"variant", "rows_per_tree", "seconds_per_tree", "std", "ratio_to_np", "paper_seconds_per_tree"}, rows)
}
