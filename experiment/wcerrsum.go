package experiment

import (
	"fmt"
	"math"

	"github.com/ppboost/ppboost/boost"
)

func init() {
	Register(Spec{Name: "wc-errsum", Paper: "ppboost issue 19 item 2 (the accuracy cost of a private err_m)",
		Summary: "boosted PM stumps: err_m from the user's validation data vs from the owners' noisy err sum (err_epsilon per dealing) vs the old exact sum",
		Run:     runWCErrSum})
}

// exactErrEpsilon stands for the old, exact err sum (not private; the
// reference trainer only: owners refuse an err epsilon above their limit).
const exactErrEpsilon = 1e6

func runWCErrSum(r *Run) error {
	errEps := []float64{0.1, 0.5, 1, 2}
	settings := []wcDistSetting{{wcSetting{"synthetic", 1000, 80}, 20}, {wcSetting{"adult", 2000, 1}, 12}}
	if r.Short {
		errEps = []float64{0.5, 2}
		settings = []wcDistSetting{{wcSetting{"synthetic", 200, 10}, 8}, {wcSetting{"adult", 1000, 1}, 8}}
	}
	type arm struct {
		name   string
		alpha  boost.AlphaMode
		errEps float64
	}
	arms := []arm{{"validation", boost.AlphaValidation, 0}, {"exact sum (not private)", boost.AlphaSecureSum, exactErrEpsilon}}
	for _, e := range errEps {
		arms = append(arms, arm{fmt.Sprintf("noisy sum eps %g", e), boost.AlphaSecureSum, e})
	}
	if r.Progress != nil {
		r.Progress.Start("wc-errsum", len(arms)*len(settings)*len(r.Seeds))
	}
	header := []string{"data", "alpha", "err_epsilon", "accuracy_mean", "accuracy_std", "rounds_mean", "attempts_mean",
		"err_abs_dev_mean", "owner_err_spend_mean", "predicted_err_sd", "plan_check", "roster", "majority", "seeds"}
	var rows [][]string
	for _, s := range settings {
		acc, rounds, attempts, dev := wcAgg{}, wcAgg{}, wcAgg{}, wcAgg{}
		majority, roster := math.NaN(), 0
		for _, seed := range r.Seeds {
			data, err := wcData(r, s.wcSetting, s.groups, seed)
			if err != nil {
				return fmt.Errorf("wc-errsum %s: %w", s.Name, err)
			}
			majority, roster = majorityAccuracy(data), len(data.Owners)
			for _, a := range arms {
				cfg := wcConfig(boost.Stump, "pm", 5, s.wcSetting, 10, seed)
				cfg.MaxSplits, cfg.Alpha = 0, a.alpha
				// Measure every arm, also those CheckPlan refuses (its
				// threshold MaxErrSD comes from these numbers).
				cfg.SkipPlanCheck = true
				if a.errEps > 0 {
					cfg.ErrEpsilon = a.errEps
				}
				res := wcTrain(r, cfg, data)
				acc.add(a.name, ensembleAccuracy(res.Model, data))
				rounds.add(a.name, float64(len(res.accepted())))
				attempts.add(a.name, float64(len(res.Rounds)))
				if a.alpha == boost.AlphaSecureSum {
					for _, ri := range res.Rounds { // what the dealings' noise moved err_m by
						dev.add(a.name, math.Abs(ri.Err-ri.ErrExact))
					}
				}
				if r.Progress != nil {
					r.Progress.Step()
				}
			}
		}
		var curve Series
		curve.Name = "noisy err sum (one honest dealer)"
		for _, a := range arms {
			m, sd := acc.ms(a.name)
			rm, _ := rounds.ms(a.name)
			am, _ := attempts.ms(a.name)
			dm, _ := dev.ms(a.name)
			spend := 0.0
			if a.alpha == boost.AlphaSecureSum && a.errEps != exactErrEpsilon {
				spend = am * a.errEps // every roster owner deals once per attempt
			}
			pred, verdict := math.NaN(), "pass"
			if a.alpha == boost.AlphaSecureSum {
				cfg := wcConfig(boost.Stump, "pm", 5, s.wcSetting, 10, 1)
				cfg.Alpha, cfg.ErrEpsilon = a.alpha, a.errEps
				if spec, err := cfg.Spec(2, 1, []boost.Split{{Feature: 0}}); err == nil {
					pred = spec.PredictedErrSD(roster)
					if pred > boost.MaxErrSD {
						verdict = "refused"
					}
				}
			}
			rows = append(rows, []string{s.Name, string(a.alpha), F(a.errEps), F(m), F(sd), F(rm), F(am), F(dm), F(spend),
				F(pred), verdict, fmt.Sprint(roster), F(majority), fmt.Sprint(len(r.Seeds))})
			r.Logf("%s %s: accuracy %.4f ± %.4f, %.1f rounds in %.1f attempts, |err - exact| %.4f, each owner spends %.2f on err (majority %.4f)",
				s.Name, a.name, m, sd, rm, am, dm, spend, majority)
			if a.alpha == boost.AlphaSecureSum && a.errEps != exactErrEpsilon {
				curve.X, curve.Y, curve.Err = append(curve.X, a.errEps), append(curve.Y, m), append(curve.Err, sd)
			}
		}
		flat := func(name string, y float64) Series {
			return Series{Name: name, X: []float64{errEps[0], errEps[len(errEps)-1]}, Y: []float64{y, y}, Dashed: true, NoPoint: true}
		}
		val, _ := acc.ms("validation")
		ex, _ := acc.ms("exact sum (not private)")
		fig := Figure{Title: fmt.Sprintf("err_m sources, %s (%d owners in the roster)", s.Name, roster),
			X: "epsilon of one err dealing", Y: "test accuracy", LogX: true,
			ErrBars: sdBars(len(r.Seeds), "seeds"),
			Series:  []Series{curve, flat("validation data (no owner release)", val), flat("exact err sum (old, not private)", ex), flat("majority class", majority)}}
		if err := r.Plot("wc/errsum-"+s.Name, fig); err != nil {
			return err
		}
	}
	return r.Table("wc/errsum", header, rows)
}
