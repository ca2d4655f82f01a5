// Package cli implements the ppboost command line. main.go only calls Main.
//
// Where it sits: the top of the tree. The larger subcommands (user, owner,
// testnet, fed, dpboost, pfds, predict, partition, schema) are a pure config
// builder (flags, a --config file and defaults into a validated config;
// table-tested in builders_test.go) and a small runner; the node roles start
// on a node.Host through their Start functions (session.StartUser, …). It
// must not contain protocol logic.
package cli
