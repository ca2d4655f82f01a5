package hostile_test

import (
	"fmt"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/hostile"
	"github.com/ppboost/ppboost/protocol/release"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
	"github.com/ppboost/ppboost/protocol/simulate"
)

// wcData is a small W&C world: owners of 30 rows each, the user's rows and
// a test set.
func wcData(owners int) (boost.Data, error) {
	syn, err := dataset.Synthetic(dataset.DefaultSynthetic(owners*30+1000, 11))
	if err != nil {
		return boost.Data{}, err
	}
	test, rest := syn.Split(500)
	user, rest := rest.Split(500)
	shards, err := rest.Partition(owners, nil, 11)
	if err != nil {
		return boost.Data{}, err
	}
	return boost.Data{Owners: shards, User: user, Test: test}, nil
}

// runWC plays one W&C session (stumps from PM shares, errm from Shamir err
// sums over every owner) against a hostile data user and checks it.
// control as in fedRun ("forget": every owner's gate without memory;
// "uncharged": one err charge removed after the run).
func runWC(seed uint64, owners int, rate float64, control string) (hostile.Report, map[string]int, error) {
	data, err := wcData(owners)
	if err != nil {
		return hostile.Report{}, nil, err
	}
	cfg := boost.DefaultConfig()
	cfg.Learner, cfg.Mechanism, cfg.Epsilon, cfg.Alpha, cfg.ErrEpsilon = boost.Stump, "pm", 2, boost.AlphaSecureSum, 0.5
	cfg.OwnersPerRound, cfg.Rounds, cfg.MaxAttempts, cfg.Seed = 2, 2, 2, seed
	sum := securesum.DefaultParams()
	// A committee of every owner: the same whatever a SumStart's header
	// says, so mutated copies reach the owners' release decisions.
	sum.Method, sum.Committee, sum.MinParties = securesum.Shamir, owners, 3
	var honest []protocol.PeerID
	for i := range owners {
		honest = append(honest, simulate.OwnerID(i))
	}
	adv := hostile.New(seed, simulate.UserID, honest, rate)
	res, _ := simulate.Run(simulate.Options{Boost: cfg, Sum: sum, Data: data, Tap: adv.Tap, MaxVirtual: time.Hour, Unchecked: true,
		Owner: func(i int, c *session.OwnerConfig) {
			// The gate's own noise (a secret per owner) instead of the
			// reproducible (round, attempt) streams of the simulator.
			c.ErrNoise, c.NoiseSecret = nil, rng.SecretOf(seed, 0x7763, uint64(i))
			if control == "forget" {
				c.OnGate = func(g *release.Values) { g.Forget = true }
			}
		}})
	if res == nil || len(res.Ledgers) != owners {
		return hostile.Report{}, nil, fmt.Errorf("seed %d: no result", seed)
	}
	sessionID := fmt.Sprintf("sim-%016x", seed)
	ledgers := map[protocol.PeerID]hostile.Ledger{}
	for i, l := range res.Ledgers {
		ledgers[simulate.OwnerID(i)] = l.(hostile.Ledger)
	}
	if control == "uncharged" {
		for i, l := range res.Ledgers {
			key := fmt.Sprintf("%s/err/1/0", sessionID)
			if l.Contributed(key) {
				l.(*protocol.MemLedger).Forget(key)
				_ = i
				break
			}
		}
	}
	rep := hostile.Check(adv.Obs, ledgers, func(s hostile.Slot) (string, float64, bool) {
		if s.Session != sessionID {
			return "", 0, false
		}
		key := sessionID
		if s.Kind == "sum" && s.Purpose == "err" {
			key = fmt.Sprintf("%s/err/%d/%d", sessionID, s.Round, s.Attempt)
		}
		return key, ledgers[s.Owner].(*protocol.MemLedger).KeySpent(key), true
	})
	return rep, adv.Mutations(), nil
}
