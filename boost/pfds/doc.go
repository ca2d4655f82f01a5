// Package pfds is the one-process reference of Privacy-preserving Federated
// Data Sharing (Fioretto & Van Hentenryck, AAMAS 2019): the oracle that the
// distributed session in protocol/pfds is checked against.
//
// It owns the paper's algorithms and nothing else:
//   - MakeTree (Alg. 3): a differentially private random decision tree.
//     Attributes are drawn uniformly; a categorical attribute branches on
//     every category and leaves the attribute set of its subtree; a numeric
//     one splits at one of t random candidate values of its active interval,
//     chosen by the exponential mechanism with the Max utility (sensitivity
//     1); leaves hold noisy class counts and are labelled by their noisy
//     argmax. The tree is h_max*eps'-DP with eps' = eps/(2 h_max).
//   - Generate (Alg. 5, optPrivateGen): noisy node counts on levels
//     1..p-1 with eps/(2(p-1)) each, post-processed by the exact weighted
//     non-negative least-squares projection onto the consistent counts
//     (parent = sum of children), solved by SolveTree; then records sampled
//     uniformly inside each leaf's box from a public seed.
//   - Label (Alg. 4): the majority vote of every shared tree, ties broken
//     toward the smallest class index.
//   - the final ERM (Alg. 1, line 3): logistic regression, a Huber-smoothed
//     SVM and ridge linear regression, and the baselines of the paper's
//     Table 2: NP-Agt, DP-Pred (objective perturbation, functional
//     mechanism), PFDS(s) and PFDS-.
//
// K classes (not in the paper, whose tasks are binary; FitClasses). The
// trees, the synthetic data and both label rules already carry
// Domain.Classes; the final learners take K >= 2: LogReg is multinomial
// (softmax) logistic regression with one weight vector per class, solved by
// Newton's method like the binary one; SVM is one-vs-rest (K Huber-hinge
// machines, class k against the rest), the class the argmax of the scores.
// Two classes keep the binary models (one vector, class 1 for a
// non-negative score; LogReg bit for bit as before). Every SVM machine is
// Platt-calibrated on its own training rows (its score s becomes a s + b
// from a logistic fit of the labels on s, a > 0): the raw hinge machine's
// threshold put every Adult row in class 0 under PFDS-cv's noisy labels
// although its direction ranked them as well as LogReg's (RESULTS.md,
// "## PFDS"). DP-Pred's K-class predictor is K one-vs-rest machines by
// objective perturbation at eps/K each (they read the same rows: sequential
// composition), its vote the plurality. A saved predictor (ModelFile) is
// version 1 for two classes and version 2, one vector per class, for more.
//
// PFDS-cv (Variant, VariantParams, SimulateVariant) is NOT the paper's
// algorithm: it is a variant with stated departures, run beside the
// faithful modes in Table 2, and a session of protocol/pfds (an
// announcement with cv; the CLI's default, --variant pfds-cv) beside the
// faithful PFDS. Each departure from Alg. 3-5:
//   - the tree is data-independent: attributes drawn uniformly as in
//     Alg. 3, numeric split values uniform in the active interval (no
//     exponential mechanism), so the splits cost nothing;
//   - the whole budget Eps goes to the leaf class counts (the paper: Eps/2
//     over h_max levels of the tree, leaf noise Lap(2 h_max/Eps), and Eps/2
//     to level counts), and the noisy counts are published with the tree
//     (the paper publishes their argmax only);
//   - no level counts and no least squares: a leaf's synthetic size is its
//     noisy total if that reaches Threshold/Eps, else 0;
//   - a synthetic row is labelled from the pooled noisy class counts of its
//     leaves in the trees whose leaf's noisy total reaches Threshold/Eps
//     (all trees if none does), by a draw in proportion to them (Sample)
//     or their argmax, instead of the majority vote of every tree;
//   - its depth, leaf cap, threshold and label rule (DefaultVariant: h_max
//     8, 1,024 leaves, 12/Eps, sampled labels) are chosen on validation
//     splits of the training data (experiment pfds-variant), no test row.
//
// Unconstrained attributes are still drawn uniformly in their public
// domain: the data's marginals are not public, and the Oracle-label control
// shows those rows can carry the signal. An agent's only data-dependent
// release is the leaf counts: one histogram of sensitivity 1 under the
// geometric mechanism at Eps, VariantParams.Charge <= Eps; sizes, rows and
// labels are computed from published values only.
//
// Noise. The paper's Laplace counts are released with the geometric
// mechanism, count + DLap(1/eps) from crypto/dlap's exact integer sampler
// (an integer; exactly eps'-DP, eps' = Mech.Epsilon() <= eps; variance
// 1/(2 sinh^2(eps/2)), a little below Laplace's 2/eps^2), and DP-Pred's
// functional mechanism through dlap's grid mechanism: no floating-point
// Laplace anywhere. The exponential mechanism (expMech) is float64:
// (eps + 2^-49, delta)-DP with delta = (e^eps + 1) n (2n + 1) 2^-53 for n
// candidates. Objective perturbation's noise vector (NormFloat64 and a
// Gamma norm) and the trained models are floats with no snapping: that
// baseline carries the textbook floating-point caveat.
//
// Domains come from the public schema (per-feature bounds, categories),
// never from the data. The randomness is injected (crypto/rng): Secure in
// production, seeded in tests and experiments.
//
// It must not do I/O beyond what callers hand it, talk to the network,
// or keep a privacy ledger: protocol/pfds runs the session and records
// the spend.
//
// Where it sits: beside boost, below the protocols: it imports crypto/dlap,
// crypto/rng and dataset, and protocol/pfds (the session), the simulator, the
// audit and the CLI use it. It must not import a protocol package.
package pfds
