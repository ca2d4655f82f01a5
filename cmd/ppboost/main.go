// Command ppboost runs privacy-preserving federated boosting: the reference
// trainer, the protocol simulation, owner and data-user nodes, and a local
// testnet. See the README and `ppboost help`.
package main

import (
	"os"

	"github.com/ppboost/ppboost/cmd/ppboost/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
