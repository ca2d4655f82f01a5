// Package ldp implements the local differential privacy mechanisms ppboost
// owners use to perturb their shares: the Piecewise Mechanism (PM), the
// Hybrid Mechanism (HM), Duchi et al.'s mechanism and Laplace, for one value
// and for vectors of d values in [-1, 1], plus None, the identity baseline.
// Formulas: /work/shared/LDP-REFERENCE.md (Wang et al., ICDE 2019; Duchi,
// Jordan & Wainwright, JASA 2018).
//
// It owns the mechanisms, their constants, output bounds and closed-form
// variances. It must not do networking, learning, input scaling to [-1, 1]
// (callers map their data with public bounds first) or budget accounting
// (the owner's ledger does that); it never logs and never reads a global
// random source.
//
// # Mechanisms
//
//   - d = 1: PM, HM and Duchi are the one-value mechanisms. HM runs PM with
//     probability alpha = 1 - e^{-eps/2} when eps > EpsStar, else Duchi.
//   - PM and HM with d > 1 sample k = max(1, min(d, floor(eps/2.5)))
//     attributes uniformly without replacement, perturb each with eps/k and
//     scale it by d/k; the other coordinates are 0. The k indices come from
//     Floyd's algorithm (k draws, indices on the stack) for k <= 32 and
//     from selection sampling (d draws) above. Giving each sampled attribute
//     the full eps would break eps-LDP for k > 1.
//   - Duchi with d > 1 outputs B s or -B s for a uniform s in {-1, 1}^d,
//     B = D C_d, where v_j = +-1 with P(v_j = 1) = (1 + t_j)/2: if s.v = 0
//     (a tie, even d only) the output is B s; otherwise it is B s or -B s
//     so that it lies in T+ = {o : o.v > 0} with probability
//     p = e^eps/(e^eps + 1). Given v an output then has probability
//     2p/2^d in T+, 2(1 - p)/2^d in T- and 1/2^d if a tie: ties weigh 1/2
//     toward each side, every probability is within e^eps of every other,
//     and the worst-case ratio is exactly e^eps. C_d = 2^{d-1}/binom(d-1,
//     floor(d/2)) for every d (2^{d-1}/binom(d-1, (d-1)/2) for odd d,
//     2^{d-1}/binom(d-1, d/2) for even d) makes it unbiased:
//     E[o | v] = B (2p - 1) 2^{-d} sum_s sign(s.v) s (ties cancel in pairs
//     s, -s) and sum_s sign(s.v) s_j = 2 binom(d-1, floor(d/2)) v_j. The
//     variance is B^2 - t_j^2 (every |o_j| = B). For odd d this is the
//     original mechanism (uniform from T+ with probability p, else from
//     T-). The two published rules for even d are wrong: ties only in T-
//     (the original) is biased (with this B the mean is off by up to 0.93
//     at d = 4, eps = 1, in exact enumeration over a few inputs); ties in
//     both sets (uniform from T+ U ties with probability p, else from
//     T- U ties, with C_d = (2^{d-1} + binom(d, d/2)/2)/binom(d-1, d/2)) is
//     unbiased but not eps-LDP: given v a tie has probability 1/K
//     (K = |T+ U ties| = |T- U ties|) and an output only in T- (1 - p)/K,
//     a ratio of e^eps + 1 (d = 2: inputs (1, 1) and (-1, 1), output
//     (B, -B)). Exact
//     enumeration for d <= 8 (duchi_test.go) checks both properties and that
//     the ties-in-both rule fails. Sampling is exact with a fixed number of
//     draws (d uniforms for v, one bit per coordinate for s, one uniform for
//     the side), with out as scratch space, so any d works without
//     enumeration, rejection or allocation. C_d uses an exact recurrence or
//     an asymptotic series, within 1e-14 of exact rationals.
//   - HM with d > 1 samples attributes like PM and runs the one-value HM
//     (PM or one-value Duchi) on each; it never uses the d-dimensional
//     Duchi rule.
//   - Laplace gives each coordinate eps/d: t_j + Lap(2d/eps).
//
// Constants depend only on (kind, eps, d) and are computed once in New,
// from math.Expm1 so that tiny budgets stay accurate and huge ones finite;
// a budget so small that the output bound overflows is an error.
//
// # Randomness and floating point
//
// All draws come from the *math/rand/v2.Rand passed to Perturb: production
// code passes crypto/rng.Secure() (ChaCha8 keyed from crypto/rand), tests a
// seeded one. Uniform reals are r.Float64(): 53 random bits scaled by 2^-53,
// a multiple of 2^-53 in [0, 1). A point in an interval is an affine map of
// one uniform (PM inverts its piecewise-linear CDF with a single uniform); a
// Bernoulli(p) draw is Float64() < p. Laplace noise is the inverse CDF of a
// uniform u in (0, 1): one Uint64 gives the half (u below or above 1/2) and
// w = 1 - k 2^-53 in (0, 1] (exact), and the noise is -+b ln w, at most
// 53 ln 2 b ~ 36.7 b in magnitude.
//
// Known limits: outputs lie on a 2^-53 grid (after the affine maps), not
// the exact continuous density, and probabilities are rounded to multiples
// of 2^-53, so the e^eps density-ratio bound holds for the ideal mechanism
// and for the implementation only up to that discretization. Mironov (CCS
// 2012) showed that textbook floating-point Laplace sampling leaks the input
// through the pattern of representable outputs; production deployments
// worried about that attack should prefer PM, HM or Duchi, whose outputs
// are bounded (Duchi's are exactly two values per coordinate), or snap
// Laplace outputs (Mironov's snapping mechanism) before release.
//
// # Input range
//
// Inputs must be finite. Values outside [-1, 1] (beyond 1e-12 of rounding)
// are an error under Reject and clipped under Clip, as chosen in New. Every
// input is checked before anything is written, so an error never depends on
// the random draws and leaves out unchanged.
//
// # Performance
//
// Perturb never allocates. `go test -run XXX -bench Perturb ./crypto/ldp` on
// the shared 2-core development machine (Intel Xeon, Go 1.26, load ~2 from
// other builds; ranges over repeated runs):
//
//	PM      d=1   eps=1  16.7-18 ns   55-60 M coords/s   (goal: 50 M)
//	PM      d=1   eps=5  10.7-11 ns   89-93 M coords/s
//	PM      d=20  eps=1  45-51 ns     390-440 M coords/s (k=1: 1 perturbed, 19 zeros)
//	PM      d=20  eps=5  61-69 ns     290-325 M coords/s (k=2)
//	PM      d=100 eps=1  120-135 ns   740-830 M coords/s
//	PM      d=100 eps=5  139-155 ns   640-720 M coords/s
//	HM      d=1   eps=1  25-28 ns     36-40 M coords/s
//	HM      d=1   eps=5  17-18 ns     55-58 M coords/s
//	HM      d=20  eps=1  60-63 ns     315-335 M coords/s
//	HM      d=20  eps=5  88-91 ns     220-227 M coords/s
//	HM      d=100 eps=1  138-144 ns   690-730 M coords/s
//	HM      d=100 eps=5  167-177 ns   565-598 M coords/s
//	Duchi   d=1   eps=1  15.6-16.7 ns 60-64 M coords/s
//	Duchi   d=20  eps=1  306-310 ns   64-65 M coords/s
//	Laplace d=1   eps=1  17.8-19.3 ns 52-56 M coords/s
//	Laplace d=20  eps=1  322-328 ns   61-62 M coords/s
//
// A ChaCha8 Float64 costs about 5 ns here and the interface call, length
// and range checks about 10 ns, so d = 1 PM and Duchi (one uniform each)
// are near the floor; HM adds the draw that picks its branch, Laplace a
// logarithm. For d > 1 the cost is the range check and clearing of all d
// coordinates plus the k perturbed ones; multi-dimensional Duchi draws one
// uniform per coordinate for v, one random bit per coordinate for s and one
// uniform for the side.
package ldp
