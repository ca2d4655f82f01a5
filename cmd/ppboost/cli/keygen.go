package cli

import (
	"fmt"
	"io"

	"github.com/ppboost/ppboost/node"
)

func runKeygen(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("keygen", "keygen --out FILE  (prints the new peer id)", errOut)
	path := fs.String("out", "", "where to write the Ed25519 identity key (mode 0600; never overwritten)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return usagef("--out is required")
	}
	id, err := node.GenerateKey(*path)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, id.String())
	return nil
}
