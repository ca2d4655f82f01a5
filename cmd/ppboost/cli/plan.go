package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/dataset"
)

// Plans that fit the data (sim and simulate on anything but synthetic data;
// synthetic keeps the papers' setting). A size flag given is used as given;
// one left out is sized from the data:
//
//   - --holdout: 20% of the rows (when there is no --test file and the data
//     has no test split);
//   - --user-samples: a quarter of the rest, at least min(30, half of it) and
//     at most 1000 (the user's thresholds, validation and significance test
//     need some rows; owners need the others);
//   - --samples-per-owner: 1, one record per owner (the local setting: a
//     person and their record). For LDP this is also what buys the most
//     signal: an owner's release carries the mechanism's noise whatever it
//     holds, and the mean of H releases has H times less noise variance, so
//     the more owners the rows make, the better.
//   - --rounds and --owners-per-round: the owners are spent once each, so
//     H (M + RetryRoomFor(M)) <= owners; with one given, the other fills
//     the owners;
//   - --learner and --max-splits (stumps): searchPlan forecasts
//     (boost.Forecast, on the user's data only) every learner and stump
//     split count left open, with every round count left open, and takes
//     the most rounds whose first-round learners mostly beat the majority
//     class. A stump has two leaves, so on K > 2 classes it names two of
//     them per round; the nearest-centroid learner names all K and releases
//     d values per owner, which is why it wins on many classes.
//
// The sizes are the simulation's deployment shape: in a deployment the
// owners are the roster (public by construction) and the forecast reads the
// data user's own rows only, so no owner's data shapes the plan.
//
// A plan without noise is forecast too (it then always reaches the
// target): the search still compares learners by their first-round error.
type plan struct {
	spec  boost.DataSpec
	why   []string
	fc    *boost.Forecast
	total int // owners the data gives
}

// planMaxRounds is the most rounds a sized plan takes (the default M).
const planMaxRounds = 10

// setFlags returns the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// fitPlan sizes a run on loaded data (see plan), cuts the data, and sets
// cfg's learner, owners per round and rounds when their flags were not
// given. Sizes the data cannot hold are usage errors that say what would
// fit.
func (t *trainFlags) fitPlan(set map[string]bool, cfg *boost.Config, train, test *dataset.Dataset) (boost.Data, *plan, error) {
	p := &plan{}
	n := train.Len()
	testN := 0
	if test == nil {
		testN = t.holdout.of(n)
		if !t.holdout.set {
			p.why = append(p.why, fmt.Sprintf("test %d (20%% of %d rows)", testN, n))
			if n < 5 {
				return boost.Data{}, nil, usagef("--data %s has %d rows: too few for a test set, the data user's rows and owners; use a file of at least 5 rows (a few hundred for a private model)", t.data, n)
			}
		}
		if testN < 1 || testN >= n {
			return boost.Data{}, nil, usagef("--holdout %s: --data %s has %d rows; hold out at most %d, or give --test FILE", t.holdout.String(), t.data, n, n/2)
		}
	} else {
		testN = 0 // the data's own test split
	}
	rest := n - testN
	user := t.userSamples
	if user == 0 {
		user = min(1000, max(rest/4, min(30, rest/2)))
		p.why = append(p.why, fmt.Sprintf("user %d (a quarter of the %d rows left, 30 to 1000)", user, rest))
	}
	if user < 1 || user >= rest {
		return boost.Data{}, nil, usagef("--user-samples %d: the %d rows left after the test set cannot hold it and owners; use at most %d", user, rest, max(1, rest/2))
	}
	per := t.samplesPerOwner
	if !set["samples-per-owner"] {
		per = 1
		p.why = append(p.why, "1 sample per owner")
	}
	owners := t.owners
	if owners == 0 {
		owners = (rest - user) / per
	}
	if owners < 1 || owners*per > rest-user {
		return boost.Data{}, nil, usagef("--owners %d x --samples-per-owner %d: only %d rows are left for owners; use at most %d owners of %d or %d of 1",
			owners, per, rest-user, (rest-user)/per, per, rest-user)
	}
	p.total = owners
	p.spec = boost.DataSpec{Source: t.data, Owners: owners, SamplesPerOwner: per, UserSamples: user, TestSamples: testN, Seed: t.seed}
	data, err := boost.Cut(train, test, p.spec)
	if err != nil {
		return boost.Data{}, nil, prepareError(err)
	}
	if err := searchPlan(set, cfg, data, p, "--data "+t.data); err != nil {
		return data, nil, err
	}
	return data, p, nil
}

// planTarget is the share of simulated first-round learners that must beat
// the majority class for the plan search to take a plan: well above
// MinForecastAccept, so that most rounds add a learner that helps.
const planTarget = 0.8

// searchDraws is the number of simulated first rounds per plan the search
// compares: a proportion near planTarget is then known to about 0.06 (one
// standard error, sqrt(0.8 x 0.2 / 40)); the chosen plan is forecast again
// with boost.ForecastDraws for the line the user reads.
const searchDraws = 40

// planRounds are the round counts the plan search tries, most first.
var planRounds = []int{10, 7, 5, 3, 2, 1}

// candidate is one plan the search forecast.
type candidate struct {
	learner boost.Learner
	splits  int // Config.MaxSplits
	h, m    int
	fc      boost.Forecast
}

func (c candidate) String() string {
	s := string(c.learner)
	if c.learner == boost.Stump && c.splits > 0 {
		s += fmt.Sprintf(" (best %d splits)", c.splits)
	}
	return fmt.Sprintf("%s: %d rounds x %d, %.0f%% of %d draws beat the majority", s, c.m, c.h, 100*c.fc.Beat, c.fc.Draws)
}

// searchPlan chooses what the flags leave open among learners (stump, ncc,
// logreg; ncc not with distributed noise), stump split counts (all, 16, 8,
// 4, 2: each owner's release has a value per split, and the noise per
// value grows with their number; fewer only when all of them are not even
// likely to beat the majority class) and round counts (planRounds, owners per
// round filling the owners): per learner and split count, the most rounds
// whose forecast reaches planTarget; then the plan with the most rounds,
// for stumps the most splits (the cap holds in every round: later rounds
// need splits to choose from), between learners the forecast first-round
// error breaking near ties (within 0.05 of beating); if no plan reaches the
// target, the one most likely to beat the majority class (the warning then
// says so).
func searchPlan(set map[string]bool, cfg *boost.Config, data boost.Data, p *plan, source string) error {
	ps := &planSearch{set: set, cfg: cfg, data: data, owners: p.total, per: p.spec.SamplesPerOwner}
	learners := ps.learners()
	if err := ps.roundCounts(source); err != nil {
		return err
	}
	var found, best []candidate
	for _, l := range learners {
		f, b, err := ps.forLearner(l)
		if err != nil {
			return err
		}
		found, best = append(found, f...), append(best, b...)
	}
	c, err := choosePlan(found, best)
	if err != nil {
		return usagef("%s: %d owners are too few for a round and its retry; use more rows (or owners), or --samples-per-owner 1", source, ps.owners)
	}
	cfg.Learner, cfg.MaxSplits, cfg.OwnersPerRound, cfg.Rounds = c.learner, c.splits, c.h, c.m
	f, err := forecast(*cfg, data.User, ps.per)
	if err != nil {
		return err
	}
	p.fc = &f
	var others []string
	for _, o := range best {
		if o.learner != c.learner || o.splits != c.splits {
			others = append(others, o.String())
		}
	}
	why := fmt.Sprintf("forecast chose %s (room for %d attempts: %.0f%% of those first rounds accepted, plus %d retries)",
		c, p.total/c.h, 100*c.fc.Accepted, boost.RetryRoomFor(c.m))
	if len(others) > 0 && len(learners)+len(best) > 2 {
		why += "; the others at best: " + strings.Join(others, ", ")
	}
	p.why = append(p.why, why)
	return nil
}

// planSearch is one searchPlan: what the flags fixed (set, cfg), the data
// user's rows, and the owners the plan is for.
type planSearch struct {
	set         map[string]bool
	cfg         *boost.Config
	data        boost.Data
	owners, per int
	rounds      []int // the round counts to try (roundCounts)
}

// learners are the learners to try: --learner's, or every one the privacy
// model allows (ncc releases per-sample vectors: not with distributed noise).
func (ps *planSearch) learners() []boost.Learner {
	if ps.set["learner"] {
		return []boost.Learner{ps.cfg.Learner}
	}
	if ps.cfg.Privacy == boost.PrivacyDistributed {
		return []boost.Learner{boost.Stump, boost.LogReg}
	}
	return []boost.Learner{boost.Stump, boost.NCC, boost.LogReg}
}

// roundCounts sets the round counts to try: --rounds, the most rounds
// --owners-per-round leaves room for, or planRounds.
func (ps *planSearch) roundCounts(source string) error {
	cfg, owners := ps.cfg, ps.owners
	if ps.set["owners-per-round"] && cfg.OwnersPerRound > owners {
		return usagef("--owners-per-round %d is more than the %d owners %s gives with --samples-per-owner %d; use at most %d (a round and its retry room)",
			cfg.OwnersPerRound, owners, source, ps.per, owners/2)
	}
	ps.rounds = planRounds
	switch {
	case ps.set["rounds"]:
		ps.rounds = []int{cfg.Rounds}
	case ps.set["owners-per-round"]:
		m := 0
		for cfg.OwnersPerRound*(m+1+boost.RetryRoomFor(m+1)) <= owners && m < planMaxRounds {
			m++
		}
		if m == 0 {
			return usagef("--owners-per-round %d is more than the %d owners can serve (a round and its retry need %d); use at most %d",
				cfg.OwnersPerRound, owners, 2*cfg.OwnersPerRound, owners/2)
		}
		ps.rounds = []int{m}
	}
	return nil
}

// ownersFor is the owners per round of a plan of m rounds.
func (ps *planSearch) ownersFor(m int) int {
	if ps.set["owners-per-round"] {
		return ps.cfg.OwnersPerRound
	}
	return ps.owners / (m + boost.RetryRoomFor(m))
}

// forLearner tries learner l at each stump split count: the plans that
// reach the target (found) and the best plan of each split count (best).
func (ps *planSearch) forLearner(l boost.Learner) (found, best []candidate, err error) {
	splits := []int{ps.cfg.MaxSplits}
	if l == boost.Stump && !ps.set["max-splits"] {
		splits = []int{0, 16, 8, 4, 2}
	}
	allSplits := 0 // stump splits without a cap
	for _, sp := range splits {
		c := *ps.cfg
		c.Learner, c.MaxSplits = l, sp
		u, err := boost.NewUserState(c, ps.data.User, nil)
		if err != nil {
			return nil, nil, usageError{configFlagNames(err)}
		}
		if sp == 0 {
			allSplits = len(u.Spec.Splits)
		} else if len(splits) > 1 && sp >= allSplits {
			continue // no fewer splits than all
		}
		top, ok, err := ps.bestRounds(u, c)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			found = append(found, *top)
		}
		if top != nil {
			best = append(best, *top) // what this learner and split count can do
			if sp == 0 && top.fc.Beat >= boost.MinForecastAccept {
				// All splits are likely to work: a cap would leave
				// later rounds fewer splits to choose from for a
				// cleaner first round, and boosting needs the choice.
				break
			}
		}
	}
	return found, best, nil
}

// bestRounds forecasts c's plans over the round counts: the most rounds
// whose forecast reaches planTarget (ok), else the plan most likely to beat
// the majority class.
func (ps *planSearch) bestRounds(u *boost.UserState, c boost.Config) (top *candidate, ok bool, err error) {
	ms := ps.rounds
	if len(ms) > 1 && ps.cfg.Mechanism != "none" {
		// The fewest rounds give the most owners per round, the
		// best forecast: if that misses the target, all do.
		ms = append([]int{ms[len(ms)-1]}, ms[:len(ms)-1]...)
	}
	for i, m := range ms {
		h := ps.ownersFor(m)
		if h < 1 {
			continue
		}
		h, f, err := ps.forecastAt(u, c.Seed, m, h)
		if err != nil {
			return nil, false, err
		}
		cand := candidate{c.Learner, c.MaxSplits, h, m, f}
		if top == nil || f.Beat > top.fc.Beat {
			top = &cand
		}
		if i == 0 && len(ms) > 1 && ms[0] < ms[1] {
			if f.Beat < planTarget {
				break
			}
			continue // the first-round bound is met; now the most rounds that meet it
		}
		if f.Beat >= planTarget || ps.cfg.Mechanism == "none" {
			return &cand, true, nil
		}
	}
	return top, false, nil
}

// forecastAt forecasts a plan of m rounds of h owners. Dropped attempts
// spend owners too: a round takes 1/Accepted attempts on average, so m
// rounds want ceil(m/Accepted) of them besides the retry room. One
// refinement: forecast again at the H that leaves room for them (fewer
// owners per round accept a little less often; the retry room absorbs the
// rest).
func (ps *planSearch) forecastAt(u *boost.UserState, seed uint64, m, h int) (int, boost.Forecast, error) {
	f, err := u.ForecastRound1(h, ps.per, searchDraws, seed)
	if err != nil {
		return h, f, err
	}
	if attempts := int(math.Ceil(float64(m)/max(f.Accepted, 0.25))) + boost.RetryRoomFor(m); !ps.set["owners-per-round"] &&
		attempts > m+boost.RetryRoomFor(m) && ps.owners/attempts >= 1 {
		h = ps.owners / attempts
		f, err = u.ForecastRound1(h, ps.per, searchDraws, seed)
	}
	return h, f, err
}

// choosePlan picks among the plans that reach the target: the most rounds;
// for stumps the most splits; between learners the forecast first-round
// error breaking near ties (within 0.05 of beating). If none reaches it,
// the plan most likely to beat the majority class; an error if there is
// no plan at all.
func choosePlan(found, best []candidate) (candidate, error) {
	pick := func(cs []candidate, better func(a, b candidate) bool) candidate {
		b := cs[0]
		for _, c := range cs[1:] {
			if better(c, b) {
				b = c
			}
		}
		return b
	}
	switch {
	case len(found) > 0:
		return pick(found, func(a, b candidate) bool {
			if a.m != b.m {
				return a.m > b.m
			}
			if a.learner == b.learner && a.splits != b.splits {
				// Both reach the target: the split cap holds for every
				// round, so the most splits leave later rounds the most
				// to choose from (0 is all of them).
				return a.splits == 0 || (b.splits != 0 && a.splits > b.splits)
			}
			if d := a.fc.Beat - b.fc.Beat; d > 0.05 || d < -0.05 {
				return d > 0
			}
			return a.fc.MeanErr < b.fc.MeanErr
		}), nil
	case len(best) > 0:
		return pick(best, func(a, b candidate) bool { return a.fc.Beat > b.fc.Beat }), nil
	}
	return candidate{}, errors.New("no plan")
}

// forecast runs boost's first-round forecast for cfg on the user's data.
func forecast(cfg boost.Config, user *dataset.Dataset, per int) (boost.Forecast, error) {
	u, err := boost.NewUserState(cfg, user, nil)
	if err != nil {
		return boost.Forecast{}, err
	}
	return u.ForecastRound1(cfg.OwnersPerRound, per, boost.ForecastDraws, cfg.Seed)
}

// printPlan prints the plan line, the forecast and, if the plan is not
// likely to beat the majority class, a warning with the epsilon that
// would (from more forecasts, on the user's data only: nobody spends).
func printPlan(errOut io.Writer, p *plan, cfg boost.Config, data boost.Data) error {
	noise := fmt.Sprintf("eps %g", cfg.Epsilon)
	if cfg.Mechanism == "none" {
		noise = "no noise"
	}
	fmt.Fprintf(errOut, "plan: %d owners of %d sample(s), %d rounds x %d owners per round, learner %s, %s; why: %s\n",
		p.total, p.spec.SamplesPerOwner, cfg.Rounds, cfg.OwnersPerRound, cfg.Learner, noise, strings.Join(p.why, "; "))
	return reportForecast(errOut, cfg, data.User, p.spec.SamplesPerOwner, p.fc)
}

// reportForecast prints the data user's forecast for cfg (fc if already
// computed) and warns, with what would work, when the plan is unlikely to
// beat the majority class. A plan without noise is not forecast.
func reportForecast(errOut io.Writer, cfg boost.Config, user *dataset.Dataset, per int, fc *boost.Forecast) error {
	if cfg.Mechanism == "none" {
		return nil
	}
	if fc == nil {
		f, err := forecast(cfg, user, per)
		if err != nil {
			return err
		}
		fc = &f
	}
	fmt.Fprintf(errOut, "forecast (the user's own data, nobody spends): %s\n", fc)
	if fc.Likely() {
		return nil
	}
	fix := "more owners per round"
	for _, k := range []float64{2, 4, 8} {
		c := cfg
		c.Epsilon = cfg.Epsilon * k
		if f, err := forecast(c, user, per); err == nil && f.Likely() {
			fix = fmt.Sprintf("--eps %g (forecast: %.0f%% beat it, error %.3f), or more owners per round", c.Epsilon, 100*f.Beat, f.MeanErr)
			break
		}
	}
	fmt.Fprintf(errOut, "warning: at eps %g this plan is unlikely to beat the majority class (%.3f error): its simulated first-round learners beat it in %.0f%% of the draws, with a mean error of %.3f; the noise swamps the signal. What would: %s\n",
		cfg.Epsilon, fc.Majority, 100*fc.Beat, fc.MeanErr, fix)
	return nil
}

// userPlan is the data user node's plan and check before it announces.
// With --expect-owners N, no --config, and --owners-per-round or --rounds
// (or --learner) left out, it chooses them as sim does (searchPlan) for N
// owners of one row each, and prints the plan line. Then, in every case,
// the forecast of the configuration on its own validation data, and a
// warning with what would work when the plan is unlikely to beat the
// majority class. The owners' rows per owner are not known to the user: one
// is assumed (more rows per owner lower only the sampling noise of a
// stump's statistic, not the mechanism's). Nothing is sent.
func userPlan(errOut io.Writer, set map[string]bool, fromFile bool, cfg *boost.Config, expect int, own *dataset.Dataset) error {
	var fc *boost.Forecast
	if !fromFile && expect > 0 && !(set["owners-per-round"] && set["rounds"] && set["learner"]) {
		p := &plan{total: expect, spec: boost.DataSpec{SamplesPerOwner: 1}}
		if err := searchPlan(set, cfg, boost.Data{User: own}, p, "--expect-owners"); err != nil {
			return err
		}
		fmt.Fprintf(errOut, "plan: %d rounds x %d owners per round of the %d expected, learner %s, eps %g; why: %s\n",
			cfg.Rounds, cfg.OwnersPerRound, expect, cfg.Learner, cfg.Epsilon, strings.Join(p.why, "; "))
		fc = p.fc
	}
	if err := reportForecast(errOut, *cfg, own, 1, fc); err != nil {
		return fmt.Errorf("forecast on --data: %w", err)
	}
	return nil
}
