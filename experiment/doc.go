// Package experiment regenerates the papers' figures and tables. Each
// experiment registers a Spec from its own file's init; `ppboost experiment
// NAME` runs one, `ppboost experiment list` names them, `ppboost experiment
// all` runs every one. An experiment writes its numbers (CSV and JSON) and its
// plots (PNG and SVG, gonum.org/v1/plot) into Run.Out.
//
// Where it sits: above boost and protocol (it may run the reference trainer
// or the full protocol over the in-memory network) and below cmd. It owns no
// learning or protocol logic of its own: it sweeps parameters, repeats over
// seeds, aggregates and draws.
//
// Each paper's experiments live in their own files, with their package-level
// identifiers prefixed so that files merged from different branches do not
// collide: wc*.go (prefix wc) reproduce Wang & Chang (NCC, stumps, logistic
// regression: first learners vs eps and vs owners, boosted runs with both
// ways of getting err_m); their data builders are dataset.FashionBoVW and
// boost.Prepare.
package experiment
