package session

import (
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/crypto/ldp"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Sum purposes.
const (
	// PurposeErr is the err_m sum (alpha mode securesum): every roster
	// member's clipped pair (sum w_i I(miss), sum w_i) with its noise share
	// (boost/errsum.go).
	PurposeErr = "err"
	// PurposeShare is the distributed-privacy share sum of a round attempt:
	// the selected owners' clipped statistics with their noise shares.
	PurposeShare = "share"
)

// Timing is how long the data user waits at each step.
type Timing struct {
	AnnounceInterval time.Duration // re-announce period while owners join
	JoinTimeout      time.Duration // start with the owners joined by then (at least H)
	ShareTimeout     time.Duration // wait for the selected owners' shares
	// IdleTimeout is announced to the owners: an owner that hears nothing
	// from the user for this long leaves the session (the user crashed and
	// did not come back). It must exceed the longest silent step: a secure
	// sum with its probes and re-forms.
	IdleTimeout time.Duration
}

// DefaultTiming suits loopback and LAN deployments.
func DefaultTiming() Timing {
	return Timing{AnnounceInterval: time.Second, JoinTimeout: 30 * time.Second, ShareTimeout: 10 * time.Second,
		IdleTimeout: 10 * time.Minute}
}

func hashBytes(b []byte) []byte {
	h := sha256.Sum256(b)
	return h[:]
}

// NewSessionID returns 16 random bytes in hex.
func NewSessionID() string {
	var b [16]byte
	if _, err := crand.Read(b[:]); err != nil {
		panic("protocol: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// WireConfig is the announced form of a session.
func WireConfig(c boost.Config, spec boost.Spec, p securesum.Params, t Timing, schemaDigest string) *wire.SessionConfig {
	w := &wire.SessionConfig{
		Learner: string(c.Learner), Mechanism: c.Mechanism, Epsilon: c.Epsilon,
		Rounds: uint32(c.Rounds), OwnersPerRound: uint32(c.OwnersPerRound),
		Classes: uint32(spec.Classes), Features: uint32(spec.Features),
		AlphaMode: string(c.Alpha), SumMethod: p.Method, SumThreshold: uint32(p.Threshold),
		SumCommittee: uint32(p.Committee), ScaleBits: uint32(p.ScaleBits),
		ShareTimeoutMs: uint32(t.ShareTimeout / time.Millisecond), SumTimeoutMs: uint32(p.Timeout / time.Millisecond),
		SchemaDigest: schemaDigest, Seed: c.Seed,
		LogregIterations: uint32(c.LogRegIterations), LogregL2: c.LogRegL2, LogregNormalize: c.LogRegNormalize,
		MinParties: uint32(p.MinParties), IdleTimeoutMs: uint32(t.IdleTimeout / time.Millisecond),
	}
	w.Colluders = WireColluders(c.Colluders)
	if spec.Distributed() {
		w.Privacy, w.PrivacyClip, w.DropFraction = string(boost.PrivacyDistributed), c.PrivacyClip, c.DropFraction
	}
	if c.Alpha == boost.AlphaSecureSum {
		w.ErrEpsilon, w.ErrClip = c.ErrEpsilon, c.ErrClip
	}
	for _, sp := range spec.Splits {
		w.Thresholds = append(w.Thresholds, sp.Threshold)
		w.SplitFeatures = append(w.SplitFeatures, uint32(sp.Feature))
	}
	return w
}

// ParseWireConfig validates an announced configuration and returns the
// owner-side spec and sum parameters. Errors wrap protocol.ErrBadConfig.
// It is a decoder, one check per wire field in the message's order, and is
// exempt from the cyclomatic limit of 25 (issue 22).
func ParseWireConfig(w *wire.SessionConfig) (boost.Spec, securesum.Params, error) {
	bad := func(format string, a ...any) (boost.Spec, securesum.Params, error) {
		return boost.Spec{}, securesum.Params{}, fmt.Errorf("%w: %s", protocol.ErrBadConfig, fmt.Sprintf(format, a...))
	}
	if w == nil {
		return bad("missing configuration")
	}
	learner, err := boost.ParseLearner(w.GetLearner())
	if err != nil {
		return bad("%v", err)
	}
	kind, err := ldp.ParseKind(w.GetMechanism())
	if err != nil {
		return bad("%v", err)
	}
	eps := w.GetEpsilon()
	if kind != ldp.None && (!(eps > 0) || math.IsInf(eps, 0)) {
		return bad("epsilon %v", eps)
	}
	if _, err := boost.ParseAlphaMode(w.GetAlphaMode()); err != nil {
		return bad("%v", err)
	}
	const maxFeatures, maxClasses = 1 << 16, 1 << 10
	if w.GetFeatures() == 0 || w.GetFeatures() > maxFeatures || w.GetClasses() < 2 || w.GetClasses() > maxClasses {
		return bad("shape: %d features, %d classes", w.GetFeatures(), w.GetClasses())
	}
	privacy, err := boost.ParsePrivacy(w.GetPrivacy())
	if err != nil {
		return bad("%v", err)
	}
	spec := boost.Spec{Learner: learner, Mechanism: kind, Epsilon: eps,
		Classes: int(w.GetClasses()), Features: int(w.GetFeatures()),
		LogRegIterations: int(w.GetLogregIterations()), LogRegL2: w.GetLogregL2(), LogRegNormalize: w.GetLogregNormalize(),
		Privacy: privacy, OwnersPerRound: int(w.GetOwnersPerRound())}
	spec.Colluders = ParseColluders(w.GetColluders())
	if spec.Colluders > 1<<20 {
		return bad("colluders %d", spec.Colluders)
	}
	if privacy == boost.PrivacyDistributed {
		spec.Clip, spec.DropFraction = w.GetPrivacyClip(), w.GetDropFraction()
		if learner == boost.NCC || !(spec.DropFraction >= 0 && spec.DropFraction < 1) ||
			(learner == boost.Stump && (!(spec.Clip > 0) || math.IsInf(spec.Clip, 0))) {
			return bad("distributed privacy: learner %s, clip %v, drop fraction %v", learner, spec.Clip, spec.DropFraction)
		}
		if w.GetSumMethod() == securesum.Ring {
			return bad("distributed privacy needs Shamir sums: in a masked ring the data user and one ring neighbour see an owner's value with only its own noise share")
		}
	}
	if w.GetAlphaMode() == string(boost.AlphaSecureSum) {
		spec.ErrEpsilon, spec.ErrClip = w.GetErrEpsilon(), w.GetErrClip()
	}
	if learner == boost.Stump {
		thr, feat := w.GetThresholds(), w.GetSplitFeatures()
		switch {
		case len(feat) == 0:
			spec.Splits = boost.PerFeature(thr)
		case len(feat) == len(thr):
			for i, f := range feat {
				spec.Splits = append(spec.Splits, boost.Split{Feature: int(f), Threshold: thr[i]})
			}
		default:
			return bad("%d thresholds for %d split features", len(thr), len(feat))
		}
	}
	if err := spec.Validate(); err != nil {
		return bad("%v", err)
	}
	if learner == boost.LogReg && (spec.LogRegIterations < 1 || spec.LogRegIterations > 100 || !(spec.LogRegL2 > 0)) {
		return bad("logreg iterations %d, l2 %v", spec.LogRegIterations, spec.LogRegL2)
	}
	p := securesum.DefaultParams()
	p.Method = w.GetSumMethod()
	p.Threshold = int(w.GetSumThreshold())
	p.Committee = int(w.GetSumCommittee())
	p.ScaleBits = uint(w.GetScaleBits())
	p.MinParties = int(w.GetMinParties())
	if ms := w.GetSumTimeoutMs(); ms > 0 {
		p.Timeout = time.Duration(ms) * time.Millisecond
	}
	if err := p.Validate(); err != nil {
		return bad("secure sum: %v", err)
	}
	if err := spec.WithSum(p.MinParties, p.ScaleBits); err != nil {
		return bad("%v", err)
	}
	if spec.Distributed() {
		if _, _, err := spec.DistributedNoise(); err != nil {
			return bad("distributed noise: %v", err)
		}
	}
	if w.GetAlphaMode() == string(boost.AlphaSecureSum) {
		if _, _, err := spec.ErrNoise(); err != nil {
			return bad("%v", err)
		}
		if spec.ErrHonest > 1 && p.Method == securesum.Ring {
			return bad("err sums sized for %d honest dealers need Shamir sums: a ring re-formed without one party, or two ring neighbours, see a dealing with only its own noise share", spec.ErrHonest)
		}
	}
	return spec, p, nil
}

// WireColluders is the announced form of a colluder bound (boost.ColludersAll
// is all ones).
func WireColluders(c int) uint32 {
	if c < 0 {
		return math.MaxUint32
	}
	return uint32(c)
}

// ParseColluders reads an announced colluder bound.
func ParseColluders(c uint32) int {
	if c == math.MaxUint32 {
		return boost.ColludersAll
	}
	return int(c)
}

// shareSumParams are the parameters of a distributed round's share sum: the
// session's, with the dealer floor as the fewest parties, values bounded by
// the clip (stumps) or 1 (logreg), and a single instance: a selected owner
// deals its noisy statistic once, so that two totals over
// different dealer sets never exist (their difference would be one owner's
// value with a fraction of the noise). A share sum that cannot finish fails
// the attempt; the next attempt selects fresh owners.
func shareSumParams(spec *boost.Spec, p securesum.Params) securesum.Params {
	p.MinParties = spec.Floor
	p.SingleInstance = true
	p.Bound = 1
	if spec.Learner == boost.Stump {
		p.Bound = math.Max(1, spec.Clip)
	}
	return p
}

// roundKey names one attempt of one round.
type roundKey struct{ round, attempt uint32 }

func (k roundKey) less(o roundKey) bool {
	return k.round < o.round || (k.round == o.round && k.attempt < o.attempt)
}

// envelopes stamps outgoing messages with the session header and a
// per-sender sequence number.
type envelopes struct {
	session string
	seq     uint64
}

func (e *envelopes) header(k roundKey) *wire.Header {
	e.seq++
	return &wire.Header{Version: wire.Version, Session: e.session, Round: k.round, Attempt: k.attempt, Seq: e.seq}
}

func peers(ids []string) []protocol.PeerID {
	out := make([]protocol.PeerID, len(ids))
	for i, s := range ids {
		out[i] = protocol.PeerID(s)
	}
	return out
}

func strs(ids []protocol.PeerID) []string {
	out := make([]string, len(ids))
	for i, s := range ids {
		out[i] = string(s)
	}
	return out
}

// pairSumParams are the parameters of the err and weight sums. Shamir sums
// are single-instance: a stalled reveal is not re-formed with fresh dealings,
// because a data user could complete one instance, re-open the sum without
// one owner and subtract the totals. The threshold (a majority of the
// committee) already survives c - t silent members. Rings keep their
// re-forms (a ring cannot continue without a silent party); a ring party
// joins no later instance of a sum whose backward pass went through it.
func pairSumParams(spec *boost.Spec, p securesum.Params) securesum.Params {
	if p.Method == securesum.Shamir {
		p.SingleInstance = true
	}
	// Clipped pairs: both coordinates within [0, C] (the noise share is
	// added after the bound check).
	p.Bound = math.Max(1, spec.ErrClip)
	return p
}
