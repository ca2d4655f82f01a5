package fedboost

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/lifecycle"
	"github.com/ppboost/ppboost/protocol/role"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// UserState is where the data user is.
type UserState int

const (
	UserIdle   UserState = iota // not started
	UserLevel                   // summing the histograms of one level of the current tree
	UserLeaves                  // summing the leaves of the current tree
	UserDone                    // final model published
	UserFailed                  // a sum or step failed; Abort published
)

func (s UserState) String() string {
	switch s {
	case UserIdle:
		return "idle"
	case UserLevel:
		return "level"
	case UserLeaves:
		return "leaves"
	case UserDone:
		return "done"
	case UserFailed:
		return "failed"
	}
	return fmt.Sprintf("UserState(%d)", int(s))
}

// UserConfig configures the data user.
type UserConfig struct {
	Public *Public
	// ClassNames name the classes in the model (the schema's K).
	ClassNames []string
	Features   []string
	// AnnounceDelay is how long the user waits after announcing the
	// configuration before the first sums when no owner says it holds
	// the configuration; with owners' acks, tree 1 starts when every
	// member holds it, or when none more said so for as long as the
	// configuration has been out (at least AnnounceDelay; onConfigAck).
	AnnounceDelay time.Duration
	SumRand       *rand.Rand // nil: rng.Secure
	Clock         protocol.Clock
	Log           hclog.Logger
	OnTree        func(TreeReport)
	OnDone        func(*dpboost.Model, error)
	// OnSum, if set, sees every revealed vector (node -1: the leaves), in
	// node order, after the event that revealed it (as every callback,
	// between the user's events): what the data user learns, for tests
	// and audits.
	OnSum func(tree, node int, total []float64)
}

// TreeReport describes one finished tree.
type TreeReport struct {
	Tree, Group, Sums int
	Eps               float64      // eps_t spent by each group member
	Model             dpboost.Tree // class 0's tree of a round of K > 2 classes
}

// User is the data user's side: it coordinates every secure sum, picks the
// splits from the noisy level histograms and the leaves from the noisy
// leaf sums (post-processing only), and publishes each decision.
//
// It is an engine.Machine run by an engine.Runner on its own driver. Its
// inputs are the sum traffic, the local start (Start), and its named
// timers: TimerAnnounce (the gossip warm-up after the announcement),
// lifecycle.TimerStep (the backstop of one level or of the leaves) and its
// coordinators' instance timers (TimerPrefix of the tree, handed to
// Coordinator.Fire). Each tree's coordinator is a sub-machine writing
// into the user's Out. Its lifecycle: Idle → Admitting (announced) →
// Running (tree 1 started) → Done (Final published) or Aborted (Abort
// published); UserState keeps the finer steps alongside.
type User struct {
	cfg      UserConfig
	pub      *Public
	self     protocol.PeerID
	log      hclog.Logger
	run      *engine.Runner
	rolePost *role.Post // what Start made (nil from New…): closed after the driver
	// look, when the transport has one (StartUser), says where the roster's
	// members listen: the announcement relays it (Public.RosterAddrs).
	look  protocol.AddressLookup
	coord *securesum.Coordinator
	// cfgBytes is the latest configuration envelope as sent down its tree
	// (cfgtree.go), cfgSent how often each member had it again on request
	// (at most maxConfigAsks per announcement).
	cfgBytes []byte
	cfgSent  map[protocol.PeerID]int
	// cfgAcks are the members that hold the first announcement's
	// configuration (RosterAck), until tree 1 starts; announcedAt is when
	// it went out (onConfigAck).
	cfgAcks     map[protocol.PeerID]bool
	announcedAt time.Time
	stats       protocol.Counters
	life        lifecycle.Session
	moves       moves
	b           *dpboost.Binning
	cols        []column
	seq         uint64

	state   UserState
	err     error
	outcome protocol.Outcome
	t       int
	level   int
	cur     *partial
	group   []protocol.PeerID
	vecs    map[int][]float64 // node (-1 leaves) -> summed vector
	waiting int
	sums    int
	trees   []dpboost.Tree
	boosted [][]dpboost.Tree // a Newton session of K > 2 classes: class k's trees
	// behind is set when a sum of the current tree covered fewer owners
	// than its group: the next tree start publishes the configuration and
	// the latest trees again for owners that missed them (startTree).
	behind bool
	// released are the complete trees as published, re-published at every
	// tree start for owners that missed them.
	released []*wire.FedTree
	model    *dpboost.Model

	status atomic.Pointer[userStatus] // status.go
}

var _ engine.Machine = (*User)(nil)

// TimerAnnounce is the user's timer from the announcement to the first
// tree (UserConfig.AnnounceDelay).
const TimerAnnounce = "announce"

// inputStart is the protocol of the local message Start injects: it never
// comes from the network (the transports deliver only the fed protocols,
// and Receive takes it only from the user itself).
const inputStart = "local:fedboost/start"

// SumReport is what the data user learns from one secure sum (OnSum):
// the revealed vector of a node (-1: the leaves) of a tree.
type SumReport struct {
	Tree, Node int
	Total      []float64
}

// NewUser prepares the data user.
func NewUser(self protocol.PeerID, post protocol.Poster, cfg UserConfig) (*User, error) {
	cfg = cfg.withRuntimeDefaults() // defaults.go
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b, err := cfg.Public.Binning()
	if err != nil {
		return nil, err
	}
	u := &User{cfg: cfg, pub: cfg.Public, self: self, log: cfg.Log.With("session", cfg.Public.Session), b: b,
		cols: columnsOf(cfg.Public.Schema, b)}
	u.life = lifecycle.Session{Drops: &u.stats, Log: cfg.Log} // End adds the session to its log line
	u.run = engine.NewRunner(newDriver(cfg.Clock, &u.stats, u.publishStatus), u, post,
		engine.RunnerOptions{OnNotify: u.notify})
	u.publishStatus()
	return u, nil
}

// notify maps the machine's notifications to the configured callbacks:
// each tree (OnTree), each revealed sum (OnSum), the end (OnDone, with the
// model or the error the published status holds).
func (u *User) notify(n engine.Notify) {
	switch v := n.Value.(type) {
	case TreeReport:
		if u.cfg.OnTree != nil {
			u.cfg.OnTree(v)
		}
	case SumReport:
		if u.cfg.OnSum != nil {
			u.cfg.OnSum(v.Tree, v.Node, v.Total)
		}
	case protocol.Outcome:
		if u.cfg.OnDone != nil {
			st := u.status.Load() // published after the event that ended the session
			u.cfg.OnDone(st.model, st.err)
		}
	}
}

// Attach installs the user as tr's handler (secure-sum traffic).
func (u *User) Attach(tr protocol.Transport) error {
	tr.SetHandler(u.Handle)
	return nil
}

// Handle queues an inbound message on the user's driver; it returns at once.
func (u *User) Handle(m protocol.Message) { u.run.Deliver(m) }

// Start announces the session and, after AnnounceDelay, starts tree 1.
func (u *User) Start() {
	u.run.Inject(engine.Message{From: u.self, Protocol: inputStart})
}

// Stats are the user's drop counters.
func (u *User) Stats() *protocol.Counters { return &u.stats }

// DriverStats is the saturation of the role's driver (engine.Stats).
func (u *User) DriverStats() engine.Stats { return u.run.Driver().Stats() }

// Receive applies one inbound message (engine.Machine): the local start,
// or secure-sum traffic for the current tree's coordinator. A refused
// message is counted (Stats) and returned as the error.
func (u *User) Receive(now time.Time, m engine.Message) ([]engine.Effect, error) {
	u.life.Begin(now)
	u.moves.begin(&u.life)
	err := u.receive(m)
	return u.life.Take(), err
}

// errStarted refuses a second Start.
var errStarted = errors.New("fed user: already started")

func (u *User) receive(m engine.Message) error {
	if m.Protocol == inputStart && m.From == u.self {
		if u.life.Phase() != lifecycle.Idle {
			return errStarted
		}
		if err := u.life.Join(u.pub.Session, lifecycle.Admitting, 0); err != nil {
			return err
		}
		u.moves.note(&u.life)
		u.announce()
		if u.state != UserFailed {
			u.cfgAcks, u.announcedAt = map[protocol.PeerID]bool{}, u.life.Now()
			u.life.Out.SetTimer(TimerAnnounce, u.cfg.AnnounceDelay)
		}
		return nil
	}
	if m.Protocol != wire.ProtoFedShamir {
		return u.drop(protocol.ErrUnexpected.Error(), protocol.ErrUnexpected)
	}
	env, err := wire.Unmarshal(m.Data, wire.MaxSumFrameBytes)
	if err != nil {
		return u.drop("malformed", err)
	}
	if env.GetRosterRequest() != nil {
		return u.onConfigRequest(m.From, env)
	}
	if env.GetRosterAck() != nil {
		return u.onConfigAck(m.From, env)
	}
	if u.coord == nil || int(env.GetHeader().GetRound()) != u.t {
		return u.drop("sum: late", fmt.Errorf("%w: round %d, tree %d", securesum.ErrLate, env.GetHeader().GetRound(), u.t))
	}
	u.coord.Handle(m.From, env)
	return nil
}

// onConfigRequest sends the latest configuration to a roster member that
// asks for it (an owner whose parent in the configuration tree forwarded
// nothing: cfgtree.go), once per member and announcement; anyone else, or
// a member asking again, is refused and counted.
func (u *User) onConfigRequest(from protocol.PeerID, env *wire.Envelope) error {
	if _, in := slices.BinarySearch(u.pub.Roster, from); !in || env.GetHeader().GetSession() != u.pub.Session {
		return u.drop(protocol.ErrUnexpected.Error(), fmt.Errorf("%w: a configuration request from outside the roster or session", protocol.ErrUnexpected))
	}
	if u.cfgSent[from] >= maxConfigAsks || u.cfgBytes == nil {
		return u.drop("configuration asked again", fmt.Errorf("%w: configuration asked again", protocol.ErrUnexpected))
	}
	u.cfgSent[from]++
	u.life.Out.Send(from, wire.ProtoFedShamir, u.cfgBytes)
	u.log.Debug("sent the configuration on request", "owner", string(from), "requests", len(u.cfgSent), "bytes", len(u.cfgBytes))
	return nil
}

// onConfigAck counts a member that holds the configuration (cfgtree.go):
// tree 1 starts when every member holds it, or when none more said so for
// as long as the configuration has been out (at least AnnounceDelay: the
// tree's levels do not deliver together, and an owner whose parent
// forwarded nothing asks configGrace after the head), and at the latest
// configWait after the announcement. An owner that never acks (crashed,
// or of an earlier version) costs at most that wait; with no ack at all
// tree 1 starts AnnounceDelay after the announcement, as before.
func (u *User) onConfigAck(from protocol.PeerID, env *wire.Envelope) error {
	if _, in := slices.BinarySearch(u.pub.Roster, from); !in || env.GetHeader().GetSession() != u.pub.Session {
		return u.drop(protocol.ErrUnexpected.Error(), fmt.Errorf("%w: a configuration ack from outside the roster or session", protocol.ErrUnexpected))
	}
	if u.state != UserIdle || u.cfgAcks == nil || u.cfgAcks[from] {
		return nil // after tree 1 started (a re-announcement's), or again
	}
	u.cfgAcks[from] = true
	if len(u.cfgAcks) == len(u.pub.Roster) {
		u.log.Debug("every member holds the configuration", "owners", len(u.cfgAcks), "since_announce", u.life.Now().Sub(u.announcedAt))
		u.life.Out.CancelTimer(TimerAnnounce)
		u.startTree(1)
		return nil
	}
	since := u.life.Now().Sub(u.announcedAt)
	quiet := max(u.cfg.AnnounceDelay, since)
	u.life.Out.SetTimer(TimerAnnounce, max(0, min(quiet, u.configWait()-since)))
	return nil
}

// configWait bounds the wait for the members' acks before tree 1: a
// level's backstop (stepTimeout), never less than AnnounceDelay.
func (u *User) configWait() time.Duration { return max(u.cfg.AnnounceDelay, u.stepTimeout()) }

// Fire applies the expiry of one of the user's timers (engine.Machine).
func (u *User) Fire(now time.Time, name string) ([]engine.Effect, error) {
	u.life.Begin(now)
	u.moves.begin(&u.life)
	switch {
	case name == TimerAnnounce:
		if u.life.Phase() == lifecycle.Admitting && u.state == UserIdle {
			if n := len(u.cfgAcks); n > 0 {
				u.log.Debug("tree 1 starts without every member's configuration ack", "acked", n, "owners", len(u.pub.Roster),
					"since_announce", u.life.Now().Sub(u.announcedAt))
			}
			u.startTree(1)
		}
	case name == lifecycle.TimerStep:
		if u.state == UserLevel || u.state == UserLeaves {
			u.fail(fmt.Errorf("%w: tree %d level %d did not finish within %v", protocol.ErrSessionFailed, u.t, u.level, u.stepTimeout()))
		}
	case u.coord != nil && u.coord.Fire(name):
	case strings.HasPrefix(name, "tree"):
		// an earlier tree's coordinator: its sums are over
	default:
		return nil, fmt.Errorf("fed user: %w %q", errUnknownTimer, name)
	}
	return u.life.Take(), nil
}

// drop counts and logs a refused input and returns err (Receive's error).
func (u *User) drop(reason string, err error) error {
	u.life.Drop(reason, "err", err)
	return err
}

func (u *User) header(round int) *wire.Header {
	u.seq++
	return &wire.Header{Version: wire.Version, Session: u.pub.Session, Round: uint32(round), Seq: u.seq}
}

func (u *User) publish(env *wire.Envelope) { u.publishTo(env, nil) }

// publishTo publishes a control message and sends the same bytes to each
// of to on the sum stream, ahead of the SumStart that needs it (one
// stream, in order): an owner applies a tree before it deals the next
// sum, one one-way delay after it leaves, while gossip may take several
// hops on a large roster. The second copy is ignored as a tree the owner
// already applied (as every re-published tree is).
func (u *User) publishTo(env *wire.Envelope, to []protocol.PeerID) {
	b, err := wire.Marshal(env, wire.MaxControlBytes)
	if err != nil {
		u.fail(fmt.Errorf("control message: %w", err))
		return
	}
	u.life.Out.Publish(wire.TopicFedControl, b)
	for _, p := range to {
		u.life.Out.Send(p, wire.ProtoFedShamir, b)
	}
}

// announce publishes the configuration's head on the control topic and
// sends the configuration to the first members of its tree, which forward
// it (cfgtree.go): the user sends protocol.TreeFanout copies whatever the
// roster's size, not one to each owner.
func (u *User) announce() {
	w := u.pub.Wire()
	if u.pub.RosterAddrs == nil {
		w.RosterAddrs = u.rosterAddrs()
	}
	b, err := wire.Marshal(&wire.Envelope{Header: u.header(0), Body: &wire.Envelope_FedConfig{FedConfig: w}}, wire.MaxControlBytes)
	if err != nil {
		u.fail(fmt.Errorf("control message: %w", err))
		return
	}
	u.cfgBytes, u.cfgSent = b, map[protocol.PeerID]int{}
	u.publish(&wire.Envelope{Header: u.header(0), Body: &wire.Envelope_RosterHead{RosterHead: configHead(b, len(u.pub.Roster))}})
	_, hi := protocol.TreeChildren(-1, len(u.pub.Roster), protocol.TreeFanout)
	for _, p := range u.pub.Roster[:hi] {
		u.life.Out.Send(p, wire.ProtoFedShamir, b)
	}
}

// rosterAddrs are the announcement's roster_addrs: where each member
// listens as the transport knows it now (the owners connected and
// subscribed before Start), within the bounds owners check
// (validateRosterAddrs) and within rosterAddrBudget bytes in all (over it,
// each member's first address only, TCP first; still over: none). nil
// without an AddressLookup or with no address known at all.
func (u *User) rosterAddrs() []string {
	out, ok := protocol.EncodeRosterAddrs(u.look, u.pub.Roster, rosterAddrBudget)
	if !ok {
		u.log.Warn("roster addresses left out of the announcement: too many for one control message", "budget", rosterAddrBudget)
	}
	return out
}

// rosterAddrBudget bounds the roster_addrs of one announcement, a quarter
// of a control message: the rest of the FedConfig (roster ids, schema)
// keeps its room.
const rosterAddrBudget = wire.MaxControlBytes / 4

func (u *User) startTree(t int) {
	if u.state == UserFailed {
		return
	}
	if t == 1 {
		u.cfgAcks = nil
		if err := u.life.Go(lifecycle.Running); err != nil {
			u.fail(err)
			return
		}
		u.moves.note(&u.life)
	}
	u.t, u.cur = t, &partial{}
	u.group = u.pub.Group(t)
	u.sums = 0
	// One coordinator per tree: its dealer floor is the tree's m_t. Its
	// instance timers are the user's, named under the tree's prefix.
	env := securesum.PosterEnvFor(wire.Fed(), u.self, outPoster{&u.life.Out}, sessionClock{&u.life}, u.cfg.SumRand, u.log.Named("shamir"))
	env.Dropped = func(r string) { u.stats.Inc(r) } // the coordinator logs its drops itself
	env.Timers, env.TimerPrefix = &u.life.Out, fmt.Sprintf("tree%d/", t)
	u.coord = securesum.NewCoordinator(env, u.pub.SumParams(t))
	if u.pub.Newton() {
		u.cur = u.pub.NewtonTree(u.b, t)
		u.startLeaves()
	} else {
		u.startLevel(0)
	}
	if behind := u.behind; t > 1 && behind && u.state != UserFailed {
		u.behind = false
		// Again, for an owner that missed them: the configuration and the
		// last republishWindow complete trees (an owner that joins late
		// must add every earlier tree to its predictions before it can
		// compute its gradients for tree t). Owners ignore trees they
		// applied; the cost is at most republishWindow small messages per
		// tree, so a session of T trees sends O(T) of them, not O(T^2). An
		// owner more than republishWindow trees behind stays silent until
		// the Final, which carries the whole model.
		//
		// Only when the tree before left an owner of its group out (issue
		// 31): every owner forwards them to its mesh, and at 200 owners
		// the configuration (the roster and its addresses, tens of KB)
		// cost each tree that carried it 2-6 one-way delays, although an
		// owner that is current needs none of it (its trees come on the
		// sum stream, User.publishTo). And after the tree's SumStarts,
		// with which they share each connection's congestion window. The
		// configuration goes at most at trees 2, 3, 5, 9, 17, ... (O(log
		// T) times) even while an owner stays silent.
		if n := t - 1; n&(n-1) == 0 {
			u.announce()
		}
		for i := max(0, len(u.released)-republishWindow); i < len(u.released); i++ {
			u.publish(&wire.Envelope{Header: u.header(i + 1), Body: &wire.Envelope_FedTree{FedTree: u.released[i]}})
		}
	}
}

// republishWindow is how many of the latest complete trees each new tree
// re-publishes for owners that missed them.
const republishWindow = 32

// stepTimeout bounds one level (or the leaves): every sum has its own
// timeouts, this is the backstop. A sum's dealing may be extended up to its
// cap while shares keep arriving (securesum.Params.Cap) and its reveal takes
// a few more steps, so the backstop is never shorter than twice the cap:
// a slow but progressing level is not failed by a fixed step.
func (u *User) stepTimeout() time.Duration { return max(u.pub.StepTimeout, 2*u.pub.Sum.Cap()) }

func (u *User) startLevel(d int) {
	u.state, u.level = UserLevel, d
	u.vecs = map[int][]float64{}
	u.life.Step(u.stepTimeout())
	first := 1<<d - 1
	for node := first; node < 2*first+1; node++ {
		u.open(node, u.pub.NodeLayout(u.b, u.t, node))
	}
}

func (u *User) startLeaves() {
	u.state, u.level = UserLeaves, u.pub.Boost.Depth
	u.vecs = map[int][]float64{}
	u.life.Step(u.stepTimeout())
	u.open(-1, u.pub.LeafLayout(u.t))
}

// open starts the sums of one vector (one per chunk).
func (u *User) open(node int, l Layout) {
	vec := make([]float64, l.Length)
	u.vecs[node] = vec
	for c := range l.Chunks {
		lo, hi := Chunk(l.Length, c)
		purpose := leafPurpose(c)
		if node >= 0 {
			purpose = nodePurpose(node, c)
		}
		u.waiting++
		u.sums++
		t, st := u.t, u.state
		err := u.coord.Sum(securesum.Request{Header: u.header(u.t), Purpose: purpose, Roster: u.group, RosterVersion: 1,
			Length: hi - lo, Beacon: u.pub.Beacon}, func(total []float64, parties int, err error) {
			if u.t != t || u.state != st {
				return
			}
			if err != nil {
				u.fail(fmt.Errorf("tree %d sum %s: %w", t, purpose, err))
				return
			}
			if parties < len(u.group) {
				u.behind = true // an owner of the group did not deal: it may have missed something
			}
			copy(vec[lo:hi], total)
			u.waiting--
			if u.waiting == 0 {
				// After the coordinator's own bookkeeping of this sum,
				// within the same transition.
				u.life.Out.Later(u.stepDone)
			}
		})
		if err != nil {
			u.fail(err)
			return
		}
	}
}

func (u *User) stepDone() {
	cfg := u.pub.Boost
	if u.cfg.OnSum != nil { // what the data user learns, reported to the application
		nodes := slices.Sorted(maps.Keys(u.vecs))
		for _, node := range nodes {
			u.life.Out.Notify(engine.Notify{Event: engine.EventReport, Round: u.t, Value: SumReport{Tree: u.t, Node: node, Total: slices.Clone(u.vecs[node])}})
		}
	}
	private := u.pub.Noise && cfg.Private()
	if u.state == UserLeaves {
		L := 1 << cfg.Depth
		v := u.vecs[-1]
		rule := dpboost.LeafRule{Lambda: cfg.Lambda, Bound: cfg.LeafBound(u.t)}
		kappa := 1.0
		if u.pub.Newton() {
			d, _ := u.pub.NewtonDesign() // validated at announce
			kappa = d.Kappa
		}
		B := u.pub.Boosters()
		if u.pub.Newton() {
			// Class k's leaf i at j = k L + i, its (kappa) hessian B L
			// further (B = 1 for two classes).
			for j := range B * L {
				u.cur.leaf = append(u.cur.leaf, cfg.NewtonLeaf(v[j], v[B*L+j]/kappa))
			}
		} else {
			for j := range L {
				g, n := v[j], v[L+j]
				if private {
					n = max(n, 0) // a noisy count below 0 is post-processed to 0
				}
				u.cur.leaf = append(u.cur.leaf, cfg.LearningRate*dpboost.ReleaseLeaf(g, n, rule, nil))
			}
		}
		u.cur.complete = true
		done := u.cur.wire()
		var next []protocol.PeerID
		if u.t < cfg.Trees {
			next = u.pub.Group(u.t + 1) // they add it to their predictions before dealing tree t+1
		}
		u.publishTo(&wire.Envelope{Header: u.header(u.t), Body: &wire.Envelope_FedTree{FedTree: done}}, next)
		u.released = append(u.released, done)
		tree := u.cur.class(0).tree()
		u.trees = append(u.trees, tree)
		if B > 1 {
			if u.boosted == nil {
				u.boosted = make([][]dpboost.Tree, B)
			}
			for k := range B {
				u.boosted[k] = append(u.boosted[k], u.cur.class(k).tree())
			}
		}
		u.life.Out.Notify(engine.Notify{Event: engine.EventRoundDone, Round: u.t,
			Value: TreeReport{Tree: u.t, Group: len(u.group), Sums: u.sums, Eps: u.pub.TreeEpsilon(u.t), Model: tree}})
		if u.t == cfg.Trees {
			u.finish()
			return
		}
		u.startTree(u.t + 1)
		return
	}
	d := u.level
	first := 1<<d - 1
	for node := first; node < 2*first+1; node++ {
		v := u.vecs[node]
		chosen := u.pub.NodeColumns(u.t, node, len(u.cols))
		cs := make([]column, len(chosen))
		for i, c := range chosen {
			cs[i] = u.cols[c]
		}
		f, k := bestSplit(u.b, cs, v, cfg.Lambda, u.cellNoiseVar(u.pub.NodeLayout(u.b, u.t, node)))
		u.cur.feature = append(u.cur.feature, f)
		u.cur.bin = append(u.cur.bin, k)
	}
	u.cur.levels = d + 1
	// The group routes its rows by it before dealing the next level.
	u.publishTo(&wire.Envelope{Header: u.header(u.t), Body: &wire.Envelope_FedTree{FedTree: u.cur.wire()}}, u.group)
	if d+1 == cfg.Depth {
		u.startLeaves()
	} else {
		u.startLevel(d + 1)
	}
}

// tieTol: candidates that make the same partition of a node's rows have
// the same gain, but the secure sums carry each owner's cell rounded to
// 1/(2S): a prefix sum g_L over c cells of L owners is off by up to
// cL/(2S) (12 owners, 8 cells: 3e-6 at S = 2^24), which moves a gain
// g_L^2/(n_L+lambda) by about 2 cL/(2S)/|g_L| relative (4e-7 for |g_L| = 15).
// The one-process trainer's exact tie goes to the first candidate, and so
// does bestSplit's near-tie (within tieTol relative).
const tieTol = 1e-5

// cellNoiseVar is the variance of one released cell's noise in decoded
// units: DLap(tau) has variance 2a/(1-a)^2 ~ 2 tau^2 (encoded units), and a
// total over k <= |G_t| dealers carries k/h_t of it (the upper bound is
// used). 0 without noise.
func (u *User) cellNoiseVar(l Layout) float64 {
	np, noisy, err := u.pub.NoiseFor(u.t, l)
	if !noisy || err != nil {
		return 0
	}
	S := math.Ldexp(1, int(u.pub.Sum.ScaleBits))
	return np.SumVariance(len(u.group)) / (S * S)
}

func (u *User) finish() {
	cfg := u.pub.Boost
	acc := dpboost.Account(cfg)
	if u.pub.Newton() {
		acc = u.pub.newtonAccount()
	}
	m := &dpboost.Model{Format: dpboost.ModelFormat, Version: dpboost.ModelVersion, Config: cfg,
		Account: acc, Schema: u.pub.Schema, Features: u.cfg.Features, ClassNames: u.cfg.ClassNames,
		Bins: u.b.Bins, Lo: u.b.Lo, Boosters: [][]dpboost.Tree{u.trees}}
	if u.boosted != nil {
		m.Boosters = u.boosted // softmax over K > 2 classes: one booster per class
	}
	var buf bytes.Buffer
	if err := m.Write(&buf); err != nil {
		u.fail(err)
		return
	}
	model, err := dpboost.ReadModel(bytes.NewReader(buf.Bytes()), "federated model")
	if err != nil {
		u.fail(err)
		return
	}
	u.model, u.state = model, UserDone
	u.outcome = protocol.NewOutcome(len(u.trees), cfg.Trees, OutcomeUnit, nil)
	u.publish(&wire.Envelope{Header: u.header(cfg.Trees), Body: &wire.Envelope_Final{Final: wire.FinalDPBoost(model, u.outcome.Wire())}})
	u.life.End(u.outcome) // logs it; OnDone(model, nil)
	u.moves.note(&u.life)
}

// OutcomeUnit is what a federated session counts: its outcome is complete
// (every tree) or failed (no model: a tree's sums are not a model).
const OutcomeUnit = "trees"

func (u *User) fail(err error) {
	if u.state == UserFailed || u.state == UserDone {
		return
	}
	u.state, u.err = UserFailed, err
	if u.coord != nil {
		u.coord.Stop() // no sum of the tree outlives the session
	}
	u.outcome = protocol.Failed(len(u.trees), u.pub.Boost.Trees, OutcomeUnit, err)
	abort := &wire.Abort{Reason: u.outcome.Reason, Outcome: u.outcome.Wire()}
	if b, merr := wire.Marshal(&wire.Envelope{Header: u.header(u.t), Body: &wire.Envelope_Abort{Abort: abort}}, wire.MaxControlBytes); merr == nil {
		u.life.Out.Publish(wire.TopicFedControl, b)
	}
	u.life.End(u.outcome) // cancels the step timer, logs; OnDone(nil, err)
	u.moves.note(&u.life)
}
