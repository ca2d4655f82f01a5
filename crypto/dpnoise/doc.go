// Package dpnoise makes a secure sum differentially private without a
// trusted curator: every contributor adds its own share of integer noise to
// its fixed-point encoded value before the value is masked or secret-shared
// (securesum.Env.Noise), so that the revealed total already carries the
// full noise and nobody, the coordinator included, ever sees a value or a
// total without it.
//
// # Design
//
// The target is the discrete Laplace distribution DLap(t) on the integers,
// P(X = k) = (1-a)/(1+a) a^|k| with a = exp(-1/t): the difference of two
// independent geometric variables of parameter a. A geometric variable is
// infinitely divisible: it is the sum of h independent Polya (negative
// binomial) variables NB(1/h, a). Each contributor therefore adds
//
//	Z_i = NB_i(1/h, a) - NB'_i(1/h, a)
//
// to every coordinate, where h (Params.Honest) is the fewest contributors
// whose shares are trusted to be present and secret. The sum of the shares
// of any k >= h contributors is NB(k/h, a) - NB'(k/h, a), which is
// DLap(t) plus an independent (extra) noise term: for the privacy of the
// release this is as good as DLap(t) alone (post-processing of an
// eps-DP output by adding independent noise).
//
// Who may be missing: a revealed Shamir total covers a dealer set Q with
// |Q| >= min_parties (the coordinator refuses a smaller one, and every
// member refuses to reveal over it). If at most c of the contributors
// collude with the data user (they know and can subtract their own shares)
// the honest shares in the total number at least |Q| - c. The session sets
// Honest = min_parties - c, so the guarantee holds whatever the number of
// dropped contributors the sum survives. Shares of dropped contributors
// never reach the total (Shamir leaves a dealer out as a whole).
//
// Privacy: a query whose real-valued L1 sensitivity is Delta, carried at
// fixed-point scale S over L coordinates that a record can change, has an
// integer sensitivity of at most Delta_int = ceil(Delta S) + L (each
// encoded coordinate rounds by at most 1/2 on either neighbour), and the
// release is eps-DP with eps = Delta_int / t (ForEpsilon inverts this).
//
// Sampling. NB(r, a) is drawn as Poisson(Gamma(r) a/(1-a)) (the
// Gamma-Poisson mixture), Gamma by Marsaglia & Tsang (with the
// U^(1/r) boost below shape 1), Poisson by multiplying uniforms (Knuth)
// below mean 10 and by Hormann's PTRS transformed rejection above. There is
// no truncation and no delta: every sampler is exact in real arithmetic,
// with support on all of N, and ends with probability 1 (Poisson's small-mean
// branch used to be an inversion cut at k = 1000; it is gone).
//
// What is and is not guaranteed. A share is an integer, so the released
// total has no floating-point low bits to leak (Mironov's attack needs a
// float output). But these are floating-point samplers: the probability of
// each integer is that of the ideal NB(1/h, a) only up to float64 rounding
// inside Gamma and Poisson (relative errors of order 2^-50 in the bulk;
// Gamma values below about 1e-308 underflow to 0, which moves mass to
// Poisson = 0; far tails are only as good as math.Lgamma and math.Exp).
// The eps above is the guarantee of the ideal distribution; for the
// implementation no bound on the likelihood ratio is proven (small in the
// bulk, where the rounding is relative; unknown in the far tails). The
// statistical tests compare
// the samplers with the exact pmf (chi-square) and pass, which bounds gross
// errors, not the tail ratio. For h = 1 a share is NB(1, a) - NB(1, a) =
// DLap(t) itself, and Share draws it with crypto/dlap's exact integer
// sampler (t is a float64, hence an exact dyadic rational num/den): then
// the total is exactly eps-DP. Exact NB(1/h, a) sampling for h > 1 (a
// Polya variable from integer arithmetic only) is not implemented.
//
// The package owns the noise design, its samplers, its exact pmf and its
// epsilon formula. It must not do networking or accounting, read a global
// random source (callers pass rng.Secure in production) or log.
//
// Where it sits: in crypto, above crypto/dlap and crypto/field: boost,
// protocol/release (the ledger charge of a DLap release), protocol/session and
// protocol/fedboost use it. It must not import a protocol package.
package dpnoise
