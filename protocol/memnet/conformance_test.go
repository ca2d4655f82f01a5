package memnet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/conformance"
	"github.com/ppboost/ppboost/protocol/memnet"
	"github.com/ppboost/ppboost/protocol/role"
)

// harness runs the conformance suite on the deterministic in-memory network.
type harness struct{}

func (harness) MaxOwners() int { return 64 }

func (harness) Start(t *testing.T, owners int) conformance.Cluster {
	net := memnet.New(memnet.Options{Seed: rng.SeedOf(t.Name()), Deterministic: true, Delay: time.Millisecond, Jitter: 500 * time.Microsecond})
	t.Cleanup(func() { net.Close() })
	c := &cluster{net: net, t: t}
	c.user = c.join(t, "user")
	for i := 0; i < owners; i++ {
		c.owners = append(c.owners, c.join(t, fmt.Sprintf("owner-%03d", i)))
	}
	return c
}

type cluster struct {
	net    *memnet.Network
	t      *testing.T
	user   conformance.Peer
	owners []conformance.Peer
	extra  int
}

func (c *cluster) join(t *testing.T, id string) conformance.Peer {
	ep, err := c.net.Join(protocol.PeerID(id))
	if err != nil {
		t.Fatal(err)
	}
	// The poster the roles' Start would choose (direct: the endpoint is
	// role.Inline), for the subtests that drive secure sums by hand.
	post := role.NewPost(ep, role.Resolve(ep, nil), hclog.NewNullLogger())
	t.Cleanup(post.Close)
	return conformance.Peer{ID: ep.ID(), Transport: ep, Post: post}
}

func (c *cluster) User() conformance.Peer     { return c.user }
func (c *cluster) Owners() []conformance.Peer { return c.owners }
func (c *cluster) Extra(t *testing.T) conformance.Peer {
	c.extra++
	return c.join(t, fmt.Sprintf("stranger-%d", c.extra))
}
func (c *cluster) Ready(*testing.T)        {}
func (c *cluster) Kill(id protocol.PeerID) { c.net.Kill(id) }
func (c *cluster) Clock() protocol.Clock   { return c.net.Clock() }
func (c *cluster) Scale() time.Duration    { return time.Millisecond }
func (c *cluster) Run(cond func() bool, timeout time.Duration) bool {
	c.net.RunUntil(cond, timeout)
	return cond()
}

func TestConformance(t *testing.T) {
	conformance.Run(t, harness{})
}
