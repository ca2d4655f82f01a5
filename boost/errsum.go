package boost

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ppboost/ppboost/crypto/dpnoise"
	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/ldp"
	"github.com/ppboost/ppboost/crypto/rng"
)

// The err_m sum (alpha mode securesum) as a release.
//
// Every owner of the roster deals its pair (sum_i w_i I(miss_i), sum_i w_i)
// into one secure sum per round attempt, and the total reaches the data user.
// A data user chooses who is in a total (sybils, rosters that differ by one
// owner, a victim never selected), so an exact pair is as good as published.
// Each dealing is therefore a release of its own:
//
//   - the pair is clipped: both coordinates are scaled by min(1, C/sum_i w_i),
//     so 0 <= pair[0] <= pair[1] <= C (C = ErrClip);
//   - neighbouring owners (any two data sets and weight histories of one
//     owner) give pairs at L1 distance at most 2C ((0, 0) against (C, C));
//   - the owner encodes it at the sum's scale S and adds one dpnoise share per
//     coordinate sized for ErrHonest honest dealers, with the discrete
//     Laplace scale t = (ceil(2 C S) + 2) / ErrEpsilon (dpnoise.ForEpsilon:
//     each coordinate's rounding moves by at most one unit);
//   - any total with at least ErrHonest honest dealings in it is
//     ErrEpsilon-DP for each owner in it. ErrHonest = max(1, m - colluders)
//     for the sum's dealer floor m; with colluders "all" (the default of
//     owners and users) it is 1: every dealing is ErrEpsilon-DP on its own,
//     whoever the other dealers are.
//
// The owner is charged ErrEpsilon for every dealing (one ledger key per
// session, round and attempt), before it leaves; the same noisy value is
// re-sent on retransmissions and re-formed rings, never re-drawn.
//
// Owners renormalize without any sum: after accepting alpha they divide
// their weights by the public growth factor GrowthFactor(alpha, K) (what
// the weight total would grow by if err_m were exact), so nothing about the
// weight total is revealed by renormalization. In alpha mode validation no
// owner deals anything for err_m or the weights.

// Defaults of the err sum.
const (
	DefaultErrEpsilon = 0.5 // epsilon of one owner's err dealing (wc-errsum: 0.1 is too noisy at 2*10^4 owners)
	DefaultErrClip    = 2.0 // C: an owner's weight total in its pair is clipped to this
	// ColludersAll says every other party of a sum may be the data user's:
	// noise is sized for one honest dealer (the dealer itself).
	ColludersAll = -1
)

// HonestFor is the number of honest dealers a total over at least floor
// dealers is guaranteed to hold when at most colluders of them share what
// they see with the data user: max(1, floor - colluders), and 1 with
// ColludersAll. The dealer itself is honest, so it is never below 1.
func HonestFor(floor, colluders int) int {
	if colluders < 0 {
		return 1
	}
	return max(1, floor-colluders)
}

// ErrNoise is the noise design of one err dealing: shares of DLap(t) sized
// for ErrHonest dealers, t = (ceil(2 C S) + 2) / ErrEpsilon. ok is false
// without noise (mechanism none: tests and baselines; owners charge their
// none charge for such a dealing).
func (s *Spec) ErrNoise() (p dpnoise.Params, ok bool, err error) {
	if s.Mechanism == ldp.None {
		return dpnoise.Params{}, false, nil
	}
	if !(s.ErrEpsilon > 0) || math.IsInf(s.ErrEpsilon, 0) {
		return dpnoise.Params{}, false, fmt.Errorf("err sum: epsilon %v must be positive and finite", s.ErrEpsilon)
	}
	if !(s.ErrClip > 0) || math.IsInf(s.ErrClip, 0) {
		return dpnoise.Params{}, false, fmt.Errorf("err sum: clip %v must be positive and finite", s.ErrClip)
	}
	codec, err := field.NewCodec(s.ScaleBits)
	if err != nil {
		return dpnoise.Params{}, false, err
	}
	p, err = dpnoise.ForEpsilon(s.ErrEpsilon, s.ErrSensitivity(), codec, 2, max(1, s.ErrHonest))
	return p, err == nil, err
}

// ErrSensitivity is the L1 distance between any two owners' clipped pairs: 2C.
func (s *Spec) ErrSensitivity() float64 { return 2 * s.ErrClip }

// ErrVariance is the variance, in real units, of each coordinate of an err
// total over k dealings (0 without noise).
func (s *Spec) ErrVariance(k int) float64 {
	p, ok, err := s.ErrNoise()
	return s.realVariance(p, ok && err == nil, k)
}

// realVariance is the variance in real units of a coordinate of a total of
// k shares of design p (0 without noise).
func (s *Spec) realVariance(p dpnoise.Params, noisy bool, k int) float64 {
	if !noisy {
		return 0
	}
	sc := math.Ldexp(1, int(s.ScaleBits))
	return p.SumVariance(k) / (sc * sc)
}

// ClipPair scales (werr, wsum) by min(1, clip/wsum).
func ClipPair(werr, wsum, clip float64) [2]float64 {
	if wsum > clip {
		f := clip / wsum
		return [2]float64{werr * f, clip}
	}
	return [2]float64{werr, wsum}
}

// ErrFromTotal turns a (noisy) err total into err_m in [0, 1]: a
// non-positive weight total (noise larger than the signal) gives 1/2 - the
// learner then gets alpha log(K-1) and the significance test decides.
func ErrFromTotal(total []float64) float64 {
	if len(total) != 2 || !(total[1] > 0) {
		return 0.5
	}
	return min(1, max(0, total[0]/total[1]))
}

// GrowthFactor is the public renormalizer of round m: the factor by which
// the owners' weight total grows under the SAMME update when the weighted
// error is err(alpha), the error that gives alpha (inverting Alpha):
// 1 + (e^alpha - 1) err, err = (K-1)/(K-1+e^alpha). It depends on alpha and
// K only, so renormalizing by it reveals nothing about any owner.
func GrowthFactor(alpha float64, classes int) float64 {
	k1 := float64(classes - 1)
	ea := math.Exp(alpha)
	return 1 + (ea-1)*k1/(k1+ea)
}

// RenormalizeBy divides every weight by g > 0 (GrowthFactor).
func (o *Owner) RenormalizeBy(g float64) error {
	if !(g > 0) || math.IsInf(g, 0) {
		return fmt.Errorf("renormalize: growth factor %v is not positive and finite", g)
	}
	for i := range o.W {
		o.W[i] /= g
	}
	return nil
}

// ErrPair is this owner's clipped pair for the learner last passed to
// Evaluate (werr, wsum from it).
func (s *Spec) ErrPair(werr, wsum float64) []float64 {
	p := ClipPair(werr, wsum, s.ErrClip)
	return p[:]
}

// StreamErr is the stream of the err dealings' noise in reproducible runs.
const StreamErr uint64 = 4

// ErrNoiseStream is owner i's err-dealing noise source in (round, attempt)
// for reproducible runs; production owners use rng.Secure.
func ErrNoiseStream(seed uint64, round, attempt, owner int) *rand.Rand {
	return rng.Derive(seed, StreamErr, uint64(round), uint64(attempt), uint64(owner))
}

// ErrRound is the err total the reference trainer computes: every owner's
// clipped pair, encoded at the spec's scale, plus its noise share from
// noise(i) (nil: none), summed in the field as the secure sum does.
func ErrRound(s *Spec, pairs [][]float64, noise func(i int) *rand.Rand) ([]float64, error) {
	codec, err := field.NewCodec(s.ScaleBits)
	if err != nil {
		return nil, err
	}
	np, noisy, err := s.ErrNoise()
	if err != nil {
		return nil, err
	}
	sum := make([]field.Elem, 2)
	for i, v := range pairs {
		enc, err := codec.EncodeVec(v)
		if err != nil {
			return nil, err
		}
		if noisy {
			if err := np.Noise(noise(i))(enc); err != nil {
				return nil, err
			}
		}
		for k := range sum {
			sum[k] = sum[k].Add(enc[k])
		}
	}
	return codec.DecodeVec(sum), nil
}

// OwnerWorstCase is the most one owner can be charged in a session of this
// configuration: its share (selected once at most) and, in alpha mode
// securesum, one err dealing per attempt of every round. noneCharge is
// what an owner charges for a release without noise (mechanism none).
func (c Config) OwnerWorstCase(noneCharge float64) float64 {
	share, dealing := c.charges(noneCharge)
	if c.Alpha != AlphaSecureSum {
		return share
	}
	return share + float64(c.Rounds*c.MaxAttempts)*dealing
}

// ErrNoRetryRoom is wrapped by plans that cannot buy a model: not enough
// owners for the rounds plus the dropped attempts a private run needs, or
// an err sum too noisy to rank learners.
var ErrNoRetryRoom = errors.New("the plan has no room to work")

// RetryRoomFor is the number of dropped attempts a plan of m rounds must
// leave room for: max(1, ceil(m/5)). Every dropped attempt spends the
// selected owners' epsilon (and, in alpha mode securesum, one err dealing
// of every roster owner) without adding a round, so a plan with no room
// for any is refused rather than run into ErrOutOfOwners.
func RetryRoomFor(m int) int { return max(1, (m+4)/5) }

// MaxErrSD is the largest predicted standard deviation of err_m the data
// user accepts from a noisy err sum (wc-errsum: about 0.09 still trains as
// the exact sum does; 0.4 falls below the majority class).
const MaxErrSD = 0.1

// PredictedErrSD is the standard deviation of err_m from a noisy err sum
// over n dealers whose clipped weight totals add up to about n (each starts
// at 1): sqrt(Var_num + err^2 Var_den)/n with err = 1/2, the worst case.
func (s *Spec) PredictedErrSD(n int) float64 {
	if n < 1 {
		return math.Inf(1)
	}
	v := s.ErrVariance(n)
	return math.Sqrt(v*1.25) / float64(n)
}

// CheckPlan refuses a plan that cannot buy a model with owners owners
// (the roster), before anyone spends: H (M + RetryRoomFor(M)) owners at
// least, and in alpha mode securesum an err sum whose predicted err_m
// standard deviation is at most MaxErrSD. The error says what would work.
func (c Config) CheckPlan(s *Spec, owners int) error {
	h, m, room := c.OwnersPerRound, c.Rounds, RetryRoomFor(c.Rounds)
	if need := h * (m + room); owners < need {
		fix := fmt.Sprintf("admit at least %d owners", need)
		if maxH := owners / (m + room); maxH >= 1 {
			fix += fmt.Sprintf(", or select at most %d owners per round", maxH)
		}
		maxM := 0
		for h*(maxM+1+RetryRoomFor(maxM+1)) <= owners {
			maxM++
		}
		if maxM >= 1 {
			fix += fmt.Sprintf(", or train at most %d rounds", maxM)
		}
		return fmt.Errorf("%w: %d owners hold %d attempts of %d owners; %d rounds need room for %d dropped attempts as well (each spends its owners' epsilon): %s",
			ErrNoRetryRoom, owners, owners/max(1, h), h, m, room, fix)
	}
	if c.Alpha == AlphaSecureSum && s.Mechanism != ldp.None {
		if sd := s.PredictedErrSD(owners); sd > MaxErrSD {
			// sd scales as 1/err_epsilon: the epsilon that gives MaxErrSD/2.
			want := s.ErrEpsilon * sd / (MaxErrSD / 2)
			return fmt.Errorf("%w: with %d owners dealing err pairs at err_epsilon %g (clip %g, %d honest dealers), err_m would be off by about %.2f (sd); use alpha validation (no owner release), or err_epsilon %.2g or more, or more owners",
				ErrNoRetryRoom, owners, s.ErrEpsilon, s.ErrClip, max(1, s.ErrHonest), sd, want)
		}
	}
	return nil
}

// AttemptCharge is the epsilon an attempt charges to owners, summed over
// them: shares owners sent their share epsilon each, and in alpha mode
// securesum every one of dealers roster owners one err dealing (1 as the
// charge of a release without noise, as the CLI owners' default).
func AttemptCharge(c Config, shares, dealers int) float64 {
	share, dealing := c.charges(1)
	total := float64(shares) * share
	if c.Alpha == AlphaSecureSum {
		total += float64(dealers) * dealing
	}
	return total
}

// charges is what one share and one err dealing cost an owner; a release
// without noise (mechanism none) costs noneCharge each.
func (c Config) charges(noneCharge float64) (share, dealing float64) {
	if c.Mechanism == "none" {
		return noneCharge, noneCharge
	}
	return c.Epsilon, c.ErrEpsilon
}
