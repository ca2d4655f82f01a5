package cli

import (
	"fmt"
	"io"

	"github.com/ppboost/ppboost/node"
)

func runKeygen(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("keygen", "keygen --out FILE  (prints the new peer id) | keygen --psk FILE  (a private-network key)", errOut)
	path := fs.String("out", "", "where to write the Ed25519 identity key (mode 0600; never overwritten)")
	psk := fs.String("psk", "", "write a new private-network key (swarm.key v1 format, mode 0600; never overwritten) to this file instead; give the same file to every node's --psk")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case *path != "" && *psk != "":
		return usagef("--out and --psk: one key at a time")
	case *psk != "":
		fp, err := node.GeneratePSK(*psk)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "private-network key written to %s (fingerprint %s); copy it to every node of the network over a secure channel\n", *psk, fp)
		return nil
	case *path == "":
		return usagef("--out (an identity key) or --psk (a private-network key) is required")
	}
	id, err := node.GenerateKey(*path)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, id.String())
	return nil
}
