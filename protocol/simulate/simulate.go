// Package simulate runs the full distributed protocol — the real owner and
// data-user state machines and secure sums — for thousands of owners over
// the in-memory network, in virtual time and deterministically from a seed.
// `ppboost simulate` is a thin layer over Run.
//
// It must not contain protocol logic of its own: everything it measures comes
// from the protocol package's code.
package simulate

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
)

// Options configures one simulated run.
type Options struct {
	Boost boost.Config
	Sum   securesum.Params
	Data  boost.Data
	// Delay is the virtual one-way latency of every link (default 1 ms).
	Delay time.Duration
	// MaxVirtual bounds the run in virtual time (default 24 h).
	MaxVirtual time.Duration
	Log        hclog.Logger
	OnRound    func(session.RoundReport)
	// Setup, if set, may change the network before the session starts
	// (drop rates, partitions) — used by fault tests.
	Setup func(n *memnet.Network, user protocol.PeerID, owners []protocol.PeerID)
}

// Result is what a run measured.
type Result struct {
	Model   *boost.Model
	Rounds  []session.RoundReport
	Owners  int
	Wall    time.Duration
	Virtual time.Duration
	// Per-owner traffic, averaged over owners; the user's own traffic.
	OwnerMsgs, OwnerBytes float64
	UserMsgs, UserBytes   int64
	TotalMsgs             int64
	// Dropped messages by reason, summed over all participants.
	Dropped map[string]int
	// PeakHeap is the largest heap in use observed during the run.
	PeakHeap uint64
}

// OwnerID names owner i so that sorting by id is sorting by index, which
// keeps the distributed selection identical to boost.Train's.
func OwnerID(i int) protocol.PeerID { return protocol.PeerID(fmt.Sprintf("owner-%06d", i)) }

// UserID is the data user's id.
const UserID protocol.PeerID = "user"

// Run executes one session and returns its model and measurements.
func Run(o Options) (*Result, error) {
	if o.Delay == 0 {
		o.Delay = time.Millisecond
	}
	if o.MaxVirtual == 0 {
		o.MaxVirtual = 24 * time.Hour
	}
	if o.Log == nil {
		o.Log = hclog.NewNullLogger()
	}
	if len(o.Data.Owners) == 0 {
		return nil, errors.New("simulate: no owners")
	}
	start := time.Now()
	seed := o.Boost.Seed
	net := memnet.New(memnet.Options{Seed: seed, Deterministic: true, Delay: o.Delay, Logger: o.Log.Named("memnet")})
	defer net.Close()
	clock := net.Clock()

	ids := make([]protocol.PeerID, len(o.Data.Owners))
	owners := make([]*session.Owner, len(o.Data.Owners))
	for i, d := range o.Data.Owners {
		ids[i] = OwnerID(i)
		ep, err := net.Join(ids[i])
		if err != nil {
			return nil, err
		}
		idx := i
		owners[i], err = session.NewOwner(ids[i], protocol.Direct{Tr: ep, Log: o.Log}, session.OwnerConfig{
			User: UserID, Data: d, Ledger: protocol.NewMemLedger(max(o.Boost.Epsilon, 1)),
			MaxEpsilon: max(o.Boost.Epsilon, 1),
			// The simulated owners take part in non-private baselines
			// (mechanism none) when the configuration asks for one.
			AllowNone: o.Boost.Mechanism == "none", NoneCharge: 1,
			Noise: func(round, attempt int) *rand.Rand {
				return boost.NoiseStream(seed, round, attempt, idx)
			},
			SumRand: rng.Derive(seed, boost.StreamSum, uint64(i)),
			Clock:   ep.Clock(), // its timers die with it when a fault test kills it
			Log:     o.Log.Named("owner"),
		})
		if err != nil {
			return nil, err
		}
		if err := owners[i].Attach(ep); err != nil {
			return nil, err
		}
	}
	uep, err := net.Join(UserID)
	if err != nil {
		return nil, err
	}
	res := &Result{Owners: len(owners)}
	var done bool
	var runErr error
	timing := session.Timing{AnnounceInterval: 100 * time.Millisecond, JoinTimeout: time.Minute, ShareTimeout: 10 * time.Second}
	user, err := session.NewUser(UserID, protocol.Direct{Tr: uep, Log: o.Log}, session.UserConfig{
		Session: fmt.Sprintf("sim-%016x", seed), Boost: o.Boost, Sum: o.Sum, Timing: timing,
		Own: o.Data.User, Test: o.Data.Test, ExpectedOwners: len(owners),
		SumRand: rng.Derive(seed, boost.StreamSum, 1<<40),
		Clock:   clock, Log: o.Log.Named("user"),
		OnRound: func(r session.RoundReport) {
			res.Rounds = append(res.Rounds, r)
			if o.OnRound != nil {
				o.OnRound(r)
			}
		},
		OnDone: func(m *boost.Model, err error) { res.Model, runErr, done = m, err, true },
	})
	if err != nil {
		return nil, err
	}
	if o.Setup != nil {
		o.Setup(net, UserID, ids)
	}
	if err := user.Attach(uep); err != nil {
		return nil, err
	}
	t0 := clock.Now()
	var ms runtime.MemStats
	events := 0
	err = net.RunUntil(func() bool {
		events++
		if events%200000 == 0 {
			runtime.ReadMemStats(&ms)
			res.PeakHeap = max(res.PeakHeap, ms.HeapInuse)
		}
		return done
	}, o.MaxVirtual)
	runtime.ReadMemStats(&ms)
	res.PeakHeap = max(res.PeakHeap, ms.HeapInuse)
	res.Virtual = clock.Now().Sub(t0)
	res.Wall = time.Since(start)
	if err != nil && !done {
		st, uerr := user.State()
		return res, fmt.Errorf("simulate: %w (user state %s, error %v)", err, st, uerr)
	}
	var msgs, bytes int64
	for _, id := range ids {
		s := net.Stats(id)
		msgs += s.MsgsSent
		bytes += s.BytesSent
	}
	res.OwnerMsgs = float64(msgs) / float64(len(ids))
	res.OwnerBytes = float64(bytes) / float64(len(ids))
	us := net.Stats(UserID)
	res.UserMsgs, res.UserBytes = us.MsgsSent, us.BytesSent
	res.TotalMsgs = net.TotalStats().MsgsSent
	res.Dropped = user.Stats().Snapshot()
	for _, ow := range owners {
		for k, v := range ow.Stats().Snapshot() {
			res.Dropped[k] += v
		}
	}
	return res, runErr
}
