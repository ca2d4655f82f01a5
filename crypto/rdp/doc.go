// Package rdp is ppboost's Renyi-DP accountant: curves alpha -> eps(alpha)
// of the mechanisms ppboost composes (the Gaussian and discrete Gaussian as
// zCDP, the discrete Laplace in closed form), their composition (curves
// add) and the conversion of a curve to (eps, delta)-DP.
//
// The conversion is Canonne, Kamath & Steinke (NeurIPS 2020, Proposition
// 12, after Asoodeh et al.): a mechanism that is (alpha, eps(alpha))-RDP is
// (eps, delta)-DP with eps = eps(alpha) + log(1/delta)/(alpha-1) + log(1 -
// 1/alpha) - log(alpha)/(alpha-1), for every alpha > 1; Epsilon minimizes
// it over alpha. The exact privacy profile of the Gaussian mechanism
// (GaussianDelta) is the brute-force reference the tests hold the
// accountant against.
//
// It owns arithmetic only: no sampling, no ledger, no I/O.
//
// Where it sits: at the bottom: it imports nothing of ppboost; boost/dpboost,
// protocol/fedboost and protocol/release account with it.
package rdp
