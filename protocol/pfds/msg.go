package pfds

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Version is the message format version (wire.PfdsMessage.version);
// messages of another version are rejected. Version 1 was a hand-written
// binary format; version 2 is the protobuf wire.PfdsMessage.
const Version = 2

// Topic is the pubsub topic of PFDS sessions (wire.TopicPFDS).
const Topic = wire.TopicPFDS

// MaxMessage caps an encoded message (the memnet and wire frame cap).
const MaxMessage = 1 << 20

// MaxShareRecords caps the records of one data share: receivers regenerate
// every record (a row of the schema's dimension), so an unbounded count
// would let one message make them allocate gigabytes. A share has about as
// many records as its author has rows.
const MaxShareRecords = 200_000

// Caps on the fields a peer fills.
const (
	maxID     = 256     // session and peer ids
	maxDigest = 128     // schema digest
	maxRoster = 1 << 16 // agents of a session
)

// Message kinds.
const (
	KindAnnounce byte = 1
	KindTree     byte = 2
	KindData     byte = 3
)

// Decoding errors.
var (
	ErrMalformed = errors.New("pfds: malformed message")
	ErrVersion   = errors.New("pfds: unsupported message version")
)

// Announce fixes a session's public parameters.
type Announce struct {
	Session      string
	Params       pfds.Params
	Learner      pfds.Learner // the final ERM task
	SchemaDigest string       // the public schema every agent must hold
	Roster       []protocol.PeerID
	TreeTimeout  uint32 // milliseconds to wait for the trees before labelling
	DataTimeout  uint32 // milliseconds to wait for the data shares
	// CV, when set, makes the session PFDS-cv (boost/pfds.VariantParams),
	// and Params is ignored by EncodeAnnounce: the wire's eps, hmax and
	// max_leaves are CV's, t, p and optimize the unused 1, 2 and false,
	// and DecodeAnnounce fills Params from them. Nil: the paper's PFDS.
	CV *pfds.VariantParams
	// RosterAddrs is nil or parallel to Roster: where member i listens
	// (full addresses ending in its /p2p/ id; protocol.CheckRosterAddrs),
	// as the announcer knows it, so that agents connected only to the
	// announcer can connect to each other.
	RosterAddrs [][]string
}

// Variant names the session's algorithm, for logs and tables.
func (a *Announce) Variant() string {
	if a.CV != nil {
		return "pfds-cv"
	}
	return "pfds"
}

// Header is common to every message.
type Header struct {
	Kind    byte
	Session string
	Author  protocol.PeerID
}

// TreeShare is an agent's public tree.
type TreeShare struct {
	Header
	Tree []byte // pfds.AppendTree
}

// DataShare is an agent's synthetic data: leaf counts, the public sampling
// seed and one label per record.
type DataShare struct {
	Header
	Data pfds.DataShare
}

func encode(h Header, m *wire.PfdsMessage) []byte {
	m.Version, m.Session, m.Author = Version, h.Session, string(h.Author)
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("pfds: marshal: %v", err)) // only invalid UTF-8 strings fail; ids are ASCII
	}
	return b
}

// EncodeAnnounce encodes a by author.
func EncodeAnnounce(author protocol.PeerID, a *Announce) []byte {
	p := a.Params
	if v := a.CV; v != nil {
		p = VariantParams(*v)
	}
	w := &wire.PfdsAnnounce{Eps: p.Eps, Hmax: uint32(p.HMax), T: uint32(p.T), P: uint32(p.P), MaxLeaves: uint32(p.MaxLeaves),
		Optimize: p.Optimize, Learner: uint32(a.Learner), SchemaDigest: a.SchemaDigest,
		TreeTimeoutMs: a.TreeTimeout, DataTimeoutMs: a.DataTimeout}
	if a.CV != nil {
		w.Cv = &wire.PfdsVariant{Threshold: a.CV.Threshold, Sample: a.CV.Sample}
	}
	for _, id := range a.Roster {
		w.Roster = append(w.Roster, string(id))
	}
	for _, l := range a.RosterAddrs {
		w.RosterAddrs = append(w.RosterAddrs, strings.Join(l, " "))
	}
	return encode(Header{KindAnnounce, a.Session, author}, &wire.PfdsMessage{Body: &wire.PfdsMessage_Announce{Announce: w}})
}

// VariantParams are the Params a PFDS-cv announcement carries for v: its
// eps, depth and leaf cap, and the unused t 1, p 2, no optimization.
func VariantParams(v pfds.VariantParams) pfds.Params {
	return pfds.Params{Eps: v.Eps, HMax: v.HMax, T: 1, P: 2, MaxLeaves: v.MaxLeaves}
}

// EncodeTree encodes a tree share: the tree (pfds.AppendTree) and, in a
// PFDS-cv session, its published leaf counts (pfds.LeafCounts; nil in the
// paper's PFDS, whose counts are private).
func EncodeTree(h Header, tree []byte, counts []int64) []byte {
	return encode(h, &wire.PfdsMessage{Body: &wire.PfdsMessage_Tree{Tree: &wire.PfdsTree{Tree: tree, LeafCounts: counts}}})
}

// EncodeData encodes a data share.
func EncodeData(h Header, d *pfds.DataShare) []byte {
	w := &wire.PfdsData{Seed: d.Seed, Counts: make([]uint32, len(d.Counts)), Labels: make([]byte, len(d.Labels))}
	for i, c := range d.Counts {
		w.Counts[i] = uint32(c)
	}
	for i, l := range d.Labels {
		w.Labels[i] = byte(l)
	}
	return encode(h, &wire.PfdsMessage{Body: &wire.PfdsMessage_Data{Data: w}})
}

func malformed(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, a...))
}

// decode parses and shape-checks a message: size cap, version, session and
// author, and a body; it returns the header and the parsed message.
func decode(b []byte) (Header, *wire.PfdsMessage, error) {
	if len(b) > MaxMessage {
		return Header{}, nil, malformed("%d bytes over the cap %d", len(b), MaxMessage)
	}
	var m wire.PfdsMessage
	if err := proto.Unmarshal(b, &m); err != nil {
		return Header{}, nil, malformed("PfdsMessage: %v", err)
	}
	if m.Version != Version {
		return Header{}, nil, fmt.Errorf("%w: %d", ErrVersion, m.Version)
	}
	h := Header{Session: m.Session, Author: protocol.PeerID(m.Author)}
	switch {
	case len(m.Session) > maxID || len(m.Author) > maxID:
		return Header{}, nil, malformed("PfdsMessage.session or author over %d bytes", maxID)
	case m.Session == "" || m.Author == "":
		return Header{}, nil, malformed("PfdsMessage: empty session or author")
	}
	switch m.Body.(type) {
	case *wire.PfdsMessage_Announce:
		h.Kind = KindAnnounce
	case *wire.PfdsMessage_Tree:
		h.Kind = KindTree
	case *wire.PfdsMessage_Data:
		h.Kind = KindData
	default:
		return Header{}, nil, malformed("PfdsMessage: no body")
	}
	return h, &m, nil
}

// DecodeHeader parses a message and returns its common header.
func DecodeHeader(b []byte) (Header, error) {
	h, _, err := decode(b)
	return h, err
}

// DecodeAnnounce parses an announcement and validates its parameters.
func DecodeAnnounce(b []byte) (Header, *Announce, error) {
	h, m, err := decode(b)
	if err != nil {
		return h, nil, err
	}
	w := m.GetAnnounce()
	if w == nil {
		return h, nil, malformed("kind %d is not an announcement", h.Kind)
	}
	for _, f := range []struct {
		name   string
		v, max uint32
	}{{"hmax", w.Hmax, 1 << 10}, {"t", w.T, 1 << 20}, {"p", w.P, 1 << 10}, {"max_leaves", w.MaxLeaves, 1 << 30}, {"learner", w.Learner, uint32(pfds.LinReg)}} {
		if f.v > f.max {
			return h, nil, malformed("PfdsAnnounce.%s %d over %d", f.name, f.v, f.max)
		}
	}
	if len(w.SchemaDigest) > maxDigest {
		return h, nil, malformed("PfdsAnnounce.schema_digest: %d bytes over %d", len(w.SchemaDigest), maxDigest)
	}
	if len(w.Roster) > maxRoster {
		return h, nil, malformed("PfdsAnnounce.roster: %d entries over %d", len(w.Roster), maxRoster)
	}
	a := &Announce{Session: h.Session, Learner: pfds.Learner(w.Learner), SchemaDigest: w.SchemaDigest,
		TreeTimeout: w.TreeTimeoutMs, DataTimeout: w.DataTimeoutMs,
		Params: pfds.Params{Eps: w.Eps, HMax: int(w.Hmax), T: int(w.T), P: int(w.P), MaxLeaves: int(w.MaxLeaves), Optimize: w.Optimize}}
	seen := make(map[string]bool, len(w.Roster))
	for i, id := range w.Roster {
		if id == "" || len(id) > maxID || seen[id] {
			return h, nil, malformed("PfdsAnnounce.roster[%d] empty, over %d bytes or repeated", i, maxID)
		}
		seen[id] = true
		a.Roster = append(a.Roster, protocol.PeerID(id))
	}
	if err := a.Params.Validate(); err != nil {
		return h, nil, malformed("PfdsAnnounce: %v", err)
	}
	if cv := w.Cv; cv != nil {
		a.CV = &pfds.VariantParams{Eps: a.Params.Eps, HMax: a.Params.HMax, MaxLeaves: a.Params.MaxLeaves, Threshold: cv.Threshold, Sample: cv.Sample}
		if err := a.CV.Validate(); err != nil {
			return h, nil, malformed("PfdsAnnounce.cv: %v", err)
		}
	}
	if len(a.Roster) == 0 {
		return h, nil, malformed("PfdsAnnounce.roster: empty")
	}
	if a.RosterAddrs, err = protocol.DecodeRosterAddrs(a.Roster, w.RosterAddrs); err != nil {
		return h, nil, malformed("PfdsAnnounce.%v", err)
	}
	return h, a, nil
}

// DecodeTreeShare parses a tree share of the paper's PFDS against the
// session's domain, depth and leaf cap (maxLeaves 0: none); a share that
// carries leaf counts is malformed (the paper's counts are private).
func DecodeTreeShare(b []byte, dom *pfds.Domain, hmax, maxLeaves int) (Header, *pfds.Tree, error) {
	return decodeTreeShare(b, dom, hmax, maxLeaves, false)
}

// DecodeSessionTree parses a tree share of ann's session: a PFDS-cv tree
// must carry its leaf counts (one per leaf and class, each leaf's label
// their argmax), a PFDS tree none.
func DecodeSessionTree(b []byte, dom *pfds.Domain, ann *Announce) (Header, *pfds.Tree, error) {
	return decodeTreeShare(b, dom, ann.Params.HMax, ann.Params.MaxLeaves, ann.CV != nil)
}

func decodeTreeShare(b []byte, dom *pfds.Domain, hmax, maxLeaves int, counts bool) (Header, *pfds.Tree, error) {
	h, m, err := decode(b)
	if err != nil {
		return h, nil, err
	}
	w := m.GetTree()
	if w == nil {
		return h, nil, malformed("kind %d is not a tree", h.Kind)
	}
	t, n, err := pfds.DecodeTree(w.Tree, dom, hmax)
	if err != nil {
		return h, nil, malformed("PfdsTree.tree: %v", err)
	}
	if n != len(w.Tree) {
		return h, nil, malformed("PfdsTree.tree: %d trailing bytes", len(w.Tree)-n)
	}
	if l := len(t.Leaves()); maxLeaves > 0 && l > maxLeaves {
		return h, nil, malformed("PfdsTree.tree: %d leaves over the session's cap %d", l, maxLeaves)
	}
	switch {
	case counts:
		if err := pfds.SetLeafCounts(t, dom.Classes, w.LeafCounts); err != nil {
			return h, nil, malformed("PfdsTree.leaf_counts: %v", err)
		}
	case len(w.LeafCounts) > 0:
		return h, nil, malformed("PfdsTree.leaf_counts: %d counts in a PFDS session (only PFDS-cv publishes them)", len(w.LeafCounts))
	}
	return h, t, nil
}

// DecodeDataShare parses a data share; classes bounds the labels.
func DecodeDataShare(b []byte, classes int) (Header, *pfds.DataShare, error) {
	h, m, err := decode(b)
	if err != nil {
		return h, nil, err
	}
	w := m.GetData()
	if w == nil {
		return h, nil, malformed("kind %d is not a data share", h.Kind)
	}
	if len(w.Labels) > MaxShareRecords {
		return h, nil, malformed("PfdsData.labels: %d records over %d", len(w.Labels), MaxShareRecords)
	}
	d := &pfds.DataShare{Seed: w.Seed, Counts: make([]int, len(w.Counts)), Labels: make([]int, len(w.Labels))}
	total := uint64(0)
	for i, c := range w.Counts {
		total += uint64(c)
		d.Counts[i] = int(c)
	}
	if total != uint64(len(w.Labels)) {
		return h, nil, malformed("PfdsData: %d labels for %d records", len(w.Labels), total)
	}
	for i, l := range w.Labels {
		if int(l) >= classes {
			return h, nil, malformed("PfdsData.labels[%d]: class %d out of range (%d classes)", i, l, classes)
		}
		d.Labels[i] = int(l)
	}
	return h, d, nil
}

// RosterAddrsOf is an announcement's RosterAddrs: where each member
// listens as look knows it (an announcer's transport, once the agents
// connected to it), within a quarter of MaxMessage. Nil when look knows
// none, or has too many to fit.
func RosterAddrsOf(look protocol.AddressLookup, roster []protocol.PeerID) [][]string {
	lists, _ := protocol.CollectRosterAddrs(look, roster, MaxMessage/4)
	return lists
}
