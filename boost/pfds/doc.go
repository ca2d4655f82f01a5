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
//     1); leaves hold Laplace class counts and are labelled by their noisy
//     argmax. The tree is h_max*eps'-DP with eps' = eps/(2 h_max).
//   - Generate (Alg. 5, optPrivateGen): Laplace node counts on levels
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
// Domains come from the public schema (per-feature bounds, categories),
// never from the data. The randomness is injected (crypto/rng): Secure in
// production, seeded in tests and experiments.
//
// It must not do I/O beyond what callers hand it, talk to the network,
// or keep a privacy ledger: protocol/pfds runs the session and records
// the spend.
package pfds
