package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/conformance"
	"github.com/ppboost/ppboost/protocol/pfds"
)

// pfdsHarness runs the PFDS session suite on real libp2p hosts over
// loopback TCP: agents, announcer and attacker all connect to the
// announcer's host (a star the gossipsub mesh grows from).
type pfdsHarness struct{}

type pfdsCluster struct {
	hosts []*Host
}

func (pfdsHarness) StartPFDS(t *testing.T, agents int) conformance.PFDSCluster {
	c := &pfdsCluster{}
	n := agents + 2
	for i := 0; i < n; i++ {
		h := newHost(t, func(cfg *Config) {
			cfg.MaxMessage = pfds.MaxMessage + 4096
			cfg.ExpectedPeers = n + 4
		})
		c.hosts = append(c.hosts, h)
	}
	// As in ppboost pfds testnet: the announcer subscribes before anyone
	// connects, so every peer grafts it into its mesh when it joins.
	if err := c.hosts[agents].Join(pfds.Topic); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if i != agents {
			connect(t, c.hosts[i], c.hosts[agents])
		}
	}
	return c
}

func (c *pfdsCluster) Transport(i int) protocol.Transport { return c.hosts[i] }
func (c *pfdsCluster) Clock(int) protocol.Clock           { return protocol.RealClock{} }
func (c *pfdsCluster) Kill(i int)                         { c.hosts[i].Close() }

func (c *pfdsCluster) RunUntil(cond func() bool, max time.Duration) error {
	deadline := time.Now().Add(max)
	for !cond() {
		if time.Now().After(deadline) {
			return context.DeadlineExceeded
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

func (c *pfdsCluster) Settle(t *testing.T, topic string, peers int) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	announcer := c.hosts[len(c.hosts)-2]
	if err := announcer.WaitTopicPeers(ctx, topic, peers); err != nil {
		t.Fatalf("mesh not ready: %v", err)
	}
	// A known subscriber is not yet a mesh member: a peer whose GRAFT raced
	// its subscription joins the mesh at its next heartbeat (1 s). Without
	// this wait the last agent to join sometimes saw no forwarded message
	// within the 2 s tree timeout and labelled with its own tree alone.
	time.Sleep(1500 * time.Millisecond)
}

// TestPFDSConformanceLibp2p runs the PFDS session suite on libp2p hosts.
func TestPFDSConformanceLibp2p(t *testing.T) {
	if testing.Short() {
		t.Skip("libp2p hosts; skipped under -short")
	}
	conformance.RunPFDS(t, pfdsHarness{})
}

// pfdsProcHarness runs the PFDS session suite with every peer a libp2p
// node in its own OS process (procnet_test.go's children), in the same
// star around the announcer.
type pfdsProcHarness struct{}

type pfdsProcCluster struct {
	peers []*procPeer
}

func (pfdsProcHarness) StartPFDS(t *testing.T, agents int) conformance.PFDSCluster {
	n := agents + 2
	c := &pfdsProcCluster{peers: make([]*procPeer, n)}
	pc := &procCluster{t: t, peers: map[protocol.PeerID]*procPeer{}}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range c.peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.peers[i], errs[i] = startProc(t, fmt.Sprintf("pfds-%02d", i), n+4)
		}()
	}
	wg.Wait()
	for i, p := range c.peers {
		if p != nil {
			pc.track(t, p, fmt.Sprintf("peer %d", i))
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	announcer := c.peers[agents]
	if err := announcer.Join(pfds.Topic); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, p := range c.peers {
		if i != agents {
			if err := p.connect(ctx, announcer.addrs[0]); err != nil {
				t.Fatal(err)
			}
		}
	}
	return c
}

func (c *pfdsProcCluster) Transport(i int) protocol.Transport { return c.peers[i] }
func (c *pfdsProcCluster) Clock(int) protocol.Clock           { return protocol.RealClock{} }
func (c *pfdsProcCluster) Kill(i int)                         { c.peers[i].kill() }

func (c *pfdsProcCluster) RunUntil(cond func() bool, max time.Duration) error {
	return (&pfdsCluster{}).RunUntil(cond, max)
}

func (c *pfdsProcCluster) Settle(t *testing.T, topic string, peers int) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.peers[len(c.peers)-2].WaitTopicPeers(ctx, topic, peers); err != nil {
		t.Fatalf("mesh not ready: %v", err)
	}
	time.Sleep(1500 * time.Millisecond) // as pfdsCluster.Settle: the next gossipsub heartbeat grafts the last joiner
}

// TestPFDSConformanceProcesses runs the PFDS session suite (the paper's
// PFDS and PFDS-cv) with one OS process per peer; skipped under -short,
// run by .ci/run.
func TestPFDSConformanceProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: one process per peer; .ci/run runs it")
	}
	conformance.RunPFDS(t, pfdsProcHarness{})
}

// TestPFDSAgentsMeetThroughRosterAddrs: agents that reach only the
// announcer connect to each other from the announcement's roster
// addresses (pfds.RosterAddrsOf; each agent's driver adds them and
// prepares the connections), so their gossip does not all go through the
// announcer: after the session every agent is connected to every other.
func TestPFDSAgentsMeetThroughRosterAddrs(t *testing.T) {
	if testing.Short() {
		t.Skip("libp2p hosts; skipped under -short")
	}
	const agents = 6
	dom, err := bp.DomainOf(nil, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	ann := newHost(t, func(c *Config) { c.MaxMessage = pfds.MaxMessage + 4096 })
	if err := ann.Join(pfds.Topic); err != nil {
		t.Fatal(err)
	}
	var hosts []*Host
	var ids []protocol.PeerID
	var drivers []*pfds.Driver
	for i := range agents {
		h := newHost(t, func(c *Config) { c.MaxMessage = pfds.MaxMessage + 4096 })
		connect(t, h, ann)
		var l bp.Local
		for k := range 40 {
			x := float64(k%20)/10 - 0.95
			l.X, l.Y = append(l.X, []float64{x}), append(l.Y, k%2)
		}
		a, err := pfds.NewAgent(pfds.Config{ID: h.ID(), Announcer: ann.ID(), Domain: dom, Schema: "s", Data: l,
			Ledger: protocol.NewMemLedger(10), Rand: bp.AgentRand(1, i)})
		if err != nil {
			t.Fatal(err)
		}
		d, err := pfds.Start(h, a, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
		hosts, ids, drivers = append(hosts, h), append(ids, h.ID()), append(drivers, d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ann.WaitTopicPeers(ctx, pfds.Topic, agents); err != nil {
		t.Fatal(err)
	}
	v := bp.DefaultVariant()
	v.HMax, v.MaxLeaves = 3, 16
	a := &pfds.Announce{Session: "meet", CV: &v, Learner: bp.LogReg, SchemaDigest: "s", Roster: ids, TreeTimeout: 5000, DataTimeout: 5000,
		RosterAddrs: pfds.RosterAddrsOf(ann, ids)}
	if a.RosterAddrs == nil {
		t.Fatal("the announcer knows no agent's address")
	}
	if err := ann.Publish(ctx, pfds.Topic, pfds.EncodeAnnounce(ann.ID(), a)); err != nil {
		t.Fatal(err)
	}
	for i, d := range drivers {
		select {
		case <-d.Done():
		case <-ctx.Done():
			t.Fatalf("agent %d not done", i)
		}
	}
	for i, h := range hosts {
		for j, id := range ids {
			if i == j {
				continue
			}
			pid, _ := peer.Decode(string(id))
			if h.Host().Network().Connectedness(pid) != network.Connected {
				t.Errorf("agent %d is not connected to agent %d", i, j)
			}
		}
	}
}
