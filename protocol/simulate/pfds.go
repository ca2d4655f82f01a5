package simulate

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
	"github.com/ppboost/ppboost/protocol/pfds"
)

// PFDSOptions configures an in-memory PFDS session.
type PFDSOptions struct {
	Domain *bp.Domain
	Schema string
	Agents []bp.Local
	Params bp.Params
	// CV, when set, runs PFDS-cv (Params is then ignored); agent i's
	// shares equal bp.SimulateVariant's.
	CV      *bp.VariantParams
	Learner bp.Learner
	Seed    uint64        // agent i draws from bp.AgentRand(Seed, i), as the oracle does
	Delay   time.Duration // one-way link delay (default 5 ms)
	Kill    []int         // agents killed before the announcement
	Log     hclog.Logger
	// Tap, if set, is the network's memnet.Options.Tap (an adversary).
	Tap func(from, to protocol.PeerID, topic bool, name string, data []byte) [][]byte
	// Ledger, if set, gives agent i its ledger (default: a budget of one
	// session's eps).
	Ledger func(i int) *protocol.MemLedger
}

// AgentID names PFDS agent i.
func AgentID(i int) protocol.PeerID { return protocol.PeerID(fmt.Sprintf("agent-%04d", i)) }

// AnnouncerID is the simulated PFDS announcer.
const AnnouncerID protocol.PeerID = "announcer"

// RunPFDS runs one PFDS session over the deterministic in-memory network:
// an announcer and len(Agents) agents with in-memory ledgers. It returns the
// agents (in StateDone, or StateFailed) and the virtual time it took.
func RunPFDS(cfg PFDSOptions) ([]*pfds.Agent, time.Duration, error) {
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.Delay == 0 {
		cfg.Delay = 5 * time.Millisecond
	}
	for _, k := range cfg.Kill {
		if k < 0 || k >= len(cfg.Agents) {
			return nil, 0, fmt.Errorf("simulate: pfds: Kill names agent %d of %d", k, len(cfg.Agents))
		}
	}
	nopts := netOptions(cfg.Seed, cfg.Delay, cfg.Delay/5, 0, cfg.Log)
	nopts.Tap = cfg.Tap
	net := memnet.New(nopts)
	defer net.Close()
	ann, err := net.Join(AnnouncerID)
	if err != nil {
		return nil, 0, err
	}
	if err := ann.Join(pfds.Topic); err != nil {
		return nil, 0, err
	}
	ids := make([]protocol.PeerID, len(cfg.Agents))
	agents := make([]*pfds.Agent, len(cfg.Agents))
	drivers := make([]*pfds.Driver, len(cfg.Agents))
	for i := range cfg.Agents {
		ids[i] = AgentID(i)
		if agents[i], drivers[i], err = pfdsAgent(net, cfg, i, ann.ID()); err != nil {
			return nil, 0, err
		}
		defer drivers[i].Close()
	}
	dead := map[int]bool{}
	for _, k := range cfg.Kill {
		dead[k] = true
		net.Kill(ids[k])
	}
	wait := uint32(max(100*cfg.Delay, time.Second).Milliseconds())
	msg := pfds.EncodeAnnounce(ann.ID(), &pfds.Announce{Session: fmt.Sprintf("sim-%d", cfg.Seed), Params: cfg.Params, CV: cfg.CV, Learner: cfg.Learner,
		SchemaDigest: cfg.Schema, Roster: ids, TreeTimeout: wait, DataTimeout: wait})
	if err := ann.Publish(context.Background(), pfds.Topic, msg); err != nil {
		return nil, 0, err
	}
	start := net.Clock().Now()
	err = net.RunUntil(func() bool { return pfdsDone(drivers, dead) }, 10*time.Minute)
	return agents, net.Clock().Now().Sub(start), err
}

// pfdsAgent joins agent i and starts its driver.
func pfdsAgent(net *memnet.Network, cfg PFDSOptions, i int, announcer protocol.PeerID) (*pfds.Agent, *pfds.Driver, error) {
	id := AgentID(i)
	ep, err := net.Join(id)
	if err != nil {
		return nil, nil, err
	}
	eps := cfg.Params.Eps
	if cfg.CV != nil {
		eps = cfg.CV.Eps
	}
	led := protocol.NewMemLedger(eps)
	if cfg.Ledger != nil {
		led = cfg.Ledger(i)
	}
	a, err := pfds.NewAgent(pfds.Config{ID: id, Announcer: announcer, Domain: cfg.Domain, Schema: cfg.Schema, Data: cfg.Agents[i],
		Ledger: led, Rand: bp.AgentRand(cfg.Seed, i), Log: cfg.Log.With("agent", i)})
	if err != nil {
		return nil, nil, err
	}
	d, err := pfds.Start(ep, a, cfg.Log)
	if err != nil {
		return nil, nil, err
	}
	return a, d, nil
}

// pfdsDone reports whether every live agent's driver is done.
func pfdsDone(drivers []*pfds.Driver, dead map[int]bool) bool {
	for i, d := range drivers {
		if dead[i] {
			continue
		}
		select {
		case <-d.Done():
		default:
			return false
		}
	}
	return true
}
