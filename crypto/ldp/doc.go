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
//   - Laplace gives each coordinate eps/d: t_j + Lap(2d/eps), as the exact
//     discrete Laplace mechanism of crypto/dlap on a power-of-two grid
//     g <= min(2, 2d/eps) 2^-21 (the scale is within 2^-19 of 2d/eps), clamped
//     to +-(1 + 64 b') (Bound).
//
// Constants depend only on (kind, eps, d) and are computed once in New,
// from math.Expm1 so that tiny budgets stay accurate and huge ones finite;
// a budget so small that the output bound overflows is an error.
//
// # Randomness and floating point
//
// All draws come from the *math/rand/v2.Rand passed to Perturb: production
// code passes crypto/rng.Secure() (ChaCha8 keyed from crypto/rand), tests a
// seeded one. What each mechanism guarantees as implemented:
//
//   - Laplace: exactly eps-LDP. Each coordinate is crypto/dlap's mechanism
//     (sensitivity 2 at eps/d, the exact Canonne-Kamath-Steinke sampler in
//     integer arithmetic, randomized rounding of the input onto the grid
//     counted in the integer sensitivity), so its eps' = Delta_int den/num
//     <= eps/d is a property of the code, not of an idealization. Outputs
//     are multiples of the grid for every input. The clamp at 1 + 64 b' is
//     post-processing and moves the mean by less than 1e-28 b'.
//   - PM (and HM's PM branch): the output is snapped to a fixed grid
//     2^(e-31), C in [2^(e-1), 2^e), so every input has the same set of
//     possible outputs; a cell's probability is a count of 63-bit words
//     (one uniform word inverts the piecewise-linear CDF with a constant
//     step in the middle piece) that is within a relative rho of the
//     integral of the density over the cell, and the implementation is
//     (eps + 2 rho/(1 - rho))-LDP with rho = PMRoundingExcess(eps): below
//     8.2e-6 for eps <= 10, 9e-5 at 20, 0.012 at 30, vacuous near 40 (see
//     pm). TestPMCellRatioExact counts words exactly for eps = 1: the worst
//     cell ratio is e^1 (1 + 1.9e-7). Without the snap (the sampler before)
//     outputs l + U (r - l) of one input were floats the other input cannot
//     produce (TestPMOutputsOnInputIndependentGrid: 72% of the outputs of
//     t = 1 in (1, C) at eps = 1).
//   - Duchi (one value, and HM's Duchi branch): two outputs +-D, chosen by
//     Float64() < (E-1)/(2E+2) t + 1/2. The probability is that threshold
//     rounded up to a multiple of 2^-53 (after the float rounding of the
//     threshold itself, about 2^-53 absolute), so the smaller of the two
//     probabilities, at least 1/(E+1), has relative error below
//     2^-51 (E + 1): (eps + 2^-50 (E + 1))-LDP, under 1e-6 for eps <= 20.
//   - Multi-dimensional Duchi: the side is chosen by Float64() against
//     pPos = E/(E+1) computed without cancellation, with the same relative
//     error 2^-51 (E + 1) on the smaller side; the v_j draws need no care
//     (the bound holds given any v, so their rounding moves only the mean,
//     by at most 2^-53 B per coordinate).
//   - The d/k scaling and the zero coordinates of multi-dimensional PM/HM
//     are fixed functions of the snapped outputs (post-processing).
//
// Reals are never released from a uniform's affine image without a snap.
// Uniform reals are r.Float64() (53 random bits) where only a Bernoulli
// threshold needs them.
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
//	Laplace d=1   eps=1  17.8-19.3 ns 52-56 M coords/s (float sampler, before)
//	Laplace d=20  eps=1  322-328 ns   61-62 M coords/s (float sampler, before)
//
// After the floating-point fixes (same machine, load 3-5, so slower across
// the board: Duchi d=1 measured 19-25 ns in the same runs): PM d=1 eps=5
// 22-30 ns, eps=1 29-48 ns (one 63-bit word, the snap); Laplace d=1 eps=1
// 158-195 ns (5-6 M coords/s) and d=20 4.1-4.4 us: the exact sampler
// draws about ten uniform integers per coordinate. PM and HM no longer meet
// the 50 M coords/s goal on this loaded machine; Laplace is the slowest
// mechanism and the least accurate one, kept for comparison with the
// papers.
//
// A ChaCha8 Float64 costs about 5 ns here and the interface call, length
// and range checks about 10 ns, so d = 1 PM and Duchi (one uniform each)
// are near the floor; HM adds the draw that picks its branch. For d > 1 the cost is the range check and clearing of all d
// coordinates plus the k perturbed ones; multi-dimensional Duchi draws one
// uniform per coordinate for v, one random bit per coordinate for s and one
// uniform for the side.
//
// Where it sits: in crypto, above crypto/dlap: boost (local shares),
// protocol/release (an LDP release's ε) and the CLI use it. It must not import
// a protocol package.
package ldp
