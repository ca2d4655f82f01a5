package memnet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/conformance"
	"github.com/ppboost/ppboost/protocol/memnet"
)

// StartPFDS gives the in-memory harness the PFDS suite's cluster: agents
// agent-00 ..., then the announcer, then mallory, on 5 ms links with 1 ms
// jitter.
func (harness) StartPFDS(t *testing.T, agents int) conformance.PFDSCluster {
	net := memnet.New(memnet.Options{Seed: rng.SeedOf(t.Name()), Deterministic: true, Delay: 5 * time.Millisecond, Jitter: time.Millisecond})
	t.Cleanup(func() { net.Close() })
	c := &pfdsCluster{net: net}
	for i := 0; i < agents+2; i++ {
		name := fmt.Sprintf("agent-%02d", i)
		switch i {
		case agents:
			name = "announcer"
		case agents + 1:
			name = "mallory"
		}
		ep, err := net.Join(protocol.PeerID(name))
		if err != nil {
			t.Fatal(err)
		}
		c.eps = append(c.eps, ep)
	}
	return c
}

type pfdsCluster struct {
	net *memnet.Network
	eps []*memnet.Endpoint
}

func (c *pfdsCluster) Transport(i int) protocol.Transport { return c.eps[i] }
func (c *pfdsCluster) Clock(i int) protocol.Clock         { return c.eps[i].Clock() }
func (c *pfdsCluster) Kill(i int)                         { c.net.Kill(c.eps[i].ID()) }
func (c *pfdsCluster) RunUntil(cond func() bool, max time.Duration) error {
	return c.net.RunUntil(cond, max)
}

// TestPFDSConformance runs the PFDS session's conformance subtests on the
// deterministic in-memory network.
func TestPFDSConformance(t *testing.T) { conformance.RunPFDS(t, harness{}) }
