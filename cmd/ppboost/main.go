// Command ppboost runs privacy-preserving federated boosting: the reference
// trainer, the protocol simulation, owner and data-user nodes, and a local
// testnet. See the README and `ppboost help`.
//
// Where it sits: at the top: it calls cmd/ppboost/cli (every command) and
// nothing imports it.
package main

import (
	"os"

	"github.com/ppboost/ppboost/cmd/ppboost/cli"
	"github.com/ppboost/ppboost/experiment"
)

func main() {
	// A child process of the multi-process WAN experiment (experiment/wan_proc.go).
	if child, code := experiment.WANChild(); child {
		os.Exit(code)
	}
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
