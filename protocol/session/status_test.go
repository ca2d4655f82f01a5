package session

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// countingTransport is a real-time transport that goes nowhere: it counts
// what the node posts, from whatever goroutine.
type countingTransport struct {
	self protocol.PeerID
	mu   sync.Mutex
	sent int
}

func (c *countingTransport) ID() protocol.PeerID               { return c.self }
func (c *countingTransport) Join(string) error                 { return nil }
func (c *countingTransport) SetHandler(func(protocol.Message)) {}
func (c *countingTransport) Close() error                      { return nil }
func (c *countingTransport) Publish(context.Context, string, []byte) error {
	c.count()
	return nil
}
func (c *countingTransport) Send(context.Context, protocol.PeerID, string, []byte) error {
	c.count()
	return nil
}
func (c *countingTransport) count() { c.mu.Lock(); c.sent++; c.mu.Unlock() }
func (c *countingTransport) posts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent
}

// On the real clock a user and an owner run on their loops' workers: the
// accessors read snapshots from the test goroutine while the workers run
// (the race detector checks), messages handed in return at once, and Close
// leaves no goroutine and no timer behind (the user re-announces every
// AnnounceInterval, 100 ms here, until then). The roles are started as
// the CLI starts them (StartUser/StartOwner on a real transport: the wall
// clock, an Outbox that Close closes after the loop).
func TestRealClockRolesCloseCleanly(t *testing.T) {
	before := runtime.NumGoroutine()
	c := newCluster(t, 3, nil)
	tr := &countingTransport{self: userID}
	ucfg := DefaultUserConfig()
	ucfg.Session, ucfg.Boost, ucfg.Sum, ucfg.Timing = "real", c.cfg, c.sum, c.timing
	ucfg.Own, ucfg.Test, ucfg.ExpectedOwners, ucfg.Log = c.data.User, c.data.Test, 3, testLog(t, "user")
	u, err := StartUser(tr, ucfg)
	if err != nil {
		t.Fatal(err)
	}
	otr := &countingTransport{self: "owner-real"}
	ocfg := DefaultOwnerConfig()
	ocfg.User, ocfg.Data, ocfg.Ledger, ocfg.MaxEpsilon = userID, c.data.Owners[0], protocol.NewMemLedger(ownerBudget), 1
	ocfg.AllowNone, ocfg.NoneCharge, ocfg.Log = true, 1, testLog(t, "owner")
	o, err := StartOwner(otr, ocfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u.rolePost.Poster.(*protocol.Outbox); !ok {
		t.Fatalf("a user on a real transport posts through %T, want an Outbox", u.rolePost.Poster)
	}
	// Garbage from many goroutines while the accessors read.
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				u.Handle(protocol.Message{From: "mallory", Topic: wire.TopicControl, Data: []byte{0xff}})
				o.Handle(protocol.Message{From: userID, Topic: wire.TopicControl, Data: []byte{0xff}})
				_, _ = u.State()
				_ = u.Joined()
				_, _ = o.State()
				_ = o.SumStats()
			}
		}()
	}
	wg.Wait()
	if s, _ := u.State(); s != UserJoining {
		t.Fatalf("user in %s, want joining", s)
	}
	_ = u.Snapshot() // runs on the user's loop
	_ = o.Snapshot()
	// The announcement leaves through the Outbox's worker: wait for it.
	for deadline := time.Now().Add(5 * time.Second); tr.posts() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	u.Close()
	o.Close()
	posts := tr.posts()
	if posts == 0 {
		t.Fatal("the user never announced")
	}
	if got := u.Stats().Get("malformed") + u.Stats().Get("loop: inbox full"); got != 800 {
		t.Errorf("user: %d garbage messages counted, want 800", got)
	}
	// After Close: dropped and counted, never run; no re-announcement.
	u.Handle(protocol.Message{From: "mallory", Topic: wire.TopicControl, Data: []byte{0xff}})
	if u.Stats().Get("loop: closed") != 1 {
		t.Errorf("a message after Close: counters %v", u.Stats())
	}
	u.rolePost.Publish(wire.TopicControl, []byte{0}) // Close closed the poster too
	time.Sleep(300 * time.Millisecond)               // three announce intervals
	if tr.posts() != posts {
		t.Errorf("the user posted %d messages after Close", tr.posts()-posts)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
