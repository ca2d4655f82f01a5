package fedboost

import (
	"errors"
	"fmt"
	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol/release"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/dpnoise"
	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/role"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// OwnerState is where an owner is.
type OwnerState int

const (
	OwnerIdle   OwnerState = iota // no session (again after an Abort or the idle timeout)
	OwnerJoined                   // taking part in a session's sums
	OwnerDone                     // the final model arrived
)

func (s OwnerState) String() string {
	switch s {
	case OwnerIdle:
		return "idle"
	case OwnerJoined:
		return "joined"
	case OwnerDone:
		return "done"
	}
	return fmt.Sprintf("OwnerState(%d)", int(s))
}

// OwnerConfig configures a data owner of federated DPBoost.
type OwnerConfig struct {
	User   protocol.PeerID  // the pinned data user
	Data   *dataset.Dataset // private rows, features scaled to [-1, 1]
	Ledger protocol.Ledger
	// MaxEpsilon is the most this owner spends per ensemble (its tree's eps_t).
	MaxEpsilon float64
	// AllowNoNoise lets the owner take part in a session without noise
	// (np: baselines and tests), charged NoneCharge per ensemble.
	AllowNoNoise bool
	NoneCharge   float64
	// MinParties is the smallest dealer set this owner helps reveal; a
	// session announcing less is refused.
	MinParties int
	// Admit, if set, must accept every roster member.
	Admit func(protocol.PeerID) bool
	// Colluders is the most co-dealers this owner assumes may share what
	// they see with the data user; 0 means all (the default: its shares
	// must be DP on their own). A session whose shares are sized for more
	// honest dealers than this bound leaves is refused.
	Colluders int
	// Noise draws this owner's noise shares; SumRand masks and Shamir
	// coefficients. nil: rng.Secure.
	Noise, SumRand *rand.Rand
	Clock          protocol.Clock
	Log            hclog.Logger
	OnFinal        func(*dpboost.Model)
	// OnOutcome, if set, is told how every session this owner leaves ended
	// (the data user's outcome from Final or Abort; its own on the idle
	// timeout), after OnFinal.
	OnOutcome func(protocol.Outcome)
}

// Owner is an owner's side of a federated DPBoost session, a state machine
// on one protocol.Loop.
type Owner struct {
	cfg      OwnerConfig
	self     protocol.PeerID
	post     protocol.Poster
	log      hclog.Logger
	loop     *protocol.Loop
	rolePost *role.Post // what Start made (nil from New…): closed after the loop
	stats    protocol.Counters

	state   OwnerState
	pub     *Public
	binning *dpboost.Binning
	data    *dpboost.Binned
	y, F    []float64
	party   *securesum.Party // the current tree's (each tree has its own dealer floor)
	partyT  int
	noise   *dpnoise.Params // the design of the sum being begun (read by the Env.Noise hook)
	trees   map[int]*partial
	applied int // trees whose leaves are in F
	spent   map[int]int
	pending []*wire.Envelope
	idle    protocol.Timer
	final   *dpboost.Model

	status atomic.Pointer[ownerStatus] // status.go
}

// maxPending bounds the SumStarts and trees kept until what they depend on
// arrives (gossip does not preserve order).
const maxPending = 1024

// NewOwner prepares an owner; Attach connects it.
func NewOwner(self protocol.PeerID, post protocol.Poster, cfg OwnerConfig) (*Owner, error) {
	cfg = cfg.withRuntimeDefaults() // defaults.go
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &Owner{cfg: cfg, self: self, post: post, log: cfg.Log.With("peer", string(self))}
	o.loop = newLoop(cfg.Clock, &o.stats, o.publishStatus)
	o.publishStatus()
	return o, nil
}

// Attach installs the owner as tr's handler and joins the control topic
// (validated: only the pinned user's messages).
func (o *Owner) Attach(tr protocol.Transport) error {
	tr.SetHandler(o.Handle)
	if v, ok := tr.(protocol.Validating); ok {
		user := o.cfg.User
		if err := v.SetTopicValidator(wire.TopicFedControl, func(from protocol.PeerID, data []byte) protocol.Verdict {
			if from != user {
				o.stats.Inc("validator: control not from user")
				return protocol.Reject
			}
			return protocol.Accept
		}); err != nil {
			return err
		}
	}
	return tr.Join(wire.TopicFedControl)
}

// Handle queues one inbound message on the owner's loop.
// It returns at once (a full inbox drops, "loop: inbox full").
func (o *Owner) Handle(m protocol.Message) { o.loop.Deliver(func() { o.handle(m) }) }

// Stats are the owner's drop counters.
func (o *Owner) Stats() *protocol.Counters { return &o.stats }

func (o *Owner) drop(reason string, err error) {
	level := hclog.Debug
	if o.stats.Inc(reason) {
		level = hclog.Warn
	}
	o.log.Log(level, "dropped", "reason", reason, "err", err)
}

func (o *Owner) handle(m protocol.Message) {
	max := wire.MaxControlBytes
	if m.Protocol == wire.ProtoFedShamir {
		max = wire.MaxSumFrameBytes
	}
	env, err := wire.Unmarshal(m.Data, max)
	if err != nil {
		o.drop("malformed", err)
		return
	}
	switch {
	case m.Topic == wire.TopicFedControl:
		if m.From != o.cfg.User {
			o.drop(protocol.ErrNotUser.Error(), nil)
			return
		}
		o.control(env)
	case m.Protocol == wire.ProtoFedShamir && (env.GetSumStart() != nil || env.GetSumResult() != nil):
		// The coordinator's SumStart and SumResult come on the sum
		// stream, and go through the same checks as control messages.
		if m.From != o.cfg.User {
			o.drop(protocol.ErrNotUser.Error(), nil)
			return
		}
		o.control(env)
	case m.Protocol == wire.ProtoFedShamir:
		if o.state != OwnerJoined || env.GetHeader().GetSession() != o.pub.Session || env.GetSum() == nil {
			o.drop(protocol.ErrWrongSession.Error(), nil)
			return
		}
		party, err := o.partyFor(int(env.GetHeader().GetRound()))
		if err != nil {
			o.drop(protocol.ErrWrongRound.Error(), err)
			return
		}
		party.Handle(m.From, env)
	default:
		o.drop(protocol.ErrUnexpected.Error(), nil)
	}
}

// errWait marks a message that depends on one not yet received.
var errWait = errors.New("waits for an earlier message")

func (o *Owner) control(env *wire.Envelope) {
	if err := o.apply(env); err != nil {
		if !errors.Is(err, errWait) {
			o.drop(reason(err), err)
			return
		}
		if len(o.pending) >= maxPending {
			o.drop("pending buffer full", err)
			return
		}
		o.pending = append(o.pending, env)
		return
	}
	// Something was applied: retry what waited, until nothing moves.
	for progress := true; progress && len(o.pending) > 0; {
		progress = false
		waiting := o.pending
		o.pending = nil
		for _, e := range waiting {
			switch err := o.apply(e); {
			case errors.Is(err, errWait):
				o.pending = append(o.pending, e)
			case err != nil:
				o.drop(reason(err), err)
			default:
				progress = true
			}
		}
	}
}

func reason(err error) string {
	switch {
	case errors.Is(err, protocol.ErrBadConfig):
		return "config refused"
	case errors.Is(err, protocol.ErrWrongSession):
		return protocol.ErrWrongSession.Error()
	case errors.Is(err, protocol.ErrAlreadyContributed), errors.Is(err, protocol.ErrBudgetExceeded):
		return "budget"
	case errors.Is(err, securesum.ErrRefused):
		return "sum: request refused"
	case errors.Is(err, securesum.ErrDuplicate):
		return "sum: duplicate" // a SumStart re-published for a stalled instance
	case errors.Is(err, errNotInGroup):
		return "not in the tree's group"
	}
	return "malformed"
}

var errNotInGroup = errors.New("owner is not in the tree's group")

func (o *Owner) apply(env *wire.Envelope) error {
	h := env.GetHeader()
	if fc := env.GetFedConfig(); fc != nil {
		return o.join(h, fc)
	}
	if o.state != OwnerJoined {
		if o.state == OwnerIdle && (env.GetSumStart() != nil || env.GetFedTree() != nil) {
			return errWait // the FedConfig may follow
		}
		return fmt.Errorf("%w: no session joined", protocol.ErrWrongSession)
	}
	if h.GetSession() != o.pub.Session {
		return fmt.Errorf("%w: %s", protocol.ErrWrongSession, h.GetSession())
	}
	o.touch()
	t := int(h.GetRound())
	switch {
	case env.GetFedTree() != nil:
		return o.tree(t, env.GetFedTree())
	case env.GetSumStart() != nil:
		return o.sum(h, env.GetSumStart())
	case env.GetFinal() != nil:
		m, err := env.GetFinal().ToDPBoostModel()
		if err != nil {
			return err
		}
		out := protocol.NewOutcome(o.pub.Boost.Trees, o.pub.Boost.Trees, OutcomeUnit, nil)
		if w := env.GetFinal().GetOutcome(); w != nil {
			if out, err = protocol.OutcomeFromWire(w, o.pub.Boost.Trees, OutcomeUnit); err != nil {
				return err
			}
			if out.Kind != protocol.OutcomeComplete {
				return fmt.Errorf("%w: Final with outcome %s", protocol.ErrUnexpected, out)
			}
		}
		o.final, o.state = m, OwnerDone
		o.stopIdle()
		if o.cfg.OnFinal != nil {
			o.loop.Notify(func() { o.cfg.OnFinal(m) })
		}
		o.ended(out)
		return nil
	case env.GetSumResult() != nil:
		return nil // the coordinator's published total: nothing for an owner to do
	case env.GetAbort() != nil:
		out := protocol.Failed(0, o.pub.Boost.Trees, OutcomeUnit, errors.New(env.GetAbort().GetReason()))
		if w := env.GetAbort().GetOutcome(); w != nil {
			got, err := protocol.OutcomeFromWire(w, o.pub.Boost.Trees, OutcomeUnit)
			if err != nil {
				return err
			}
			if got.Kind != protocol.OutcomeFailed {
				return fmt.Errorf("%w: Abort with outcome %s", protocol.ErrUnexpected, got)
			}
			out = got
		}
		o.ended(out)
		o.leave()
		return nil
	}
	return fmt.Errorf("%w: %T", protocol.ErrUnexpected, env.GetBody())
}

// join checks an announced configuration against this owner's limits.
func (o *Owner) join(h *wire.Header, fc *wire.FedConfig) error {
	if o.state != OwnerIdle {
		if o.pub != nil && h.GetSession() == o.pub.Session {
			return nil // re-announcement
		}
		return fmt.Errorf("%w: busy with session %s", protocol.ErrWrongSession, o.pub.Session)
	}
	p, err := PublicFromWire(fc)
	if err != nil {
		return fmt.Errorf("%w: %v", protocol.ErrBadConfig, err)
	}
	if err := o.acceptable(h, p); err != nil {
		return err
	}
	b, err := p.Binning()
	if err != nil {
		return refuseConfig("%v", err)
	}
	data, err := b.Quantize(o.cfg.Data.X)
	if err != nil {
		return refuseConfig("%v", err)
	}
	o.pub, o.binning, o.data = p, b, data
	o.y = make([]float64, data.Rows)
	for i, c := range o.cfg.Data.Y {
		o.y[i] = -1
		if c == 1 {
			o.y[i] = 1
		}
	}
	o.F = make([]float64, data.Rows)
	o.trees, o.spent, o.applied = map[int]*partial{}, map[int]int{}, 0
	o.party, o.partyT = nil, 0
	o.state = OwnerJoined
	o.touch()
	o.log.Info("joined", "session", p.Session, "trees", p.Boost.Trees, "columns_per_node", p.ColumnsPerNode, "noise", p.Noise)
	return nil
}

// refuseConfig is a refusal of an announced configuration.
func refuseConfig(format string, a ...any) error {
	return fmt.Errorf("%w: %s", protocol.ErrBadConfig, fmt.Sprintf(format, a...))
}

// acceptable checks an announced configuration against this owner's
// limits: the session and roster (membership, admission), the dealer
// floors against the colluders it assumes, its rows, and the epsilon.
func (o *Owner) acceptable(h *wire.Header, p *Public) error {
	if p.Session != h.GetSession() {
		return refuseConfig("config for session %s in a message of session %s", p.Session, h.GetSession())
	}
	if _, in := slices.BinarySearch(p.Roster, o.self); !in {
		return refuseConfig("not in the roster")
	}
	if o.cfg.Admit != nil {
		for _, m := range p.Roster {
			if !o.cfg.Admit(m) {
				return refuseConfig("roster member %s not admitted", m)
			}
		}
	}
	if err := o.withinLimits(p); err != nil {
		return err
	}
	return o.affordable(p)
}

// withinLimits checks the session's parties, dealer floors, row cap and
// noise against this owner's configuration.
func (o *Owner) withinLimits(p *Public) error {
	if p.Sum.MinParties < o.cfg.MinParties {
		return refuseConfig("min_parties %d below this owner's %d", p.Sum.MinParties, o.cfg.MinParties)
	}
	own := boost.ColludersAll
	if o.cfg.Colluders > 0 {
		own = o.cfg.Colluders
	}
	for t := 1; p.Noise && t <= p.Boost.Trees; t++ {
		if h := boost.HonestFor(p.Floor(t), own); p.Honest(t) > h {
			return refuseConfig("tree %d's shares are sized for %d honest dealers; this owner assumes colluders %s, which leaves %d",
				t, p.Honest(t), colluderText(own), h)
		}
	}
	if o.cfg.Data.Len() > p.MaxRows {
		return refuseConfig("%d rows, the session caps an owner at %d", o.cfg.Data.Len(), p.MaxRows)
	}
	if !p.Noise && !o.cfg.AllowNoNoise {
		return refuseConfig("a session without noise")
	}
	return nil
}

// affordable checks what the session costs against this owner's epsilon
// limit: the Newton release as a whole, or each tree.
func (o *Owner) affordable(p *Public) error {
	acc := dpboost.Account(p.Boost)
	if p.Newton() && p.Noise {
		m, err := p.newtonRelease()
		if err != nil {
			return refuseConfig("%v", err)
		}
		if eps := m.Epsilon(); eps > o.cfg.MaxEpsilon {
			return refuseConfig("the session costs %v, this owner's limit is %v", eps, o.cfg.MaxEpsilon)
		}
	}
	for t := 1; !p.Newton() && t <= p.Boost.Trees; t++ {
		eps := o.cfg.NoneCharge
		if p.Noise {
			eps = acc.PerTree[t-1]
		}
		if eps > o.cfg.MaxEpsilon {
			return refuseConfig("tree %d costs %v, this owner's limit is %v", t, eps, o.cfg.MaxEpsilon)
		}
	}
	return nil
}

// partyFor is the secure-sum party of tree t: a new one (with the tree's
// dealer floor) when t is past the current tree; earlier trees are over.
func (o *Owner) partyFor(t int) (*securesum.Party, error) {
	switch {
	case t < 1 || t > o.pub.Boost.Trees:
		return nil, fmt.Errorf("tree %d of %d", t, o.pub.Boost.Trees)
	case t == o.partyT:
		return o.party, nil
	case t < o.partyT:
		return nil, fmt.Errorf("tree %d is over (current %d)", t, o.partyT)
	}
	env := securesum.PosterEnvFor(wire.Fed(), o.self, o.post, o.loop, o.cfg.SumRand, o.log.Named("shamir"))
	env.Dropped = func(r string) { o.stats.Inc(r) }
	env.Noise = func(enc []field.Elem) error {
		if o.noise == nil {
			return nil
		}
		return o.noise.Noise(o.cfg.Noise)(enc)
	}
	o.party, o.partyT = securesum.NewParty(env, o.pub.SumParams(t)), t
	o.party.SetRoster(o.pub.Group(t))
	return o.party, nil
}

// charge is what one ensemble's group membership costs this owner.
// treeRelease is everything this owner releases of tree t (PROTOCOL.md's
// release inventory): per level the node vectors (a row is in one node of a
// level: parallel), the levels and the leaves in sequence, each a DLap
// design computed from its layout. It equals TreeEpsilon(t) when the
// designs are right (TestPrivateRunSpendsOncePerEnsemble checks the ledgers).
func (o *Owner) treeRelease(t int) (release.Mechanism, error) {
	if !o.pub.Noise || !o.pub.Boost.Private() {
		return release.Exact{Charge: o.cfg.NoneCharge}, nil
	}
	if o.pub.Newton() {
		return o.pub.newtonRelease()
	}
	codec, err := field.NewCodec(o.pub.Sum.ScaleBits)
	if err != nil {
		return nil, err
	}
	dlap := func(l Layout) (release.Mechanism, error) {
		np, _, err := o.pub.NoiseFor(t, l)
		if err != nil {
			return nil, err
		}
		return release.DLap{Noise: np, IntSensitivity: dpnoise.IntSensitivity(l.Delta, codec, l.Coords)}, nil
	}
	var tree release.Sequential
	for d := 0; d < o.pub.Boost.Depth; d++ {
		var level release.Parallel
		for node := 1<<d - 1; node < 2<<d-1; node++ {
			m, err := dlap(o.pub.NodeLayout(o.binning, t, node))
			if err != nil {
				return nil, err
			}
			level = append(level, m)
		}
		tree = append(tree, level)
	}
	m, err := dlap(o.pub.LeafLayout(t))
	if err != nil {
		return nil, err
	}
	return append(tree, m), nil
}

func (o *Owner) tree(t int, w *wire.FedTree) error {
	if t < 1 || t > o.pub.Boost.Trees {
		return fmt.Errorf("%w: tree %d", protocol.ErrWrongRound, t)
	}
	if t <= o.applied {
		return nil // a re-publication of a tree already applied
	}
	p, err := parseTree(w, o.binning, o.pub.Boost.Depth)
	if err != nil {
		return err
	}
	if o.pub.Newton() {
		want := o.pub.NewtonTree(o.binning, t)
		if p.levels != want.levels || !slices.Equal(p.feature, want.feature) || !slices.Equal(p.bin, want.bin) {
			return fmt.Errorf("%w: tree %d's splits are not the beacon's", protocol.ErrBadConfig, t)
		}
	}
	if old := o.trees[t]; old == nil || p.levels > old.levels || (p.complete && !old.complete) {
		o.trees[t] = p
	}
	for o.applied < o.pub.Boost.Trees {
		next := o.trees[o.applied+1]
		if next == nil || !next.complete {
			break
		}
		// Every owner updates its predictions with every tree (boosting
		// is over all the data; only the tree's histograms came from its
		// group).
		Fd := o.data.Features
		for i := range o.F {
			o.F[i] += next.leaf[next.nodeOf(o.data.Idx[i*Fd:(i+1)*Fd], o.pub.Boost.Depth)]
		}
		o.applied++
		delete(o.trees, o.applied)
	}
	return nil
}

// sum answers a SumStart: the node's (or leaves') vector of this owner's
// rows, with its noise share, if this owner is in the tree's group.
func (o *Owner) sum(h *wire.Header, s *wire.SumStart) error {
	t := int(h.GetRound())
	if t < 1 || t > o.pub.Boost.Trees {
		return fmt.Errorf("%w: tree %d", protocol.ErrWrongRound, t)
	}
	if t <= o.applied {
		return fmt.Errorf("%w: tree %d is complete", protocol.ErrWrongRound, t)
	}
	node, chunk, err := parsePurpose(s.GetPurpose())
	if err != nil {
		return err
	}
	if err := o.ready(t, node); err != nil {
		return err
	}
	group := o.pub.Group(t)
	if _, in := slices.BinarySearch(group, o.self); !in {
		return nil // a SumStart for another group (the user sends it to the group only)
	}
	var l Layout
	if node >= 0 {
		l = o.pub.NodeLayout(o.binning, t, node)
	} else {
		l = o.pub.LeafLayout(t)
	}
	if chunk >= l.Chunks {
		return fmt.Errorf("chunk %d of %d", chunk, l.Chunks)
	}
	if err := o.charge(t); err != nil {
		return err
	}
	np, noisy, err := o.pub.NoiseFor(t, l)
	if err != nil {
		return err
	}
	vec := o.vector(t, node)
	lo, hi := Chunk(len(vec), chunk)
	o.noise = nil
	if noisy {
		o.noise = &np
	}
	party, err := o.partyFor(t)
	if err != nil {
		return err
	}
	err = party.Begin(h, s, group, o.pub.Beacon, o.cfg.User, vec[lo:hi])
	o.noise = nil
	return err
}

// ready says whether this owner holds what a sum of tree t at node (-1:
// the leaves) needs: the earlier trees applied and, for a node sum, the
// tree grown to the node's level (errWait: not yet; the sum is kept).
func (o *Owner) ready(t, node int) error {
	need := o.pub.Boost.Depth // the leaves need every level
	if node >= 0 {
		if node >= 1<<o.pub.Boost.Depth-1 {
			return fmt.Errorf("node %d beyond depth %d", node, o.pub.Boost.Depth)
		}
		need = levelOf(node)
	}
	if o.pub.Newton() {
		if node >= 0 {
			return fmt.Errorf("node %d: a newton tree has no node sums", node)
		}
		if o.applied < t-1 {
			return errWait
		}
		if o.trees[t] == nil {
			o.trees[t] = o.pub.NewtonTree(o.binning, t)
		}
		return nil
	}
	if o.applied < t-1 || (need > 0 && (o.trees[t] == nil || o.trees[t].levels < need)) {
		return errWait
	}
	return nil
}

// charge records the spend of tree t's ensemble in the ledger before
// anything of this owner's data leaves, and refuses a second tree of the
// same ensemble: groups of one ensemble are disjoint, which is what lets
// them compose in parallel. A Newton session is charged once, before its
// first share: its trees compose in Renyi DP, not ensemble by ensemble.
func (o *Owner) charge(t int) error {
	e, _ := o.pub.Ensemble(t)
	key := ledgerKey(o.pub.Session, e)
	round := uint32(t)
	if o.pub.Newton() {
		e, key, round = 0, newtonLedgerKey(o.pub.Session), 0
	} else if tree, ok := o.spent[e]; ok && tree != t {
		return fmt.Errorf("%w: ensemble %d already spent on tree %d, asked for tree %d", protocol.ErrAlreadyContributed, e, tree, t)
	}
	if _, ok := o.spent[e]; ok {
		return nil
	}
	mech, err := o.treeRelease(t)
	if err != nil {
		return err
	}
	if _, err := (release.Gate{Ledger: o.cfg.Ledger}).Charge(key, round, 0, mech); err != nil {
		return err
	}
	o.spent[e] = t
	return nil
}

// vector is this owner's contribution for node (or the leaves, node < 0)
// of tree t: gradient sums then counts.
func (o *Owner) vector(t, node int) []float64 {
	if o.pub.Newton() {
		return o.newtonVector(t)
	}
	cfg := o.pub.Boost
	grad := make([]float64, len(o.F))
	rows := make([]int32, 0, len(o.F))
	for i := range o.F {
		g := o.F[i] - o.y[i]
		if cfg.Private() {
			if cfg.ClipGradients {
				g = max(-dpboost.GStar, min(dpboost.GStar, g))
			} else if math.Abs(g) > dpboost.GStar {
				continue // gradient-based data filtering
			}
		}
		grad[i] = g
		rows = append(rows, int32(i))
	}
	Fd := o.data.Features
	row := func(r int32) []uint8 { return o.data.Idx[int(r)*Fd : int(r)*Fd+Fd] }
	tr := o.trees[t]
	if node < 0 {
		L := 1 << cfg.Depth
		v := make([]float64, 2*L)
		for _, r := range rows {
			j := tr.nodeOf(row(r), cfg.Depth)
			v[j] += grad[r]
			v[L+j]++
		}
		return v
	}
	d := levelOf(node)
	at := node - (1<<d - 1)
	mine := rows[:0:0]
	for _, r := range rows {
		if d == 0 || tr.nodeOf(row(r), d) == at {
			mine = append(mine, r)
		}
	}
	cols := columnsOf(o.pub.Schema, o.binning)
	chosen := o.pub.NodeColumns(t, node, len(cols))
	C := 0
	for _, c := range chosen {
		C += cols[c].cells(o.binning)
	}
	v := make([]float64, 2*C)
	for _, r := range mine {
		off := 0
		for _, ci := range chosen {
			c := cols[ci]
			if k := c.cell(row(r)); k >= 0 {
				v[off+k] += grad[r]
				v[C+off+k]++
			}
			off += c.cells(o.binning)
		}
	}
	return v
}

// newtonVector is this owner's leaf sums of Newton tree t: logistic
// gradients, then kappa times the hessians, per leaf of the beacon's tree.
func (o *Owner) newtonVector(t int) []float64 {
	depth, Fd := o.pub.Boost.Depth, o.data.Features
	L := 1 << depth
	d, _ := o.pub.NewtonDesign() // validated at join
	tr := o.trees[t]
	v := make([]float64, 2*L)
	for i := range o.F {
		j := tr.nodeOf(o.data.Idx[i*Fd:(i+1)*Fd], depth)
		g, h := dpboost.LogisticGH(o.F[i], o.y[i] > 0)
		v[j] += g
		v[L+j] += d.Kappa * h
	}
	return v
}

// touch re-arms the idle timer: an owner that hears nothing from the user
// for IdleTimeout leaves the session.
func (o *Owner) touch() {
	o.stopIdle()
	o.idle = o.loop.AfterFunc(o.pub.IdleTimeout, func() {
		if o.state == OwnerJoined {
			out := protocol.Failed(0, o.pub.Boost.Trees, OutcomeUnit, fmt.Errorf("no message from the data user for %v", o.pub.IdleTimeout))
			out.Own = true
			o.ended(out)
			o.leave()
		}
	})
}

func (o *Owner) stopIdle() {
	if o.idle != nil {
		o.idle.Stop()
		o.idle = nil
	}
}

func (o *Owner) leave() {
	o.stopIdle()
	o.state = OwnerIdle
	o.pending = nil
	o.party = nil
	o.pub = nil
}

// colluderText prints a colluder bound ("all" for boost.ColludersAll).
func colluderText(c int) string {
	if c < 0 {
		return "all"
	}
	return fmt.Sprint(c)
}

// ended logs the session's outcome in the data user's words and reports it.
func (o *Owner) ended(out protocol.Outcome) {
	protocol.LogOutcome(o.log.With("session", o.pub.Session), out)
	if f := o.cfg.OnOutcome; f != nil {
		o.loop.Notify(func() { f(out) })
	}
}
