package pfds

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/crypto/dlap"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/lifecycle"
	"github.com/ppboost/ppboost/protocol/release"
	"github.com/ppboost/ppboost/protocol/role"
)

// State is an agent's session state.
type State int

const (
	StateIdle   State = iota // waiting for the announcement
	StateTrees               // tree published, collecting trees
	StateData                // data published, collecting data shares
	StateDone                // every share arrived or the data timeout fired
	StateFailed              // refused the session (parameters, schema, ledger)
)

func (s State) String() string {
	switch s {
	case StateIdle:
		return "idle"
	case StateTrees:
		return "trees"
	case StateData:
		return "data"
	case StateDone:
		return "done"
	case StateFailed:
		return "failed"
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// Rule violations: the error Receive returns (the input is dropped, the
// state unchanged), counted per reason in Agent.Dropped; malformed input
// returns the decoders' ErrMalformed or ErrVersion.
var (
	ErrOtherTopic    = errors.New("pfds: message not on the pfds topic")
	ErrWrongSession  = errors.New("pfds: message of another session")
	ErrNotAnnouncer  = errors.New("pfds: announcement not from the announcer")
	ErrNotInRoster   = errors.New("pfds: author not in the roster")
	ErrSpoofed       = errors.New("pfds: author is not the sender")
	ErrDuplicate     = errors.New("pfds: duplicate share")
	ErrSchema        = errors.New("pfds: schema digest differs from ours")
	ErrShareMismatch = errors.New("pfds: data share does not fit the author's tree")
	ErrNotAdmitted   = errors.New("pfds: roster member not admitted")
	errUnknownTimer  = errors.New("pfds: unknown timer")
)

// Config is one agent's local configuration.
type Config struct {
	ID        protocol.PeerID
	Announcer protocol.PeerID // the only peer whose announcement is accepted
	Domain    *pfds.Domain
	Schema    string // digest of the agent's public schema
	Data      pfds.Local
	Ledger    protocol.Ledger
	// Admit, if set, must accept every roster member (the owner's
	// --allow list): a roster naming another peer is refused before
	// anything is charged.
	Admit func(protocol.PeerID) bool
	// SessionMaxEpsilon is the most this agent spends in one session (0: no
	// cap below the lifetime budget).
	SessionMaxEpsilon float64
	// Rand is the agent's noise source: rng.Secure() in production,
	// pfds.AgentRand(seed, rosterIndex) to reproduce the oracle.
	Rand *rand.Rand
	Log  hclog.Logger
}

// Validate names the first missing field.
func (c *Config) Validate() error {
	switch {
	case c.ID == "":
		return fmt.Errorf("pfds: Config.ID is empty")
	case c.Announcer == "":
		return fmt.Errorf("pfds: Config.Announcer is empty")
	case c.Domain == nil:
		return fmt.Errorf("pfds: Config.Domain is nil")
	case c.Ledger == nil:
		return fmt.Errorf("pfds: Config.Ledger is nil")
	case c.Rand == nil:
		return fmt.Errorf("pfds: Config.Rand is nil")
	}
	return nil
}

// The agent's named timers (engine.SetTimer): the end of the tree phase, of
// the data phase, and the retransmission tick.
const (
	TimerTrees = "trees"
	TimerData  = "data"
	TimerRetry = "retry"
)

// Retransmission: pubsub delivery is best effort (a peer that is not yet in
// the gossipsub mesh can miss a publication), so an agent re-publishes its
// own shares every retryEvery of the phase timeouts, retryCount times in
// all, covering both phases. Receivers ignore the copies they already hold.
const (
	retryParts = 4
)

// Agent is one data owner's PFDS state machine, an engine.Machine: Receive
// and Fire take an input and return effects (publish, set a timer, notify).
// It is not safe for concurrent use (its driver serializes Receive and
// Fire), except Validate, which reads only the view the transitions publish.
//
// Its lifecycle is a lifecycle.Session's: an accepted announcement joins
// (Admitting) and, the roster being in it, runs at once (StateTrees and
// StateData are both Running); a refusal or a failure ends Aborted
// (StateFailed), the data phase's end Done (StateDone). The charge for
// everything it releases goes through the session's release gate, its
// refusals through Drop, its end through End (which notifies). State
// keeps the finer steps.
type Agent struct {
	cfg   Config
	state State
	life  lifecycle.Session
	moves []lifecycle.Phase // the phases the current transition passed through (the table checks each move)
	ann   *Announce
	self  int // roster index

	own     *pfds.Tree // with the private leaf counts
	treeMsg []byte     // own encoded shares, for retransmission
	dataMsg []byte
	retries int
	trees   map[protocol.PeerID]*pfds.Tree
	data    map[protocol.PeerID]*pfds.DataShare
	ownData *pfds.DataShare
	// complete marks the authors whose tree and fitting data share are
	// both in; their rows are regenerated on demand (Shares), not kept:
	// 100 agents holding every share's rows would take gigabytes.
	complete map[protocol.PeerID]bool

	// Dropped counts discarded inputs by reason.
	Dropped protocol.Counters
	// Err is why the agent failed, in StateFailed.
	Err error
	// Refused: the agent failed before releasing anything (not in the
	// roster, another schema, a ledger that cannot pay).
	Refused bool

	// view is what Validate reads from transport goroutines.
	view atomic.Pointer[agentView]
}

// agentView is the validator's view of the session: the announcement and
// roster index, immutable once set, and per roster member whether its tree
// (bit haveTree) and data share (bit haveData) are in, set with atomics.
type agentView struct {
	ann   *Announce
	index map[protocol.PeerID]int
	have  []atomic.Uint32
}

const (
	haveTree uint32 = 1 << iota
	haveData
)

func (a *Agent) mark(from protocol.PeerID, bit uint32) {
	if v := a.view.Load(); v != nil {
		if i, ok := v.index[from]; ok {
			v.have[i].Or(bit)
		}
	}
}

var _ engine.Machine = (*Agent)(nil)

// NewAgent returns an idle agent.
func NewAgent(cfg Config) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	a := &Agent{cfg: cfg, trees: map[protocol.PeerID]*pfds.Tree{}, data: map[protocol.PeerID]*pfds.DataShare{},
		complete: map[protocol.PeerID]bool{}}
	a.life = lifecycle.Session{Ledger: cfg.Ledger, Drops: &a.Dropped, Log: cfg.Log,
		// The agent's noise is its Config.Rand's (the oracle's streams),
		// not the gate's: its secret only binds digests.
		Values: role.NewValues(cfg.Ledger, []byte("pfds agent: noise from Config.Rand"), cfg.SessionMaxEpsilon)}
	return a, nil
}

// State is the current state.
func (a *Agent) State() State { return a.state }

// Phase is the agent's lifecycle phase (PhaseOf its State).
func (a *Agent) Phase() lifecycle.Phase { return a.life.Phase() }

// Moves are the phases the last transition passed through, the first the
// one it began in (an announcement refused admits, then aborts): each
// consecutive pair is a move lifecycle allows (CanGo).
func (a *Agent) Moves() []lifecycle.Phase { return a.moves }

func (a *Agent) begin(now time.Time) {
	a.life.Begin(now)
	a.moves = append(a.moves[:0], a.life.Phase())
}

// moved records the lifecycle's phase if it changed.
func (a *Agent) moved() {
	if p := a.life.Phase(); a.moves[len(a.moves)-1] != p {
		a.moves = append(a.moves, p)
	}
}

// PhaseOf is the lifecycle phase of an agent in state s.
func PhaseOf(s State) lifecycle.Phase {
	switch s {
	case StateTrees, StateData:
		return lifecycle.Running
	case StateDone:
		return lifecycle.Done
	case StateFailed:
		return lifecycle.Aborted
	}
	return lifecycle.Idle
}

// enter moves the agent to state s, and its lifecycle along (an invalid
// move is refused there, and here: a bug in the agent, reported as the
// input's error). Ending states end the session with the agent's Outcome.
func (a *Agent) enter(s State) error {
	switch s {
	case StateTrees, StateData:
		if err := a.life.Go(lifecycle.Running); err != nil {
			return err
		}
		a.state = s
	case StateDone, StateFailed:
		a.state = s
		a.life.End(a.Outcome())
	default:
		return fmt.Errorf("pfds: no move to state %s", s)
	}
	a.moved()
	return nil
}

// Announcement is the session's announcement once accepted.
func (a *Agent) Announcement() *Announce { return a.ann }

func (a *Agent) drop(reason string, from protocol.PeerID, err error) error {
	a.life.Drop(reason, "from", from, "err", err)
	return err
}

// Validate is the topic validator's verdict on a message: Reject malformed,
// spoofed or unauthorized ones, Ignore duplicates and other sessions,
// Accept the rest. It does not change the state and, unlike the
// transitions, may run on any goroutine at any time: it reads only the
// view the transitions publish (atomically), never the agent's fields.
func (a *Agent) Validate(from protocol.PeerID, data []byte) protocol.Verdict {
	h, err := DecodeHeader(data)
	if err != nil {
		return protocol.Reject
	}
	if h.Author != from {
		return protocol.Reject
	}
	v := a.view.Load()
	if h.Kind == KindAnnounce {
		if from != a.cfg.Announcer {
			return protocol.Reject
		}
		if _, _, err := DecodeAnnounce(data); err != nil {
			return protocol.Reject
		}
		if v != nil {
			return protocol.Ignore
		}
		return protocol.Accept
	}
	if v == nil {
		return protocol.Accept // too early to judge: Receive buffers nothing and drops it
	}
	if h.Session != v.ann.Session {
		return protocol.Ignore
	}
	i, ok := v.index[from]
	if !ok {
		return protocol.Reject
	}
	have := v.have[i].Load()
	switch h.Kind {
	case KindTree:
		if have&haveTree != 0 {
			return protocol.Ignore
		}
		if _, _, err := DecodeSessionTree(data, a.cfg.Domain, v.ann); err != nil {
			return protocol.Reject
		}
	case KindData:
		if have&haveData != 0 {
			return protocol.Ignore
		}
		if _, _, err := DecodeDataShare(data, a.cfg.Domain.Classes); err != nil {
			return protocol.Reject
		}
	}
	return protocol.Accept
}

func (a *Agent) inRoster(id protocol.PeerID) bool {
	_, ok := a.view.Load().index[id]
	return ok
}

// Receive applies one inbound message (engine.Machine). Malformed or
// unauthorized input is refused: dropped, counted in Dropped and returned
// as an error (one of the Err values), never fatal. Reaching StateDone ends
// the session (lifecycle End: a Notify of engine.EventFinal with the
// Outcome), StateFailed too (engine.EventAborted).
func (a *Agent) Receive(now time.Time, m engine.Message) ([]engine.Effect, error) {
	a.begin(now)
	if m.Topic != Topic {
		return nil, ErrOtherTopic
	}
	err := a.handle(m.From, m.Data)
	return a.life.Take(), err
}

// Fire applies the expiry of one of the agent's timers (engine.Machine):
// TimerTrees, TimerData or TimerRetry.
func (a *Agent) Fire(now time.Time, name string) ([]engine.Effect, error) {
	a.begin(now)
	var err error
	switch name {
	case TimerTrees:
		err = a.timeout(StateTrees)
	case TimerData:
		err = a.timeout(StateData)
	case TimerRetry:
		a.retry()
	default:
		return nil, fmt.Errorf("%w %q", errUnknownTimer, name)
	}
	return a.life.Take(), err
}

func (a *Agent) handle(from protocol.PeerID, data []byte) error {
	h, err := DecodeHeader(data)
	if err != nil {
		return a.drop("malformed", from, err)
	}
	if h.Author != from {
		return a.drop("spoofed", from, ErrSpoofed)
	}
	switch h.Kind {
	case KindAnnounce:
		return a.onAnnounce(from, data)
	case KindTree:
		return a.onTree(from, data)
	default:
		return a.onData(from, data)
	}
}

func (a *Agent) onAnnounce(from protocol.PeerID, data []byte) error {
	if from != a.cfg.Announcer {
		return a.drop("not announcer", from, ErrNotAnnouncer)
	}
	if a.state != StateIdle {
		return a.drop("duplicate", from, ErrDuplicate)
	}
	_, ann, err := DecodeAnnounce(data)
	if err != nil {
		return a.drop("malformed", from, err)
	}
	a.ann = ann
	v := &agentView{ann: ann, index: make(map[protocol.PeerID]int, len(ann.Roster)), have: make([]atomic.Uint32, len(ann.Roster))}
	for i, id := range ann.Roster {
		if _, dup := v.index[id]; !dup {
			v.index[id] = i
		}
	}
	a.view.Store(v)
	a.self = -1
	for i, id := range ann.Roster {
		if id == a.cfg.ID {
			a.self = i
		}
	}
	if err := a.life.Join(ann.Session, lifecycle.Admitting, 0); err != nil {
		return err
	}
	a.moved()
	switch {
	case a.self < 0:
		return a.refuse(fmt.Errorf("%w: %s", ErrNotInRoster, a.cfg.ID))
	case ann.SchemaDigest != a.cfg.Schema:
		return a.refuse(fmt.Errorf("%w: announced %.12s, ours %.12s", ErrSchema, ann.SchemaDigest, a.cfg.Schema))
	}
	if a.cfg.Admit != nil {
		for _, m := range ann.Roster {
			if !a.cfg.Admit(m) {
				return a.refuse(fmt.Errorf("%w: %s", ErrNotAdmitted, m))
			}
		}
	}
	// Everything this agent releases is charged, durably, before anything
	// leaves: its tree and its data share's node counts (AgentRelease), or
	// PFDS-cv's leaf class counts (VariantRelease).
	mech, err := SessionRelease(ann)
	if err != nil {
		return a.refuse(fmt.Errorf("ledger: %w", err))
	}
	// One tree per charge: a name this incarnation did not make, under a
	// charge the ledger holds (a restart, a re-announced session), is not
	// made again (the agent's noise is its Rand's, not re-derivable).
	name := release.Name{System: "pfds", Session: ann.Session, Kind: "tree"}
	if !a.life.Values.Remembered(name) && a.cfg.Ledger.Contributed(ann.Session) {
		return a.refuse(fmt.Errorf("ledger: session %s: %w", ann.Session, protocol.ErrAlreadyContributed))
	}
	var started error
	digest := fmt.Sprintf("%+v", ann.Params)
	if ann.CV != nil {
		digest += fmt.Sprintf(" cv %+v", *ann.CV)
	}
	if _, _, _, err := a.life.Release(name, release.Charge{Key: ann.Session, Mech: mech}, []byte(digest),
		func(*rand.Rand) (any, error) { started = a.startTrees(); return struct{}{}, nil }); err != nil {
		return a.refuse(fmt.Errorf("ledger: %w", err))
	}
	return started
}

// startTrees builds and publishes this agent's tree (once its release is
// charged) and collects the others'.
func (a *Agent) startTrees() error {
	ann := a.ann
	var counts []int64
	if ann.CV != nil {
		// PFDS-cv: a data-independent tree whose leaf class counts (the
		// release) are published with it.
		var err error
		if a.own, err = pfds.MakeVariantTree(a.cfg.Domain, a.cfg.Data.X, a.cfg.Data.Y, *ann.CV, a.cfg.Rand); err != nil {
			return a.fail(err)
		}
		if counts, err = pfds.LeafCounts(a.own, a.cfg.Domain.Classes); err != nil {
			return a.fail(err)
		}
		a.trees[a.cfg.ID] = a.own
	} else {
		a.own = pfds.MakeTree(a.cfg.Domain, a.cfg.Data.X, a.cfg.Data.Y, ann.Params, a.cfg.Rand)
		a.trees[a.cfg.ID] = a.own.Public()
	}
	a.mark(a.cfg.ID, haveTree)
	if err := a.enter(StateTrees); err != nil {
		return err
	}
	a.connectRoster()
	a.cfg.Log.Info("tree built", "session", ann.Session, "variant", ann.Variant(), "nodes", len(a.own.Nodes), "eps", ann.Params.Eps)
	a.treeMsg = EncodeTree(Header{Session: ann.Session, Author: a.cfg.ID}, pfds.AppendTree(nil, a.own, a.cfg.Domain), counts)
	a.life.Out.Publish(Topic, a.treeMsg)
	a.life.Out.SetTimer(TimerTrees, time.Duration(ann.TreeTimeout)*time.Millisecond)
	if every := a.retryEvery(); every > 0 {
		a.life.Out.SetTimer(TimerRetry, every)
	}
	return a.maybeShareData()
}

// RosterPeers is the report (engine.EventReport) an agent makes once it
// takes part in a session: the other roster members and where they listen
// (the announcement's roster addresses, nil without them). Its driver adds
// the addresses to the transport's address book and opens connections to
// the members (protocol.AddressBook, protocol.Preparer), so that agents
// connected only to the announcer form their own gossip mesh.
type RosterPeers struct {
	Peers []protocol.PeerID
	Addrs [][]string
}

func (a *Agent) connectRoster() {
	var rp RosterPeers
	for i, id := range a.ann.Roster {
		if id == a.cfg.ID {
			continue
		}
		rp.Peers = append(rp.Peers, id)
		if a.ann.RosterAddrs != nil {
			rp.Addrs = append(rp.Addrs, a.ann.RosterAddrs[i])
		}
	}
	if len(rp.Peers) > 0 {
		a.life.Out.Notify(engine.Notify{Event: engine.EventReport, Value: rp})
	}
}

func (a *Agent) fail(err error) error {
	a.Err = err
	a.cfg.Log.Warn("session failed", "err", err)
	return a.enter(StateFailed)
}

// refuse fails before anything was released: this agent takes no part.
// The input that caused it is not refused (the session is).
func (a *Agent) refuse(err error) error {
	a.Err, a.Refused = err, true
	a.cfg.Log.Warn("session refused", "err", err)
	return a.enter(StateFailed)
}

// OutcomeUnit is what a PFDS session counts: the roster agents whose tree
// and data share both arrived (this agent's own included).
const OutcomeUnit = "shares"

// Outcome is how this agent's session ended, once it is done or failed
// (Kind 0 before): complete with every roster agent's shares, partial when
// the data timeout fired with some missing (it trains on what arrived),
// failed otherwise. Each agent states its own: PFDS has no coordinator
// message at the end, so two agents that lost different shares say so.
func (a *Agent) Outcome() protocol.Outcome {
	planned := 0
	if a.ann != nil {
		planned = len(a.ann.Roster)
	}
	switch a.state {
	case StateDone:
		var err error
		if len(a.complete) < planned {
			err = fmt.Errorf("the data timeout fired with the shares of %d of %d roster agents", len(a.complete), planned)
		}
		return protocol.NewOutcome(len(a.complete), planned, OutcomeUnit, err)
	case StateFailed:
		return protocol.Failed(0, planned, OutcomeUnit, a.Err)
	}
	return protocol.Outcome{}
}

func (a *Agent) onTree(from protocol.PeerID, data []byte) error {
	if a.ann == nil || a.state == StateFailed {
		return a.drop("no session", from, ErrWrongSession)
	}
	h, t, err := DecodeSessionTree(data, a.cfg.Domain, a.ann)
	if err != nil {
		return a.drop("malformed", from, err)
	}
	if h.Session != a.ann.Session {
		return a.drop("wrong session", from, ErrWrongSession)
	}
	if !a.inRoster(from) {
		return a.drop("not in roster", from, ErrNotInRoster)
	}
	if _, ok := a.trees[from]; ok {
		return a.drop("duplicate", from, ErrDuplicate)
	}
	a.trees[from] = t
	a.mark(from, haveTree)
	// A data share that arrived before its tree can now be expanded.
	if d, ok := a.data[from]; ok {
		if err := a.expand(from, d); err != nil {
			delete(a.data, from) // its author may send a fitting one: unmark
			if v := a.view.Load(); v != nil {
				v.have[v.index[from]].And(^haveData)
			}
			a.drop("share mismatch", from, err)
		}
	}
	if err := a.maybeShareData(); err != nil {
		return err
	}
	return a.maybeDone()
}

// maybeShareData moves to the data phase once every roster tree is in.
func (a *Agent) maybeShareData() error {
	if a.state != StateTrees || len(a.trees) < len(a.ann.Roster) {
		return nil
	}
	return a.shareData()
}

func (a *Agent) shareData() error {
	voters := make([]*pfds.Tree, 0, len(a.trees))
	for _, id := range a.ann.Roster {
		if t, ok := a.trees[id]; ok {
			voters = append(voters, t)
		}
	}
	// The data share is the second value of the agent's charge, bound to
	// the trees it is generated from.
	var in []byte
	for _, t := range voters {
		in = pfds.AppendTree(in, t, a.cfg.Domain)
	}
	var ds *pfds.DataShare
	var rows [][]float64
	name := release.Name{System: "pfds", Session: a.ann.Session, Kind: "data"}
	mech, err := SessionRelease(a.ann)
	if err != nil {
		return a.fail(err)
	}
	if _, _, _, err := a.life.Release(name, release.Charge{Key: a.ann.Session, Mech: mech}, in, func(*rand.Rand) (any, error) {
		if a.ann.CV != nil {
			// PFDS-cv's share is post-processing of published values
			// only: the own tree's counts (sizes), the voters' counts
			// (labels) and a fresh public seed.
			ds, rows = pfds.ShareVariant(a.cfg.Domain, a.own, voters, *a.ann.CV, a.cfg.Rand)
			return ds, nil
		}
		var err error
		ds, rows, err = pfds.ShareData(a.cfg.Domain, a.own, voters, a.cfg.Data, a.ann.Params, a.cfg.Rand)
		return ds, err
	}); err != nil {
		return a.fail(err)
	}
	a.ownData, a.data[a.cfg.ID], a.complete[a.cfg.ID] = ds, ds, true
	a.mark(a.cfg.ID, haveData)
	if err := a.enter(StateData); err != nil {
		return err
	}
	a.cfg.Log.Info("data shared", "session", a.ann.Session, "records", len(rows), "voters", len(voters))
	a.dataMsg = EncodeData(Header{Session: a.ann.Session, Author: a.cfg.ID}, ds)
	a.life.Out.Publish(Topic, a.dataMsg)
	a.life.Out.SetTimer(TimerData, time.Duration(a.ann.DataTimeout)*time.Millisecond)
	return a.maybeDone()
}

func (a *Agent) onData(from protocol.PeerID, data []byte) error {
	if a.ann == nil || a.state == StateFailed {
		return a.drop("no session", from, ErrWrongSession)
	}
	h, d, err := DecodeDataShare(data, a.cfg.Domain.Classes)
	if err != nil {
		return a.drop("malformed", from, err)
	}
	if h.Session != a.ann.Session {
		return a.drop("wrong session", from, ErrWrongSession)
	}
	if !a.inRoster(from) {
		return a.drop("not in roster", from, ErrNotInRoster)
	}
	if _, ok := a.data[from]; ok {
		return a.drop("duplicate", from, ErrDuplicate)
	}
	if _, ok := a.trees[from]; ok {
		if err := a.expand(from, d); err != nil {
			return a.drop("share mismatch", from, err)
		}
	}
	a.data[from] = d
	a.mark(from, haveData)
	return a.maybeDone()
}

// expand checks that from's share fits from's tree (one count per leaf,
// one label per record) and marks the author complete.
func (a *Agent) expand(from protocol.PeerID, d *pfds.DataShare) error {
	leaves := len(a.trees[from].Leaves())
	if len(d.Counts) != leaves {
		return fmt.Errorf("%w: %d leaf counts for %d leaves", ErrShareMismatch, len(d.Counts), leaves)
	}
	total := 0
	for _, c := range d.Counts {
		total += c
	}
	if total != len(d.Labels) {
		return fmt.Errorf("%w: %d records and %d labels", ErrShareMismatch, total, len(d.Labels))
	}
	if a.ann.CV != nil {
		// PFDS-cv's leaf sizes are a function of the published tree: a
		// share that claims others is not the author's.
		want := pfds.VariantSizes(a.trees[from], *a.ann.CV).Counts
		for j, c := range d.Counts {
			if c != want[j] {
				return fmt.Errorf("%w: leaf %d holds %d records, the published counts give %d", ErrShareMismatch, j, c, want[j])
			}
		}
	}
	a.complete[from] = true
	return nil
}

func (a *Agent) maybeDone() error {
	if a.state != StateData || len(a.complete) < len(a.ann.Roster) {
		return nil
	}
	a.cfg.Log.Info("session done", "session", a.ann.Session, "shares", len(a.complete))
	return a.enter(StateDone)
}

// timeout fires the timer armed for state s; a stale timer does nothing.
// After the tree timeout the agent labels with the trees that arrived; after
// the data timeout it finishes with the shares that arrived.
func (a *Agent) timeout(s State) error {
	if a.state != s {
		return nil
	}
	switch s {
	case StateTrees:
		a.cfg.Log.Info("tree timeout", "have", len(a.trees), "roster", len(a.ann.Roster))
		return a.shareData()
	case StateData:
		a.cfg.Log.Info("data timeout", "have", len(a.complete), "roster", len(a.ann.Roster))
		return a.enter(StateDone)
	}
	return nil
}

func (a *Agent) retryEvery() time.Duration {
	return time.Duration(min(a.ann.TreeTimeout, a.ann.DataTimeout)) * time.Millisecond / retryParts
}

// retry re-publishes the agent's own shares (those it has made so far) and
// re-arms itself, for as long as the two phases can last
// (2*retryParts times), in every state but idle and failed.
func (a *Agent) retry() {
	if a.ann == nil || a.state == StateFailed || a.retries >= 2*retryParts {
		return
	}
	a.retries++
	for _, m := range [][]byte{a.treeMsg, a.dataMsg} {
		if m != nil {
			a.life.Out.Publish(Topic, m)
		}
	}
	a.life.Out.SetTimer(TimerRetry, a.retryEvery())
}

// Own returns this agent's published tree and data share (nil before).
func (a *Agent) Own() (*pfds.Tree, *pfds.DataShare) {
	if a.own == nil {
		return nil, a.ownData
	}
	if a.ann.CV != nil {
		return a.own, a.ownData // PFDS-cv publishes the counts
	}
	return a.own.Public(), a.ownData
}

// Shares returns the complete shares received (own included) in roster
// order, with their rows regenerated: the synthetic data the final ERM
// trains on.
func (a *Agent) Shares() []pfds.Shared {
	if a.ann == nil {
		return nil
	}
	var out []pfds.Shared
	for _, id := range a.ann.Roster {
		if !a.complete[id] {
			continue
		}
		rows, err := a.data[id].Rows(a.cfg.Domain, a.trees[id])
		if err != nil {
			continue // expand checked the fit; cannot happen
		}
		out = append(out, pfds.Shared{Tree: a.trees[id], Data: a.data[id], Rows: rows})
	}
	return out
}

// Authors lists the roster members whose complete share arrived.
func (a *Agent) Authors() []protocol.PeerID {
	var out []protocol.PeerID
	if a.ann == nil {
		return nil
	}
	for _, id := range a.ann.Roster {
		if a.complete[id] {
			out = append(out, id)
		}
	}
	return out
}

// Train fits the session's learner on the agent's data plus every share
// (Alg. 1, line 3), at no further privacy cost.
func (a *Agent) Train(lambda float64) (*pfds.Model, error) {
	if a.state != StateDone {
		return nil, fmt.Errorf("pfds: train in state %s", a.state)
	}
	u := pfds.Union(a.cfg.Data, a.Shares())
	return pfds.FitClasses(a.ann.Learner, u.X, u.Y, a.cfg.Domain.Classes, lambda)
}

// DataShares returns the complete authors' data shares in roster order,
// without regenerating rows.
func (a *Agent) DataShares() []*pfds.DataShare {
	var out []*pfds.DataShare
	for _, id := range a.Authors() {
		out = append(out, a.data[id])
	}
	return out
}

// SessionRelease is what one agent releases in ann's session: AgentRelease
// of the paper's PFDS, or VariantRelease of PFDS-cv.
func SessionRelease(ann *Announce) (release.Mechanism, error) {
	if ann.CV != nil {
		return VariantRelease(*ann.CV)
	}
	return AgentRelease(ann.Params)
}

// VariantRelease is what one PFDS-cv agent releases (PROTOCOL.md's release
// inventory): its leaf class counts, one histogram over (leaf, class)
// cells of its rows under the geometric mechanism at sensitivity 1 (one
// row added or removed changes one cell by one; the random tree reads no
// row). Its data share is post-processing of published values.
func VariantRelease(v pfds.VariantParams) (release.Mechanism, error) {
	if err := v.Validate(); err != nil {
		return nil, err
	}
	return dlap.NewInt(1, v.Eps)
}

// AgentRelease is what one PFDS agent releases (PROTOCOL.md's release
// inventory), composed in sequence on the agent's data: its tree's HMax-1
// split levels (the exponential mechanism with coefficient TreeEps/2 on a
// utility of sensitivity 1; the nodes of a level hold disjoint rows), its
// leaf class counts (geometric, TreeEps) and the P-1 levels of node counts
// of optPrivateGen (geometric, CountEps; charged with or without the
// post-processing). By Thm 3.3 it adds up to at most Params.Eps.
func AgentRelease(p pfds.Params) (release.Mechanism, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var seq release.Sequential
	for l := 1; l < p.HMax; l++ {
		seq = append(seq, release.Exponential{Coefficient: p.TreeEps() / 2, Sensitivity: 1})
	}
	leaves, err := dlap.NewInt(1, p.TreeEps())
	if err != nil {
		return nil, err
	}
	seq = append(seq, leaves)
	counts, err := dlap.NewInt(1, p.CountEps())
	if err != nil {
		return nil, err
	}
	for l := 1; l < p.P; l++ {
		seq = append(seq, counts)
	}
	return seq, nil
}
