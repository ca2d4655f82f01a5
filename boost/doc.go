// Package boost is the learning side of ppboost: the three privacy-preserving
// base learners built from perturbed local shares, the SAMME ensemble, model
// files, and Train, the centralized reference trainer that runs the papers'
// algorithm (Wang & Chang, Algorithms 2 and 4-7) in one process.
//
// Train is the oracle the distributed protocol is checked against: the owner
// side (Owner: local shares, weighted errors, weight updates) and the user
// side (Aggregate, Alpha) are the same functions the protocol calls, so a
// distributed run with mechanism none reproduces Train's model exactly up to
// fixed-point rounding in the secure sums.
//
// # Weights
//
// Owner l starts with w_i = 1/N_l (Alg. 2, line 3). After the SAMME update the
// owners renormalize with the secure sum W of all weights as w_i <- w_i * L/W,
// where L is the number of owners: the global scale is irrelevant to err_m
// and to SAMME, and this choice keeps an average owner's total weight at 1 so
// that weighted local statistics fit the mechanisms' input range [-1, 1].
//
// # Local shares (what an owner releases)
//
// Every share perturbs the weighted quantity itself; no weight leaves an
// owner in the clear.
//
//   - stump (local statistic, Alg. 6): for each candidate split j (feature,
//     public threshold eta_j) and branch b (x < eta_j, x >= eta_j), the
//     weighted class counts s_jbk. With K = 2 the owner releases the paper's
//     left-branch differences s_j00 - s_j01 for every split and, last, its
//     total class difference T; every right branch is T minus the left one,
//     so S + 1 values carry what the paper's 2S values do at about half the
//     noise (both PM's and Duchi's variance grow with the dimension). With
//     K > 2 it releases all 2SK counts. Values are clipped to [-1, 1] and
//     perturbed once with eps. The user sums the shares and picks the split
//     maximizing sum_b max_k S_jbk (for K = 2: |S_j0| + |S_j1|, the paper's
//     equation 5; StumpScores); each branch predicts its majority class,
//     read off the same aggregate (no second release).
//   - ncc (local samples, Alg. 5): each sample i becomes u_i = N_l w_i x_i
//     (d values, clipped to [-1, 1]; N_l w_i is 1 on average, so in the first
//     round u_i = x_i exactly as in the paper), perturbed with eps/N_l
//     (sequential composition over the owner's N_l samples) and released with
//     its label (as in the paper, labels are not perturbed). The weight only
//     enters through the perturbed product: no weight, and no weight total,
//     is released. The user's class-k centroid is sum_i u_i' / (n_k f_k),
//     with n_k the released class-k count and f_k the class's relative
//     average weight, which the user estimates from its own validation
//     weights (same learners, same alphas, same distribution; Spec.ClassWeight).
//     The denominator is public and positive: no centroid falls to the origin
//     through noise. (The earlier share (v x, v) with v = min(1, N w/2) and
//     centroid sum(v x)'/sum(v)' halved the signal, let a noisy denominator
//     reach 0 or below, and its clip on v stalled boosting.)
//   - logreg (local classifier, Alg. 7): the owner fits an L2-regularized
//     weighted logistic regression (IRLS, gonum) with weights N_l w_i, clips
//     the parameters (d weights and an intercept) to [-1, 1] and perturbs them
//     with eps; the user averages. One-vs-rest for K > 2 (K(d+1) values, one
//     release). With Config.LogRegNormalize the owner first divides each
//     parameter vector by its largest absolute value (the decision keeps its
//     direction; the user averages directions).
//
// With mechanism none the statistics are released exactly (not clipped): it
// is the non-private baseline.
//
// # Distributed privacy (Config.Privacy = distributed)
//
// Instead of perturbing its own share, each selected owner contributes its
// clipped, unperturbed statistic plus one share of discrete Laplace noise to
// a secure sum of the round's selected owners (distributed.go; the protocol
// runs it as the "share" sum). Stumps contribute per-column cell histograms
// of their weights (weights clipped to a total of Config.PrivacyClip B; one
// owner changes the vector by at most 2 B per schema column); logistic
// regression its clipped parameters. The user sees only the noisy total,
// which is eps-DP for every owner in it (owner-level, as the LDP shares);
// AggregateSum builds the learner from it. NCC has no aggregate and keeps LDP.
//
// # Accepting a learner
//
// A learner is accepted when alpha_m > 0 and, if Config.Significance > 0, it
// passes Significant on the data user's weighted validation data: its
// weighted error must be significantly (one-sided z test at that level)
// below the error of a classifier whose predictions are independent of the
// labels with the same prediction frequencies. A constant classifier never
// passes, so noise-dominated learners do not spend a group of owners for a
// near-zero alpha. Every rejected attempt spends its owners (their budget is
// gone), so the defaults leave room for retries: MaxAttempts 10, and
// simulated synthetic data has 2 x Rounds groups of owners.
//
// # Forecasting a plan (forecast.go)
//
// Before any owner spends, the data user can estimate what the first round
// of a plan buys (UserState.ForecastRound1): it simulates the round on its
// own labelled data only, pseudo-owners resampled from its rows releasing
// through the session's own mechanism at the session's epsilon, and counts
// how often the aggregated learner beats the majority class and would be
// accepted. The CLI sizes plans on real data with it (cmd/ppboost/cli,
// plan.go). It releases nothing and charges nothing.
//
// Where it sits: the Wang & Chang learners, the layer below every protocol: it
// imports only crypto and dataset, and protocol/session, fedboost's role
// limits, the simulator, the status page, the audit and the CLI build on it.
// It must not import a protocol package or do I/O: the same code runs in one
// process (the reference trainer) and split between a data user and its
// owners.
package boost
