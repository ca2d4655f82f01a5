package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
)

type memHarness struct{}

type memCluster struct {
	net *memnet.Network
	eps []*memnet.Endpoint
}

func (memHarness) Start(t *testing.T, agents int) Cluster {
	net := memnet.New(memnet.Options{Seed: rng.SeedOf(t.Name()), Deterministic: true, Delay: 5 * time.Millisecond, Jitter: time.Millisecond})
	t.Cleanup(func() { net.Close() })
	c := &memCluster{net: net}
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

func (c *memCluster) Transport(i int) protocol.Transport { return c.eps[i] }
func (c *memCluster) Clock(i int) protocol.Clock         { return c.eps[i].Clock() }
func (c *memCluster) Poster(i int) protocol.Poster {
	return protocol.Direct{Tr: c.eps[i], Log: hclog.NewNullLogger()}
}
func (c *memCluster) Kill(i int) { c.net.Kill(c.eps[i].ID()) }
func (c *memCluster) RunUntil(cond func() bool, max time.Duration) error {
	return c.net.RunUntil(cond, max)
}

func TestMemnet(t *testing.T) {
	for _, st := range Subtests {
		t.Run(st.Name, func(t *testing.T) { st.Run(t, memHarness{}) })
	}
}
