package session

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/engine"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
	"google.golang.org/protobuf/proto"
)

// treeReach walks a tree given by children from the user (index -1) and
// returns how often each member is reached and the deepest level (the
// user's children are level 1).
func treeReach(n, k int, children func(i, n, k int) (int, int)) (reached []int, depth int) {
	reached = make([]int, n)
	level := []int{-1}
	for d := 1; len(level) > 0 && d <= n+1; d++ {
		var next []int
		for _, i := range level {
			lo, hi := children(i, n, k)
			for c := lo; c < hi; c++ {
				if c >= 0 && c < n {
					reached[c]++
					next = append(next, c)
				}
			}
		}
		if len(next) > 0 {
			depth = d
		}
		level = next
	}
	return reached, depth
}

// The roster tree reaches every member exactly once, within
// RosterTreeDepth levels below the user (the smallest d with k + k² + ... +
// k^d ≥ n, k = RosterFanout = 32), and the user sends min(n, k) copies.
// The control: a tree whose children start at i·k (not (i+1)·k) reaches
// some members twice and is caught.
func TestRosterTreeReachesEveryMemberOnce(t *testing.T) {
	wantDepth := map[int]int{1: 1, 2: 1, 31: 1, 32: 1, 33: 2, 64: 2, 200: 2, 1000: 2, 1056: 2, 1057: 3, 10_000: 3, 33_824: 3, 33_825: 4}
	for n, want := range wantDepth {
		k := RosterFanout
		reached, depth := treeReach(n, k, treeChildren)
		for i, r := range reached {
			if r != 1 {
				t.Fatalf("n=%d k=%d: member %d reached %d times", n, k, i, r)
			}
		}
		if depth != want || RosterTreeDepth(n) != want {
			t.Errorf("n=%d k=%d: depth %d, RosterTreeDepth %d, want %d", n, k, depth, RosterTreeDepth(n), want)
		}
		if lo, hi := treeChildren(-1, n, k); lo != 0 || hi != min(n, k) {
			t.Errorf("n=%d: the user sends to [%d, %d)", n, lo, hi)
		}
	}
	broken := func(i, n, k int) (int, int) { return min(max(i, 0)*k, n), min(max(i, 0)*k+k, n) }
	reached, _ := treeReach(100, 32, broken)
	twice := 0
	for _, r := range reached {
		if r != 1 {
			twice++
		}
	}
	if twice == 0 {
		t.Fatal("the control tree reaches every member once: the check catches nothing")
	}
}

// A chunk's digest covers every field a receiver uses: changing any of
// them changes it, and moving bytes across an entry's fields does too.
func TestRosterChunkDigest(t *testing.T) {
	base := &wire.Roster{Version: 2, Chunk: 1, Chunks: 3, First: 10, OwnSuffix: true,
		Ids: []string{"ab", "cd"}, Addrs: []string{"/ip4/1.2.3.4/udp/1/quic-v1", ""}, Nonces: [][]byte{{1, 2}, {3}}}
	d := RosterChunkDigest(base)
	if !bytes.Equal(d, RosterChunkDigest(proto.Clone(base).(*wire.Roster))) {
		t.Fatal("a clone digests differently")
	}
	for name, mutate := range map[string]func(*wire.Roster){
		"version":    func(c *wire.Roster) { c.Version++ },
		"chunk":      func(c *wire.Roster) { c.Chunk++ },
		"chunks":     func(c *wire.Roster) { c.Chunks++ },
		"first":      func(c *wire.Roster) { c.First++ },
		"own suffix": func(c *wire.Roster) { c.OwnSuffix = false },
		"id":         func(c *wire.Roster) { c.Ids[1] = "ce" },
		"addr":       func(c *wire.Roster) { c.Addrs[0] = "/ip4/1.2.3.5/udp/1/quic-v1" },
		"nonce":      func(c *wire.Roster) { c.Nonces[1] = []byte{4} },
		"boundary":   func(c *wire.Roster) { c.Ids[0], c.Addrs[0] = "a", "b"+c.Addrs[0] },
		"one less":   func(c *wire.Roster) { c.Ids, c.Addrs, c.Nonces = c.Ids[:1], c.Addrs[:1], c.Nonces[:1] },
	} {
		c := proto.Clone(base).(*wire.Roster)
		mutate(c)
		if bytes.Equal(d, RosterChunkDigest(c)) {
			t.Errorf("%s changed, digest did not", name)
		}
	}
}

// bookRec is an AddressBook that records what it is given.
type bookRec map[protocol.PeerID][]string

func (b bookRec) AddAddrs(p protocol.PeerID, addrs []string) { b[p] = addrs }
func (bookRec) ListenAddrs() []string                        { return nil }

// direct is body from sender on the session stream (what a forwarding
// owner sends).
func (f *tableFix) direct(t *testing.T, sender protocol.PeerID, body proto.Message) engine.Message {
	m := f.from(t, sender, tSession, 0, 0, body)
	m.Topic, m.Protocol = "", wire.ProtoSession
	return m
}

// An owner forwards the roster to its children in the tree: once per
// version, the chunks unchanged, with the children's addresses in its
// address book; whichever of the head and the chunks comes first. A chunk
// from another owner is taken only when the user's head names it: without
// a head, altered, or of another session it is refused and nothing is
// held. A head whose fan-out is not the size's is refused (the data user
// does not choose how many peers an owner sends to).
func TestOwnerForwardsTheRoster(t *testing.T) {
	f := newTableFix(t)
	announce := f.announce(t, tSession, f.wcfg)
	// alice first of 40: her children are members 32..39.
	ids := []protocol.PeerID{alice}
	for i := range 39 {
		ids = append(ids, protocol.PeerID(fmt.Sprintf("m%02d", i)))
	}
	r := f.rosterOf(ids...)
	for i, p := range r.IDs {
		r.Addrs[i] = []string{"/ip4/10.0.0.1/udp/4001/quic-v1/p2p/" + string(p)}
	}
	r = newRoster(tSession, 1, r.IDs, r.Addrs, r.Nonces)
	chunks := r.chunks()
	head := rosterHead(1, len(r.IDs), chunks)
	if head.GetFanout() != 32 || len(chunks) != 1 {
		t.Fatalf("fan-out %d, %d chunks", head.GetFanout(), len(chunks))
	}
	var want []string
	for _, p := range r.IDs[32:] {
		want = append(want, "send roster to "+string(p))
	}
	joined := func(t *testing.T) (*Owner, bookRec) {
		o := f.owner(t, nil)
		b := bookRec{}
		o.book = b
		if _, err := step(t, o, tNow, announce); err != nil {
			t.Fatal(err)
		}
		return o, b
	}
	sends := func(effs []engine.Effect) []string {
		var out []string
		for _, s := range ownerShapes(effs) {
			if s != "send rosterack to user" {
				out = append(out, s)
			}
		}
		return out
	}
	t.Run("head first", func(t *testing.T) {
		o, b := joined(t)
		if effs, err := step(t, o, tNow, f.ctl(t, 0, 0, head)); err != nil || len(effs) != 0 {
			t.Fatalf("head: %v, %q", err, ownerShapes(effs))
		}
		effs, err := step(t, o, tNow, f.ctl(t, 0, 0, chunks[0]))
		if err != nil {
			t.Fatal(err)
		}
		if got := ownerShapes(effs); got[len(got)-1] != "send rosterack to user" || !slices.Equal(got[:len(got)-1], want) {
			t.Fatalf("effects %q, want %q and the ack", got, want)
		}
		for i, p := range r.IDs[32:] {
			if !slices.Equal(b[p], r.Addrs[32+i]) {
				t.Fatalf("book has %v for %s, want %v", b[p], p, r.Addrs[32+i])
			}
		}
		if len(b) != 8 {
			t.Fatalf("book has %d peers, want the 8 children", len(b))
		}
		// The forwarded bytes carry the user's chunk unchanged.
		var fw engine.Send
		for _, e := range effs {
			if s, ok := e.(engine.Send); ok && s.To != userID {
				fw = s
			}
		}
		env, err := wire.Unmarshal(fw.Data, wire.MaxControlBytes)
		if err != nil || !proto.Equal(env.GetRoster(), chunks[0]) || env.GetHeader().GetSession() != tSession {
			t.Fatalf("forwarded %v (%v), want the user's chunk", env, err)
		}
		// Once per version: the chunk again (a request's answer), the head
		// again.
		for _, in := range []engine.Message{f.ctl(t, 0, 0, chunks[0]), f.ctl(t, 0, 0, head)} {
			if effs, err := step(t, o, tNow, in); err != nil || len(sends(effs)) != 0 {
				t.Fatalf("again: %v, %q", err, ownerShapes(effs))
			}
		}
	})
	t.Run("chunks first", func(t *testing.T) {
		o, _ := joined(t)
		effs, err := step(t, o, tNow, f.ctl(t, 0, 0, chunks[0]))
		if err != nil || len(sends(effs)) != 0 {
			t.Fatalf("chunk without a head: %v, %q (forwarded before the head)", err, ownerShapes(effs))
		}
		effs, err = step(t, o, tNow, f.ctl(t, 0, 0, head))
		if err != nil || !slices.Equal(sends(effs), want) {
			t.Fatalf("head after the chunk: %v, %q, want %q", err, ownerShapes(effs), want)
		}
	})
	t.Run("installed first", func(t *testing.T) {
		// The chunk and a Select installed the roster before the head came:
		// the owner forwards the same cut from the installed roster.
		o, _ := joined(t)
		for _, in := range []engine.Message{f.ctl(t, 0, 0, chunks[0]), f.sel(t, r, 1, 0, tNow.Add(time.Minute), r.IDs[3], r.IDs[4])} {
			if _, err := step(t, o, tNow, in); err != nil {
				t.Fatal(err)
			}
		}
		if o.roster == nil {
			t.Fatal("roster not installed")
		}
		effs, err := step(t, o, tNow, f.ctl(t, 0, 0, head))
		if err != nil || !slices.Equal(sends(effs), want) {
			t.Fatalf("head after the install: %v, %q, want %q", err, ownerShapes(effs), want)
		}
	})
	t.Run("last member forwards nothing", func(t *testing.T) {
		o, _ := joined(t)
		// A roster where alice's index is 39 (the others sort first): a leaf.
		var early []protocol.PeerID
		for i := range 39 {
			early = append(early, protocol.PeerID(fmt.Sprintf("a%02d", i)))
		}
		r2 := f.rosterOf(append(early, alice)...)
		c2 := r2.chunks()
		if _, err := step(t, o, tNow, f.ctl(t, 0, 0, rosterHead(1, len(r2.IDs), c2))); err != nil {
			t.Fatal(err)
		}
		effs, err := step(t, o, tNow, f.ctl(t, 0, 0, c2[0]))
		if err != nil || len(sends(effs)) != 0 {
			t.Fatalf("a leaf forwarded: %v, %q", err, ownerShapes(effs))
		}
	})
	t.Run("from an owner", func(t *testing.T) {
		altered := proto.Clone(chunks[0]).(*wire.Roster)
		altered.Nonces[5] = bytes.Repeat([]byte{9}, NonceBytes)
		other := f.from(t, "m03", "other-session", 0, 0, chunks[0])
		other.Topic, other.Protocol = "", wire.ProtoSession
		for _, c := range []struct {
			name   string
			head   bool
			in     engine.Message
			reason string
		}{
			{"no head", false, f.direct(t, "m03", chunks[0]), protocol.ErrNotUser.Error()},
			{"altered", true, f.direct(t, "m03", altered), protocol.ErrNotUser.Error()},
			{"other session", true, other, protocol.ErrWrongSession.Error()},
		} {
			t.Run(c.name, func(t *testing.T) {
				o, _ := joined(t)
				if c.head {
					if _, err := step(t, o, tNow, f.ctl(t, 0, 0, head)); err != nil {
						t.Fatal(err)
					}
				}
				before := o.Stats().Get(c.reason)
				effs, err := step(t, o, tNow, c.in)
				if err == nil || len(effs) != 0 || o.asm.have != 0 {
					t.Fatalf("taken: err %v, effects %q, %d chunks held", err, ownerShapes(effs), o.asm.have)
				}
				if o.Stats().Get(c.reason) != before+1 {
					t.Fatalf("not counted under %q: %v", c.reason, err)
				}
			})
		}
		// The control: the same chunk, unaltered, with the head, is taken
		// (and alice, first in the roster, forwards it).
		o, _ := joined(t)
		if _, err := step(t, o, tNow, f.ctl(t, 0, 0, head)); err != nil {
			t.Fatal(err)
		}
		effs, err := step(t, o, tNow, f.direct(t, "m03", chunks[0]))
		if err != nil || len(sends(effs)) != 8 {
			t.Fatalf("the named chunk from an owner: %v, %q", err, ownerShapes(effs))
		}
	})
	t.Run("head refused", func(t *testing.T) {
		for name, mutate := range map[string]func(*wire.RosterHead){
			"fan-out": func(h *wire.RosterHead) { h.Fanout = 1000 },
			"digest":  func(h *wire.RosterHead) { h.ChunkDigests[0] = h.ChunkDigests[0][:8] },
			"empty":   func(h *wire.RosterHead) { h.ChunkDigests = nil },
			"size":    func(h *wire.RosterHead) { h.Size = 0 },
		} {
			o, _ := joined(t)
			h := proto.Clone(head).(*wire.RosterHead)
			mutate(h)
			if _, err := step(t, o, tNow, f.ctl(t, 0, 0, h)); !errors.Is(err, protocol.ErrUnexpected) || o.head != nil {
				t.Errorf("%s: err %v, head kept %v", name, err, o.head != nil)
			}
		}
	})
}

// A session of 45 owners sends the roster down the tree: the user sends
// the chunk to the first 32, owner-00 forwards it to the other 13, nobody
// asks for it, and the session finishes. With owner-00 silent towards its
// children (it forwards nothing), they get it from the user on request, and
// the session finishes too.
func TestRosterTreeSession(t *testing.T) {
	for _, silent := range []bool{false, true} {
		t.Run(fmt.Sprintf("silent forwarder %v", silent), func(t *testing.T) {
			c := newCluster(t, 45, func(_ *boost.Config, s *securesum.Params) { s.Method = securesum.Shamir })
			if silent {
				c.w.drop = func(m msg) bool { return m.from == c.ids[0] && m.env().GetRoster() != nil }
			}
			c.startUser(t, nil)
			c.run(5 * time.Minute)
			if !c.done || c.err != nil {
				t.Fatalf("done %v, err %v", c.done, c.err)
			}
			fromUser := c.w.count(func(m msg, e *wire.Envelope) bool { return m.from == userID && e.GetRoster() != nil })
			forwarded := c.w.count(func(m msg, e *wire.Envelope) bool {
				return m.from == c.ids[0] && m.to != userID && e.GetRoster() != nil
			})
			asked := c.w.count(func(m msg, e *wire.Envelope) bool { return e.GetRosterRequest() != nil })
			t.Logf("roster chunks: %d from the user, %d forwarded by owner-00, %d requests", fromUser, forwarded, asked)
			if !silent {
				if fromUser != 32 || forwarded != 13 || asked != 0 {
					t.Fatalf("want 32 from the user, 13 forwarded, 0 requests")
				}
				return
			}
			if forwarded != 0 || asked == 0 || fromUser != 32+asked {
				t.Fatalf("want nothing forwarded, the children asking, and the user answering each request")
			}
		})
	}
}
