package simulate

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
	"github.com/ppboost/ppboost/protocol/session"
)

// Defaults of a Wang & Chang run.
const (
	defaultDelay      = time.Millisecond
	defaultMaxVirtual = 24 * time.Hour
)

// defaultTiming is a simulated session's timing unless Options.Timing sets
// one: announcements every 100 ms of virtual time, a minute to join.
var defaultTiming = session.Timing{AnnounceInterval: 100 * time.Millisecond, JoinTimeout: time.Minute,
	ShareTimeout: 10 * time.Second, IdleTimeout: 10 * time.Minute}

// Stream labels of the seeded sources a run derives (owner join nonces,
// the choice of silent owners).
const (
	streamNonce   = 0x6e6f6e6365   // "nonce"
	streamSilence = 0x73696c656e74 // "silent"
)

// plan is what Run derives from Options before it builds anything: a pure
// function of the options, table-tested in config_test.go.
type plan struct {
	opts    Options // with Delay, MaxVirtual and Log defaulted
	net     memnet.Options
	session string
	timing  session.Timing
	// budget is each owner's ledger: room for the worst case, a share and
	// an err dealing per attempt.
	budget float64
}

// newPlan checks o and fills in its defaults.
func newPlan(o Options) (plan, error) {
	if len(o.Data.Owners) == 0 {
		return plan{}, errors.New("simulate: no owners")
	}
	if o.Delay < 0 || o.MaxVirtual < 0 {
		return plan{}, fmt.Errorf("simulate: negative Delay %v or MaxVirtual %v", o.Delay, o.MaxVirtual)
	}
	if o.DropRate < 0 || o.DropRate > 1 {
		return plan{}, fmt.Errorf("simulate: DropRate %v outside [0, 1]", o.DropRate)
	}
	if o.SilentPerRound < 0 {
		return plan{}, fmt.Errorf("simulate: SilentPerRound %d is negative", o.SilentPerRound)
	}
	for i, f := range o.Faults {
		if f.Kind < KillOwner || f.Kind > RestartUser {
			return plan{}, fmt.Errorf("simulate: fault %d: unknown kind %d", i, f.Kind)
		}
		if f.Kind <= IsolateOwner && (f.Owner < 0 || f.Owner >= len(o.Data.Owners)) {
			return plan{}, fmt.Errorf("simulate: fault %d: owner %d outside [0, %d)", i, f.Owner, len(o.Data.Owners))
		}
	}
	if o.Delay == 0 {
		o.Delay = defaultDelay
	}
	if o.MaxVirtual == 0 {
		o.MaxVirtual = defaultMaxVirtual
	}
	if o.Log == nil {
		o.Log = hclog.NewNullLogger()
	}
	p := plan{opts: o, timing: defaultTiming, session: fmt.Sprintf("sim-%016x", o.Boost.Seed),
		budget: o.Boost.OwnerWorstCase(1)}
	if o.Timing != (session.Timing{}) {
		p.timing = o.Timing
	}
	p.net = netOptions(o.Boost.Seed, o.Delay, 0, o.DropRate, o.Log)
	p.net.Tap = o.Tap
	return p, nil
}

// owner is owner i's configuration, without what ties it to a run (its
// ledger, clock, sharing and callbacks: run.addOwner sets them).
func (p plan) owner(i int) session.OwnerConfig {
	o, seed := p.opts, p.opts.Boost.Seed
	return session.OwnerConfig{
		User: UserID, Data: o.Data.Owners[i],
		MaxEpsilon: max(o.Boost.Epsilon, o.Boost.ErrEpsilon, 1),
		Colluders:  o.OwnerColluders,
		// The simulated owners take part in non-private baselines
		// (mechanism none) when the configuration asks for one.
		AllowNone: o.Boost.Mechanism == "none", NoneCharge: 1,
		Noise: func(round, attempt int) *rand.Rand {
			return boost.NoiseStream(seed, round, attempt, i)
		},
		ErrNoise: func(round, attempt int) *rand.Rand {
			return boost.ErrNoiseStream(seed, round, attempt, i)
		},
		SumRand: rng.Derive(seed, boost.StreamSum, uint64(i)),
		Log:     o.Log.Named("owner"),
		// Join nonces from the seed: committees, and so a run's timings,
		// follow the seed.
		NonceRand: rng.Derive(seed, streamNonce, uint64(i)),
	}
}

// user is the data user's configuration for its incarnation restarts (0:
// the first), resuming from resume if set, without its clock and callbacks.
func (p plan) user(restarts int, resume *session.Checkpoint) session.UserConfig {
	o := p.opts
	return session.UserConfig{
		Session: p.session, Boost: o.Boost, Sum: o.Sum, Timing: p.timing,
		Own: o.Data.User, Test: o.Data.Test, ExpectedOwners: len(o.Data.Owners), Resume: resume,
		// A restarted user draws other masks and instance numbers than its
		// earlier incarnation, as a crypto-keyed source would.
		SumRand:   rng.Derive(o.Boost.Seed, boost.StreamSum, 1<<40+uint64(restarts)),
		Log:       o.Log.Named("user"),
		Unchecked: o.Unchecked,
	}
}

// silenceRand is the stream that picks silent owners.
func (p plan) silenceRand() *rand.Rand {
	return rand.New(rand.NewPCG(p.opts.Boost.Seed, streamSilence))
}

// leaveWait is how long Run waits, after the user is done, for the owners
// to leave: the idle timeout of an owner that missed Final and Abort.
func (p plan) leaveWait() time.Duration { return p.timing.IdleTimeout + time.Minute }

// ownerIDs are the simulated owners' ids.
func (p plan) ownerIDs() []protocol.PeerID {
	ids := make([]protocol.PeerID, len(p.opts.Data.Owners))
	for i := range ids {
		ids[i] = OwnerID(i)
	}
	return ids
}
