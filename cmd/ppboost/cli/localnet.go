package cli

import (
	"context"
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/node"
)

// localNet is what the in-process testnets (`testnet`, `pfds testnet`)
// share: a work directory for keys and ledgers, a logger, and the things
// to close, in reverse order of opening.
type localNet struct {
	dir     string
	log     hclog.Logger
	closers []func()
}

// close closes everything opened, last first.
func (n *localNet) close() {
	for i := len(n.closers) - 1; i >= 0; i-- {
		n.closers[i]()
	}
}

// newHost starts a libp2p host on loopback with a fresh key in dir, sized
// for expected peers; maxMessage 0 keeps the node's default.
func (n *localNet) newHost(ctx context.Context, name string, expected, maxMessage int) (*node.Host, error) {
	key := filepath.Join(n.dir, name+".key")
	if _, err := node.GenerateKey(key); err != nil {
		return nil, err
	}
	c := node.DefaultConfig()
	c.KeyFile = key
	c.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0"}
	c.ExpectedPeers = expected
	if maxMessage > 0 {
		c.MaxMessage = maxMessage
	}
	c.Logger = n.log.Named(name)
	h, err := node.New(ctx, c)
	if err == nil {
		n.closers = append(n.closers, func() { h.Close() })
	}
	return h, err
}
