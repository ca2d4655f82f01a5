// Package ldp implements the local differential privacy mechanisms ppboost
// owners use to perturb their shares: the Piecewise Mechanism (PM), the
// Hybrid Mechanism (HM), Duchi et al.'s mechanism and Laplace, for one value
// and for vectors of d values in [-1, 1] (formulas in LDP-REFERENCE.md:
// Wang et al., ICDE 2019; Duchi, Jordan & Wainwright, JASA 2018).
//
// It owns only the mechanisms: no networking, no learning, no budget
// accounting (the owner's ledger does that).
//
// # Multi-dimensional mechanisms
//
//   - PM and HM sample k = max(1, min(d, floor(eps/2.5))) attributes
//     uniformly without replacement (Floyd's algorithm), perturb each with
//     eps/k and scale it by d/k; the other coordinates are 0. Giving each
//     sampled attribute the full eps would break eps-LDP for k > 1.
//   - Duchi outputs a vector in {-B, B}^d, B = D * C_d, chosen uniformly from
//     T+ = {s : s.v >= 0} with probability e^eps/(e^eps+1), else from
//     T- = {s : s.v <= 0}, where v_j = +-1 with P(v_j = 1) = (1 + t_j)/2.
//     Ties (s.v = 0, even d) are in both sets, which keeps it unbiased for
//     even d. Sampling is by rejection of uniform sign vectors (at most two
//     draws expected), so d is not limited by enumeration.
//   - Laplace gives each coordinate eps/d: t_j + Lap(2d/eps).
//
// # Randomness and floating point
//
// All draws come from the *math/rand/v2.Rand passed to Perturb: production
// code passes crypto/rng.Secure() (ChaCha8 keyed from crypto/rand), tests a
// seeded one. Uniform reals are r.Float64(): 53 random bits, a multiple of
// 2^-53 in [0, 1). Intervals are sampled by an affine map of one uniform,
// Laplace by the inverse CDF of a uniform in (-1/2, 1/2).
//
// Known limits: outputs lie on a floating-point grid, not the exact
// continuous distribution, so the density ratio bound e^eps holds for the
// ideal mechanism, and for the implementation only up to discretization.
// Mironov (CCS 2012) showed that textbook floating-point Laplace sampling
// leaks through the pattern of representable outputs; deployments worried
// about that attack should prefer PM, HM or Duchi (bounded outputs on an
// interval or two points) or post-process Laplace by snapping. Duchi's
// outputs are exactly two values per coordinate and are not affected.
//
// # Input range
//
// Inputs must be finite. Values outside [-1, 1] are an error (Reject) or
// clipped (Clip), as the caller chooses in New.
//
// # Performance
//
// `go test -run XXX -bench Perturb ./crypto/ldp` on the 2-core development
// machine (0 allocations per call in every case):
//
//	PM  d=1   eps=1  16.7 ns   59.8 M coords/s   (goal: 50 M)
//	PM  d=1   eps=5  12.2 ns   81.9 M coords/s
//	PM  d=20  eps=5  92 ns     216 M coords/s    (k=2 attributes perturbed, 18 zeros)
//	PM  d=100 eps=5  192 ns    521 M coords/s
//	HM  d=1   eps=1  26.4 ns   37.9 M coords/s
//	HM  d=1   eps=5  18.4 ns   54.4 M coords/s
//	Duchi   d=20 eps=1  381 ns
//	Laplace d=20 eps=1  377 ns
//
// PM draws one uniform and inverts the output's piecewise-linear CDF (the
// first version drew two, branch then position, and measured 22.9 ns at
// eps=1); a ChaCha8 Float64 costs about 5 ns. HM adds the draw that picks
// PM or Duchi.
package ldp
