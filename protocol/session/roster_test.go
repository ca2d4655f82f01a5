package session

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// rosterOf builds a roster of n owners whose addresses are addr(id, i).
func rosterOf(n int, addr func(id protocol.PeerID, i int) []string) *Roster {
	ids := make([]protocol.PeerID, n)
	addrs := make([][]string, n)
	nonces := make([][]byte, n)
	for i := range n {
		ids[i] = protocol.PeerID(fmt.Sprintf("12D3KooW%044d", i))
	}
	slices.Sort(ids)
	for i, id := range ids {
		addrs[i], nonces[i] = addr(id, i), make([]byte, NonceBytes)
		nonces[i][0] = byte(i)
	}
	return newRoster("s", 1, ids, addrs, nonces)
}

// reassemble sends r's chunks through an assembly and returns the roster
// the owner builds, with the chunks' encoded size.
func reassemble(t *testing.T, r *Roster) (*Roster, int) {
	t.Helper()
	var a rosterAssembly
	size := 0
	for _, c := range r.chunks() {
		b, err := proto.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		size += len(b)
		done, err := a.add(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			got, err := a.assemble("s", uint32(len(r.IDs)), r.Digest, nil)
			if err != nil {
				t.Fatal(err)
			}
			return got, size
		}
	}
	t.Fatal("roster never assembled")
	return nil, 0
}

// A roster whose addresses all end in their owner's /p2p/<id> travels
// without that suffix (own_suffix) and comes out whole: same entries, same
// digest. The saving is 58 bytes per address (a third of the simulation's
// entries: two addresses, one through the user's relay). A roster with one
// address that does not end so travels whole (the control: stripping it
// would change the digest).
func TestRosterOwnSuffix(t *testing.T) {
	full := func(id protocol.PeerID, i int) []string {
		return []string{
			fmt.Sprintf("/ip4/1.0.0.1/udp/4001/quic-v1/p2p/12D3KooWuser/p2p-circuit/p2p/%s", id),
			fmt.Sprintf("/ip4/1.0.%d.%d/udp/4001/quic-v1/p2p/%s", i/250, i%250+2, id),
		}
	}
	r := rosterOf(1000, full)
	if !r.ownSuffix() {
		t.Fatal("a roster of full addresses not compacted")
	}
	got, size := reassemble(t, r)
	if !slices.EqualFunc(got.Addrs, r.Addrs, slices.Equal) || !slices.Equal(got.IDs, r.IDs) || string(got.Digest) != string(r.Digest) {
		t.Fatal("the compacted roster came out different")
	}
	plain := 0
	for _, c := range r.chunks() {
		c.OwnSuffix = false
		for i := range c.Ids {
			c.Addrs[i] = strings.Join(r.Addrs[int(c.First)+i], " ")
		}
		plain += proto.Size(c)
	}
	// Two addresses an entry, each 5 + 52 characters shorter.
	if saved := plain - size; saved < 1000*2*57 {
		t.Fatalf("compaction saved %d bytes of %d, want at least %d", saved, plain, 1000*2*57)
	}
	t.Logf("1,000 entries: %d bytes compacted, %d whole", size, plain)

	mixed := rosterOf(10, func(id protocol.PeerID, i int) []string {
		if i == 3 {
			return []string{"/ip4/1.0.0.9/udp/4001/quic-v1"} // no /p2p: kept as is
		}
		return full(id, i)
	})
	if mixed.ownSuffix() {
		t.Fatal("a roster with an address without its owner's suffix compacted")
	}
	if got, _ := reassemble(t, mixed); !slices.EqualFunc(got.Addrs, mixed.Addrs, slices.Equal) {
		t.Fatal("the mixed roster came out different")
	}
	bare := rosterOf(3, func(id protocol.PeerID, i int) []string { return []string{ownSuffix(id)} })
	if bare.ownSuffix() {
		t.Fatal("an address that is only the suffix would vanish on the wire")
	}
}

// An owner whose Select came first waits half of what is left to the
// Select's deadline for the roster's chunks (at least minRosterGrace).
func TestRosterGrace(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	for _, c := range []struct {
		deadline time.Time
		want     time.Duration
	}{
		{now.Add(10 * time.Second), 5 * time.Second},
		{now.Add(600 * time.Millisecond), minRosterGrace},
		{now.Add(-time.Second), minRosterGrace},
		{time.Time{}, minRosterGrace},
	} {
		s := &wire.Select{}
		if !c.deadline.IsZero() {
			s.DeadlineUnixMs = c.deadline.UnixMilli()
		}
		if got := rosterGrace(now, s); got != c.want {
			t.Errorf("deadline %v after now: grace %v, want %v", c.deadline.Sub(now), got, c.want)
		}
	}
}
