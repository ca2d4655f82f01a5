package boost

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ppboost/ppboost/crypto/ldp"
	"github.com/ppboost/ppboost/crypto/rng"
)

// Forecast is the data user's estimate, made before any owner spends, of
// what the first round of a plan buys at the announced epsilon: how often
// a first-round learner of H owners passes the round's acceptance rule
// (alpha > 0 and the significance test on the validation data), and its
// validation error next to the majority class's.
//
// It is computed from the user's own labelled data only (no owner release):
// each draw makes H pseudo-owners of perOwner rows resampled from the
// user's data, releases their statistics through the session's own
// mechanism (roundLearner: the same shares, the same noise), aggregates
// them as the user does, and scores the learner on the user's data. What
// makes a round fail is visible in the draws: the noise of one owner's
// release has the mechanism's variance (NoiseSD), the aggregate averages H
// of them (sd / sqrt(H) for LDP; a fixed total over a total that grows as
// H in the distributed setting), and the signal is the class difference
// the data shows. The pseudo-owners come from the rows the learner is
// scored on, so the estimate is slightly optimistic for the exact
// statistic; the noise, which decides most plans, is exact.
type Forecast struct {
	Owners   int     // H, owners per round
	Draws    int     // simulated first rounds
	Accepted float64 // fraction of draws whose learner would be accepted
	Beat     float64 // fraction of draws whose learner beats the majority class on the validation data
	MeanErr  float64 // mean validation error of the draws' learners
	Majority float64 // validation error of the majority class of the user's data
	// NoiseSD is the standard deviation of one coordinate of the averaged
	// release of H owners (0 without noise): sqrt(Var/H) for LDP, with the
	// mechanism's variance at the mean statistic, and sqrt(Var_total)/H
	// for the distributed share sum.
	NoiseSD float64
	// Signal is the largest magnitude among the values of the mean exact
	// statistic of one-row owners (stumps: the class differences of the
	// splits' branches; logreg: the parameters), and Signal/NoiseSD the
	// signal-to-noise ratio of the averaged release: a split's branch label
	// comes out right with probability Phi(Signal/NoiseSD) at best, so
	// below about 1 the noise decides (distributed: the mean of the
	// clipped cell statistics). 0 when not computed (ncc, more rows per
	// owner).
	Signal float64
	// Dim is the length of one owner's release.
	Dim int
}

// SNR is Signal/NoiseSD (+Inf without noise, 0 when Signal is unknown).
func (f Forecast) SNR() float64 {
	if f.Signal == 0 {
		return 0
	}
	if f.NoiseSD == 0 {
		return math.Inf(1)
	}
	return f.Signal / f.NoiseSD
}

// ForecastDraws is the number of simulated first rounds of a Forecast: the
// acceptance fraction is then known to +-0.1 (two standard errors of a
// proportion, 2 sqrt(0.25/100)).
const ForecastDraws = 100

// MinForecastAccept is the fraction of first-round learners that must beat
// the majority class for a plan to be called likely to: below it, most
// rounds add a learner no better than always answering the majority class
// (the significance test accepts some of them: it tests against chance).
const MinForecastAccept = 0.5

// Likely says whether the plan is likely to beat the majority class.
func (f Forecast) Likely() bool { return f.Beat >= MinForecastAccept && f.MeanErr < f.Majority }

// String is a one-line summary.
func (f Forecast) String() string {
	noise := "no noise"
	if f.NoiseSD > 0 {
		noise = fmt.Sprintf("noise sd %.3g per value of the %d-value average", f.NoiseSD, f.Dim)
		if f.Signal > 0 {
			noise += fmt.Sprintf(" against a largest mean value of %.3g (signal/noise %.2g)", f.Signal, f.SNR())
		}
	}
	return fmt.Sprintf("%d owners per round: %.0f%% of %d simulated first-round learners beat the majority class (%.0f%% accepted), validation error %.3f (majority class %.3f), %s",
		f.Owners, 100*f.Beat, f.Draws, 100*f.Accepted, f.MeanErr, f.Majority, noise)
}

// ForecastRound1 simulates the first round of a plan of h owners per
// round, each holding perOwner rows, on the user's own data (see
// Forecast); seed makes it reproducible (the draws use streams of their
// own, never the session's).
func (u *UserState) ForecastRound1(h, perOwner, draws int, seed uint64) (Forecast, error) {
	if h < 1 || perOwner < 1 || draws < 1 {
		return Forecast{}, fmt.Errorf("forecast: want h, perOwner and draws >= 1, got %d, %d, %d", h, perOwner, draws)
	}
	user := u.User
	n := user.Len()
	f := Forecast{Owners: h, Draws: draws, Majority: majorityError(user.Y, user.NumClasses())}
	w := make([]float64, n)
	for i := range w {
		w[i] = 1 / float64(n)
	}
	fc, err := u.newForecaster(h, perOwner, seed)
	if err != nil {
		return f, err
	}
	spec := &fc.spec
	var errSum float64
	var accepted, beat int
	for d := 0; d < draws; d++ {
		base, err := fc.draw(d)
		if err != nil {
			return f, fmt.Errorf("forecast: %w", err)
		}
		e := weightedError(base, user.X, user.Y, w)
		errSum += e
		if e < f.Majority {
			beat++
		}
		_, sig := Significant(base, user.X, user.Y, w, spec.Classes, u.Cfg.Significance)
		if Alpha(e, spec.Classes) > 0 && (u.Cfg.Significance == 0 || sig) {
			accepted++
		}
	}
	f.Accepted = float64(accepted) / float64(draws)
	f.Beat = float64(beat) / float64(draws)
	f.MeanErr = errSum / float64(draws)
	f.Dim = spec.ShareDim(perOwner)
	if spec.Distributed() {
		f.Dim = spec.DistributedLen()
	}
	o, err := NewOwner(user.Subset([]int{0}))
	if err != nil {
		return f, err
	}
	f.NoiseSD = u.noiseSD(h, o)
	if fc.cached {
		if f.Signal, err = fc.signal(); err != nil {
			return f, err
		}
	}
	return f, nil
}

// forecaster draws the simulated first rounds of one ForecastRound1.
type forecaster struct {
	u           *UserState
	spec        Spec
	h, perOwner int
	n           int
	seed        uint64
	r           *rand.Rand // picks the pseudo-owners' rows
	// cached: an owner of one row releases that row's statistic: with
	// perOwner 1 and a learner whose statistic is a function of the
	// owner's data (stump, logreg; LDP or distributed), it is computed
	// once per row (UserState.rowStats) and perturbed per draw.
	cached bool
	// distSD is the distributed share sum's noise, a discrete Laplace
	// total over the h dealers, drawn as a normal of the same variance
	// (NoiseVariance); 0 without noise or with LDP.
	distSD float64
	owners []*Owner // the pseudo-owners of a draw (not cached)
	idx    []int
}

func (u *UserState) newForecaster(h, perOwner int, seed uint64) (*forecaster, error) {
	fc := &forecaster{u: u, spec: u.Spec, h: h, perOwner: perOwner, n: u.User.Len(), seed: seed,
		r: rng.Derive(seed, streamForecast), owners: make([]*Owner, h), idx: make([]int, h)}
	for i := range fc.idx {
		fc.idx[i] = i
	}
	if u.rowStats == nil {
		u.rowStats = map[int][]float64{}
	}
	fc.cached = perOwner == 1 && fc.spec.Learner != NCC
	if fc.spec.Distributed() {
		_, noisy, err := fc.spec.DistributedNoise()
		if err != nil {
			return nil, err
		}
		if noisy {
			fc.distSD = math.Sqrt(fc.spec.NoiseVariance(h))
		}
	}
	return fc, nil
}

// rowStat is the unperturbed release of an owner holding only row.
func (fc *forecaster) rowStat(row int) ([]float64, error) {
	cache := fc.u.rowStats
	if v, ok := cache[row]; ok {
		return v, nil
	}
	o, err := NewOwner(fc.u.User.Subset([]int{row}))
	if err != nil {
		return nil, err
	}
	var v []float64
	if fc.spec.Distributed() {
		v, err = o.DistributedShare(&fc.spec)
	} else {
		v, err = o.statistic(&fc.spec)
	}
	if err != nil {
		return nil, err
	}
	cache[row] = v
	return v, nil
}

// draw simulates the learner of first round d.
func (fc *forecaster) draw(d int) (*Base, error) {
	switch {
	case fc.cached && fc.spec.Distributed():
		return fc.drawDistributed(d)
	case fc.cached:
		return fc.drawLDP(d)
	}
	return fc.drawOwners(d)
}

// drawDistributed sums h rows' statistics and the total's noise.
func (fc *forecaster) drawDistributed(d int) (*Base, error) {
	total := make([]float64, fc.spec.DistributedLen())
	for range fc.h {
		v, err := fc.rowStat(fc.r.IntN(fc.n))
		if err != nil {
			return nil, err
		}
		for j, x := range v {
			total[j] += x
		}
	}
	noise := NoiseStream(fc.seed^streamForecast, 1, d, 0)
	for j := range total {
		total[j] += fc.distSD * noise.NormFloat64()
	}
	return AggregateSum(&fc.spec, total, fc.h)
}

// drawLDP perturbs h rows' statistics as h owners would.
func (fc *forecaster) drawLDP(d int) (*Base, error) {
	shares := make([]Share, fc.h)
	for i := range shares {
		v, err := fc.rowStat(fc.r.IntN(fc.n))
		if err != nil {
			return nil, err
		}
		if shares[i], err = perturbOnce(&fc.spec, append([]float64(nil), v...), NoiseStream(fc.seed^streamForecast, 1, d, i)); err != nil {
			return nil, err
		}
	}
	return Aggregate(&fc.spec, shares)
}

// drawOwners makes h pseudo-owners of perOwner resampled rows and runs the
// session's round learner on them.
func (fc *forecaster) drawOwners(d int) (*Base, error) {
	var err error
	for i := range fc.owners {
		rows := make([]int, fc.perOwner)
		for k := range rows {
			rows[k] = fc.r.IntN(fc.n)
		}
		if fc.owners[i], err = NewOwner(fc.u.User.Subset(rows)); err != nil {
			return nil, err
		}
	}
	return roundLearner(&fc.spec, fc.owners, fc.idx, fc.idx, fc.seed^streamForecast, 1, d)
}

// signal is Forecast.Signal: the largest magnitude of the mean statistic
// over every row (clipped to [-1, 1]; the draws cached most).
func (fc *forecaster) signal() (float64, error) {
	var mean []float64
	for row := range fc.n {
		v, err := fc.rowStat(row)
		if err != nil {
			return 0, err
		}
		if mean == nil {
			mean = make([]float64, len(v))
		}
		for j, x := range v {
			mean[j] += math.Max(-1, math.Min(1, x)) / float64(fc.n)
		}
	}
	sig := 0.0
	for _, m := range mean {
		sig = math.Max(sig, math.Abs(m))
	}
	return sig, nil
}

// statistic is the owner's unperturbed LDP release of a stump or logreg
// round (LocalShare before perturbOnce).
func (o *Owner) statistic(s *Spec) ([]float64, error) {
	if s.Learner == Stump {
		return stumpStatistic(s, o.Data.X, o.Data.Y, o.W), nil
	}
	return fitLogReg(s, o.Data.X, o.Data.Y, o.W)
}

// streamForecast labels the forecast's random streams ("FC").
const streamForecast = 0x4643

// noiseSD is Forecast.NoiseSD: the mechanism's variance at the statistic
// of one owner (LDP), or the distributed total's, over h owners.
func (u *UserState) noiseSD(h int, o *Owner) float64 {
	s := &u.Spec
	if s.Distributed() {
		return math.Sqrt(s.NoiseVariance(h)) / float64(h)
	}
	if s.Mechanism == ldp.None {
		return 0
	}
	var v []float64
	switch s.Learner {
	case Stump:
		v = stumpStatistic(s, o.Data.X, o.Data.Y, o.W)
	case LogReg:
		var err error
		if v, err = fitLogReg(s, o.Data.X, o.Data.Y, o.W); err != nil {
			return math.NaN()
		}
	default: // ncc: one vector per sample, the first one stands for all
		v = append([]float64(nil), o.Data.X[0]...)
	}
	m, err := ldp.New(s.Mechanism, s.Epsilon, len(v), ldp.Clip)
	if err != nil {
		return math.NaN()
	}
	for k := range v {
		v[k] = math.Max(-1, math.Min(1, v[k]))
	}
	var sum float64
	for j := range v {
		sum += m.Variance(v, j)
	}
	return math.Sqrt(sum / float64(len(v)) / float64(h))
}

// majorityError is the error of always predicting the most frequent class.
func majorityError(y []int, classes int) float64 {
	counts := make([]int, max(classes, 1))
	for _, c := range y {
		counts[c]++
	}
	best := 0
	for _, c := range counts {
		best = max(best, c)
	}
	return 1 - float64(best)/float64(max(1, len(y)))
}

func weightedError(b *Base, X [][]float64, y []int, w []float64) float64 {
	var e, t float64
	for i, x := range X {
		t += w[i]
		if b.Predict(x) != y[i] {
			e += w[i]
		}
	}
	if t == 0 {
		return 0
	}
	return e / t
}
