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
	"strings"
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
	// (link parameters, partitions).
	Setup func(n *memnet.Network, user protocol.PeerID, owners []protocol.PeerID)
	// DropRate loses each message with this probability on every link.
	DropRate float64
	// Faults are played at their virtual times (fault scenarios).
	Faults []Fault
	// Timing overrides the session's timing (zero fields keep the defaults).
	Timing session.Timing
	// OwnerColluders is every owner's own colluder bound
	// (session.OwnerConfig.Colluders; 0: all, the default).
	OwnerColluders int
	// SilentPerRound kills this many owners after every round attempt,
	// chosen on a seeded stream among the live ones: each secure sum then
	// meets owners that fell silent since the last (the scale test's "one
	// silent owner per sum").
	SilentPerRound int
}

// FaultKind names what a Fault does.
type FaultKind int

const (
	KillOwner    FaultKind = iota // the owner's process dies for good
	PauseOwner                    // the owner is frozen for For, then continues (SIGSTOP/SIGCONT)
	IsolateOwner                  // the owner is cut off for For, then the partition heals
	KillUser                      // the data user dies
	RestartUser                   // a data user with the same id starts again from the last checkpoint
)

// Fault is one scheduled event of a fault scenario.
type Fault struct {
	At    time.Duration // virtual time after the session starts
	Kind  FaultKind
	Owner int // owner index (owner faults)
	For   time.Duration
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
	// Per owner, at the end: its state, how many shares it released in the
	// session, how many err dealings it was charged for, and its ledger's
	// total spend.
	OwnerStates []session.OwnerState
	Releases    []int
	Dealings    []int
	Spent       []float64
	// Killed marks owners a fault killed.
	Killed []bool
	// UserRestarts counts data users started from a checkpoint.
	UserRestarts int
	// Outcome is the (last) data user's; OwnerOutcomes[i] the last one
	// owner i logged (zero if it left no session).
	Outcome       protocol.Outcome
	OwnerOutcomes []protocol.Outcome
}

// countingLedger counts the spends that reached a ledger: shares (the
// session's key) and err dealings (its "/err/" keys) apart.
type countingLedger struct {
	protocol.Ledger
	shares, dealings *int
}

func (l countingLedger) Spend(session string, round, attempt uint32, eps float64) error {
	if err := l.Ledger.Spend(session, round, attempt, eps); err != nil {
		return err
	}
	if strings.Contains(session, "/err/") {
		*l.dealings++
	} else {
		*l.shares++
	}
	return nil
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
	net := memnet.New(memnet.Options{Seed: seed, Deterministic: true, Delay: o.Delay, DropRate: o.DropRate, Logger: o.Log.Named("memnet")})
	defer net.Close()
	clock := net.Clock()

	// waiting holds the owners still in a session once the user is done;
	// OnEnd removes them, so the end of a run is not an O(n) scan per event.
	waiting := map[int]bool{}
	ids := make([]protocol.PeerID, len(o.Data.Owners))
	owners := make([]*session.Owner, len(o.Data.Owners))
	res := &Result{Owners: len(owners), Releases: make([]int, len(owners)), Dealings: make([]int, len(owners)), Killed: make([]bool, len(owners)),
		OwnerOutcomes: make([]protocol.Outcome, len(owners))}
	ledgers := make([]protocol.Ledger, len(owners))
	share := newShared() // this run's owners share decoded messages and rosters
	for i, d := range o.Data.Owners {
		ids[i] = OwnerID(i)
		ep, err := net.Join(ids[i])
		if err != nil {
			return nil, err
		}
		idx := i
		// Room for the worst case: a share and an err dealing per attempt.
		ledgers[i] = protocol.NewMemLedger(o.Boost.OwnerWorstCase(1))
		owners[i], err = session.NewOwner(ids[i], protocol.Direct{Tr: ep, Log: o.Log}, session.OwnerConfig{
			User: UserID, Data: d, Ledger: countingLedger{ledgers[i], &res.Releases[i], &res.Dealings[i]},
			MaxEpsilon: max(o.Boost.Epsilon, o.Boost.ErrEpsilon, 1),
			Colluders:  o.OwnerColluders,
			Share:      share,
			// The simulated owners take part in non-private baselines
			// (mechanism none) when the configuration asks for one.
			AllowNone: o.Boost.Mechanism == "none", NoneCharge: 1,
			Noise: func(round, attempt int) *rand.Rand {
				return boost.NoiseStream(seed, round, attempt, idx)
			},
			ErrNoise: func(round, attempt int) *rand.Rand {
				return boost.ErrNoiseStream(seed, round, attempt, idx)
			},
			SumRand:   rng.Derive(seed, boost.StreamSum, uint64(i)),
			Clock:     ep.Clock(), // its timers die with it when a fault test kills it
			Log:       o.Log.Named("owner"),
			OnEnd:     func(string, string) { delete(waiting, idx) },
			OnOutcome: func(_ string, out protocol.Outcome) { res.OwnerOutcomes[idx] = out },

			// Join nonces from the seed: committees, and so a run's
			// timings, follow the seed.
			NonceRand: rng.Derive(seed, 0x6e6f6e6365, uint64(i)), // "nonce"
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
	var done bool
	var runErr error
	timing := session.Timing{AnnounceInterval: 100 * time.Millisecond, JoinTimeout: time.Minute, ShareTimeout: 10 * time.Second,
		IdleTimeout: 10 * time.Minute}
	if t := o.Timing; t != (session.Timing{}) {
		timing = t
	}
	var last *session.Checkpoint
	silenceRand := rand.New(rand.NewPCG(seed, 0x73696c656e74))
	silence := func() {
		for tries := 0; tries < 100; tries++ {
			i := silenceRand.IntN(len(ids))
			if !res.Killed[i] {
				net.Kill(ids[i])
				res.Killed[i] = true
				return
			}
		}
	}
	newUser := func(ep *memnet.Endpoint, resume *session.Checkpoint) (*session.User, error) {
		return session.NewUser(UserID, protocol.Direct{Tr: ep, Log: o.Log}, session.UserConfig{
			Session: fmt.Sprintf("sim-%016x", seed), Boost: o.Boost, Sum: o.Sum, Timing: timing,
			Own: o.Data.User, Test: o.Data.Test, ExpectedOwners: len(owners), Resume: resume,
			// A restarted user draws other masks and instance numbers than
			// its earlier incarnation, as a crypto-keyed source would.
			SumRand: rng.Derive(seed, boost.StreamSum, 1<<40+uint64(res.UserRestarts)),
			Clock:   ep.Clock(), Log: o.Log.Named("user"),
			OnRound: func(r session.RoundReport) {
				res.Rounds = append(res.Rounds, r)
				for k := 0; k < o.SilentPerRound; k++ {
					silence()
				}
				if o.OnRound != nil {
					o.OnRound(r)
				}
			},
			Checkpoint: func(c session.Checkpoint) { last = &c },
			OnDone:     func(m *boost.Model, err error) { res.Model, runErr, done = m, err, true },
		})
	}
	user, err := newUser(uep, nil)
	if err != nil {
		return nil, err
	}
	if o.Setup != nil {
		o.Setup(net, UserID, ids)
	}
	if err := user.Attach(uep); err != nil {
		return nil, err
	}
	var faultErr error
	for _, f := range o.Faults {
		f := f
		clock.AfterFunc(f.At, func() {
			if done && (f.Kind == KillUser || f.Kind == RestartUser) {
				return // the session is over: nothing left to crash or resume
			}
			switch f.Kind {
			case KillOwner:
				net.Kill(ids[f.Owner])
				res.Killed[f.Owner] = true
			case PauseOwner:
				net.Pause(ids[f.Owner], f.For)
			case IsolateOwner:
				var rest []protocol.PeerID
				for i, id := range ids {
					if i != f.Owner {
						rest = append(rest, id)
					}
				}
				net.Partition(append(rest, UserID), []protocol.PeerID{ids[f.Owner]})
				clock.AfterFunc(f.For, net.Heal)
			case KillUser:
				net.Kill(UserID)
			case RestartUser:
				res.UserRestarts++
				ep, err := net.Join(UserID)
				var nu *session.User
				if err == nil {
					nu, err = newUser(ep, last)
				}
				if err == nil {
					user = nu
					err = user.Attach(ep)
				}
				if err != nil {
					faultErr = fmt.Errorf("restarting the user: %w", err)
					done = true
					return
				}
			}
		})
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
	collect := func() {
		res.Wall = time.Since(start)
		res.Outcome = user.Outcome()
		res.OwnerStates, res.Spent = nil, nil
		for i, ow := range owners {
			st, _ := ow.State()
			res.OwnerStates = append(res.OwnerStates, st)
			res.Spent = append(res.Spent, ledgers[i].Spent())
		}
	}
	if err != nil && !done {
		st, uerr := user.State()
		collect()
		return res, fmt.Errorf("simulate: %w (user state %s, error %v)", err, st, uerr)
	}
	if faultErr != nil {
		collect()
		return res, faultErr
	}
	// The session is over for the user: the owners leave on Final or Abort,
	// or after the idle timeout if they missed both.
	for i, ow := range owners {
		if st, _ := ow.State(); st == session.OwnerJoined && !res.Killed[i] {
			waiting[i] = true
		}
	}
	left := func() bool { return len(waiting) == 0 }
	_ = net.RunUntil(left, timing.IdleTimeout+time.Minute)
	collect()
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
