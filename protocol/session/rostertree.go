package session

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// The roster travels down a tree (issue 31). Before the roster, owners are
// connected to the data user only, so a roster the user floods costs its
// uplink n chunks' worth for n owners: n² entries, 205 MB at 1,000 owners
// (16 s at 100 Mbit/s). Instead the user publishes a RosterHead (the
// version, its size, each chunk's digest and the fan-out k) on the control
// topic and sends the chunks to the roster's first k members; the member
// at index i forwards them, unchanged, to the members at (i+1)k ..
// (i+1)k+k-1. The user's uplink carries k copies, a forwarding member's k,
// and the tree's depth is 2 up to k² + k members. An owner takes a chunk
// from another owner only when the head it got from the user (signed by
// gossipsub, and from the user's id) names that chunk's digest: an
// outsider or a member that alters a chunk is refused, and a member that
// forwards nothing leaves its children to the fallback they already have
// (RosterRequest after a Select's grace; the user's first selection waits
// for the acks only as long again as the roster has been out).

// RosterFanout is the roster tree's fan-out k: the user sends the roster
// to k members and a forwarding member to k, whatever the roster's size
// (an owner sends at most k copies of it). The tree has RosterTreeDepth
// levels below the user: 2 up to k + k² = 1,056 members, 3 up to 33,824.
const RosterFanout = protocol.TreeFanout

// RosterTreeDepth is the number of levels of the roster tree of n members
// below the user (1: the user sends to everyone).
func RosterTreeDepth(n int) int {
	d, reach, level := 1, RosterFanout, RosterFanout
	for reach < n {
		level *= RosterFanout
		reach += level
		d++
	}
	return d
}

// treeChildren are the indices [lo, hi) of the members that the member at
// index i forwards the roster to (i = -1: the user's, the first k).
func treeChildren(i, n, k int) (lo, hi int) { return protocol.TreeChildren(i, n, k) }

// RosterChunkDigest is SHA-256 over a chunk's content (not its encoding):
// version, position and every entry, length-prefixed. RosterHead lists it
// per chunk.
func RosterChunkDigest(c *wire.Roster) []byte {
	h := sha256.New()
	h.Write([]byte("ppboost/roster-chunk/1\x00"))
	var n [4]byte
	put := func(v uint32) {
		binary.LittleEndian.PutUint32(n[:], v)
		h.Write(n[:])
	}
	put(c.GetVersion())
	put(c.GetChunk())
	put(c.GetChunks())
	put(c.GetFirst())
	if c.GetOwnSuffix() {
		put(1)
	} else {
		put(0)
	}
	put(uint32(len(c.GetIds())))
	for i, id := range c.GetIds() {
		for _, s := range [][]byte{[]byte(id), []byte(c.GetAddrs()[i]), c.GetNonces()[i]} {
			put(uint32(len(s)))
			h.Write(s)
		}
	}
	return h.Sum(nil)
}

// rosterHead is the RosterHead announcing chunks, the roster's cut.
func rosterHead(version uint32, size int, chunks []*wire.Roster) *wire.RosterHead {
	h := &wire.RosterHead{Version: version, Size: uint32(size), Fanout: RosterFanout}
	for _, c := range chunks {
		h.ChunkDigests = append(h.ChunkDigests, RosterChunkDigest(c))
	}
	return h
}

// headNames reports whether h names chunk c: same version, count and
// digest at c's position (a simulation's owners share the digest of a
// shared chunk: Sharing.ChunkDigest).
func (o *Owner) headNames(h *wire.RosterHead, c *wire.Roster) bool {
	d := h.GetChunkDigests()
	if h.GetVersion() != c.GetVersion() || int(c.GetChunks()) != len(d) || int(c.GetChunk()) >= len(d) {
		return false
	}
	var got []byte
	if o.cfg.Share != nil {
		got = o.cfg.Share.ChunkDigest(c)
	} else {
		got = RosterChunkDigest(c)
	}
	return string(d[c.GetChunk()]) == string(got)
}

// treeEntry is a member the roster's chunks name: its id and full
// addresses.
type treeEntry struct {
	id    protocol.PeerID
	addrs []string
}

// chunkEntries finds self's index in the (complete, ordered) chunks and
// returns the entries of its children in a tree of fan-out k; ok is false
// when self is not a member.
func chunkEntries(chunks []*wire.Roster, self protocol.PeerID, k int) (children []treeEntry, ok bool) {
	n, me := 0, -1
	for _, c := range chunks {
		if i, found := slices.BinarySearch(c.GetIds(), string(self)); found && me < 0 {
			me = int(c.GetFirst()) + i
		}
		n += len(c.GetIds())
	}
	if me < 0 {
		return nil, false
	}
	lo, hi := treeChildren(me, n, k)
	for _, c := range chunks {
		first := int(c.GetFirst())
		for j := max(lo, first); j < min(hi, first+len(c.GetIds())); j++ {
			id := protocol.PeerID(c.GetIds()[j-first])
			a := strings.Fields(c.GetAddrs()[j-first])
			if c.GetOwnSuffix() {
				for x := range a {
					a[x] += ownSuffix(id)
				}
			}
			children = append(children, treeEntry{id: id, addrs: a})
		}
	}
	return children, true
}

// onRosterHead keeps the user's newest head, and forwards the chunks of its
// version if they are here already (the user's own copy can overtake the
// gossiped head).
func (o *Owner) onRosterHead(h *wire.RosterHead) error {
	if err := protocol.CheckTreeHead(h); err != nil {
		return err
	}
	if (o.roster != nil && h.GetVersion() < o.roster.Version) || (o.head != nil && h.GetVersion() < o.head.GetVersion()) {
		return nil // an older version's
	}
	o.head = h
	switch {
	case o.asm.version == h.GetVersion() && o.asm.chunks != nil && o.asm.have == len(o.asm.chunks):
		o.forward(h.GetVersion(), o.asm.chunks, o.asm.raw)
	case o.roster != nil && o.roster.Version == h.GetVersion():
		o.forward(h.GetVersion(), o.roster.chunks(), nil) // installed already: the same cut
	}
	return nil
}

// onForwarded applies a roster chunk another owner forwarded: only one the
// user's head names (its digest), in this owner's session.
func (o *Owner) onForwarded(env *wire.Envelope) error {
	if env.GetHeader().GetSession() != o.session || !o.joined() {
		return protocol.ErrWrongSession
	}
	c := env.GetRoster()
	switch {
	case o.roster != nil && c.GetVersion() <= o.roster.Version:
		return nil // here already (from the user, or another copy)
	case o.head == nil || !o.headNames(o.head, c):
		return fmt.Errorf("%w: roster chunk from an owner that the user's roster head does not name", protocol.ErrNotUser)
	}
	return o.onRoster(c)
}

// forward sends a complete version's chunks to this owner's children in
// the roster tree, once per version, when the user's head for it is here
// (its fan-out) and every chunk is one the head names. Each chunk goes as
// it came (raw: the bytes the user or the parent sent, so that one copy of
// each travels the whole tree), or marshalled once for the children when
// only the installed roster has it; the children's addresses come from the
// chunks.
func (o *Owner) forward(version uint32, chunks []*wire.Roster, raw [][]byte) {
	h := o.head
	if h == nil || h.GetVersion() != version || o.forwarded >= version || len(chunks) != len(h.GetChunkDigests()) {
		return
	}
	for _, c := range chunks {
		if c == nil || !o.headNames(h, c) {
			return
		}
	}
	o.forwarded = version
	children, in := chunkEntries(chunks, o.self, int(h.GetFanout()))
	if !in || len(children) == 0 {
		return
	}
	data := make([][]byte, len(chunks))
	for i, c := range chunks {
		if i < len(raw) && raw[i] != nil {
			data[i] = raw[i] // as it came: the same bytes down the whole tree
			continue
		}
		b, err := wire.Marshal(&wire.Envelope{Header: o.env.header(roundKey{}), Body: &wire.Envelope_Roster{Roster: c}}, wire.MaxControlBytes)
		if err != nil {
			o.log.Error("roster chunk too large to forward", "err", err)
			return
		}
		data[i] = b
	}
	for _, ch := range children {
		if o.book != nil && len(ch.addrs) > 0 {
			o.book.AddAddrs(ch.id, ch.addrs)
		}
		for _, b := range data {
			o.lc.Out.Send(ch.id, wire.ProtoSession, b)
		}
	}
	o.log.Debug("forwarded the roster", "version", version, "children", len(children), "chunks", len(chunks))
}
