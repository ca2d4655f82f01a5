package experiment

import (
	"fmt"
	"math"

	"github.com/ppboost/ppboost/boost"
)

func init() {
	Register(Spec{Name: "wc-distributed", Paper: "ppboost issue 15 item 3 (beyond the papers: Wang & Chang stumps with distributed noise)",
		Summary: "boosted stumps, LDP (PM) vs distributed noise vs non-private, synthetic and Adult, test accuracy vs eps",
		Run:     runWCDistributed})
}

// wcDistSetting is one data setting of wc-distributed.
type wcDistSetting struct {
	wcSetting
	groups int // owner groups of H (rounds plus retries)
}

// wcDistSettings: synthetic as the papers' stump setting (1,000 owners x 80
// samples per round); Adult with one row per owner, so that the owner-level
// guarantee both privacy modes give is also the record-level one, and 2,000
// owners per round (Adult's 25,049 training rows make 12 groups).
func wcDistSettings(r *Run) []wcDistSetting {
	if r.Short {
		return []wcDistSetting{{wcSetting{"synthetic", 200, 10}, 8}, {wcSetting{"adult", 1000, 1}, 8}}
	}
	return []wcDistSetting{{wcSetting{"synthetic", 1000, 80}, 20}, {wcSetting{"adult", 2000, 1}, 12}}
}

func runWCDistributed(r *Run) error {
	eps := []float64{0.5, 1, 2, 5}
	if r.Short {
		eps = []float64{1}
	}
	type arm struct {
		name      string
		privacy   boost.Privacy
		mech      string
		eps       []float64
		colluders int
	}
	// "distributed" is a closed deployment whose owners assume at most one
	// colluder (--colluders 1); "distributed-all" is the default, every
	// dealer adding the whole noise (colluders all, h = 1).
	arms := []arm{
		{"ldp", boost.PrivacyLDP, "pm", eps, 1},
		{"distributed", boost.PrivacyDistributed, "pm", eps, 1},
		{"distributed-all", boost.PrivacyDistributed, "pm", eps, boost.ColludersAll},
		{"non-private", boost.PrivacyLDP, "none", []float64{0}, 1},
		{"distributed-no-noise", boost.PrivacyDistributed, "none", []float64{0}, 1},
	}
	header := []string{"data", "privacy", "eps", "accuracy_mean", "accuracy_std", "rounds_mean", "majority", "seeds"}
	var rows [][]string
	total := 0
	for _, a := range arms {
		total += len(a.eps)
	}
	if r.Progress != nil {
		r.Progress.Start("wc-distributed", total*len(wcDistSettings(r))*len(r.Seeds))
	}
	for _, s := range wcDistSettings(r) {
		acc, rounds := wcAgg{}, wcAgg{}
		majority := math.NaN()
		for _, seed := range r.Seeds {
			data, err := wcData(r, s.wcSetting, s.groups, seed)
			if err != nil {
				return fmt.Errorf("wc-distributed %s: %w", s.Name, err)
			}
			majority = majorityAccuracy(data)
			for _, a := range arms {
				for _, e := range a.eps {
					cfg := wcConfig(boost.Stump, a.mech, math.Max(e, 1), s.wcSetting, 10, seed) // eps 1 with mechanism none: charged, not used
					if a.mech != "none" {
						cfg.Epsilon = e
					}
					// Every public split (on Adult the top-20 splits cap even
					// non-private boosted stumps at 80.5%), err_m from the
					// user's validation data (no owner release: the noisy
					// err sum's cost is wc-errsum's subject), and a closed
					// deployment whose owners assume at most one colluder
					// (--colluders 1: share noise sized for floor - 1
					// honest dealers) or the default (all).
					cfg.MaxSplits, cfg.Alpha, cfg.Colluders = 0, boost.AlphaValidation, a.colluders
					cfg.Privacy = a.privacy
					res := wcTrain(r, cfg, data)
					n := len(res.accepted())
					acc.add(wcKey(a.name, e), ensembleAccuracy(res.Model, data))
					rounds.add(wcKey(a.name, e), float64(n))
					if r.Progress != nil {
						r.Progress.Step()
					}
				}
			}
		}
		series := map[string]*Series{}
		for _, a := range arms {
			for _, e := range a.eps {
				m, sd := acc.ms(wcKey(a.name, e))
				rm, _ := rounds.ms(wcKey(a.name, e))
				rows = append(rows, []string{s.Name, a.name, F(e), F(m), F(sd), F(rm), F(majority), fmt.Sprint(len(r.Seeds))})
				r.Logf("%s %s eps %g: accuracy %.4f ± %.4f, %.1f rounds (majority class %.4f)", s.Name, a.name, e, m, sd, rm, majority)
				sr := series[a.name]
				if sr == nil {
					sr = &Series{Name: a.name}
					series[a.name] = sr
				}
				sr.X, sr.Y, sr.Err = append(sr.X, e), append(sr.Y, m), append(sr.Err, sd)
			}
		}
		fig := Figure{Title: fmt.Sprintf("boosted stumps, %s (%d owners x %d per round)", s.Name, s.Owners, s.Samples),
			X: "epsilon", Y: "test accuracy", LogX: true,
			ErrBars: sdBars(len(r.Seeds), "seeds")}
		for _, name := range []string{"ldp", "distributed", "distributed-all"} {
			fig.Series = append(fig.Series, *series[name])
		}
		flat := func(name string, y float64) Series {
			return Series{Name: name, X: []float64{eps[0], eps[len(eps)-1]}, Y: []float64{y, y}, Dashed: true, NoPoint: true}
		}
		np, _ := acc.ms(wcKey("non-private", 0.0))
		fig.Series = append(fig.Series, flat("non-private", np), flat("majority class", majority))
		if err := r.Plot("wc/distributed-"+s.Name, fig); err != nil {
			return err
		}
	}
	return r.Table("wc/distributed", header, rows)
}

// ensembleAccuracy is the test accuracy of a trained model.
func ensembleAccuracy(m *boost.Model, data boost.Data) float64 {
	if m == nil || len(m.Rounds) == 0 {
		return math.NaN()
	}
	ev, err := boost.Evaluate(data.Test.X, data.Test.Y, data.Test.NumClasses(), m.Predict)
	if err != nil {
		return math.NaN()
	}
	return ev.Accuracy
}

// majorityAccuracy is the test accuracy of predicting the most frequent
// test class.
func majorityAccuracy(data boost.Data) float64 {
	counts := make([]int, data.Test.NumClasses())
	for _, y := range data.Test.Y {
		counts[y]++
	}
	best := 0
	for _, c := range counts {
		best = max(best, c)
	}
	return float64(best) / float64(data.Test.Len())
}
