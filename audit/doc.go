// Package audit is the empirical privacy audit of every release an owner
// makes: for each release it draws many outputs of the production release
// function on two neighbouring inputs at the sensitivity bound and turns
// event frequencies into a lower confidence bound on the privacy loss, to
// compare with the ε (δ) the release claims.
//
// # Estimator
//
// Estimate takes a Sampler (one draw of a release on neighbour 0 or 1,
// reduced to a one-dimensional statistic of its output) and draws N outputs
// on each neighbour from streams derived from a fixed seed. The first half
// of the draws chooses the events (thresholds {x >= t}, {x <= t} at
// quantiles of the pooled sample, and cells {x = v} when the statistic takes
// few values), in both directions; the second, fresh half measures them, so
// the choice does not bias the bound. For each measured event E and
// direction it computes one-sided Clopper–Pearson (exact binomial) bounds
// P₀_lo(E) and P₁_hi(E), each at level α/(2m) for m measured events
// (Bonferroni, α = 1 - confidence), and reports
//
//	ε_lo = max(0, max over E and both directions of log((P₀_lo - δ) / P₁_hi)).
//
// With probability at least the confidence, every one of those bounds holds
// at once, and then ε_lo is at most the true privacy loss of the statistic
// (hence of the release: the statistic is post-processing). ε_lo is a lower
// bound only: a release that passes may still leak through events the
// audit did not try.
//
// A check passes when ε_lo <= ε_claimed. Every entry carries negative
// controls (the same release with half the noise, or a known broken
// variant); a control is caught when its ε_lo > ε_claimed, which shows the
// audit has the power to see a violation of that size at that draw count.
//
// # Registry
//
// Entries lists one audit per owner release, built from the production
// constructors and release functions (crypto/ldp, crypto/dpnoise, boost's
// distributed share, boost/dpboost's leaf and split rules, boost/pfds's
// trees), never re-implemented here. Each entry documents its neighbouring
// inputs and why they sit at the sensitivity bound.
//
// The package owns the estimator, its binomial bounds and the registry.
//
// Where it sits: above crypto/, boost/ and protocol/; it must not be imported
// by any other ppboost package except the command line, must not change the
// releases it audits, and never reads a global random source: every draw
// comes from crypto/rng streams derived from the seed, so runs repeat
// exactly.
package audit
