package pfds

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
)

// SimConfig is an in-memory PFDS session.
type SimConfig struct {
	Domain  *bp.Domain
	Schema  string
	Agents  []bp.Local
	Params  bp.Params
	Learner bp.Learner
	Seed    uint64        // agent i draws from bp.AgentRand(Seed, i), as the oracle does
	Delay   time.Duration // one-way link delay (default 5 ms)
	Kill    []int         // agents killed before the announcement
	Log     hclog.Logger
}

// Simulate runs one session over the deterministic in-memory network: an
// announcer and len(Agents) agents with in-memory ledgers. It returns the
// agents (in StateDone, or StateFailed) and the virtual time it took.
func Simulate(cfg SimConfig) ([]*Agent, time.Duration, error) {
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.Delay == 0 {
		cfg.Delay = 5 * time.Millisecond
	}
	net := memnet.New(memnet.Options{Seed: cfg.Seed, Deterministic: true, Delay: cfg.Delay, Jitter: cfg.Delay / 5})
	defer net.Close()
	ann, err := net.Join("announcer")
	if err != nil {
		return nil, 0, err
	}
	if err := ann.Join(Topic); err != nil {
		return nil, 0, err
	}
	var ids []protocol.PeerID
	var agents []*Agent
	var drivers []*Driver
	for i, l := range cfg.Agents {
		id := protocol.PeerID(fmt.Sprintf("agent-%04d", i))
		ep, err := net.Join(id)
		if err != nil {
			return nil, 0, err
		}
		a, err := NewAgent(Config{ID: id, Announcer: ann.ID(), Domain: cfg.Domain, Schema: cfg.Schema, Data: l,
			Ledger: protocol.NewMemLedger(cfg.Params.Eps), Rand: bp.AgentRand(cfg.Seed, i), Log: cfg.Log.With("agent", i)})
		if err != nil {
			return nil, 0, err
		}
		d, err := NewDriver(a, ep, ep.Clock(), protocol.Direct{Tr: ep, Log: cfg.Log})
		if err != nil {
			return nil, 0, err
		}
		defer d.Close()
		ids, agents, drivers = append(ids, id), append(agents, a), append(drivers, d)
	}
	dead := map[int]bool{}
	for _, k := range cfg.Kill {
		dead[k] = true
		net.Kill(ids[k])
	}
	wait := uint32(max(100*cfg.Delay, time.Second).Milliseconds())
	msg := EncodeAnnounce(ann.ID(), &Announce{Session: fmt.Sprintf("sim-%d", cfg.Seed), Params: cfg.Params, Learner: cfg.Learner,
		SchemaDigest: cfg.Schema, Roster: ids, TreeTimeout: wait, DataTimeout: wait})
	if err := ann.Publish(context.Background(), Topic, msg); err != nil {
		return nil, 0, err
	}
	start := net.Clock().Now()
	err = net.RunUntil(func() bool {
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
	}, 10*time.Minute)
	return agents, net.Clock().Now().Sub(start), err
}
