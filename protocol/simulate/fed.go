package simulate

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/memnet"
)

// FedOptions configures one federated DPBoost run over the in-memory
// network in virtual time: the real fedboost Owner and User state
// machines, one loop each.
type FedOptions struct {
	// Public is the session's configuration; Session, Roster and Beacon
	// are filled in (owner ids OwnerID(i), beacon from Seed).
	Public fedboost.Public
	Owners []*dataset.Dataset
	Seed   uint64
	// Delay is the one-way latency of every link (default 1 ms).
	Delay      time.Duration
	MaxVirtual time.Duration // default 24 h
	Log        hclog.Logger
	OnTree     func(fedboost.TreeReport)
	OnSum      func(tree, node int, total []float64)
	// Ledger, if set, gives owner i its ledger (default: empty, unlimited).
	Ledger func(i int) *protocol.MemLedger
	// Setup, if set, may change the network before the session starts.
	Setup func(n *memnet.Network, user protocol.PeerID, owners []protocol.PeerID)
	// Tap, if set, is the network's memnet.Options.Tap (an adversary).
	Tap func(from, to protocol.PeerID, topic bool, name string, data []byte) [][]byte
	// Owner, if set, may change owner i's configuration.
	Owner func(i int, c *fedboost.OwnerConfig)
}

// FedResult is what a federated run measured.
type FedResult struct {
	Session string
	Model   *dpboost.Model
	Trees   []fedboost.TreeReport
	Owners  []*fedboost.Owner
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
func (r *FedResult) Disagreeing() []int {
	var out []int
	for i, o := range r.OwnerOutcomes {
		if o != r.Outcome {
			out = append(out, i)
		}
	}
	return out
}

// fedPlan checks o, fills in its defaults and the session's public
// configuration (session id, roster and beacon from the seed).
func fedPlan(o FedOptions) (FedOptions, fedboost.Public, error) {
	if len(o.Owners) == 0 {
		return o, fedboost.Public{}, errors.New("simulate: fed: no owners")
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
	pub := o.Public
	pub.Session = fmt.Sprintf("fed-%016x", o.Seed)
	pub.Beacon = []byte(fmt.Sprintf("beacon-%d", o.Seed))
	pub.Roster = nil
	for i := range o.Owners {
		pub.Roster = append(pub.Roster, OwnerID(i))
	}
	if err := pub.Validate(); err != nil {
		return o, pub, err
	}
	return o, pub, nil
}

// fedOwner is owner i's configuration in a run of pub.
func fedOwner(o FedOptions, pub *fedboost.Public, i int, led *protocol.MemLedger) fedboost.OwnerConfig {
	return fedboost.OwnerConfig{
		User: UserID, Data: o.Owners[i], Ledger: led, MaxEpsilon: 1e9, AllowNoNoise: !pub.Noise, NoneCharge: 1,
		MinParties: pub.Sum.MinParties,
		// The simulated deployment's owners hold the bound the user
		// announces (a closed deployment when it is a number).
		Colluders:   max(0, pub.Colluders),
		NoiseSecret: rng.SecretOf(o.Seed, 0x6e6f697365, uint64(i)), SumRand: rng.Derive(o.Seed, 0x73756d, uint64(i)),
		Log: o.Log.Named("owner"),
	}
}

// RunFed runs one federated DPBoost session.
func RunFed(opts FedOptions) (*FedResult, error) {
	o, pub, err := fedPlan(opts)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	nopts := netOptions(o.Seed, o.Delay, 0, 0, o.Log)
	nopts.Tap = o.Tap
	net := memnet.New(nopts)
	defer net.Close()
	res := &FedResult{Session: pub.Session, OwnerOutcomes: make([]protocol.Outcome, len(o.Owners))}
	for i := range o.Owners {
		if err := fedAddOwner(net, o, &pub, res, i); err != nil {
			return nil, err
		}
	}
	var done bool
	var runErr error
	u, err := fedUser(net, o, &pub, res, func(m *dpboost.Model, err error) { res.Model, runErr, done = m, err, true })
	if err != nil {
		return nil, err
	}
	clock := net.Clock()
	t0 := clock.Now()
	u.Start()
	err = net.RunUntil(func() bool { return done }, o.MaxVirtual)
	res.Virtual = clock.Now().Sub(t0)
	if err != nil && !done {
		st, uerr := u.State()
		return res, fmt.Errorf("simulate: fed: %w (user %s, %v)", err, st, uerr)
	}
	// Let the Final (or Abort) reach the owners.
	_ = net.RunUntil(func() bool {
		for _, ow := range res.Owners {
			if ow.State() == fedboost.OwnerJoined {
				return false
			}
		}
		return true
	}, pub.IdleTimeout+time.Minute)
	fedTraffic(net, &pub, u, res)
	res.Wall = time.Since(start)
	return res, runErr
}

func fedAddOwner(net *memnet.Network, o FedOptions, pub *fedboost.Public, res *FedResult, i int) error {
	ep, err := net.Join(pub.Roster[i])
	if err != nil {
		return err
	}
	led := protocol.NewMemLedger(1e9)
	if o.Ledger != nil {
		led = o.Ledger(i)
	}
	cfg := fedOwner(o, pub, i, led)
	if o.Owner != nil {
		o.Owner(i, &cfg)
	}
	cfg.OnOutcome = func(out protocol.Outcome) { res.OwnerOutcomes[i] = out }
	ow, err := fedboost.StartOwner(ep, cfg) // the endpoint's clock, posting inline
	if err != nil {
		return err
	}
	res.Owners = append(res.Owners, ow)
	res.Ledgers = append(res.Ledgers, led)
	return nil
}

// fedUser lets Setup change the network, then joins and starts the data
// user (the caller's Start announces).
func fedUser(net *memnet.Network, o FedOptions, pub *fedboost.Public, res *FedResult, onDone func(*dpboost.Model, error)) (*fedboost.User, error) {
	uep, err := net.Join(UserID)
	if err != nil {
		return nil, err
	}
	if o.Setup != nil {
		o.Setup(net, UserID, pub.Roster)
	}
	u, err := fedboost.StartUser(uep, fedboost.UserConfig{
		Public: pub, ClassNames: pub.Schema.Classes, Features: o.Owners[0].Features,
		AnnounceDelay: 100 * time.Millisecond, SumRand: rng.Derive(o.Seed, 0x73756d, 1<<40),
		Log: o.Log.Named("user"), OnSum: o.OnSum,
		OnTree: func(r fedboost.TreeReport) {
			res.Trees = append(res.Trees, r)
			if o.OnTree != nil {
				o.OnTree(r)
			}
		},
		OnDone: onDone,
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// fedTraffic records the owners' and the user's traffic and the drops.
func fedTraffic(net *memnet.Network, pub *fedboost.Public, u *fedboost.User, res *FedResult) {
	participations := 0
	for _, r := range res.Trees {
		participations += r.Group
	}
	res.OwnerMsgs, res.OwnerBytes = sent(net, pub.Roster)
	if participations > 0 {
		res.MsgsPerOwnerTree = float64(res.OwnerMsgs) / float64(participations)
		res.BytesPerOwnerTree = float64(res.OwnerBytes) / float64(participations)
	}
	res.UserMsgs, res.UserBytes = sent(net, []protocol.PeerID{UserID})
	res.Dropped = u.Stats().Snapshot()
	for _, ow := range res.Owners {
		addDrops(res.Dropped, ow.Stats().Snapshot())
	}
	res.Outcome = u.Outcome()
}
