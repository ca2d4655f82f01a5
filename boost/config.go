package boost

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/ldp"
)

// Learner names a base-learner family.
type Learner string

const (
	Stump  Learner = "stump"
	NCC    Learner = "ncc"
	LogReg Learner = "logreg"
)

// ParseLearner accepts "stump", "ncc" or "logreg".
func ParseLearner(s string) (Learner, error) {
	switch l := Learner(strings.ToLower(s)); l {
	case Stump, NCC, LogReg:
		return l, nil
	}
	return "", fmt.Errorf("unknown learner %q (want stump, ncc or logreg)", s)
}

// AlphaMode says where err_m comes from.
type AlphaMode string

const (
	// AlphaSecureSum: err_m over all owners' weighted errors (first paper);
	// distributed runs obtain it by secure sum.
	AlphaSecureSum AlphaMode = "securesum"
	// AlphaValidation: err_m over the data user's own validation set (second paper).
	AlphaValidation AlphaMode = "validation"
)

// ParseAlphaMode accepts "securesum" or "validation".
func ParseAlphaMode(s string) (AlphaMode, error) {
	switch a := AlphaMode(strings.ToLower(s)); a {
	case AlphaSecureSum, AlphaValidation:
		return a, nil
	}
	return "", fmt.Errorf("unknown alpha mode %q (want securesum or validation)", s)
}

// ThresholdMethod says how the data user picks the public stump thresholds
// from its own labelled data.
type ThresholdMethod string

const (
	// ThresholdBestSplit picks, per feature, the candidate threshold whose
	// stump best classifies the user's own data.
	ThresholdBestSplit ThresholdMethod = "best"
	// ThresholdMedian uses the per-feature median of the user's data.
	ThresholdMedian ThresholdMethod = "median"
	// ThresholdBoosted runs 10 rounds of boosting with free-threshold
	// stumps on the user's own data and publishes every (feature, threshold)
	// it used, plus the best split of each feature it never used.
	ThresholdBoosted ThresholdMethod = "boosted"
)

// ParseThresholdMethod accepts "best" or "median".
func ParseThresholdMethod(s string) (ThresholdMethod, error) {
	switch t := ThresholdMethod(strings.ToLower(s)); t {
	case ThresholdBestSplit, ThresholdMedian, ThresholdBoosted:
		return t, nil
	}
	return "", fmt.Errorf("unknown threshold method %q (want best, median or boosted)", s)
}

// Config is a training session's configuration: everything the data user
// announces. It is stored in model files.
type Config struct {
	Learner        Learner         `json:"learner"`
	Mechanism      string          `json:"mechanism"` // ldp kind name: pm, hm, duchi, laplace, none
	Epsilon        float64         `json:"epsilon"`
	Rounds         int             `json:"rounds"`           // M
	OwnersPerRound int             `json:"owners_per_round"` // H
	Alpha          AlphaMode       `json:"alpha"`
	Thresholds     ThresholdMethod `json:"thresholds"`
	// SplitsPerFeature is how many public thresholds each feature gets:
	// the chosen one plus evenly spaced quantiles of the user's data.
	SplitsPerFeature int `json:"splits_per_feature"`
	// MaxSplits, if positive, keeps only the MaxSplits candidate splits that
	// classify the user's own data best (TopSplits): every owner's stump
	// share has one value per split, and the noise of PM and Duchi grows
	// with that dimension. 0 keeps them all.
	MaxSplits int `json:"max_splits,omitempty"`
	// MaxAttempts bounds the retries of one round (a learner with
	// alpha <= 0, or not significantly better than chance).
	MaxAttempts int `json:"max_attempts"`
	// Significance is the level of the one-sided test (Significant) a
	// learner must pass on the data user's validation data to be accepted;
	// 0 turns the test off (the papers' rule: alpha > 0 only).
	Significance float64 `json:"significance,omitempty"`
	// LogRegIterations and LogRegL2 tune the owners' local logistic regression.
	LogRegIterations int     `json:"logreg_iterations"`
	LogRegL2         float64 `json:"logreg_l2"`
	// LogRegNormalize has each owner divide its parameter vector by its
	// largest absolute value before the release: the decision sign(theta.x)
	// keeps its direction, and the values fill the mechanism's range [-1, 1]
	// instead of the few that reach the clip, so the noise is relatively
	// smaller. The user averages directions.
	LogRegNormalize bool `json:"logreg_normalize,omitempty"`
	// Privacy is ldp (the papers: every owner perturbs its own share) or
	// distributed (the selected owners secure-sum their clipped statistics
	// with shares of discrete Laplace noise; stumps and logreg only). With
	// distributed, Mechanism only says whether there is noise: none turns it
	// off (tests), any other kind turns it on.
	Privacy Privacy `json:"privacy,omitempty"`
	// PrivacyClip (distributed stumps) is B: an owner's weight total is
	// scaled down to at most B in its statistic, which bounds what one owner
	// changes (2 B per column).
	PrivacyClip float64 `json:"privacy_clip,omitempty"`
	// DropFraction (distributed) is the fraction of a round's owners that
	// may be silent: the share sum survives max(1, floor(DropFraction H))
	// silent selected owners (none when 0) and is never revealed over fewer
	// than the dealer floor max(min parties, H - that) of them; a round
	// whose floor would exceed H minus the tolerance selects spares
	// (DealerPlan).
	DropFraction float64 `json:"drop_fraction,omitempty"`
	// Colluders is how many dealers of a noisy secure sum (the distributed
	// share sum, the err sum) may share what they see with the data user:
	// noise shares are sized for HonestFor(floor, Colluders) honest dealers.
	// ColludersAll (-1, the default) sizes them for one: every dealing is DP
	// on its own. Owners refuse a session that assumes fewer colluders than
	// they do.
	Colluders int `json:"colluders,omitempty"`
	// ErrEpsilon (alpha mode securesum) is the epsilon of one owner's err
	// dealing, charged to every owner for every dealing; ErrClip is C, the
	// clip of an owner's weight total in its pair (errsum.go).
	ErrEpsilon float64 `json:"err_epsilon,omitempty"`
	ErrClip    float64 `json:"err_clip,omitempty"`
	// SkipPlanCheck runs Train without CheckPlan (experiments that measure
	// what a refused plan would have given; never announced).
	SkipPlanCheck bool   `json:"-"`
	Seed          uint64 `json:"seed"`
}

// RecommendedSignificance is the default level of the significance test;
// the protocol's data user applies the same test (UserState.Significant), so
// distributed runs still equal Train.
const RecommendedSignificance = 0.05

// DefaultConfig is the papers' synthetic setting: stumps, PM, eps = 5,
// 1000 owners per round, 10 rounds, up to 9 retries of a round; err_m from
// the data user's validation data (no owner deals anything for it: the
// err sum charges every roster owner for every attempt, errsum.go).
func DefaultConfig() Config {
	return Config{
		Learner:          Stump,
		Mechanism:        "pm",
		Epsilon:          5,
		Rounds:           10,
		OwnersPerRound:   1000,
		Alpha:            AlphaValidation,
		Thresholds:       ThresholdBoosted,
		SplitsPerFeature: 1,
		MaxAttempts:      10,
		Significance:     RecommendedSignificance,
		LogRegIterations: 8,
		LogRegL2:         1e-2,
		Privacy:          PrivacyLDP,
		PrivacyClip:      DefaultPrivacyClip,
		DropFraction:     DefaultDropFraction,
		Colluders:        ColludersAll,
		ErrEpsilon:       DefaultErrEpsilon,
		ErrClip:          DefaultErrClip,
		Seed:             1,
	}
}

// Validate checks every field and names the bad one.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	c.validateRelease(bad)
	c.validateRounds(bad)
	c.validateStumps(bad)
	c.validateAcceptance(bad)
	c.validateLogReg(bad)
	c.validatePrivacy(bad)
	return errors.Join(errs...)
}

// validateRelease checks the learner, the mechanism and its epsilon.
func (c Config) validateRelease(bad func(string, ...any)) {
	if _, err := ParseLearner(string(c.Learner)); err != nil {
		bad("learner: %w", err)
	}
	kind, err := ldp.ParseKind(c.Mechanism)
	if err != nil {
		bad("mechanism: %w", err)
	}
	if kind != ldp.None && (!(c.Epsilon > 0) || math.IsInf(c.Epsilon, 0)) {
		bad("epsilon: must be positive and finite, got %v", c.Epsilon)
	}
}

// validateRounds checks the plan: rounds, owners per round, alpha mode.
func (c Config) validateRounds(bad func(string, ...any)) {
	if c.Rounds < 1 {
		bad("rounds: must be at least 1, got %d", c.Rounds)
	}
	if c.OwnersPerRound < 1 {
		bad("owners_per_round: must be at least 1, got %d", c.OwnersPerRound)
	}
	if _, err := ParseAlphaMode(string(c.Alpha)); err != nil {
		bad("alpha: %w", err)
	}
}

// validateAcceptance checks how a round's learner is accepted: attempts
// and the significance test.
func (c Config) validateAcceptance(bad func(string, ...any)) {
	if c.MaxAttempts < 1 {
		bad("max_attempts: must be at least 1, got %d", c.MaxAttempts)
	}
	if !(c.Significance >= 0 && c.Significance < 0.5) {
		bad("significance: must be 0 (off) or in (0, 0.5), got %v", c.Significance)
	}
}

// validateStumps checks the stumps' candidate splits.
func (c Config) validateStumps(bad func(string, ...any)) {
	if _, err := ParseThresholdMethod(string(c.Thresholds)); err != nil {
		bad("thresholds: %w", err)
	}
	if c.SplitsPerFeature < 1 || c.SplitsPerFeature > 16 {
		bad("splits_per_feature: must be in [1, 16], got %d", c.SplitsPerFeature)
	}
	if c.MaxSplits < 0 {
		bad("max_splits: must be 0 (all) or positive, got %d", c.MaxSplits)
	}
}

// validateLogReg checks logistic regression's fit.
func (c Config) validateLogReg(bad func(string, ...any)) {
	if c.Learner == LogReg {
		if c.LogRegIterations < 1 {
			bad("logreg_iterations: must be at least 1, got %d", c.LogRegIterations)
		}
		if !(c.LogRegL2 > 0) || math.IsInf(c.LogRegL2, 0) {
			bad("logreg_l2: must be positive and finite, got %v", c.LogRegL2)
		}
	}
}

// validatePrivacy checks the privacy model: distributed noise's clip and
// drop fraction, the colluder bound and the err dealings' epsilon and clip.
func (c Config) validatePrivacy(bad func(string, ...any)) {
	switch p, err := ParsePrivacy(string(c.Privacy)); {
	case err != nil:
		bad("privacy: %w", err)
	case p == PrivacyDistributed:
		if c.Learner == NCC {
			bad("privacy: distributed needs learner stump or logreg (ncc releases per-sample vectors, not a sum)")
		}
		if c.Learner == Stump && (!(c.PrivacyClip > 0) || math.IsInf(c.PrivacyClip, 0)) {
			bad("privacy_clip: must be positive and finite, got %v", c.PrivacyClip)
		}
		if !(c.DropFraction >= 0 && c.DropFraction < 1) {
			bad("drop_fraction: must be in [0, 1), got %v", c.DropFraction)
		}
	}
	if c.Colluders < ColludersAll {
		bad("colluders: must be %d (all) or at least 0, got %d", ColludersAll, c.Colluders)
	}
	if c.Alpha == AlphaSecureSum && c.Mechanism != "none" {
		if !(c.ErrEpsilon > 0) || math.IsInf(c.ErrEpsilon, 0) {
			bad("err_epsilon: must be positive and finite, got %v", c.ErrEpsilon)
		}
		if !(c.ErrClip > 0) || math.IsInf(c.ErrClip, 0) {
			bad("err_clip: must be positive and finite, got %v", c.ErrClip)
		}
	}
}

// Spec is what an owner needs to build its share and evaluate base learners:
// the public part of the session configuration plus the data shape.
type Spec struct {
	Learner          Learner
	Mechanism        ldp.Kind
	Epsilon          float64
	Classes          int     // K
	Features         int     // d
	Splits           []Split // stump: the public candidate splits (feature, threshold)
	LogRegIterations int
	LogRegL2         float64
	LogRegNormalize  bool
	// ClassWeight (ncc, data user only) is each class's average sample
	// weight relative to the average over all samples, as the data user
	// estimates it on its own validation data (UserState.Accept keeps it up
	// to date). Aggregate divides each class's sum by count x ClassWeight.
	// Owners ignore it; nil means 1 for every class.
	ClassWeight []float64
	// Distributed privacy (Privacy distributed; see distributed.go):
	// the clip B, the round size H, the drop fraction and colluders, the
	// derived dealer floor and honest count (WithSum), the sum's scale, and
	// the schema's column of each feature (SetColumns; nil: one column per
	// feature).
	Privacy        Privacy
	Clip           float64
	OwnersPerRound int
	DropFraction   float64
	Colluders      int
	Floor, Honest  int
	// Select is how many owners a distributed round selects (H plus
	// spares, DealerPlan) and Tolerance how many of them may be silent;
	// with LDP Select is H and Tolerance 0.
	Select, Tolerance int
	// The err sum (errsum.go): epsilon and clip of a dealing, and the
	// honest dealers its noise is sized for (WithSum).
	ErrEpsilon, ErrClip float64
	ErrHonest           int
	ScaleBits           uint
	Columns             []int
	Categorical         []bool
}

// Spec derives the owner-side specification.
func (c Config) Spec(classes, features int, splits []Split) (Spec, error) {
	kind, err := ldp.ParseKind(c.Mechanism)
	if err != nil {
		return Spec{}, err
	}
	s := Spec{
		Learner: c.Learner, Mechanism: kind, Epsilon: c.Epsilon,
		Classes: classes, Features: features, Splits: splits,
		LogRegIterations: c.LogRegIterations, LogRegL2: c.LogRegL2, LogRegNormalize: c.LogRegNormalize,
		Clip: c.PrivacyClip, OwnersPerRound: c.OwnersPerRound, DropFraction: c.DropFraction, Colluders: c.Colluders,
		ErrEpsilon: c.ErrEpsilon, ErrClip: c.ErrClip,
	}
	if s.Privacy, err = ParsePrivacy(string(c.Privacy)); err != nil {
		return Spec{}, err
	}
	if err := s.WithSum(distributedMinParties, field.DefaultScaleBits); err != nil {
		return Spec{}, err
	}
	return s, s.Validate()
}

// Validate checks the shape-dependent parts of a Spec.
func (s Spec) Validate() error {
	if s.Classes < 2 {
		return fmt.Errorf("spec: need at least 2 classes, got %d", s.Classes)
	}
	if s.Features < 1 {
		return fmt.Errorf("spec: need at least 1 feature, got %d", s.Features)
	}
	if s.Learner == Stump && (len(s.Splits) == 0 || len(s.Splits) > 16*s.Features) {
		return fmt.Errorf("spec: stump needs between 1 and %d splits, got %d", 16*s.Features, len(s.Splits))
	}
	for i, sp := range s.Splits {
		if sp.Feature < 0 || sp.Feature >= s.Features || math.IsNaN(sp.Threshold) || math.IsInf(sp.Threshold, 0) {
			return fmt.Errorf("spec: split %d (feature %d, threshold %v) is invalid", i, sp.Feature, sp.Threshold)
		}
	}
	return nil
}

// ShareDim is the length of a share's value vector for an owner with n samples.
func (s Spec) ShareDim(n int) int {
	switch s.Learner {
	case Stump:
		if s.Classes == 2 {
			return len(s.Splits) + 1
		}
		return 2 * len(s.Splits) * s.Classes
	case NCC:
		return n * s.Features
	case LogReg:
		if s.Classes == 2 {
			return s.Features + 1
		}
		return s.Classes * (s.Features + 1)
	}
	return 0
}
