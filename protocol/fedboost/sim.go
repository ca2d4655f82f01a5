package fedboost

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
)

// SimOptions configures one federated run over the in-memory network in
// virtual time: the real Owner and User state machines, one loop each.
type SimOptions struct {
	// Public is the session's configuration; Session, Roster and Beacon
	// are filled in (owner ids OwnerID(i), beacon from Seed).
	Public Public
	Owners []*dataset.Dataset
	Seed   uint64
	// Delay is the one-way latency of every link (default 1 ms).
	Delay      time.Duration
	MaxVirtual time.Duration // default 24 h
	Log        hclog.Logger
	OnTree     func(TreeReport)
	OnSum      func(tree, node int, total []float64)
	// Ledger, if set, gives owner i its ledger (default: empty, unlimited).
	Ledger func(i int) *protocol.MemLedger
	// Setup, if set, may change the network before the session starts.
	Setup func(n *memnet.Network, user protocol.PeerID, owners []protocol.PeerID)
}

// SimResult is what a run measured.
type SimResult struct {
	Session string
	Model   *dpboost.Model
	Trees   []TreeReport
	Owners  []*Owner
	Ledgers []*protocol.MemLedger
	// Traffic sent by owners: in all, and per owner per tree it took part
	// in (sum over trees of the group size), plus the user's.
	OwnerMsgs, OwnerBytes               int64
	MsgsPerOwnerTree, BytesPerOwnerTree float64
	UserMsgs, UserBytes                 int64
	Virtual, Wall                       time.Duration
	Dropped                             map[string]int
	// Outcome is the data user's; OwnerOutcomes[i] is what owner i logged
	// (zero if it left no session).
	Outcome       protocol.Outcome
	OwnerOutcomes []protocol.Outcome
}

// Disagreeing lists the owners whose outcome is not the data user's.
func (r *SimResult) Disagreeing() []int {
	var out []int
	for i, o := range r.OwnerOutcomes {
		if o != r.Outcome {
			out = append(out, i)
		}
	}
	return out
}

// OwnerID names owner i (sorting by id is sorting by index).
func OwnerID(i int) protocol.PeerID { return protocol.PeerID(fmt.Sprintf("owner-%06d", i)) }

// UserID is the simulated data user.
const UserID protocol.PeerID = "user"

// Simulate runs one session.
func Simulate(o SimOptions) (*SimResult, error) {
	if len(o.Owners) == 0 {
		return nil, errors.New("fedboost: no owners")
	}
	if o.Delay == 0 {
		o.Delay = time.Millisecond
	}
	if o.MaxVirtual == 0 {
		o.MaxVirtual = 24 * time.Hour
	}
	if o.Log == nil {
		o.Log = hclog.NewNullLogger()
	}
	start := time.Now()
	pub := o.Public
	pub.Session = fmt.Sprintf("fed-%016x", o.Seed)
	pub.Beacon = []byte(fmt.Sprintf("beacon-%d", o.Seed))
	pub.Roster = nil
	for i := range o.Owners {
		pub.Roster = append(pub.Roster, OwnerID(i))
	}
	if err := pub.Validate(); err != nil {
		return nil, err
	}
	net := memnet.New(memnet.Options{Seed: o.Seed, Deterministic: true, Delay: o.Delay, Logger: o.Log.Named("memnet")})
	defer net.Close()
	res := &SimResult{Session: pub.Session, OwnerOutcomes: make([]protocol.Outcome, len(o.Owners))}
	for i, d := range o.Owners {
		ep, err := net.Join(pub.Roster[i])
		if err != nil {
			return nil, err
		}
		led := protocol.NewMemLedger(1e9)
		if o.Ledger != nil {
			led = o.Ledger(i)
		}
		ow, err := NewOwner(pub.Roster[i], protocol.Direct{Tr: ep, Log: o.Log}, OwnerConfig{
			User: UserID, Data: d, Ledger: led, MaxEpsilon: 1e9, AllowNoNoise: !pub.Noise, NoneCharge: 1,
			MinParties: pub.Sum.MinParties,
			// The simulated deployment's owners hold the bound the user
			// announces (a closed deployment when it is a number).
			Colluders: max(0, pub.Colluders),
			Noise:     rng.Derive(o.Seed, 0x6e6f697365, uint64(i)), SumRand: rng.Derive(o.Seed, 0x73756d, uint64(i)),
			Clock: ep.Clock(), Log: o.Log.Named("owner"),
			OnOutcome: func(out protocol.Outcome) { res.OwnerOutcomes[i] = out },
		})
		if err != nil {
			return nil, err
		}
		if err := ow.Attach(ep); err != nil {
			return nil, err
		}
		res.Owners = append(res.Owners, ow)
		res.Ledgers = append(res.Ledgers, led)
	}
	uep, err := net.Join(UserID)
	if err != nil {
		return nil, err
	}
	var done bool
	var runErr error
	schema := pub.Schema
	u, err := NewUser(UserID, protocol.Direct{Tr: uep, Log: o.Log}, UserConfig{
		Public: &pub, ClassNames: schema.Classes, Features: o.Owners[0].Features,
		AnnounceDelay: 100 * time.Millisecond, SumRand: rng.Derive(o.Seed, 0x73756d, 1<<40),
		Clock: uep.Clock(), Log: o.Log.Named("user"), OnSum: o.OnSum,
		OnTree: func(r TreeReport) {
			res.Trees = append(res.Trees, r)
			if o.OnTree != nil {
				o.OnTree(r)
			}
		},
		OnDone: func(m *dpboost.Model, err error) { res.Model, runErr, done = m, err, true },
	})
	if err != nil {
		return nil, err
	}
	if err := u.Attach(uep); err != nil {
		return nil, err
	}
	if o.Setup != nil {
		o.Setup(net, UserID, pub.Roster)
	}
	clock := net.Clock()
	t0 := clock.Now()
	u.Start()
	err = net.RunUntil(func() bool { return done }, o.MaxVirtual)
	res.Virtual = clock.Now().Sub(t0)
	if err != nil && !done {
		st, uerr := u.State()
		return res, fmt.Errorf("fedboost: %w (user %s, %v)", err, st, uerr)
	}
	// Let the Final (or Abort) reach the owners.
	_ = net.RunUntil(func() bool {
		for _, ow := range res.Owners {
			if ow.State() == OwnerJoined {
				return false
			}
		}
		return true
	}, pub.IdleTimeout+time.Minute)
	participations := 0
	for _, r := range res.Trees {
		participations += r.Group
	}
	for _, id := range pub.Roster {
		s := net.Stats(id)
		res.OwnerMsgs += s.MsgsSent
		res.OwnerBytes += s.BytesSent
	}
	if participations > 0 {
		res.MsgsPerOwnerTree = float64(res.OwnerMsgs) / float64(participations)
		res.BytesPerOwnerTree = float64(res.OwnerBytes) / float64(participations)
	}
	us := net.Stats(UserID)
	res.UserMsgs, res.UserBytes = us.MsgsSent, us.BytesSent
	res.Dropped = u.Stats().Snapshot()
	for _, ow := range res.Owners {
		for k, v := range ow.Stats().Snapshot() {
			res.Dropped[k] += v
		}
	}
	res.Outcome = u.Outcome()
	res.Wall = time.Since(start)
	return res, runErr
}
