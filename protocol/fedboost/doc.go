// Package fedboost is federated DPBoost over the mesh: the owners' gradient
// histograms are summed with Shamir secure sums to which every owner adds
// its share of distributed discrete-Laplace noise (crypto/dpnoise through
// securesum.Env.Noise), so the data user only ever sees differentially
// private aggregates and no server sees anything else.
//
// Flow (PROTOCOL.md, "Federated DPBoost"). The user announces the public
// configuration (FedConfig: DPBoost's configuration, the admitted roster,
// the beacon, the noise design). Per tree t the beacon fixes a group of
// owners: per ensemble the roster is shuffled and cut into disjoint groups
// of DPBoost's geometric sizes, so every owner is in exactly one tree per
// ensemble (ensemble of ensembles by ownership). Level by level the user
// opens one noisy sum per node (the node's (gradient sum, count) histogram
// over public bins, per schema column — a row is in one cell of every
// column, so K columns have sensitivity 2K — for every column or for K
// columns per node drawn from the beacon), picks each split from gains
// estimated on the noisy histogram (post-processing) and publishes the
// level (FedTree); then one noisy sum of
// the leaves' (gradient sum, count) gives the leaf values (clipped as GLC
// clips them). Every owner updates its own predictions with every finished
// tree. Final carries the model.
//
// Federated Newton (newton.go; the default of ppboost fed) draws every
// tree from the beacon and opens one noisy sum per round of the leaves'
// gradient and hessian sums: one tree (logistic) for two classes, K trees
// (softmax, K boosters, all K trees' sums in one vector under the round's
// one name) for K > 2. Federated DPBoost and np train binary models and
// refuse K > 2 classes at Public.Validate.
//
// Per-owner accounting: an owner records the spend of its tree's eps_t in
// its ledger under session/ensemble-k before its first share of that
// ensemble leaves, and refuses a second tree of the same ensemble.
//
// It owns the two state machines (User, Owner: engine.Machines, each on an
// engine.Runner, with a lifecycle.Session for the phase, the idle and step
// timers, the reorder buffer, the release gate, drops and the end; see
// owner_table_test.go and user_table_test.go for their transitions), the
// plan both sides derive from the public configuration (groups, features,
// layouts, noise); its runner over the in-memory network is
// protocol/simulate's RunFed; callers run a role on a transport with
// StartUser/StartOwner (start.go, the clock and poster protocol/role
// chooses). It must not import libp2p, nor memnet outside its tests, do
// I/O, read a clock or call back the application from inside a machine
// (everything is an effect: messages, named timers, notifications mapped
// to OnFinal/OnOutcome/OnTree/OnSum/OnDone by the runner), or re-implement
// the secure sum or the DPBoost histogram step (it calls securesum and
// boost/dpboost).
//
// Where it sits: one of the three systems, above protocol, engine,
// lifecycle, securesum, role, release, wire and boost/dpboost;
// protocol/simulate, conformance and the CLI use it.
package fedboost
