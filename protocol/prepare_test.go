package protocol

import (
	"context"
	"slices"
	"testing"
)

type recPreparer struct{ got []PeerID }

func (r *recPreparer) Prepare(_ context.Context, peers []PeerID) { r.got = append(r.got, peers...) }

type recNotifier struct {
	got  []PeerID
	done func()
}

func (r *recNotifier) PrepareThen(_ context.Context, peers []PeerID, done func()) {
	r.got, r.done = append(r.got, peers...), done
}

// PrepareThen hands done to a PrepareNotifier (which runs it when its dials
// end), and runs it at once after a Preparer's Prepare or with neither.
func TestPrepareThen(t *testing.T) {
	peers := []PeerID{"a", "b"}
	ran := 0
	done := func() { ran++ }

	n := &recNotifier{}
	PrepareThen(context.Background(), n, peers, done)
	if ran != 0 || !slices.Equal(n.got, peers) || n.done == nil {
		t.Fatalf("notifier: ran %d, prepared %v, done handed over %v; want 0, %v, true", ran, n.got, n.done != nil, peers)
	}
	n.done()
	if ran != 1 {
		t.Fatalf("notifier's done: ran %d, want 1", ran)
	}

	p := &recPreparer{}
	PrepareThen(context.Background(), p, peers, done)
	if ran != 2 || !slices.Equal(p.got, peers) {
		t.Fatalf("preparer: ran %d, prepared %v; want 2, %v", ran, p.got, peers)
	}

	PrepareThen(context.Background(), struct{}{}, peers, done)
	if ran != 3 {
		t.Fatalf("neither: ran %d, want 3", ran)
	}
	PrepareThen(context.Background(), p, peers, nil) // no done: nothing to run
}
