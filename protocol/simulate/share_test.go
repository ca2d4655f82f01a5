package simulate

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/securesum"
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
// (another message) or under another size cap are decoded again; errors
// are not kept.
func TestSharedEnvelopeByDeliveredBuffer(t *testing.T) {
	s := newShared()
	msg, err := wire.Marshal(&wire.Envelope{Header: &wire.Header{Version: wire.Version, Session: "s", Round: 2}, Body: &wire.Envelope_Alpha{Alpha: &wire.Alpha{}}}, wire.MaxControlBytes)
	if err != nil {
		t.Fatal(err)
	}
	e1, err1 := s.Envelope(msg, wire.MaxControlBytes)
	e2, err2 := s.Envelope(msg, wire.MaxControlBytes)
	if err1 != nil || err2 != nil || e1 != e2 || e1.GetHeader().GetRound() != 2 || s.envs.len() != 1 {
		t.Fatalf("same buffer: %v %v, shared %v, %d entries", err1, err2, e1 == e2, s.envs.len())
	}
	if e3, _ := s.Envelope(bytes.Clone(msg), wire.MaxControlBytes); e3 == e1 || s.envs.len() != 2 {
		t.Fatalf("another buffer with equal bytes shared the envelope (%d entries)", s.envs.len())
	}
	if _, err := s.Envelope(msg, 4); err == nil {
		t.Fatal("a decode under a smaller cap got the shared envelope")
	}
	for range 2 {
		if _, err := s.Envelope([]byte("garbage"), wire.MaxControlBytes); err == nil {
			t.Fatal("garbage decoded")
		}
	}
	if s.envs.len() != 2 {
		t.Fatalf("a failed decode was kept: %d entries", s.envs.len())
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

// Sharing is only a memory and time saving: a run whose owners share
// decoded messages, rosters, learners and participant lists ends exactly as
// the same run whose owners each decode and compute their own, as
// production owners do (the same rounds, model, traffic, drops and spends),
// and the shared run did share (its tables are not empty). Secure-sum
// alpha with one owner silenced per round, so that sums exclude members and
// participant lists are cut.
func TestSharingChangesNothing(t *testing.T) {
	cfg := boost.DefaultConfig()
	cfg.Learner, cfg.Mechanism, cfg.Alpha, cfg.ErrEpsilon = boost.Stump, "pm", boost.AlphaSecureSum, 20
	cfg.OwnersPerRound, cfg.Rounds, cfg.Seed = 20, 3, 21
	data, err := boost.Prepare(boost.DataSpec{Source: "synthetic", Owners: 120, SamplesPerOwner: 20,
		UserSamples: 500, TestSamples: 500, Seed: 21}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	play := func(noShare bool) (*Result, *shared) {
		p, err := newPlan(Options{Boost: cfg, Sum: securesum.DefaultParams(), Data: data, SilentPerRound: 1, noShare: noShare})
		if err != nil {
			t.Fatal(err)
		}
		r := newRun(p)
		defer r.net.Close()
		if err := r.start(); err != nil {
			t.Fatal(err)
		}
		res, err := r.finish(r.play())
		if err != nil {
			t.Fatal(err)
		}
		return res, r.share
	}
	got, sh := play(false)
	want, none := play(true)
	if none != nil {
		t.Fatal("a run without sharing has a shared table")
	}
	if sh.envs.len() == 0 || sh.rosters.len() == 0 || sh.learners.len() == 0 || sh.parts.len() == 0 {
		t.Fatalf("nothing shared: %d envelopes, %d rosters, %d learners, %d participant lists",
			sh.envs.len(), sh.rosters.len(), sh.learners.len(), sh.parts.len())
	}
	if len(want.Rounds) == 0 || !reflect.DeepEqual(got.Rounds, want.Rounds) || !reflect.DeepEqual(got.Model, want.Model) {
		t.Fatalf("rounds or model differ: %d vs %d rounds", len(got.Rounds), len(want.Rounds))
	}
	if got.OwnerMsgs != want.OwnerMsgs || got.OwnerBytes != want.OwnerBytes || got.TotalMsgs != want.TotalMsgs ||
		!reflect.DeepEqual(got.Dropped, want.Dropped) || !reflect.DeepEqual(got.Spent, want.Spent) || got.Virtual != want.Virtual {
		t.Fatalf("traffic, drops or spends differ: %+v vs %+v", got, want)
	}
}
