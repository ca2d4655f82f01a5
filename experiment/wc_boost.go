package experiment

// Wang & Chang: boosted classifiers, misclassification and err_m/alpha_m per
// round, for both ways of getting err_m.

import (
	"fmt"
	"math"

	"github.com/ppboost/ppboost/boost"
)

func init() {
	Register(Spec{Name: "wc-bncc", Paper: "Wang & Chang, Fig. 4, Fig. 5",
		Summary: "boosted PM-NCC: misclassification, err_m and alpha_m per round (validation and securesum err_m)", Run: wcRunBNCC})
	Register(Spec{Name: "wc-bdt", Paper: "Wang & Chang, Fig. 7, Fig. 8",
		Summary: "boosted PM stumps (BDT): misclassification, err_m and alpha_m per round (both err_m)", Run: wcRunBDT})
	Register(Spec{Name: "wc-blr", Paper: "Wang & Chang, Sec. V-C",
		Summary: "boosted PM-LR: misclassification per round (the paper saw no gain from boosting LR)", Run: wcRunBLR})
}

// wcBoostCase is one line of a boosted figure.
type wcBoostCase struct {
	setting wcSetting
	mech    string
	eps     float64
	paper   []float64 // the paper's misclassification after rounds 1 and 10, if stated
}

func (c wcBoostCase) label() string {
	if c.mech == "none" {
		return "non-private"
	}
	return fmt.Sprintf("%s eps %g", c.mech, c.eps)
}

// wcRunBoosted trains every case for every seed and alpha mode and writes the
// per-round misclassification, err_m and alpha_m (mean and std over seeds),
// the number of attempts, and one plot per dataset and quantity.
func wcRunBoosted(r *Run, name string, learner boost.Learner, cases []wcBoostCase, rounds, groups int) error {
	if r.Short {
		rounds = 3
	}
	b := &wcBoosted{r: r, name: name, learner: learner, cases: cases, rounds: rounds, groups: groups,
		a: wcAgg{}, seen: map[wcBoostKey]bool{}}
	modes := []boost.AlphaMode{boost.AlphaValidation, boost.AlphaSecureSum}
	r.Progress.Start(name, len(cases)*len(modes)*len(r.Seeds))
	for _, c := range cases {
		s := c.setting.short(r)
		for _, seed := range r.Seeds {
			data, err := wcData(r, s, groups, seed)
			if err != nil {
				return err
			}
			for _, mode := range modes {
				cfg := wcConfig(learner, c.mech, c.eps, s, rounds, seed)
				if c.mech == "none" {
					cfg.Epsilon = 1
				}
				cfg.Alpha = mode
				b.record(c, s, seed, mode, wcTrain(r, cfg, data))
				r.Progress.Step()
			}
		}
	}
	if err := r.Table("wc/"+name, []string{"dataset", "case", "alpha_mode", "round", "mis_mean", "mis_std", "err_mean", "err_std", "alpha_mean", "alpha_std"}, b.rows()); err != nil {
		return err
	}
	if err := r.JSON("wc/"+name+"-runs", b.summary); err != nil {
		return err
	}
	return b.plots()
}

// wcBoostKey is one line of a boosted figure: a dataset, a case and an
// alpha mode.
type wcBoostKey struct {
	ds, label string
	mode      boost.AlphaMode
}

// wcBoosted is one wcRunBoosted: its cases and what the runs gave.
type wcBoosted struct {
	r              *Run
	name           string
	learner        boost.Learner
	cases          []wcBoostCase
	rounds, groups int
	a              wcAgg
	order          []wcBoostKey // the lines in the order first seen
	seen           map[wcBoostKey]bool
	summary        []map[string]any
}

// record adds one run's per-round misclassification, err_m and alpha_m,
// its attempts and its summary.
func (b *wcBoosted) record(c wcBoostCase, s wcSetting, seed uint64, mode boost.AlphaMode, res wcResult) {
	kk := wcBoostKey{s.Name, c.label(), mode}
	if !b.seen[kk] {
		b.seen[kk] = true
		b.order = append(b.order, kk)
	}
	acc := res.accepted()
	attempts := len(res.Rounds)
	for m := 1; m <= b.rounds; m++ {
		mis, e, al := math.NaN(), math.NaN(), math.NaN()
		if m <= len(acc) {
			mis, e, al = 1-acc[m-1].TestAccuracy, acc[m-1].Err, acc[m-1].Alpha
		} else if len(acc) > 0 { // stopped early: the model stays
			mis = 1 - acc[len(acc)-1].TestAccuracy
		}
		base := fmt.Sprint(kk, m)
		b.a.add(base+"mis", mis)
		b.a.add(base+"err", e)
		b.a.add(base+"alpha", al)
	}
	b.a.add(fmt.Sprint(kk)+"attempts", float64(attempts))
	b.a.add(fmt.Sprint(kk)+"accepted", float64(len(acc)))
	errText := ""
	if res.Err != nil {
		errText = res.Err.Error()
	}
	b.summary = append(b.summary, map[string]any{"dataset": s.Name, "case": c.label(), "alpha_mode": mode, "seed": seed,
		"accepted": len(acc), "attempts": attempts, "stopped": errText,
		"misclassification": jsonNumber(wcFinalMis(acc))})
}

// rows are the per-round table rows (mean and std over seeds); each line
// is logged.
func (b *wcBoosted) rows() [][]string {
	var rows [][]string
	for _, kk := range b.order {
		for m := 1; m <= b.rounds; m++ {
			base := fmt.Sprint(kk, m)
			mm, ms := b.a.ms(base + "mis")
			em, es := b.a.ms(base + "err")
			am, as := b.a.ms(base + "alpha")
			rows = append(rows, []string{kk.ds, kk.label, string(kk.mode), fmt.Sprint(m), F(mm), F(ms), F(em), F(es), F(am), F(as)})
		}
		at, _ := b.a.ms(fmt.Sprint(kk) + "attempts")
		ac, _ := b.a.ms(fmt.Sprint(kk) + "accepted")
		last, sd := b.a.ms(fmt.Sprint(kk, b.rounds) + "mis")
		first, _ := b.a.ms(fmt.Sprint(kk, 1) + "mis")
		b.r.Logf("%s %s (%s err_m): misclassification %.1f%% after round 1, %.1f%% ± %.1f after %d; %.1f attempts for %.1f accepted rounds",
			kk.ds, kk.label, kk.mode, 100*first, 100*last, 100*sd, b.rounds, at, ac)
	}
	return rows
}

// plots writes, per dataset, misclassification (validation solid,
// securesum dashed) with the paper's first/last values; err_m and alpha_m.
func (b *wcBoosted) plots() error {
	var dsets []string
	for _, kk := range b.order {
		if len(dsets) == 0 || dsets[len(dsets)-1] != kk.ds {
			dsets = append(dsets, kk.ds)
		}
	}
	for _, ds := range dsets {
		for _, what := range []string{"mis", "err", "alpha"} {
			if err := b.r.Plot(fmt.Sprintf("wc/%s-%s-%s", b.name, ds, what), b.figure(ds, what)); err != nil {
				return err
			}
		}
	}
	return nil
}

// figure is dataset ds's plot of one quantity (mis, err or alpha).
func (b *wcBoosted) figure(ds, what string) Figure {
	var s wcSetting
	for _, c := range b.cases {
		if c.setting.Name == ds {
			s = c.setting
		}
	}
	xs := make([]float64, b.rounds)
	for i := range xs {
		xs[i] = float64(i + 1)
	}
	ylab := map[string]string{"mis": "test misclassification", "err": "weighted training error of the round's learner (err_m)",
		"alpha": "weight of the round's learner in the vote (alpha_m)"}[what]
	fig := Figure{Title: fmt.Sprintf("%s boosted %s (%d owners x %d per round)", ds, b.learner, s.Owners, s.Samples), X: "base learners", Y: ylab,
		ErrBars: sdBars(len(b.r.Seeds), "seeds")}
	for _, kk := range b.order {
		if kk.ds != ds {
			continue
		}
		ys, es := make([]float64, b.rounds), make([]float64, b.rounds)
		for m := 1; m <= b.rounds; m++ {
			ys[m-1], es[m-1] = b.a.ms(fmt.Sprint(kk, m) + what)
		}
		ser := Series{Name: fmt.Sprintf("%s (%s)", kk.label, kk.mode), X: xs, Y: ys}
		if kk.mode == boost.AlphaValidation {
			ser.Err = es
		} else {
			ser.Dashed = true
		}
		fig.Series = append(fig.Series, ser)
	}
	if what != "mis" {
		return fig
	}
	for _, c := range b.cases {
		if c.setting.Name == ds && len(c.paper) == 2 && !b.r.Short {
			fig.Series = append(fig.Series, Series{Name: c.label() + " (paper)", X: []float64{1, float64(b.rounds)}, Y: c.paper, PointsOnly: true,
				ColorOf: fmt.Sprintf("%s (%s)", c.label(), boost.AlphaValidation)})
		}
	}
	return fig
}

// jsonNumber is v, or nil (JSON null) for NaN, which encoding/json refuses
// (a run that accepted no round has no final misclassification).
func jsonNumber(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

func wcFinalMis(acc []boost.RoundInfo) float64 {
	if len(acc) == 0 {
		return math.NaN()
	}
	return 1 - acc[len(acc)-1].TestAccuracy
}

func wcRunBNCC(r *Run) error {
	syn, fas := wcSetting{"synthetic", 2000, 4}, wcSetting{"fashion", 1000, 4}
	return wcRunBoosted(r, "bncc", boost.NCC, []wcBoostCase{
		{syn, "none", 0, []float64{.13, .09}}, {syn, "pm", 5, []float64{.19, .14}}, {syn, "pm", 7, []float64{.17, .12}},
		{fas, "none", 0, []float64{.11, .05}}, {fas, "pm", 7, []float64{.39, .19}}, {fas, "pm", 9, []float64{.37, .20}},
	}, 10, 20)
}

func wcRunBDT(r *Run) error {
	syn, fas := wcSetting{"synthetic", 1000, 80}, wcSetting{"fashion", 200, 20}
	return wcRunBoosted(r, "bdt", boost.Stump, []wcBoostCase{
		{syn, "none", 0, []float64{.30, .19}}, {syn, "pm", 5, []float64{.30, .19}}, {syn, "pm", 7, nil},
		{fas, "none", 0, nil}, {fas, "pm", 7, []float64{.40, .18}}, {fas, "pm", 9, []float64{.34, .19}},
	}, 10, 20)
}

func wcRunBLR(r *Run) error {
	fas := wcSetting{"fashion", 100, 40}
	return wcRunBoosted(r, "blr", boost.LogReg, []wcBoostCase{
		{fas, "none", 0, nil}, {fas, "pm", 9, []float64{.22, .22}},
	}, 5, 10)
}
