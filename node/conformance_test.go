package node

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/conformance"
	"github.com/ppboost/ppboost/protocol/role"
	"github.com/ppboost/ppboost/protocol/wire"
)

// libp2pHarness runs the conformance suite on real libp2p hosts over
// loopback TCP in one process.
type libp2pHarness struct{}

func (libp2pHarness) MaxOwners() int { return 16 }

func (libp2pHarness) Start(t *testing.T, owners int) conformance.Cluster {
	c := &lpCluster{t: t, hosts: map[protocol.PeerID]*Host{}}
	c.user = c.add(t, "user", owners+8)
	for i := 0; i < owners; i++ {
		p := c.add(t, fmt.Sprintf("owner-%02d", i), 32)
		c.owners = append(c.owners, p)
	}
	// Every owner knows where every other owner listens, as the session
	// roster tells them; secure sums dial owner to owner.
	for _, a := range c.owners {
		for _, b := range c.owners {
			if a.ID != b.ID {
				c.hosts[a.ID].AddAddrs(b.ID, c.hosts[b.ID].Addrs())
			}
		}
	}
	return c
}

type lpCluster struct {
	realTime
	t      *testing.T
	mu     sync.Mutex
	hosts  map[protocol.PeerID]*Host
	user   conformance.Peer
	owners []conformance.Peer
	n      int
}

func (c *lpCluster) add(t *testing.T, name string, expected int) conformance.Peer {
	t.Helper()
	key := filepath.Join(t.TempDir(), name+".key")
	if _, err := GenerateKey(key); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.KeyFile = key
	cfg.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0"}
	cfg.ExpectedPeers = expected
	cfg.DialTimeout, cfg.StreamTimeout = 5*time.Second, 5*time.Second
	cfg.Logger = testLogger(t, name)
	h, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The poster the roles' Start would choose (an Outbox), for the
	// subtests that drive secure sums by hand.
	post := role.NewPost(h, role.Resolve(h, nil, role.WithSendTimeout(5*time.Second)), testLogger(t, name))
	t.Cleanup(func() { post.Close(); h.Close() })
	if c.user.ID != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Connect(ctx, c.hosts[c.user.ID].Addrs()[0]); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	c.hosts[h.ID()] = h
	c.mu.Unlock()
	return conformance.Peer{ID: h.ID(), Transport: h, Post: post}
}

func (c *lpCluster) User() conformance.Peer     { return c.user }
func (c *lpCluster) Owners() []conformance.Peer { return c.owners }

func (c *lpCluster) Extra(t *testing.T) conformance.Peer {
	c.n++
	p := c.add(t, fmt.Sprintf("stranger-%d", c.n), 32)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, o := range c.owners {
		if err := c.hosts[p.ID].Connect(ctx, c.hosts[o.ID].Addrs()[0]); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// Ready waits until the user sees every owner on the control topic.
func (c *lpCluster) Ready(t *testing.T) { waitOwners(t, c.hosts[c.user.ID], len(c.owners)) }

func (c *lpCluster) Kill(id protocol.PeerID) {
	c.mu.Lock()
	h := c.hosts[id]
	c.mu.Unlock()
	go h.Close() // may be called from one of h's own handlers
}

// Scale is generous: CI runs the suite under -race on a loaded 2-core machine,
// where a secure-sum step that settles for partial coverage would make a
// session drift from the reference trainer.
func (c *lpCluster) Scale() time.Duration { return 5 * time.Millisecond }

// waitOwners waits until user sees n owners on a system's control topic
// (W&C's or federated DPBoost's: whichever the owners joined).
func waitOwners(t *testing.T, user protocol.MeshWaiter, n int) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		var errs []error
		for _, topic := range []string{wire.WC().Control, wire.Fed().Control} {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			err := user.WaitTopicPeers(ctx, topic, n)
			cancel()
			if err == nil {
				return
			}
			errs = append(errs, err)
		}
		if time.Now().After(deadline) {
			t.Fatal(errs)
		}
	}
}

// realTime is the wall-clock part of the libp2p harnesses' clusters.
type realTime struct{}

func (realTime) Clock() protocol.Clock { return protocol.RealClock{} }

func (realTime) Run(cond func() bool, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cond()
}

// TestConformanceLibp2p runs the conformance suite on real libp2p hosts in
// this process. It takes about a minute under -race (one subtest waits out a
// secure-sum timeout on purpose), so it is skipped under -short; .ci/run
// runs it, and TestConformanceProcesses, without -short.
func TestConformanceLibp2p(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: the libp2p conformance suite runs without -short (.ci/run does)")
	}
	conformance.Run(t, libp2pHarness{})
}
