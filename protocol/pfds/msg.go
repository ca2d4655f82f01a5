package pfds

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/protocol"
)

// Version is the message format version; messages of another version are
// rejected.
const Version = 1

// Topic is the pubsub topic of PFDS sessions.
const Topic = "/ppboost/pfds/1.0.0"

// MaxMessage caps an encoded message (the memnet and wire frame cap).
const MaxMessage = 1 << 20

// MaxShareRecords caps the records of one data share: receivers regenerate
// every record (a row of the schema's dimension), so an unbounded count
// would let one message make them allocate gigabytes. A share has about as
// many records as its author has rows.
const MaxShareRecords = 200_000

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

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendHeader(b []byte, h Header) []byte {
	b = append(b, Version, h.Kind)
	b = appendString(b, h.Session)
	return appendString(b, string(h.Author))
}

// EncodeAnnounce encodes a by author.
func EncodeAnnounce(author protocol.PeerID, a *Announce) []byte {
	b := appendHeader(nil, Header{KindAnnounce, a.Session, author})
	p := a.Params
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.Eps))
	for _, v := range []int{p.HMax, p.T, p.P, p.MaxLeaves} {
		b = binary.AppendUvarint(b, uint64(v))
	}
	opt := byte(0)
	if p.Optimize {
		opt = 1
	}
	b = append(b, opt, byte(a.Learner))
	b = appendString(b, a.SchemaDigest)
	b = binary.AppendUvarint(b, uint64(len(a.Roster)))
	for _, id := range a.Roster {
		b = appendString(b, string(id))
	}
	b = binary.AppendUvarint(b, uint64(a.TreeTimeout))
	return binary.AppendUvarint(b, uint64(a.DataTimeout))
}

// EncodeTree encodes a tree share.
func EncodeTree(h Header, tree []byte) []byte {
	h.Kind = KindTree
	return append(appendHeader(nil, h), tree...)
}

// EncodeData encodes a data share.
func EncodeData(h Header, d *pfds.DataShare) []byte {
	h.Kind = KindData
	b := appendHeader(nil, h)
	b = binary.LittleEndian.AppendUint64(b, d.Seed)
	b = binary.AppendUvarint(b, uint64(len(d.Counts)))
	for _, c := range d.Counts {
		b = binary.AppendUvarint(b, uint64(c))
	}
	b = binary.AppendUvarint(b, uint64(len(d.Labels)))
	for _, l := range d.Labels {
		b = append(b, byte(l))
	}
	return b
}

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at byte %d", ErrMalformed, what, r.off)
	}
}

func (r *reader) uvarint(max uint64, what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 || v > max {
		r.fail(what)
		return 0
	}
	r.off += n
	return v
}

func (r *reader) bytes(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b)-r.off < n {
		r.fail(what)
		return nil
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v
}

func (r *reader) string(max int, what string) string {
	n := r.uvarint(uint64(max), what)
	return string(r.bytes(int(n), what))
}

// DecodeHeader parses the common header and returns the body's offset.
func DecodeHeader(b []byte) (Header, int, error) {
	if len(b) > MaxMessage {
		return Header{}, 0, fmt.Errorf("%w: %d bytes over the cap %d", ErrMalformed, len(b), MaxMessage)
	}
	if len(b) < 2 {
		return Header{}, 0, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	if b[0] != Version {
		return Header{}, 0, fmt.Errorf("%w: %d", ErrVersion, b[0])
	}
	r := &reader{b: b, off: 2}
	h := Header{Kind: b[1]}
	h.Session = r.string(256, "session")
	h.Author = protocol.PeerID(r.string(256, "author"))
	if r.err != nil {
		return Header{}, 0, r.err
	}
	if h.Kind < KindAnnounce || h.Kind > KindData {
		return Header{}, 0, fmt.Errorf("%w: kind %d", ErrMalformed, h.Kind)
	}
	if h.Session == "" || h.Author == "" {
		return Header{}, 0, fmt.Errorf("%w: empty session or author", ErrMalformed)
	}
	return h, r.off, nil
}

// DecodeAnnounce parses an announcement's body and validates its parameters.
func DecodeAnnounce(b []byte) (Header, *Announce, error) {
	h, off, err := DecodeHeader(b)
	if err != nil {
		return h, nil, err
	}
	if h.Kind != KindAnnounce {
		return h, nil, fmt.Errorf("%w: kind %d is not an announcement", ErrMalformed, h.Kind)
	}
	r := &reader{b: b, off: off}
	a := &Announce{Session: h.Session}
	eb := r.bytes(8, "eps")
	if eb != nil {
		a.Params.Eps = math.Float64frombits(binary.LittleEndian.Uint64(eb))
	}
	a.Params.HMax = int(r.uvarint(1<<10, "hmax"))
	a.Params.T = int(r.uvarint(1<<20, "t"))
	a.Params.P = int(r.uvarint(1<<10, "p"))
	a.Params.MaxLeaves = int(r.uvarint(1<<30, "maxleaves"))
	fl := r.bytes(2, "flags")
	if fl != nil {
		a.Params.Optimize = fl[0] == 1
		a.Learner = pfds.Learner(fl[1])
		if fl[0] > 1 || fl[1] > byte(pfds.LinReg) {
			r.fail("flags")
		}
	}
	a.SchemaDigest = r.string(128, "schema digest")
	n := r.uvarint(1<<16, "roster size")
	seen := map[protocol.PeerID]bool{}
	for i := uint64(0); i < n && r.err == nil; i++ {
		id := protocol.PeerID(r.string(256, "roster entry"))
		if id == "" || seen[id] {
			r.fail("roster entry empty or repeated")
		}
		seen[id] = true
		a.Roster = append(a.Roster, id)
	}
	a.TreeTimeout = uint32(r.uvarint(math.MaxUint32, "tree timeout"))
	a.DataTimeout = uint32(r.uvarint(math.MaxUint32, "data timeout"))
	if r.err == nil && r.off != len(b) {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return h, nil, r.err
	}
	if err := a.Params.Validate(); err != nil {
		return h, nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if len(a.Roster) == 0 {
		return h, nil, fmt.Errorf("%w: empty roster", ErrMalformed)
	}
	return h, a, nil
}

// DecodeTreeShare parses a tree share against the session's domain, depth
// and leaf cap (maxLeaves 0: none).
func DecodeTreeShare(b []byte, dom *pfds.Domain, hmax, maxLeaves int) (Header, *pfds.Tree, error) {
	h, off, err := DecodeHeader(b)
	if err != nil {
		return h, nil, err
	}
	if h.Kind != KindTree {
		return h, nil, fmt.Errorf("%w: kind %d is not a tree", ErrMalformed, h.Kind)
	}
	t, n, err := pfds.DecodeTree(b[off:], dom, hmax)
	if err != nil {
		return h, nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if off+n != len(b) {
		return h, nil, fmt.Errorf("%w: trailing bytes", ErrMalformed)
	}
	if l := len(t.Leaves()); maxLeaves > 0 && l > maxLeaves {
		return h, nil, fmt.Errorf("%w: %d leaves over the session's cap %d", ErrMalformed, l, maxLeaves)
	}
	return h, t, nil
}

// DecodeDataShare parses a data share; classes bounds the labels.
func DecodeDataShare(b []byte, classes int) (Header, *pfds.DataShare, error) {
	h, off, err := DecodeHeader(b)
	if err != nil {
		return h, nil, err
	}
	if h.Kind != KindData {
		return h, nil, fmt.Errorf("%w: kind %d is not a data share", ErrMalformed, h.Kind)
	}
	r := &reader{b: b, off: off}
	d := &pfds.DataShare{}
	if sb := r.bytes(8, "seed"); sb != nil {
		d.Seed = binary.LittleEndian.Uint64(sb)
	}
	nc := r.uvarint(uint64(len(b)), "leaf count")
	total := uint64(0)
	for i := uint64(0); i < nc && r.err == nil; i++ {
		c := r.uvarint(MaxMessage, "count")
		total += c
		d.Counts = append(d.Counts, int(c))
	}
	nl := r.uvarint(MaxShareRecords, "labels")
	if r.err == nil && nl != total {
		r.fail(fmt.Sprintf("%d labels for %d records", nl, total))
	}
	lb := r.bytes(int(nl), "labels")
	for _, l := range lb {
		if int(l) >= classes {
			r.fail("label out of range")
			break
		}
		d.Labels = append(d.Labels, int(l))
	}
	if r.err == nil && r.off != len(b) {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return h, nil, r.err
	}
	return h, d, nil
}
