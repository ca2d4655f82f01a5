package simulate

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/session"
	"github.com/ppboost/ppboost/protocol/wire"
)

// bounded keeps its newest max entries: the oldest goes first, a re-put
// key keeps its place, and the insertion list stays under 2 max however
// many keys pass through.
func TestBoundedKeepsNewest(t *testing.T) {
	b := newBounded[int, string](3)
	for i := range 1000 {
		b.put(i, fmt.Sprint(i))
		if b.len() > 3 || len(b.order)-b.head != b.len() || len(b.order) > 2*3+1 {
			t.Fatalf("after %d puts: %d entries, order %d from %d", i+1, b.len(), len(b.order), b.head)
		}
	}
	for i := range 1000 {
		_, ok := b.get(i)
		if want := i >= 997; ok != want {
			t.Fatalf("key %d kept %v, want %v", i, ok, want)
		}
	}
	b.put(998, "again")
	if v, _ := b.get(998); v != "again" || b.len() != 3 {
		t.Fatalf("re-put: %q, %d entries", v, b.len())
	}
	// Evicted keys are cleared from the backing array (they may hold a
	// delivered message or a roster alive).
	for i, k := range b.order[:b.head] {
		if k != 0 {
			t.Fatalf("order[%d] = %d before head %d", i, k, b.head)
		}
	}
}

// One delivered message is decoded once; the same bytes in another buffer
// (another message) are decoded again; errors are not kept.
func TestSharedEnvelopeByDeliveredBuffer(t *testing.T) {
	s := newShared()
	decodes := 0
	decode := func(b []byte) (*wire.Envelope, error) {
		decodes++
		if string(b) == "bad" {
			return nil, errors.New("garbage")
		}
		return &wire.Envelope{}, nil
	}
	msg := []byte("select")
	e1, _ := s.Envelope(msg, decode)
	e2, _ := s.Envelope(msg, decode)
	if e1 != e2 || decodes != 1 {
		t.Fatalf("same buffer: %d decodes, shared %v", decodes, e1 == e2)
	}
	if e3, _ := s.Envelope([]byte("select"), decode); e3 == e1 || decodes != 2 {
		t.Fatalf("another buffer with equal bytes shared the envelope (%d decodes)", decodes)
	}
	bad := []byte("bad")
	for range 2 {
		if _, err := s.Envelope(bad, decode); err == nil {
			t.Fatal("garbage decoded")
		}
	}
	if decodes != 4 {
		t.Fatalf("a failed decode was kept: %d decodes", decodes)
	}
}

// Rosters are shared per (session, version, digest); a failed build is not
// kept. Participant lists per roster slice and bitmap; learners per message
// with their error.
func TestSharedRostersPartsLearners(t *testing.T) {
	s := newShared()
	builds := 0
	r := &session.Roster{Version: 1, IDs: []protocol.PeerID{"a", "b", "c"}}
	build := func() (*session.Roster, error) { builds++; return r, nil }
	fail := func() (*session.Roster, error) { builds++; return nil, errors.New("digest") }
	if _, err := s.Roster("s", 1, []byte("d"), fail); err == nil {
		t.Fatal("failed build returned no error")
	}
	got1, _ := s.Roster("s", 1, []byte("d"), build)
	got2, _ := s.Roster("s", 1, []byte("d"), fail)
	if got1 != r || got2 != r || builds != 2 {
		t.Fatalf("roster: %d builds", builds)
	}
	if _, err := s.Roster("s", 1, []byte("other digest"), fail); err == nil {
		t.Fatal("another digest got the shared roster")
	}

	cuts := 0
	cut := func() []protocol.PeerID { cuts++; return []protocol.PeerID{"a", "c"} }
	p1 := s.Parts(r.IDs, []byte{2}, cut)
	p2 := s.Parts(r.IDs, []byte{2}, cut)
	s.Parts(r.IDs, []byte{1}, cut)
	s.Parts(append([]protocol.PeerID(nil), r.IDs...), []byte{2}, cut) // another roster slice
	if &p1[0] != &p2[0] || cuts != 3 {
		t.Fatalf("parts: %d cuts", cuts)
	}

	decodes := 0
	l := &wire.Learner{}
	bad := errors.New("bad learner")
	dec := func() (*boost.Base, error) { decodes++; return nil, bad }
	for range 3 {
		if _, err := s.Learner(l, 2, 4, dec); !errors.Is(err, bad) {
			t.Fatalf("learner error %v", err)
		}
	}
	s.Learner(l, 3, 4, dec)
	s.Learner(&wire.Learner{}, 2, 4, dec)
	if decodes != 3 {
		t.Fatalf("learner: %d decodes, want 3", decodes)
	}
}
