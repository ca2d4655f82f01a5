package role_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/fedboost"
	"github.com/ppboost/ppboost/protocol/memnet"
	"github.com/ppboost/ppboost/protocol/role"
	"github.com/ppboost/ppboost/protocol/session"
)

// recorder is a real-style transport (not Inline, no clock of its own): it
// records every Publish and Send it is handed.
type recorder struct {
	id     protocol.PeerID
	inline bool // PostsInline's answer (the wrapper row)

	mu    sync.Mutex
	posts int
}

func (r *recorder) ID() protocol.PeerID                           { return r.id }
func (r *recorder) Join(string) error                             { return nil }
func (r *recorder) SetHandler(func(protocol.Message))             {}
func (r *recorder) Close() error                                  { return nil }
func (r *recorder) Publish(context.Context, string, []byte) error { r.add(); return nil }
func (r *recorder) Send(context.Context, protocol.PeerID, string, []byte) error {
	r.add()
	return nil
}
func (r *recorder) add() { r.mu.Lock(); r.posts++; r.mu.Unlock() }
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.posts
}

// wrapped forwards PostsInline like a wrapping transport must.
type wrapped struct{ *recorder }

func (w wrapped) PostsInline() bool { return w.inline }

type nopPoster struct{}

func (nopPoster) Send(protocol.PeerID, string, []byte) {}
func (nopPoster) Publish(string, []byte)               {}

func TestPosterChoice(t *testing.T) {
	net := memnet.New(memnet.Options{Seed: 1, Deterministic: true})
	ep, err := net.Join("m")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		tr     protocol.Transport
		opts   []role.Option
		want   string // "direct", "outbox", "given"
		inline bool
	}{
		{"memnet endpoint posts inline", ep, nil, "direct", true},
		{"real transport gets an outbox", &recorder{id: "r"}, nil, "outbox", false},
		{"wrapper saying not inline gets an outbox", wrapped{&recorder{id: "w"}}, nil, "outbox", false},
		{"wrapper forwarding inline posts inline", wrapped{&recorder{id: "w", inline: true}}, nil, "direct", true},
		{"WithPoster wins on a real transport", &recorder{id: "r"}, []role.Option{role.WithPoster(nopPoster{})}, "given", false},
		{"WithPoster wins on memnet", ep, []role.Option{role.WithPoster(nopPoster{})}, "given", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := role.IsInline(tc.tr); got != tc.inline {
				t.Fatalf("IsInline = %v, want %v", got, tc.inline)
			}
			p := role.NewPost(tc.tr, role.Resolve(tc.tr, nil, tc.opts...), hclog.NewNullLogger())
			defer p.Close()
			var got string
			switch p.Poster.(type) {
			case protocol.Direct:
				got = "direct"
			case *protocol.Outbox:
				got = "outbox"
			case nopPoster:
				got = "given"
			}
			if got != tc.want {
				t.Fatalf("poster %T (%s), want %s", p.Poster, got, tc.want)
			}
			if (p.Outbox() != nil) != (tc.want == "outbox") {
				t.Fatalf("Outbox() = %v: Close must close exactly the outbox Start made", p.Outbox())
			}
		})
	}
}

func TestResolveDefaults(t *testing.T) {
	net := memnet.New(memnet.Options{Seed: 1, Deterministic: true})
	ep, err := net.Join("m")
	if err != nil {
		t.Fatal(err)
	}
	manual := protocol.NewManualClock(time.Unix(0, 0))
	other := protocol.NewManualClock(time.Unix(100, 0))
	rec := &recorder{id: "r"}
	for _, tc := range []struct {
		name      string
		tr        protocol.Transport
		cfgClock  protocol.Clock
		opts      []role.Option
		wantClock func(protocol.Clock) bool
		wantSend  time.Duration
	}{
		{"no clock anywhere: the wall clock", rec, nil, nil,
			func(c protocol.Clock) bool { _, ok := c.(protocol.RealClock); return ok }, role.DefaultSendTimeout},
		{"the config's clock", rec, manual, nil,
			func(c protocol.Clock) bool { return c == manual }, role.DefaultSendTimeout},
		{"WithClock over the config's", rec, manual, []role.Option{role.WithClock(other)},
			func(c protocol.Clock) bool { return c == other }, role.DefaultSendTimeout},
		{"the transport's virtual clock", ep, nil, nil,
			func(c protocol.Clock) bool {
				return c.Now().Equal(ep.Clock().Now()) && c != protocol.Clock(protocol.RealClock{})
			}, role.DefaultSendTimeout},
		{"the config's clock over the transport's", ep, manual, nil,
			func(c protocol.Clock) bool { return c == manual }, role.DefaultSendTimeout},
		{"WithSendTimeout", rec, nil, []role.Option{role.WithSendTimeout(time.Second)},
			func(c protocol.Clock) bool { return c != nil }, time.Second},
		{"a non-positive timeout is the default", rec, nil, []role.Option{role.WithSendTimeout(-1)},
			func(c protocol.Clock) bool { return c != nil }, role.DefaultSendTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := role.Resolve(tc.tr, tc.cfgClock, tc.opts...)
			if !tc.wantClock(o.Clock) {
				t.Fatalf("clock %T %v", o.Clock, o.Clock)
			}
			if o.SendTimeout != tc.wantSend {
				t.Fatalf("SendTimeout %v, want %v", o.SendTimeout, tc.wantSend)
			}
			if o.OnDrop != nil || o.Poster != nil {
				t.Fatal("hook or poster set without an option")
			}
		})
	}
}

func testData(t *testing.T) *dataset.Dataset {
	t.Helper()
	c := dataset.DefaultSynthetic(60, 1)
	d, err := dataset.Synthetic(c)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// waitGoroutines waits (briefly) for the goroutine count to fall to want:
// the Outbox's and the loop's workers end when Close returns, but the
// runtime may report them a moment later.
func waitGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 200 && n > want; i++ {
		time.Sleep(5 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// TestCloseOrdering starts a user and an owner on a real-style transport
// (wall clock, Outbox): the user announces at once and every
// AnnounceInterval. After Close no goroutine of theirs is left and nothing
// more reaches the transport, though the announce timer would have fired
// many times. The negative control leaves the user running and sees it
// announce again.
func TestCloseOrdering(t *testing.T) {
	const interval = 5 * time.Millisecond
	start := func(t *testing.T, tr *recorder) (*session.User, *session.Owner) {
		ucfg := session.DefaultUserConfig()
		ucfg.Own = testData(t)
		ucfg.Timing.AnnounceInterval = interval
		ucfg.Timing.JoinTimeout = time.Hour
		var drops atomic.Int64 // the hook runs on transport goroutines
		u, err := session.StartUser(tr, ucfg, role.WithDropHook(func(string) { drops.Add(1) }))
		if err != nil {
			t.Fatal(err)
		}
		ocfg := session.DefaultOwnerConfig()
		ocfg.User, ocfg.Data, ocfg.Ledger = "someone", testData(t), protocol.NewMemLedger(10)
		o, err := session.StartOwner(&recorder{id: "o"}, ocfg)
		if err != nil {
			u.Close()
			t.Fatal(err)
		}
		return u, o
	}
	waitPosts := func(tr *recorder, n int) bool {
		for i := 0; i < 400; i++ {
			if tr.count() >= n {
				return true
			}
			time.Sleep(interval)
		}
		return false
	}

	t.Run("closed", func(t *testing.T) {
		before := runtime.NumGoroutine()
		tr := &recorder{id: "u"}
		u, o := start(t, tr)
		if !waitPosts(tr, 2) {
			t.Fatal("the user never announced twice")
		}
		if err := u.Close(); err != nil {
			t.Fatal(err)
		}
		o.Close()
		u.Close() // idempotent
		o.Close()
		// A federated-DPBoost owner on the same path: started on a real
		// transport, closed, nothing left.
		fcfg := fedboost.DefaultOwnerConfig()
		fcfg.User, fcfg.Data, fcfg.Ledger = "someone", testData(t), protocol.NewMemLedger(10)
		fo, err := fedboost.StartOwner(&recorder{id: "f"}, fcfg)
		if err != nil {
			t.Fatal(err)
		}
		fo.Close()
		// The loop itself is closed (not only the poster behind it).
		u.Handle(protocol.Message{From: "mallory", Topic: "x", Data: []byte{0xff}})
		if got := u.Stats().Get("loop: closed"); got != 1 {
			t.Fatalf("a message after Close: %d counted as loop: closed, want 1", got)
		}
		after := tr.count()
		// 20 announce intervals: a live user announces ~20 times more.
		time.Sleep(20 * interval)
		if got := tr.count(); got != after {
			t.Fatalf("%d messages reached the transport after Close", got-after)
		}
		if n := waitGoroutines(before); n > before {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, n, buf[:runtime.Stack(buf, true)])
		}
	})
	t.Run("negative control: not closed", func(t *testing.T) {
		tr := &recorder{id: "u"}
		u, o := start(t, tr)
		defer o.Close()
		defer u.Close()
		if !waitPosts(tr, 2) {
			t.Fatal("the user never announced twice")
		}
		after := tr.count()
		if !waitPosts(tr, after+2) {
			t.Fatal("a running user stopped announcing: the closed case proves nothing")
		}
	})
}

// TestStartRefusesBadConfig: Start validates through New… and leaves
// nothing running when it refuses.
func TestStartRefusesBadConfig(t *testing.T) {
	before := runtime.NumGoroutine()
	if _, err := session.StartUser(&recorder{id: "u"}, session.DefaultUserConfig()); err == nil {
		t.Fatal("a user without data started")
	}
	if _, err := session.StartOwner(&recorder{id: "o"}, session.DefaultOwnerConfig()); err == nil {
		t.Fatal("an owner without a user started")
	}
	if _, err := fedboost.StartOwner(&recorder{id: "f"}, fedboost.DefaultOwnerConfig()); err == nil {
		t.Fatal("a federated owner without a user started")
	}
	if n := waitGoroutines(before); n > before {
		t.Fatalf("%d goroutines before, %d after refused starts", before, n)
	}
}

// TestPostClose: the Outbox a Post made delivers until Close and drops
// everything after it (the poster half of a role's Close).
func TestPostClose(t *testing.T) {
	tr := &recorder{id: "r"}
	p := role.NewPost(tr, role.Resolve(tr, nil), nil)
	p.Publish("t", []byte("before"))
	p.Send("peer", "/p", []byte("before"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	p.Drain(ctx)
	cancel()
	if got := tr.count(); got != 2 {
		t.Fatalf("control: %d of 2 posts before Close reached the transport", got)
	}
	p.Close()
	p.Close() // idempotent
	p.Publish("t", []byte("after"))
	p.Send("peer", "/p", []byte("after"))
	time.Sleep(20 * time.Millisecond)
	if got := tr.count(); got != 2 {
		t.Fatalf("%d posts after Close reached the transport", got-2)
	}
	var none *role.Post
	none.Close() // nil-safe: a role built by New… has no Post
	none.Drain(context.Background())
}
