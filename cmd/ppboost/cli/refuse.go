package cli

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strings"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/dataset"
)

// Refuse before spending (issue 32 item 2). A plan whose own forecast says
// it will probably not beat the majority class used to run anyway and
// spend every owner's budget on dropped attempts. Every trainer now checks
// its plan before anything is spent, with a check that spends nothing (the
// data user's own rows, or public sizes and simulated data; never a
// ledger), and refuses it with the forecast figure, the majority baseline
// and what would work; --force runs it anyway. A refusal is a usage error
// (exit 2), like the other plans refused before anyone spends
// (boost.ErrNoRetryRoom): the flags chose a plan that cannot work.

// errHopeless is wrapped by every refusal of a plan its forecast calls
// hopeless.
var errHopeless = errors.New("refused before anyone spent (0 eps spent)")

// forceHelp is --force's help on every trainer.
const forceHelp = "run a plan even when the check made before anything is spent says it will probably not beat the majority class (without it such a plan is refused, 0 eps spent)"

// registerForce adds --force to fs.
func registerForce(fs *flag.FlagSet, force *bool) {
	fs.BoolVar(force, "force", false, forceHelp)
}

// hopeless says whether a forecast predicts that a plan will probably not
// beat the majority class: fewer than half of its simulated first-round
// learners beat the majority class, or their mean error is no better than
// it (boost.Forecast.Likely, the rule of the warning it replaces), or every
// one of a round's attempts probably drops ((1 - accepted)^attempts >= 1/2:
// the first round then probably ends the session with no learner, each
// dropped attempt having spent its owners' budget). A low acceptance rate
// alone is not hopeless: a plan with room for its attempts (README's Adult
// plans accept 29-34 % and reach 84 %) keeps the rounds that pass.
func hopeless(f boost.Forecast, attempts int) bool {
	return !f.Likely() || math.Pow(1-f.Accepted, float64(max(1, attempts))) >= 0.5
}

// hopelessError is the refusal: what the check is based on (basis), what
// it found (figure), the majority baseline, what would work, and --force.
func hopelessError(basis, figure string, majority float64, fixes []string, tried string) error {
	fix := "more rows (more owners per round), a larger --eps, another --learner, or fewer --rounds; " + tried
	if len(fixes) > 0 {
		fix = strings.Join(fixes, "; or ")
	}
	return usageError{fmt.Errorf("%w: %s, this plan will probably not beat the majority class (error %.3f): %s. What would work: %s. Use --force to run anyway",
		errHopeless, basis, majority, figure, fix)}
}

// forecastFigure is the forecast as a refusal states it.
func forecastFigure(f boost.Forecast, attempts int) string {
	return fmt.Sprintf("%.0f%% of %d simulated first-round learners of %d owners accepted (all %d attempts of a round drop with probability %.2f) and %.0f%% beat the majority class, with a mean validation error of %.3f",
		100*f.Accepted, f.Draws, f.Owners, attempts, math.Pow(1-f.Accepted, float64(max(1, attempts))), 100*f.Beat, f.MeanErr)
}

// refuseHopelessPlan checks a Wang & Chang plan (sim, simulate, user,
// testnet) with the data user's forecast on its own rows (user; per rows
// per owner) and refuses it, naming what would work, when the forecast calls
// it hopeless. owners is the owners the plan can draw from (0: unknown).
// A plan without noise is not forecast (as reportForecast); force skips
// the check. Nothing is sent and no ledger is charged.
func refuseHopelessPlan(force bool, cfg boost.Config, user *dataset.Dataset, per, owners int) error {
	if force || cfg.Mechanism == "none" || user == nil {
		return nil
	}
	f, err := checkForecast(cfg, user, per)
	if err != nil {
		return fmt.Errorf("forecast: %w", err)
	}
	if !hopeless(f, cfg.MaxAttempts) {
		return nil
	}
	return hopelessError(fmt.Sprintf("the forecast (the data user's own %d rows, nobody spends) says that at eps %g with learner %s", user.Len(), cfg.Epsilon, cfg.Learner),
		forecastFigure(f, cfg.MaxAttempts), f.Majority, planFixes(cfg, user, per, owners),
		fmt.Sprintf("no --eps up to %g, no other learner and no owners per round up to %d makes this forecast likely: the data has too little signal for this privacy at this size (a central-DP trainer, ppboost dpboost, needs far fewer rows)",
			8*cfg.Epsilon, 16*cfg.OwnersPerRound))
}

// checkRowDraws bounds the check's cost: pseudo-owners of many rows each
// are built row by row (owners per round x rows per owner x draws), so with
// many rows per owner the check draws fewer first rounds, at least
// minCheckDraws (the standard error hopeless counts against the plan grows
// to match). Owners of one row, the plans sized from the data, take all
// boost.ForecastDraws at little cost.
const (
	checkRowDraws = 400_000
	minCheckDraws = 20
)

// checkForecast is the data user's forecast of cfg for the check.
func checkForecast(cfg boost.Config, user *dataset.Dataset, per int) (boost.Forecast, error) {
	u, err := boost.NewUserState(cfg, user, nil)
	if err != nil {
		return boost.Forecast{}, err
	}
	draws := boost.ForecastDraws
	if per > 1 || cfg.Learner == boost.NCC {
		draws = min(draws, max(minCheckDraws, checkRowDraws/max(1, cfg.OwnersPerRound*per)))
	}
	return u.ForecastRound1(cfg.OwnersPerRound, per, draws, cfg.Seed)
}

// planFixes are the changes that the same forecast says would work: a
// larger --eps, another learner, more owners per round (within the owners,
// with fewer rounds), computed on the user's rows only.
func planFixes(cfg boost.Config, user *dataset.Dataset, per, owners int) []string {
	var fixes []string
	works := func(c boost.Config) (boost.Forecast, bool) {
		if err := c.Validate(); err != nil {
			return boost.Forecast{}, false
		}
		f, err := checkForecast(c, user, per)
		return f, err == nil && !hopeless(f, c.MaxAttempts)
	}
	for _, k := range []float64{2, 4, 8} {
		c := cfg
		c.Epsilon = cfg.Epsilon * k
		if f, ok := works(c); ok {
			fixes = append(fixes, fmt.Sprintf("--eps %g (forecast: %.0f%% accepted, %.0f%% beat it)", c.Epsilon, 100*f.Accepted, 100*f.Beat))
			break
		}
	}
	for _, l := range []boost.Learner{boost.Stump, boost.NCC, boost.LogReg} {
		if l == cfg.Learner || (l == boost.NCC && cfg.Privacy == boost.PrivacyDistributed) {
			continue
		}
		c := cfg
		c.Learner, c.MaxSplits = l, 0
		if f, ok := works(c); ok {
			fixes = append(fixes, fmt.Sprintf("--learner %s (forecast: %.0f%% accepted, %.0f%% beat it)", l, 100*f.Accepted, 100*f.Beat))
		}
	}
	for _, k := range []int{2, 4, 8, 16} {
		c := cfg
		c.OwnersPerRound = cfg.OwnersPerRound * k
		f, ok := works(c)
		if !ok {
			continue
		}
		m := 0
		for owners > 0 && c.OwnersPerRound*(m+1+boost.RetryRoomFor(m+1)) <= owners && m < cfg.Rounds {
			m++
		}
		switch {
		case m > 0:
			fixes = append(fixes, fmt.Sprintf("--owners-per-round %d --rounds %d (forecast: %.0f%% accepted, %.0f%% beat it)", c.OwnersPerRound, m, 100*f.Accepted, 100*f.Beat))
		default:
			fixes = append(fixes, fmt.Sprintf("more rows: %d owners per round of %d row(s) (at least %d owners for one round and its retry; forecast: %.0f%% accepted, %.0f%% beat it)",
				c.OwnersPerRound, per, 2*c.OwnersPerRound, 100*f.Accepted, 100*f.Beat))
		}
		break
	}
	return fixes
}

// refuseHopeless is sim's and simulate's check, after the data is cut and
// the plan printed, before any owner is selected.
func (t *trainFlags) refuseHopeless(cfg boost.Config, data boost.Data) error {
	return refuseHopelessPlan(t.force, cfg, data.User, ownerRows(data), len(data.Owners))
}

// ownerRows is the rows of the first owner (every owner holds as many).
func ownerRows(data boost.Data) int {
	if len(data.Owners) == 0 {
		return 1
	}
	return max(1, data.Owners[0].Len())
}
