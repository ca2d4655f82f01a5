package boost

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
)

// Training stops early with one of these (wrapped); the model trained so far
// is still returned.
var (
	ErrOutOfOwners = errors.New("not enough unused owners for another round")
	ErrNoProgress  = errors.New("no learner was accepted in a round")
)

// Stream labels for rng.Derive: the selection stream is public (the
// protocol publishes the selection); the noise streams are per owner. The
// distributed simulation derives the same streams, so runs are comparable.
const (
	StreamSelect uint64 = 1
	StreamNoise  uint64 = 2
	StreamSum    uint64 = 3
)

// SelectOwners picks h distinct indices uniformly from [0, n) with a partial
// Fisher-Yates shuffle on the public stream (seed, round, attempt) and
// returns them sorted. Round is 1-based, attempt 0-based.
func SelectOwners(seed uint64, round, attempt, n, h int) []int {
	r := rng.Derive(seed, StreamSelect, uint64(round), uint64(attempt))
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	h = min(h, n)
	for i := 0; i < h; i++ {
		j := i + r.IntN(n-i)
		idx[i], idx[j] = idx[j], idx[i]
	}
	sel := idx[:h]
	sortInts(sel)
	return sel
}

func sortInts(v []int) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

// NoiseStream is the deterministic noise source of owner index i in
// (round, attempt) used by reproducible runs; production owners use rng.Secure.
func NoiseStream(seed uint64, round, attempt, owner int) *rand.Rand {
	return rng.Derive(seed, StreamNoise, uint64(round), uint64(attempt), uint64(owner))
}

// Data is a training run's data: the owners' shards, the data user's own
// labelled data (thresholds, validation alpha) and a test set.
type Data struct {
	Owners []*dataset.Dataset
	User   *dataset.Dataset
	Test   *dataset.Dataset // may be nil
}

// RoundInfo reports one attempt of one round.
type RoundInfo struct {
	Round   int     `json:"round"`
	Attempt int     `json:"attempt"`
	Owners  int     `json:"owners"` // shares aggregated
	Err     float64 `json:"err"`
	// ErrExact (reference trainer, alpha mode securesum) is err_m from the
	// same clipped pairs without the dealings' noise: what the noise moved.
	ErrExact float64 `json:"err_exact,omitempty"`
	Alpha    float64 `json:"alpha"`
	// Charged is the epsilon this attempt charged to owners, summed over
	// owners (at most: the data user counts the shares it received and
	// the owners asked for err dealings; silent ones may not have paid).
	Charged      float64       `json:"owners_eps,omitempty"`
	Z            float64       `json:"z"` // Significant's statistic on the user's validation data
	Accepted     bool          `json:"accepted"`
	TestAccuracy float64       `json:"test_accuracy,omitempty"` // of the ensemble so far (accepted rounds)
	Elapsed      time.Duration `json:"elapsed_ns"`
}

// UserState is the data user's side of a run: the spec it announces, its
// validation weights (alpha mode validation), and the test-set votes used
// for progress reports. The protocol's user session reuses it.
type UserState struct {
	Cfg   Config
	Spec  Spec
	User  *dataset.Dataset
	Test  *dataset.Dataset
	Model *Model

	userW     []float64
	testVotes [][]float64
	// rowStats caches ForecastRound1's one-row owner statistics (they
	// depend on the spec and the row only).
	rowStats map[int][]float64
}

// NewUserState computes the public thresholds from the user's data and
// prepares the model.
func NewUserState(cfg Config, user, test *dataset.Dataset) (*UserState, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if user == nil || user.Len() == 0 {
		return nil, fmt.Errorf("the data user needs its own labelled data (thresholds, validation)")
	}
	var eta []Split
	if cfg.Learner == Stump {
		var err error
		if eta, err = Thresholds(cfg.Thresholds, cfg.SplitsPerFeature, user); err != nil {
			return nil, err
		}
		if cfg.MaxSplits > 0 {
			eta = TopSplits(eta, cfg.MaxSplits, user)
		}
	}
	spec, err := cfg.Spec(user.NumClasses(), user.Dim(), eta)
	if err != nil {
		return nil, err
	}
	spec.SetColumns(user.Schema)
	u := &UserState{Cfg: cfg, Spec: spec, User: user, Test: test,
		Model: NewModel(cfg, user, eta)}
	u.userW = make([]float64, user.Len())
	for i := range u.userW {
		u.userW[i] = 1 / float64(user.Len())
	}
	if test != nil {
		u.testVotes = make([][]float64, test.Len())
		for i := range u.testVotes {
			u.testVotes[i] = make([]float64, spec.Classes)
		}
	}
	return u, nil
}

// ValidationError is err_m of b on the user's weighted validation data.
func (u *UserState) ValidationError(b *Base) float64 {
	werr, wsum := 0.0, 0.0
	for i, x := range u.User.X {
		if b.Predict(x) != u.User.Y[i] {
			werr += u.userW[i]
		}
		wsum += u.userW[i]
	}
	return werr / wsum
}

// Significant applies the significance test (the package function
// Significant) to b on the user's validation data and current validation
// weights at level Cfg.Significance. With the test off (level 0) it passes
// every learner; z is still computed.
func (u *UserState) Significant(b *Base) (z float64, ok bool) {
	level := u.Cfg.Significance
	if level == 0 {
		z, _ = Significant(b, u.User.X, u.User.Y, u.userW, u.Spec.Classes, 0.05)
		return z, true
	}
	return Significant(b, u.User.X, u.User.Y, u.userW, u.Spec.Classes, level)
}

// ValidationWeights returns a copy of the user's current validation weights.
func (u *UserState) ValidationWeights() []float64 { return append([]float64(nil), u.userW...) }

// updateClassWeight sets Spec.ClassWeight (ncc) from the validation weights:
// class k's average weight over the average weight of all samples.
func (u *UserState) updateClassWeight() {
	if u.Spec.Learner != NCC {
		return
	}
	K := u.Spec.Classes
	wk := make([]float64, K)
	nk := make([]float64, K)
	tot := 0.0
	for i, y := range u.User.Y {
		wk[y] += u.userW[i]
		nk[y]++
		tot += u.userW[i]
	}
	f := make([]float64, K)
	n := float64(len(u.User.Y))
	for k := range f {
		f[k] = 1
		if nk[k] > 0 && tot > 0 {
			f[k] = (wk[k] / tot) / (nk[k] / n)
		}
	}
	u.Spec.ClassWeight = f
}

// Accept appends (alpha, b) to the model, applies the SAMME update to the
// user's validation weights, and returns the ensemble's test accuracy so far
// (0 without a test set).
func (u *UserState) Accept(b *Base, err, alpha float64) float64 {
	u.Model.Rounds = append(u.Model.Rounds, ModelRound{Alpha: alpha, Err: err, Base: *b})
	s := 0.0
	for i, x := range u.User.X {
		if b.Predict(x) != u.User.Y[i] {
			u.userW[i] *= math.Exp(alpha)
		}
		s += u.userW[i]
	}
	for i := range u.userW {
		u.userW[i] /= s
	}
	u.updateClassWeight()
	if u.Test == nil {
		return 0
	}
	ok := 0
	for i, x := range u.Test.X {
		u.testVotes[i][b.Predict(x)] += alpha
		if argmax(u.testVotes[i]) == u.Test.Y[i] {
			ok++
		}
	}
	return float64(ok) / float64(u.Test.Len())
}

// Train runs the reference (centralized, one-process) privacy-preserving
// boosting: per round H unused owners release perturbed shares, the user
// aggregates T_m, err_m comes from all owners' weighted errors (securesum)
// or the user's validation data, alpha_m <= 0 or a learner that fails the
// significance test (Cfg.Significance) retries with fresh owners, and
// every owner updates and renormalizes its weights. onRound, if not nil, sees
// every attempt.
func Train(cfg Config, data Data, onRound func(RoundInfo)) (*Model, error) {
	u, err := NewUserState(cfg, data.User, data.Test)
	if err != nil {
		return nil, err
	}
	if len(data.Owners) == 0 {
		return nil, fmt.Errorf("train: no owners")
	}
	owners := make([]*Owner, len(data.Owners))
	for i, d := range data.Owners {
		if owners[i], err = NewOwner(d); err != nil {
			return nil, err
		}
	}
	spec := &u.Spec
	if !cfg.SkipPlanCheck {
		if err := cfg.CheckPlan(spec, len(owners)); err != nil {
			return u.Model, err
		}
	}
	used := make([]bool, len(owners))
	start := time.Now()
	for m := 1; m <= cfg.Rounds; m++ {
		accepted := false
		for a := 0; a < cfg.MaxAttempts && !accepted; a++ {
			info, err := trainAttempt(u, owners, used, m, a)
			if err != nil {
				return u.Model, err
			}
			accepted = info.Accepted
			info.Elapsed = time.Since(start)
			if onRound != nil {
				onRound(info)
			}
		}
		if !accepted {
			return u.Model, fmt.Errorf("round %d: %d attempts: %w", m, cfg.MaxAttempts, ErrNoProgress)
		}
	}
	return u.Model, nil
}

// trainAttempt runs attempt a of round m: it selects H unused owners
// (marking them used before their shares are built, as the ledger does),
// builds the learner, measures err_m, and on acceptance updates and
// renormalizes every owner's weights.
func trainAttempt(u *UserState, owners []*Owner, used []bool, m, a int) (RoundInfo, error) {
	cfg, spec := u.Cfg, &u.Spec
	var avail []int
	for i, usedI := range used {
		if !usedI {
			avail = append(avail, i)
		}
	}
	if len(avail) < cfg.OwnersPerRound {
		return RoundInfo{}, fmt.Errorf("round %d attempt %d: %d unused owners, need %d: %w",
			m, a, len(avail), cfg.OwnersPerRound, ErrOutOfOwners)
	}
	// H, plus a distributed round's spares (DealerPlan), as the protocol's
	// data user selects.
	sel := SelectOwners(cfg.Seed, m, a, len(avail), spec.Selected(len(avail)))
	for _, s := range sel {
		used[avail[s]] = true // spent before the share is built, as the ledger does
	}
	base, err := roundLearner(spec, owners, avail, sel, cfg.Seed, m, a)
	if err != nil {
		return RoundInfo{}, fmt.Errorf("round %d: %w", m, err)
	}
	errM, errExact, err := trainErr(u, owners, base, m, a)
	if err != nil {
		return RoundInfo{}, err
	}
	alpha := Alpha(errM, spec.Classes)
	z, sig := u.Significant(base)
	info := RoundInfo{Round: m, Attempt: a, Owners: len(sel), Err: errM, ErrExact: errExact, Alpha: alpha, Z: z,
		Charged: AttemptCharge(cfg, len(sel), len(owners))}
	if !(alpha > 0 && sig) {
		return info, nil
	}
	// Renormalize by the public growth factor (errsum.go):
	// no owner's weight total is revealed.
	g := GrowthFactor(alpha, spec.Classes)
	for _, o := range owners {
		if _, err := o.Update(base, alpha); err != nil {
			return info, err
		}
		if err := o.RenormalizeBy(g); err != nil {
			return info, fmt.Errorf("round %d: %w", m, err)
		}
	}
	info.Accepted = true
	info.TestAccuracy = u.Accept(base, errM, alpha)
	return info, nil
}

// trainErr is err_m of the learner of attempt a of round m: from the
// user's validation data, or (securesum) from every owner's noisy, clipped
// pair (ErrRound, as the secure sum does), with the exact value beside it.
func trainErr(u *UserState, owners []*Owner, base *Base, m, a int) (errM, errExact float64, err error) {
	cfg, spec := u.Cfg, &u.Spec
	// Every owner evaluates T_m.
	pairs := make([][]float64, len(owners))
	for i, o := range owners {
		pairs[i] = spec.ErrPair(o.Evaluate(base))
	}
	if cfg.Alpha == AlphaValidation {
		return u.ValidationError(base), 0, nil
	}
	total, err := ErrRound(spec, pairs, func(i int) *rand.Rand { return ErrNoiseStream(cfg.Seed, m, a, i) })
	if err != nil {
		return 0, 0, fmt.Errorf("round %d: err sum: %w", m, err)
	}
	var w0, w1 float64
	for _, p := range pairs {
		w0, w1 = w0+p[0], w1+p[1]
	}
	return ErrFromTotal(total), ErrFromTotal([]float64{w0, w1}), nil
}

// roundLearner builds the learner of (round m, attempt a) from the selected
// owners avail[sel[k]]: their perturbed shares aggregated (ldp), or the
// noisy total of their statistics (distributed; DistributedRound).
func roundLearner(spec *Spec, owners []*Owner, avail, sel []int, seed uint64, m, a int) (*Base, error) {
	if spec.Distributed() {
		np, noisy, err := spec.DistributedNoise()
		if err != nil {
			return nil, err
		}
		group := make([]*Owner, len(sel))
		for k, s := range sel {
			group[k] = owners[avail[s]]
		}
		total, err := DistributedRound(spec, group, func(k int) func([]field.Elem) error {
			if !noisy {
				return nil
			}
			return np.Noise(NoiseStream(seed, m, a, avail[sel[k]]))
		})
		if err != nil {
			return nil, err
		}
		return AggregateSum(spec, total, len(sel))
	}
	shares := make([]Share, len(sel))
	for k, s := range sel {
		oi := avail[s]
		var err error
		if shares[k], err = owners[oi].LocalShare(spec, NoiseStream(seed, m, a, oi)); err != nil {
			return nil, err
		}
	}
	return Aggregate(spec, shares)
}
