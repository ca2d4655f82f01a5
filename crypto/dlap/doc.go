// Package dlap is ppboost's floating-point-safe noise primitive: the
// discrete Laplace distribution sampled exactly with integer arithmetic, and
// the mechanism that releases a real value on a fixed power-of-two grid with
// it.
//
// # Sampler
//
// Sample(r, num, den) draws X on the integers with P(X = x) proportional to
// exp(-|x| den/num), the discrete Laplace DLap(num/den), by Algorithms 1 and
// 2 of Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential
// Privacy" (NeurIPS 2020). Every step is a uniform integer
// (rand.Rand.Uint64N, Lemire's multiply with rejection: exactly uniform
// given uniform 64-bit words) compared with an integer, so every
// probability is the exact rational or exp(-rational) the algorithm needs:
// no floating point is used in the sampling path. Bernoulli(exp(-gamma)) for
// gamma = n/d in [0, 1] is CKS Algorithm 1 (count K while Bernoulli(gamma/K)
// succeeds, return K odd); Bernoulli(exp(-1)) the same with gamma = 1.
// Intermediate values are 128-bit (math/bits), and a |X| beyond 2^63 - 1
// saturates (P < exp(-2^63 den/num)); Mech clamps its release far below
// that, so the saturation is hidden by a post-processing clamp and the
// release stays exact. The loop terminates with probability 1; the expected
// number of uniform draws is a small constant (about 10) for every
// num/den.
//
// # Mechanism
//
// A Mech knows its grid g = 2^e, its integer sensitivity Delta_int (in grid
// units) and its noise scale num/den (in grid units), and nothing else; its
// Epsilon() is computed from them: Delta_int den/num, rounded up. Release
// returns g (n + X), X ~ DLap(num/den), where n is v/g rounded to a
// neighbouring integer at random (up with probability frac(v/g)), so the
// release is unbiased. Why it is exactly eps-DP: for neighbouring inputs at
// real L1 distance Delta over L coordinates, every rounding outcome of one is
// within ceil(Delta/g) + L grid units of every rounding outcome of the other
// (each coordinate's rounding moves it by less than one unit), whatever the
// rounding probabilities are; DLap(num/den) shifted by k units changes any
// point's probability by at most exp(k den/num); a mixture of such shifts
// keeps the bound. The output is a fixed function of the integer n + X
// (clamped to +-2^61, then times the power of two g: exact below 2^53 units,
// which fails with probability about exp(-2^53/scale), e^-(2^32) at the
// usual scale of 2^20 to 2^21 units), so
// the set of possible outputs is the same grid for every input: Mironov's
// attack on the low bits of float64 Laplace (CCS 2012) has nothing to read.
//
// The grid: New picks the largest power of two g <= min(Delta, b) 2^-20 /
// (L+1), b = Delta/eps the nominal Laplace scale, so the rounding slack L g
// costs at most a relative 2^-20 of eps and the grid is at least 2^20
// times finer than the noise: accuracy is that of Lap(b) for practical
// purposes (the noise variance is 2 (g num/den)^2 (1 + O(den/num)^2), within
// a relative 2^-18 of 2 b^2). Two floors bend this at absurd budgets: the
// grid is never finer than delta 2^-50 (so for eps above about
// 2^30/(L+1) the grid is coarse next to the noise), and a scale above 2^55
// grid units coarsens the grid (eps below about 2^-35 (L+1)); below about
// (L+1) 2^-55 New refuses. Integer queries (counts) use NewInt: grid 1,
// Delta_int the integer sensitivity itself (no rounding slack), so
// a count is released as count + DLap, the geometric mechanism.
//
// The package owns the sampler, the mechanism, its grid choice and its
// epsilon. It must not do accounting (callers charge Epsilon() to their
// ledger), networking or logging, and never reads a global random source
// (production passes rng.Secure()).
//
// # Discrete Gaussian
//
// SampleGauss(r, s) draws the discrete Gaussian N_Z(0, s) exactly (CKS
// Algorithm 3: a DLap(t) proposal, t = floor(sqrt(s)) + 1, accepted with
// probability exp(-(|Y| t - s)^2/(2 s t^2)) by BernoulliExp on exact
// 128-bit integers). The Newton trainer (boost/dpboost) releases its leaf
// sums with it; its Renyi bound alpha Delta^2/(2 s) for an integer shift
// Delta is checked by brute force in crypto/rdp's tests
// (TestDiscreteGaussianRenyi).
//
// Where it sits: at the bottom: it imports nothing of ppboost; crypto/dpnoise,
// crypto/ldp, boost/dpboost, boost/pfds and protocol/pfds draw from it.
package dlap
