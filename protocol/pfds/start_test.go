package pfds

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
)

// realTr is a real-style transport (not role.Inline): it counts what it is
// handed and lets the test play inbound messages.
type realTr struct {
	id protocol.PeerID
	mu sync.Mutex
	h  func(protocol.Message)
	n  int
}

func (r *realTr) ID() protocol.PeerID { return r.id }
func (r *realTr) Join(string) error   { return nil }
func (r *realTr) Close() error        { return nil }
func (r *realTr) SetHandler(h func(protocol.Message)) {
	r.mu.Lock()
	r.h = h
	r.mu.Unlock()
}
func (r *realTr) Publish(context.Context, string, []byte) error { r.add(); return nil }
func (r *realTr) Send(context.Context, protocol.PeerID, string, []byte) error {
	r.add()
	return nil
}
func (r *realTr) add() { r.mu.Lock(); r.n++; r.mu.Unlock() }
func (r *realTr) posts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}
func (r *realTr) deliver(m protocol.Message) {
	r.mu.Lock()
	h := r.h
	r.mu.Unlock()
	h(m)
}

// TestStartPosterAndClose: on memnet the agent posts inline, on a real
// transport through an Outbox; after Close nothing more reaches the
// transport (an announcement would make the agent publish its tree share)
// and no goroutine is left. The negative control delivers the same
// announcement to a running agent, which publishes.
func TestStartPosterAndClose(t *testing.T) {
	net := memnet.New(memnet.Options{Seed: 1, Deterministic: true})
	ep, err := net.Join(alice)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Start(ep, newTestAgent(t, alice, protocol.NewMemLedger(10)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.post.Outbox() != nil {
		t.Fatal("an agent on memnet got an Outbox")
	}
	d.Close()

	before := runtime.NumGoroutine()
	ann := protocol.Message{From: announcer, Topic: Topic, Data: announcement(alice, bob)}
	start := func() (*Driver, *realTr) {
		tr := &realTr{id: alice}
		d, err := Start(tr, newTestAgent(t, alice, protocol.NewMemLedger(10)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if d.post.Outbox() == nil {
			t.Fatal("an agent on a real transport posts without an Outbox")
		}
		return d, tr
	}
	// Negative control: a running agent answers the announcement.
	live, ltr := start()
	ltr.deliver(ann)
	for deadline := time.Now().Add(5 * time.Second); ltr.posts() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if ltr.posts() == 0 {
		t.Fatal("negative control: a running agent did not publish its tree share")
	}
	live.Close()

	closed, ctr := start()
	closed.Close()
	closed.Close() // idempotent
	ctr.deliver(ann)
	time.Sleep(50 * time.Millisecond) // the live agent posted within ~1 ms
	if got := ctr.posts(); got != 0 {
		t.Fatalf("%d messages reached the transport after Close", got)
	}
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); n > before && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(time.Millisecond)
	}
	if n > before {
		t.Fatalf("%d goroutines before Start, %d after Close", before, n)
	}
}
