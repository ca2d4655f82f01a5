package fedboost

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/ppboost/ppboost/boost"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/crypto/dpnoise"
	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
	"google.golang.org/protobuf/proto"
)

// MaxSumLength is the most field elements one secure sum carries: a Shamir
// share of L uniform field elements is about 9 L bytes of varints, and the
// frame cap is 64 KiB. Longer vectors are cut into chunks, one sum each.
const MaxSumLength = 6000

// Limits an owner accepts (a configuration is checked, group by group,
// before anything is computed from it).
const (
	MaxTrees  = 4096
	MaxDepth  = 10
	MaxRoster = 1 << 17
	// MaxClasses bounds K: a Newton round's vector has 2 K 2^Depth
	// coordinates (chunked at MaxSumLength).
	MaxClasses = 64
	// MaxMemberAddrs and MaxAddrBytes bound a roster member's addresses
	// (Public.RosterAddrs; node.MaxPeerAddrs and node.MaxPeerAddrBytes are
	// what a libp2p user gathers).
	MaxMemberAddrs = protocol.MaxMemberAddrs
	MaxAddrBytes   = protocol.MaxAddrBytes
)

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("fedboost: bad configuration")

// Public is the session's public configuration, announced in FedConfig and
// checked by every owner: everything the owners and the user compute the
// plan (groups, features, noise, layouts) from.
type Public struct {
	Session string          `json:"session"`
	Boost   dpboost.Config  `json:"boost"` // Method dpboost or np, Task classification
	Schema  *dataset.Schema `json:"schema"`
	Dim     int             `json:"dim"`
	// ColumnsPerNode is how many schema columns a node's histogram covers:
	// 0 = all (the split is chosen over every candidate, sensitivity 2 x
	// columns), K > 0 = K columns per node drawn from the beacon
	// (sensitivity 2K, shorter messages, a split among fewer candidates).
	ColumnsPerNode int `json:"columns_per_node"`
	// SplitFraction is the share of a tree's eps_t spent on the internal
	// nodes (eps_t SplitFraction / Depth per level); the leaves get the
	// rest. 0 means DPBoost's 1/2. Noisy histograms need more of the
	// budget for splits than the exponential mechanism does: the leaves'
	// (G, N) sums are large and tolerate noise.
	SplitFraction float64 `json:"split_fraction,omitempty"`
	// Noise adds distributed noise to every sum (required for dpboost;
	// off only with np, the non-private baseline and equality test).
	Noise bool `json:"noise"`
	// Colluders is c: owners that may collude with the data user
	// (boost.ColludersAll: all of them; shares are then sized for one
	// honest dealer). Owners refuse a c below their own bound.
	Colluders int `json:"colluders"`
	// DropFraction is the fraction of a tree's group whose silence the
	// tree's sums survive: the dealer floor of tree t is
	// m_t = max(Sum.MinParties, |G_t| - floor(DropFraction |G_t|)) and each
	// share is sized for h_t = m_t - c honest owners, so a sum over k >= m_t
	// dealers carries k/h_t <= |G_t|/h_t times the needed noise variance.
	DropFraction float64          `json:"drop_fraction"`
	Sum          securesum.Params `json:"sum"`
	// MaxRows is the public cap on an owner's rows: the bound of a summed
	// value (a cell holds at most MaxRows rows, |g| <= 1).
	MaxRows int `json:"max_rows"`
	// Roster is the sorted list of admitted owners.
	Roster []protocol.PeerID `json:"roster"`
	// RosterAddrs is nil or parallel to Roster: where member i listens
	// (full multiaddrs ending in /p2p/<Roster[i]>, at most MaxMemberAddrs
	// of at most MaxAddrBytes bytes; none: an empty list), as the data user
	// learned it when the owner connected. Owners add them to their address
	// book so secure-sum streams dial one another directly. Public
	// addressing, not derived from any owner's data.
	RosterAddrs [][]string `json:"roster_addrs,omitempty"`
	// Beacon is the public randomness: groups, features, committees.
	Beacon []byte `json:"beacon"`
	// StepTimeout bounds one level (or the leaves) of one tree: the user
	// fails the session past it; owners leave after IdleTimeout of silence.
	StepTimeout time.Duration `json:"step_timeout"`
	IdleTimeout time.Duration `json:"idle_timeout"`

	newton *newtonMemo // NewtonDesign's cache (not announced)
}

// DefaultMaxRows is the per-owner row cap (Public.MaxRows) a simulated
// session declares when its caller gives none: dpboost.DefaultRowBound
// shared out among the owners, rounded up, so that the session's public
// row bound (owners x MaxRows, which dpboost.NewtonRule's delta reads) is
// about the one-process trainer's default. It reads the roster size only.
func DefaultMaxRows(owners int) int {
	owners = max(owners, 1)
	return (dpboost.DefaultRowBound + owners - 1) / owners
}

// Floor is m_t, the fewest dealers a sum of tree t may reveal.
func (p *Public) Floor(t int) int {
	g := len(p.Group(t))
	return max(p.Sum.MinParties, g-int(math.Floor(p.DropFraction*float64(g))))
}

// Honest is h_t = max(1, m_t - c), the honest contributors each share of
// tree t is sized for (1 with colluders all, boost.ColludersAll).
func (p *Public) Honest(t int) int { return boost.HonestFor(p.Floor(t), p.Colluders) }

// SumParams are the secure-sum parameters of tree t's sums: the session's,
// with the dealer floor m_t, and a single instance when the sums carry
// noise: an owner deals each noisy vector once, so two totals over
// different dealer sets (whose difference is one owner's value with only
// its own noise share, and which would release the value twice under one
// charge) never exist. A sum whose instance cannot finish fails the
// session instead of re-forming.
func (p *Public) SumParams(t int) securesum.Params {
	s := p.Sum
	s.MinParties = p.Floor(t)
	s.SingleInstance = s.SingleInstance || p.Noise
	return s
}

// Validate checks the configuration and the plan it implies.
func (p *Public) Validate() error {
	if p.Session == "" {
		return badConfig("no session id")
	}
	if err := p.Boost.Validate(); err != nil {
		return badConfig("%v", err)
	}
	if err := p.validateShape(); err != nil {
		return err
	}
	if err := p.validateSession(); err != nil {
		return err
	}
	return p.validatePlan()
}

// badConfig is an invalid public configuration.
func badConfig(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
}

// validateShape checks what is trained: the sizes, method, task, schema and
// the learner's knobs.
func (p *Public) validateShape() error {
	switch {
	case p.Boost.Trees > MaxTrees || p.Boost.Depth > MaxDepth || len(p.Roster) > MaxRoster:
		return badConfig("%d trees of depth %d over %d owners (limits %d, %d, %d)", p.Boost.Trees, p.Boost.Depth, len(p.Roster), MaxTrees, MaxDepth, MaxRoster)
	case p.Boost.Method != dpboost.DPBoost && p.Boost.Method != dpboost.NP && p.Boost.Method != dpboost.Newton:
		return badConfig("method %v: only newton, dpboost and np are federated", p.Boost.Method)
	case p.Boost.Task != dpboost.Classification:
		return badConfig("task %v: only classification", p.Boost.Task)
	case p.Schema == nil || len(p.Schema.Classes) < 2:
		return badConfig("a schema with at least two classes is required")
	case len(p.Schema.Classes) > MaxClasses:
		return badConfig("%d classes (limit %d)", len(p.Schema.Classes), MaxClasses)
	case len(p.Schema.Classes) > 2 && !p.Newton():
		return badConfig("%v with %d classes: federated %v trains binary models; K classes train with the one-process trainer (ppboost dpboost) or federated with the Newton trainer (ppboost fed --method newton)",
			p.Boost.Method, len(p.Schema.Classes), p.Boost.Method)
	case !(p.SplitFraction >= 0 && p.SplitFraction < 1):
		return badConfig("split_fraction %v, want [0, 1)", p.SplitFraction)
	case p.ColumnsPerNode < 0:
		return badConfig("columns_per_node %d", p.ColumnsPerNode)
	case p.Boost.Private() && !p.Noise:
		return badConfig("%v without noise releases exact sums", p.Boost.Method)
	}
	return nil
}

// validateSession checks who takes part and how: colluders, drops, the
// row cap, the roster, the beacon, the timers and the sums' parameters.
func (p *Public) validateSession() error {
	switch {
	case p.Colluders < boost.ColludersAll:
		return badConfig("colluders %d: want %d (all) or at least 0", p.Colluders, boost.ColludersAll)
	case !(p.DropFraction >= 0 && p.DropFraction < 1):
		return badConfig("drop_fraction %v, want [0, 1)", p.DropFraction)
	case p.MaxRows < 1:
		return badConfig("max_rows %d", p.MaxRows)
	case len(p.Roster) == 0 || !slices.IsSorted(p.Roster):
		return badConfig("roster empty or not sorted")
	case len(p.Beacon) == 0:
		return badConfig("no beacon")
	case p.StepTimeout <= 0 || p.IdleTimeout <= 0:
		return badConfig("step_timeout %v, idle_timeout %v", p.StepTimeout, p.IdleTimeout)
	case p.Sum.Method != securesum.Shamir:
		return badConfig("sum method %q: distributed noise needs Shamir (dealer sets of at least min_parties)", p.Sum.Method)
	}
	if err := p.validateRosterAddrs(); err != nil {
		return err
	}
	if err := p.Sum.Validate(); err != nil {
		return badConfig("sum: %v", err)
	}
	if float64(p.MaxRows) != p.Sum.Bound {
		return badConfig("sum bound %v, want max_rows %d", p.Sum.Bound, p.MaxRows)
	}
	return nil
}

// validateRosterAddrs checks the roster's addresses (protocol.CheckRosterAddrs).
func (p *Public) validateRosterAddrs() error {
	if err := protocol.CheckRosterAddrs(p.Roster, p.RosterAddrs); err != nil {
		return badConfig("%v", err)
	}
	return nil
}

// validatePlan checks what follows from the configuration: the binning,
// the Newton design, and every tree's group against min_parties.
func (p *Public) validatePlan() error {
	if _, err := p.Binning(); err != nil {
		return badConfig("%v", err)
	}
	if p.Newton() {
		if _, err := p.NewtonDesign(); err != nil {
			return badConfig("%v", err)
		}
	}
	for t := 1; t <= p.Boost.Trees; t++ {
		if g := p.Group(t); len(g) < p.Sum.MinParties {
			return badConfig("tree %d has a group of %d owners, below min_parties %d (fewer trees per ensemble or more owners)", t, len(g), p.Sum.MinParties)
		}
	}
	return nil
}

// Wire is the FedConfig that announces p. Every field of Public except the
// (unannounced) Newton cache has a typed counterpart; durations travel in
// nanoseconds, so PublicFromWire(p.Wire()) equals p exactly.
func (p *Public) Wire() *wire.FedConfig {
	b := p.Boost
	w := &wire.FedConfig{
		Session: p.Session,
		Boost: &wire.DPBoostConfig{Method: b.Method.String(), Task: b.Task.String(), Epsilon: b.Epsilon,
			Trees: uint32(b.Trees), EnsembleSize: uint32(b.EnsembleSize), Depth: uint32(b.Depth),
			LearningRate: b.LearningRate, Lambda: b.Lambda, Bins: uint32(b.Bins),
			ClipPerEnsemble: b.ClipPerEnsemble, ClipGradients: b.ClipGradients,
			Delta: b.Delta, HessianShare: b.HessianShare, LeafMax: b.LeafMax},
		Dim: uint32(p.Dim), ColumnsPerNode: uint32(p.ColumnsPerNode), SplitFraction: p.SplitFraction,
		Noise: p.Noise, Colluders: int64(p.Colluders), DropFraction: p.DropFraction,
		Sum: &wire.SumParams{Method: p.Sum.Method, Threshold: uint32(p.Sum.Threshold), Committee: uint32(p.Sum.Committee),
			ScaleBits: uint32(p.Sum.ScaleBits), MinParties: uint32(p.Sum.MinParties), Bound: p.Sum.Bound,
			TimeoutNs: int64(p.Sum.Timeout), HopTimeoutNs: int64(p.Sum.HopTimeout), PingTimeoutNs: int64(p.Sum.PingTimeout),
			MaxReforms: uint32(p.Sum.MaxReforms), MaxWaitNs: int64(p.Sum.MaxWait), ProcessingNs: int64(p.Sum.Processing),
			SingleInstance: p.Sum.SingleInstance},
		MaxRows: uint64(p.MaxRows), Beacon: p.Beacon,
		StepTimeoutNs: int64(p.StepTimeout), IdleTimeoutNs: int64(p.IdleTimeout),
	}
	w.Schema = wire.SchemaOf(p.Schema)
	for _, id := range p.Roster {
		w.Roster = append(w.Roster, string(id))
	}
	for _, a := range p.RosterAddrs {
		w.RosterAddrs = append(w.RosterAddrs, strings.Join(a, " "))
	}
	return w
}

// maxField bounds the integer fields of a FedConfig before they become Go
// ints (Validate then applies the real limits).
const maxField = math.MaxInt32

// PublicFromWire decodes and validates an announced FedConfig. Errors name
// the FedConfig field.
func PublicFromWire(w *wire.FedConfig) (*Public, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: FedConfig.%s", ErrConfig, fmt.Sprintf(format, a...))
	}
	if w == nil {
		return nil, bad("missing")
	}
	b, sp := w.GetBoost(), w.GetSum()
	if b == nil {
		return nil, bad("boost: missing")
	}
	if sp == nil {
		return nil, bad("sum: missing")
	}
	method, err := dpboost.ParseMethod(b.Method)
	if err != nil {
		return nil, bad("boost.method: %v", err)
	}
	var task dpboost.Task
	if err := task.UnmarshalText([]byte(b.Task)); err != nil {
		return nil, bad("boost.task: %v", err)
	}
	switch {
	case w.MaxRows > maxField:
		return nil, bad("max_rows %d over %d", w.MaxRows, maxField)
	case w.Colluders < boost.ColludersAll || w.Colluders > maxField:
		return nil, bad("colluders %d", w.Colluders)
	case sp.ScaleBits > 64:
		return nil, bad("sum.scale_bits %d", sp.ScaleBits)
	}
	for _, d := range []struct {
		name string
		ns   int64
	}{{"step_timeout_ns", w.StepTimeoutNs}, {"idle_timeout_ns", w.IdleTimeoutNs}, {"sum.timeout_ns", sp.TimeoutNs},
		{"sum.hop_timeout_ns", sp.HopTimeoutNs}, {"sum.ping_timeout_ns", sp.PingTimeoutNs}, {"sum.max_wait_ns", sp.MaxWaitNs},
		{"sum.processing_ns", sp.ProcessingNs}} {
		if d.ns < 0 {
			return nil, bad("%s %d is negative", d.name, d.ns)
		}
	}
	p := &Public{
		Session: w.Session,
		Boost: dpboost.Config{Method: method, Task: task, Epsilon: b.Epsilon, Trees: int(b.Trees), EnsembleSize: int(b.EnsembleSize),
			Depth: int(b.Depth), LearningRate: b.LearningRate, Lambda: b.Lambda, Bins: int(b.Bins),
			ClipPerEnsemble: b.ClipPerEnsemble, ClipGradients: b.ClipGradients,
			Delta: b.Delta, HessianShare: b.HessianShare, LeafMax: b.LeafMax},
		Dim: int(w.Dim), ColumnsPerNode: int(w.ColumnsPerNode), SplitFraction: w.SplitFraction,
		Noise: w.Noise, Colluders: int(w.Colluders), DropFraction: w.DropFraction,
		Sum: securesum.Params{Method: sp.Method, Threshold: int(sp.Threshold), Committee: int(sp.Committee),
			ScaleBits: uint(sp.ScaleBits), MinParties: int(sp.MinParties), Bound: sp.Bound,
			Timeout: time.Duration(sp.TimeoutNs), HopTimeout: time.Duration(sp.HopTimeoutNs), PingTimeout: time.Duration(sp.PingTimeoutNs),
			MaxReforms: int(sp.MaxReforms), MaxWait: time.Duration(sp.MaxWaitNs), Processing: time.Duration(sp.ProcessingNs),
			SingleInstance: sp.SingleInstance},
		MaxRows: int(w.MaxRows), Beacon: w.Beacon,
		StepTimeout: time.Duration(w.StepTimeoutNs), IdleTimeout: time.Duration(w.IdleTimeoutNs),
	}
	if s := w.GetSchema(); s != nil {
		if p.Schema, err = s.ToDataset(); err != nil {
			return nil, bad("schema: %v", err)
		}
	}
	for _, id := range w.Roster {
		p.Roster = append(p.Roster, protocol.PeerID(id))
	}
	if ra := w.GetRosterAddrs(); len(ra) > 0 {
		// Checked whole by Validate; parsing bounds the text first.
		var err error
		if p.RosterAddrs, err = protocol.DecodeRosterAddrs(p.Roster, ra); err != nil && p.RosterAddrs == nil {
			return nil, bad("%v", err)
		}
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// Marshal is the deterministic protobuf encoding of p.Wire().
func (p *Public) Marshal() ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(p.Wire())
}

// ParsePublic decodes (protobuf FedConfig) and validates a configuration.
func ParsePublic(b []byte) (*Public, error) {
	var w wire.FedConfig
	if err := proto.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("%w: FedConfig: %v", ErrConfig, err)
	}
	return PublicFromWire(&w)
}

// Binning is the public binning from the schema.
func (p *Public) Binning() (*dpboost.Binning, error) {
	return dpboost.NewBinning(p.Schema, p.Dim, p.Boost.Bins)
}

// Ensemble is the 0-based ensemble of tree t (1-based) and the tree's index
// in it.
func (p *Public) Ensemble(t int) (ensemble, index int) {
	te := p.Boost.EnsembleTrees()
	return (t - 1) / te, (t - 1) % te
}

// seeded is a generator keyed by the beacon and labels.
func (p *Public) seeded(label string, a ...uint64) *rand.Rand {
	h := sha256.New()
	h.Write(p.Beacon)
	h.Write([]byte(label))
	var b [8]byte
	for _, x := range a {
		binary.LittleEndian.PutUint64(b[:], x)
		h.Write(b[:])
	}
	s := h.Sum(nil)
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(s), binary.LittleEndian.Uint64(s[8:])))
}

// Group is the sorted list of owners whose data tree t uses: with DPBoost,
// the roster is shuffled per ensemble from the beacon and cut into blocks of
// geometric sizes |roster| eta (1-eta)^j / (1 - (1-eta)^T_e) (DPBoost's
// row subsets, by owner): every owner is in exactly one tree of each
// ensemble. With NP every tree uses every owner.
func (p *Public) Group(t int) []protocol.PeerID {
	if p.Boost.Method == dpboost.NP || p.Newton() {
		return p.Roster
	}
	e, j := p.Ensemble(t)
	te := p.Boost.EnsembleTrees()
	m := min(te, p.Boost.Trees-e*te)
	n := len(p.Roster)
	perm := p.seeded("fedboost/groups", uint64(e)).Perm(n)
	cut := dpboost.SubsetBounds(p.Boost.Method, p.Boost.LearningRate, n, m)
	g := make([]protocol.PeerID, 0, cut[j+1]-cut[j])
	for _, i := range perm[cut[j]:cut[j+1]] {
		g = append(g, p.Roster[i])
	}
	slices.Sort(g)
	return g
}

// TreeEpsilon is eps_t, each group member's spend for its tree (0 for NP
// and for Newton, whose trees compose in Renyi DP: see NewtonDesign).
func (p *Public) TreeEpsilon(t int) float64 {
	if p.Newton() {
		return 0
	}
	return dpboost.Account(p.Boost).PerTree[t-1]
}

// Layout of one sum's vector.
type Layout struct {
	Length int     // coordinates of the whole vector (before chunking)
	Chunks int     // sums it is cut into
	Eps    float64 // budget of the release (0: no noise)
	Delta  float64 // L1 sensitivity of the whole vector to one row (real units)
	Coords int     // coordinates one row can change
}

// NodeLayout is the vector of internal node `node` of tree t (G cells then
// N cells of the node's columns) and its noise budget
// eps_t SplitFraction / Depth (DPBoost: eps_t / (2 Depth)).
func (p *Public) NodeLayout(b *dpboost.Binning, t, node int) Layout {
	cols := columnsOf(p.Schema, b)
	chosen := p.NodeColumns(t, node, len(cols))
	cells := 0
	for _, c := range chosen {
		cells += cols[c].cells(b)
	}
	l := Layout{Length: 2 * cells, Delta: 2 * float64(len(chosen)), Coords: 2 * len(chosen)}
	if p.Noise && p.Boost.Private() {
		l.Eps = p.TreeEpsilon(t) * p.splitFraction() / float64(p.Boost.Depth)
	}
	l.Chunks = (l.Length + MaxSumLength - 1) / MaxSumLength
	return l
}

func (p *Public) splitFraction() float64 {
	if p.SplitFraction == 0 {
		return 0.5
	}
	return p.SplitFraction
}

// LeafLayout is the leaves' vector of tree t (2^D gradient sums, then 2^D
// counts: a row is in one leaf, Delta = 2) and its budget
// eps_t (1 - SplitFraction).
//
// A Newton round of K > 2 classes carries the K trees' leaves: K 2^D
// gradient sums then K 2^D (kappa) hessian sums, class-major (its noise is
// NewtonDesign's, not the layout's Delta).
func (p *Public) LeafLayout(t int) Layout {
	l := Layout{Length: p.Boosters() * (2 << p.Boost.Depth), Delta: 2, Coords: 2}
	if p.Noise && p.Boost.Private() {
		l.Eps = p.TreeEpsilon(t) * (1 - p.splitFraction())
	}
	l.Chunks = (l.Length + MaxSumLength - 1) / MaxSumLength
	return l
}

// NoiseFor is the distributed-noise design of a release with layout l.
func (p *Public) NoiseFor(t int, l Layout) (dpnoise.Params, bool, error) {
	if p.Newton() && p.Noise {
		d, err := p.NewtonDesign()
		if err != nil {
			return dpnoise.Params{}, false, err
		}
		return d.NoiseParams(p.Honest(t)), true, nil
	}
	if l.Eps == 0 {
		return dpnoise.Params{}, false, nil
	}
	codec, err := field.NewCodec(p.Sum.ScaleBits)
	if err != nil {
		return dpnoise.Params{}, false, err
	}
	np, err := dpnoise.ForEpsilon(l.Eps, l.Delta, codec, l.Coords, p.Honest(t))
	return np, true, err
}

// Chunk is coordinates [lo, hi) of chunk c of a vector of length n.
func Chunk(n, c int) (lo, hi int) {
	lo = c * MaxSumLength
	return lo, min(n, lo+MaxSumLength)
}

// Purposes of the sums of a tree (Header.Round is the tree).
func nodePurpose(node, chunk int) string { return fmt.Sprintf("node%d/%d", node, chunk) }
func leafPurpose(chunk int) string       { return fmt.Sprintf("leaves/%d", chunk) }

// parsePurpose returns (node, chunk), node = -1 for the leaves.
//
// Parsing is strict: a purpose that does not print back identically
// (purposeOf) is refused — "leaves/00", "leaves/+0", "leaves/0x" or
// "leaves/0 " would otherwise name the same sum under another spelling.
func parsePurpose(s string) (node, chunk int, err error) {
	if _, err := fmt.Sscanf(s, "leaves/%d", &chunk); err == nil && chunk >= 0 {
		node = -1
	} else if _, err := fmt.Sscanf(s, "node%d/%d", &node, &chunk); err != nil || node < 0 || chunk < 0 {
		return 0, 0, fmt.Errorf("purpose %q", s)
	}
	if c := purposeOf(node, chunk); c != s {
		return 0, 0, fmt.Errorf("purpose %q is not canonical (%q)", s, c)
	}
	return node, chunk, nil
}

// purposeOf is the canonical purpose of a node's sum (node < 0: the
// leaves) and chunk.
func purposeOf(node, chunk int) string {
	if node < 0 {
		return leafPurpose(chunk)
	}
	return nodePurpose(node, chunk)
}

// levelOf is the depth of internal node i (breadth-first numbering).
func levelOf(node int) int {
	d := 0
	for (2<<d)-1 <= node {
		d++
	}
	return d
}

// ChargeKey is the ledger key that covers an owner's sums of tree t in
// session p (the Newton session's one charge, or tree t's ensemble).
func ChargeKey(p *Public, t int) string {
	if p.Newton() {
		return newtonLedgerKey(p.Session)
	}
	e, _ := p.Ensemble(t)
	return ledgerKey(p.Session, e)
}

// ledgerKey is what an owner's ledger records a group membership under:
// one spend per (session, ensemble).
func ledgerKey(session string, ensemble int) string {
	return fmt.Sprintf("%s/ensemble-%d", session, ensemble)
}

// clampRealScale is the decoded Laplace scale of a design, for logs.
func realScale(np dpnoise.Params, bits uint) float64 {
	return np.Scale / math.Ldexp(1, int(bits))
}
