package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/wire"
)

// Every message a sum sends from one owner to another goes on a connection
// exactly one side opens: the sender dials the receiver (PreparePeers), or
// the receiver dials the sender and the sender waits for it (ExpectPeers);
// nobody waits for a peer that does not dial it. Control: an ExpectPeers
// that waits for every committee member (the members after it dial nobody
// towards it) is caught.
func TestExpectPeersWaitOnlyForTheirDialler(t *testing.T) {
	expectAll := func(self protocol.PeerID, roster []protocol.PeerID, method string, com []protocol.PeerID) []protocol.PeerID {
		if method == securesum.Ring || !slices.Contains(com, self) {
			return securesum.ExpectPeers(self, roster, method, com)
		}
		return slices.DeleteFunc(slices.Clone(com), func(m protocol.PeerID) bool { return m == self })
	}
	check := func(expect func(protocol.PeerID, []protocol.PeerID, string, []protocol.PeerID) []protocol.PeerID) []string {
		var bad []string
		for _, n := range []int{2, 3, 5, 20, 33, 200} {
			roster := make([]protocol.PeerID, n)
			for i := range roster {
				roster[i] = protocol.PeerID(fmt.Sprintf("p%05d", i))
			}
			h := &wire.Header{Session: "s", Round: 1}
			com := securesum.Committee(roster, 32, []byte("beacon"), h, PurposeShare, 0)
			for _, method := range []string{securesum.Shamir, securesum.Ring} {
				// sends: who sends to whom in the sum.
				var sends [][2]protocol.PeerID
				for i, d := range roster {
					if method == securesum.Ring {
						sends = append(sends, [2]protocol.PeerID{d, roster[(i+1)%n]}, [2]protocol.PeerID{d, roster[(i+n-1)%n]})
						continue
					}
					for _, m := range com {
						if m != d {
							sends = append(sends, [2]protocol.PeerID{d, m})
						}
					}
				}
				for _, s := range sends {
					from, to := s[0], s[1]
					dials := slices.Contains(securesum.PreparePeers(from, roster, method, com), to)
					waits := slices.Contains(expect(from, roster, method, com), to)
					other := slices.Contains(securesum.PreparePeers(to, roster, method, com), from)
					if dials == (waits && other) {
						bad = append(bad, fmt.Sprintf("n=%d %s: %s -> %s dials %v, waits %v for its dial %v", n, method, from, to, dials, waits, other))
					}
				}
				for _, self := range roster {
					for _, p := range expect(self, roster, method, com) {
						if !slices.Contains(securesum.PreparePeers(p, roster, method, com), self) {
							bad = append(bad, fmt.Sprintf("n=%d %s: %s waits for %s, which does not dial it", n, method, self, p))
						}
					}
				}
			}
		}
		return bad
	}
	if bad := check(securesum.ExpectPeers); len(bad) > 0 {
		t.Errorf("%d faults, first %v", len(bad), bad[:min(3, len(bad))])
	}
	if bad := check(expectAll); len(bad) == 0 {
		t.Error("control: waiting for every committee member was not caught")
	}
}

// Every (dealer, member) pair a Shamir sum uses is prepared exactly once, by
// one side, and nothing else; a ring owner prepares its two neighbours.
func TestPreparePeersCoverTheSumsPairs(t *testing.T) {
	for _, n := range []int{2, 3, 20, 32, 33, 200} {
		roster := make([]protocol.PeerID, n)
		for i := range roster {
			roster[i] = protocol.PeerID(fmt.Sprintf("p%05d", i))
		}
		h := &wire.Header{Session: "s", Round: 1}
		com := securesum.Committee(roster, 32, []byte("beacon"), h, PurposeErr, 0)
		dialled := map[[2]protocol.PeerID]int{}
		for _, self := range roster {
			for _, p := range securesum.PreparePeers(self, roster, securesum.Shamir, com) {
				if p == self {
					t.Fatalf("n=%d: %s prepares itself", n, self)
				}
				dialled[[2]protocol.PeerID{min(self, p), max(self, p)}]++
			}
		}
		need := 0
		for _, d := range roster {
			for _, m := range com {
				if d == m {
					continue
				}
				pair := [2]protocol.PeerID{min(d, m), max(d, m)}
				if slices.Contains(com, d) && d > m {
					continue // counted from the other member
				}
				need++
				if dialled[pair] != 1 {
					t.Errorf("n=%d: dealer %s and member %s prepared %d times, want once", n, d, m, dialled[pair])
				}
			}
		}
		if len(dialled) != need {
			t.Errorf("n=%d: %d pairs prepared, the sum uses %d", n, len(dialled), need)
		}
	}
	roster := []protocol.PeerID{"a", "b", "c", "d"}
	if got := securesum.PreparePeers("a", roster, securesum.Ring, nil); len(got) != 1 || got[0] != "b" {
		t.Errorf("ring peers of a: %v, want [b]", got)
	}
	// Every pair of ring neighbours is prepared once, by one side (both
	// dialling at once leaves two connections).
	for n := 2; n <= 6; n++ {
		ring := []protocol.PeerID{"a", "b", "c", "d", "e", "f"}[:n]
		dialled := map[[2]protocol.PeerID]int{}
		for _, self := range ring {
			for _, p := range securesum.PreparePeers(self, ring, securesum.Ring, nil) {
				dialled[[2]protocol.PeerID{min(self, p), max(self, p)}]++
			}
		}
		for i := range ring {
			pair := [2]protocol.PeerID{min(ring[i], ring[(i+1)%n]), max(ring[i], ring[(i+1)%n])}
			if dialled[pair] != 1 {
				t.Errorf("ring of %d: neighbours %v prepared %d times, want once", n, pair, dialled[pair])
			}
		}
		want := n // a ring of n > 2 has n neighbour pairs, of 2 one
		if n == 2 {
			want = 1
		}
		if len(dialled) != want {
			t.Errorf("ring of %d: %d pairs prepared, want %d", n, len(dialled), want)
		}
	}
	if got := securesum.PreparePeers("x", roster, securesum.Ring, nil); got != nil {
		t.Errorf("not in the roster: prepared %v", got)
	}
	if got := securesum.PreparePeers("a", roster, securesum.Shamir, nil); got != nil {
		t.Errorf("no committee: prepared %v", got)
	}
}

// notePreparer is a Preparer that does nothing (the owner's Notify carries
// the peers; the table's shapes show them).
type notePreparer struct{}

func (notePreparer) Prepare(context.Context, []protocol.PeerID) {}

// An owner opens its sums' connections when it holds the roster's chunks,
// before the first Select names the version (the data user's first
// selection waits for the owners' RosterAcks): the roster chunk's input
// reports the peers to prepare, and the ack waits for those dials (the
// runner's inputPrepared). The controls: no Preparer, or owners that
// share a decoded roster (a simulation's Sharing), prepare nothing then
// (they do when the roster is installed) and ack at once.
func TestOwnerPreparesFromTheRosterChunks(t *testing.T) {
	f := newTableFix(t)
	announce := f.announce(t, tSession, f.wcfg)
	for _, c := range []struct {
		name string
		prep protocol.Preparer
		cfg  func(*OwnerConfig)
		want []string
	}{
		// alice's err-sum peers among alice, bob and carol (PreparePeers).
		{"preparer", notePreparer{}, nil, []string{"prepare 2, then ack 1"}},
		{"no preparer", nil, nil, []string{"send rosterack to user"}},
		{"shared roster", notePreparer{}, func(c *OwnerConfig) { c.Share = noShare{} }, []string{"send rosterack to user"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := f.owner(t, c.cfg)
			o.prep = c.prep
			if _, err := step(t, o, tNow, announce); err != nil {
				t.Fatal(err)
			}
			effs, err := step(t, o, tNow, f.rosterMsg(t, f.roster))
			if err != nil {
				t.Fatal(err)
			}
			if got := ownerShapes(effs); !slices.Equal(got, c.want) {
				t.Fatalf("effects %q, want %q", got, c.want)
			}
			if c.name == "preparer" {
				// The dials ended: the ack, once; another version's end
				// or a peer's message of the same protocol does nothing.
				for i, in := range []protocol.Message{
					{From: "mallory", Protocol: inputPrepared, Data: []byte{0, 0, 0, 1}},
					{From: o.self, Protocol: inputPrepared, Data: []byte{0, 0, 0, 2}},
					{From: o.self, Protocol: inputPrepared, Data: []byte{0, 0, 0, 1}},
					{From: o.self, Protocol: inputPrepared, Data: []byte{0, 0, 0, 1}},
				} {
					effs, _ := step(t, o, tNow, in)
					want := []string{}
					if i == 2 {
						want = []string{"send rosterack to user"}
					}
					if got := ownerShapes(effs); !slices.Equal(got, want) {
						t.Fatalf("prepared input %d: effects %q, want %q", i, got, want)
					}
				}
			}
			// The Select installs the roster: prepared once per version.
			effs, err = step(t, o, tNow, f.sel(t, f.roster, 1, 0, tNow.Add(time.Minute), bob, carol))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ownerShapes(effs) {
				if strings.HasPrefix(e, "prepare") && c.name == "preparer" {
					t.Fatalf("prepared again when the Select installed the roster: %q", ownerShapes(effs))
				}
			}
		})
	}
}

// noShare is a Sharing that shares nothing: each call builds.
type noShare struct{}

func (noShare) Parts(_ []protocol.PeerID, _ []byte, build func() []protocol.PeerID) []protocol.PeerID {
	return build()
}
func (noShare) Envelope(data []byte, maxBytes int) (*wire.Envelope, error) {
	return wire.Unmarshal(data, maxBytes)
}
func (noShare) Roster(_ string, _ uint32, _ []byte, build func() (*Roster, error)) (*Roster, error) {
	return build()
}
func (noShare) Learner(_ *wire.Learner, _, _ int, decode func() (*boost.Base, error)) (*boost.Base, error) {
	return decode()
}
func (noShare) ChunkDigest(c *wire.Roster) []byte { return RosterChunkDigest(c) }
