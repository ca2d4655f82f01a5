package session

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// The roster is the sorted list of owners that take part in a session's
// secure sums, with each owner's addresses and join nonce. It travels in
// Roster chunks of at most rosterChunkBytes, so that no message grows with
// the network; Select names the version, size and digest, and an owner that
// missed a chunk asks the user for the version (RosterRequest) and gets the
// chunks on a direct stream.

// NonceBytes is the length of an owner's join nonce.
const NonceBytes = 16

// rosterChunkBytes bounds one chunk's entries, well inside MaxControlBytes.
const rosterChunkBytes = 256 << 10

// maxJoinAddrs and maxAddrBytes bound what a Join may carry.
const (
	maxJoinAddrs = 8
	maxAddrBytes = 256
)

// Roster is one version of a session's roster.
type Roster struct {
	Version uint32
	IDs     []protocol.PeerID // sorted
	Addrs   [][]string
	Nonces  [][]byte
	Digest  []byte // SHA-256 over the entries, in order
	Beacon  []byte // public randomness derived from the ids and nonces
}

func newRoster(session string, version uint32, ids []protocol.PeerID, addrs [][]string, nonces [][]byte) *Roster {
	r := &Roster{Version: version, IDs: ids, Addrs: addrs, Nonces: nonces}
	r.Digest, r.Beacon = rosterHashes(session, ids, addrs, nonces)
	return r
}

// rosterHashes computes the digest (over everything) and the beacon (over
// the ids and nonces only: addresses are the owners' own claims and must
// not let anyone steer the committee).
func rosterHashes(session string, ids []protocol.PeerID, addrs [][]string, nonces [][]byte) (digest, beacon []byte) {
	d, b := sha256.New(), sha256.New()
	b.Write([]byte("ppboost/beacon/1\x00" + session + "\x00"))
	var n [4]byte
	put := func(h interface{ Write([]byte) (int, error) }, s []byte) {
		binary.LittleEndian.PutUint32(n[:], uint32(len(s)))
		h.Write(n[:])
		h.Write(s)
	}
	for i, id := range ids {
		put(d, []byte(id))
		put(d, []byte(strings.Join(addrs[i], " ")))
		put(d, nonces[i])
		put(b, []byte(id))
		put(b, nonces[i])
	}
	return d.Sum(nil), b.Sum(nil)
}

// chunks cuts the roster into Roster messages. When every address ends in
// its owner's /p2p/<id> (what owners join with), the chunks leave that
// suffix out (own_suffix) and the receivers put it back.
func (r *Roster) chunks() []*wire.Roster {
	own := r.ownSuffix()
	var out []*wire.Roster
	cur := &wire.Roster{Version: r.Version, OwnSuffix: own}
	size := 0
	for i, id := range r.IDs {
		list := r.Addrs[i]
		if own {
			list = make([]string, len(r.Addrs[i]))
			for j, x := range r.Addrs[i] {
				list[j] = strings.TrimSuffix(x, ownSuffix(id))
			}
		}
		a := strings.Join(list, " ")
		e := len(id) + len(a) + len(r.Nonces[i]) + 16
		if size+e > rosterChunkBytes && len(cur.Ids) > 0 {
			out = append(out, cur)
			cur = &wire.Roster{Version: r.Version, First: uint32(i), OwnSuffix: own}
			size = 0
		}
		cur.Ids = append(cur.Ids, string(id))
		cur.Addrs = append(cur.Addrs, a)
		cur.Nonces = append(cur.Nonces, r.Nonces[i])
		size += e
	}
	out = append(out, cur)
	for i, c := range out {
		c.Chunk, c.Chunks = uint32(i), uint32(len(out))
	}
	return out
}

// ownSuffix is the suffix every full address of owner id ends in.
func ownSuffix(id protocol.PeerID) string { return "/p2p/" + string(id) }

// ownSuffix reports whether every address in r ends in its owner's
// ownSuffix.
func (r *Roster) ownSuffix() bool {
	for i, id := range r.IDs {
		suffix := ownSuffix(id)
		for _, a := range r.Addrs[i] {
			if len(a) <= len(suffix) || !strings.HasSuffix(a, suffix) {
				return false
			}
		}
	}
	return true
}

// indices are the members' ascending indices in r (Select.selected_index);
// every member must be in r.
func (r *Roster) indices(members []protocol.PeerID) []uint32 {
	out := make([]uint32, 0, len(members))
	for _, p := range members {
		i, ok := slices.BinarySearch(r.IDs, p)
		if !ok {
			panic(fmt.Sprintf("session: %s selected but not in roster version %d", p, r.Version))
		}
		out = append(out, uint32(i))
	}
	slices.Sort(out)
	return out
}

// errNoRoster: a Select names its owners by index into a roster version
// this owner does not hold yet.
var errNoRoster = errors.New("select's roster not here yet")

// selectedIDs are the owners s selects: its ids, or its indices resolved
// in r, which must be the roster version s names (errNoRoster when r is
// nil or another version). Indices must be strictly ascending and inside
// the roster; a Select with both or neither form is malformed.
func selectedIDs(s *wire.Select, r *Roster) ([]string, error) {
	idx := s.GetSelectedIndex()
	switch {
	case len(idx) > 0 && len(s.GetSelected()) > 0:
		return nil, fmt.Errorf("%w: select names %d owners by id and %d by index", protocol.ErrUnexpected, len(s.GetSelected()), len(idx))
	case len(idx) == 0:
		if len(s.GetSelected()) == 0 {
			return nil, fmt.Errorf("%w: select names no owner", protocol.ErrUnexpected)
		}
		return s.GetSelected(), nil
	case r == nil || r.Version != s.GetRosterVersion():
		return nil, errNoRoster
	}
	out := make([]string, len(idx))
	for i, x := range idx {
		if int(x) >= len(r.IDs) || (i > 0 && x <= idx[i-1]) {
			return nil, fmt.Errorf("%w: select index %d (position %d) outside a roster of %d or not ascending", protocol.ErrUnexpected, x, i, len(r.IDs))
		}
		out[i] = string(r.IDs[x])
	}
	return out, nil
}

// rosterAssembly collects the chunks of one version at an owner.
type rosterAssembly struct {
	version uint32
	chunks  []*wire.Roster
	// raw are the chunks' messages as they came (nil where unknown): the
	// bytes a member forwards to its children.
	raw  [][]byte
	have int
}

// add stores a chunk; it returns the assembled entries once every chunk is
// there. Chunks that do not fit the ones already held are errors.
func (a *rosterAssembly) add(c *wire.Roster, raw []byte) (done bool, err error) {
	n := int(c.GetChunks())
	if n == 0 || int(c.GetChunk()) >= n || len(c.GetIds()) == 0 ||
		len(c.GetAddrs()) != len(c.GetIds()) || len(c.GetNonces()) != len(c.GetIds()) {
		return false, fmt.Errorf("%w: roster chunk %d of %d with %d ids, %d addrs, %d nonces", protocol.ErrUnexpected,
			c.GetChunk(), n, len(c.GetIds()), len(c.GetAddrs()), len(c.GetNonces()))
	}
	if a.chunks == nil || a.version != c.GetVersion() {
		a.version, a.chunks, a.raw, a.have = c.GetVersion(), make([]*wire.Roster, n), make([][]byte, n), 0
	}
	if len(a.chunks) != n {
		return false, fmt.Errorf("%w: roster chunk count %d, earlier chunks said %d", protocol.ErrUnexpected, n, len(a.chunks))
	}
	if a.chunks[c.GetChunk()] == nil {
		a.chunks[c.GetChunk()], a.raw[c.GetChunk()] = c, raw
		a.have++
	}
	return a.have == n, nil
}

// assemble checks the chunks against the digest Select announced and
// returns the roster (through share, if set: the owners of a simulation
// share one copy).
func (a *rosterAssembly) assemble(session string, size uint32, digest []byte, share Sharing) (*Roster, error) {
	next := uint32(0)
	for _, c := range a.chunks {
		if c.GetFirst() != next {
			return nil, fmt.Errorf("%w: roster chunk starts at %d, want %d", protocol.ErrUnexpected, c.GetFirst(), next)
		}
		next += uint32(len(c.GetIds()))
	}
	if next != size {
		return nil, fmt.Errorf("%w: roster has %d members, Select says %d", protocol.ErrUnexpected, next, size)
	}
	if share == nil {
		return a.build(session, size, digest)
	}
	return share.Roster(session, a.version, digest, func() (*Roster, error) { return a.build(session, size, digest) })
}

// provisional is the roster the held chunks make, checked against no
// digest (no Select named it yet): only to open connections ahead of the
// first sum (prepareSums), never to take part in one.
func (a *rosterAssembly) provisional(session string) (*Roster, error) {
	n := 0
	for _, c := range a.chunks {
		if c == nil {
			return nil, errNoRoster
		}
		n += len(c.GetIds())
	}
	return a.decode(session, uint32(n))
}

// build decodes the chunks' entries and checks them against digest.
func (a *rosterAssembly) build(session string, size uint32, digest []byte) (*Roster, error) {
	r, err := a.decode(session, size)
	if err != nil {
		return nil, err
	}
	if string(r.Digest) != string(digest) {
		return nil, fmt.Errorf("%w: roster digest does not match the one in Select", protocol.ErrUnexpected)
	}
	return r, nil
}

// decode makes the roster of the chunks' entries.
func (a *rosterAssembly) decode(session string, size uint32) (*Roster, error) {
	ids := make([]protocol.PeerID, 0, size)
	addrs := make([][]string, 0, size)
	nonces := make([][]byte, 0, size)
	for _, c := range a.chunks {
		for i, id := range c.GetIds() {
			ids = append(ids, protocol.PeerID(id))
			a := strings.Fields(c.GetAddrs()[i])
			if c.GetOwnSuffix() {
				for j := range a {
					a[j] += ownSuffix(protocol.PeerID(id))
				}
			}
			addrs = append(addrs, a)
			nonces = append(nonces, c.GetNonces()[i])
		}
	}
	if !slices.IsSorted(ids) || hasDup(ids) {
		return nil, fmt.Errorf("%w: roster not sorted or with duplicates", protocol.ErrUnexpected)
	}
	return newRoster(session, a.version, ids, addrs, nonces), nil
}

func hasDup(sorted []protocol.PeerID) bool {
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return true
		}
	}
	return false
}

// Sharing lets the owners of one process share what they decode from the
// same received message. A simulator injects it (protocol/simulate: 10^5
// owners would otherwise each decode every control message and hold a copy
// of a 10^5-entry roster); nil, as in production, means every owner decodes
// and computes its own and no state is shared between owners. What it
// returns is only read.
type Sharing interface {
	securesum.Sharing
	// Envelope returns wire.Unmarshal(data, maxBytes), or the envelope an
	// earlier call decoded from the same delivered message (a control-topic
	// message, which a simulated network hands every subscriber). It takes
	// no decode function: a closure passed through an interface is
	// allocated on every message, at 10^5 owners a measurable cost.
	Envelope(data []byte, maxBytes int) (*wire.Envelope, error)
	// Roster returns build's roster, or one an earlier call built for the
	// same session, version and digest (the digest the owner received in
	// Select, which the built roster matches).
	Roster(session string, version uint32, digest []byte, build func() (*Roster, error)) (*Roster, error)
	// Learner returns decode's base learner and error, or those an earlier
	// call got for the same decoded message (l from a shared Envelope) and
	// the same classes and features.
	Learner(l *wire.Learner, classes, features int, decode func() (*boost.Base, error)) (*boost.Base, error)
	// ChunkDigest returns RosterChunkDigest(c), or the digest an earlier
	// call computed for the same decoded chunk (c from a shared Envelope):
	// every owner checks every chunk it receives against the user's head,
	// a hash over the whole roster, which 10^5 simulated owners would each
	// compute again.
	ChunkDigest(c *wire.Roster) []byte
}
