package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	libp2pproto "github.com/libp2p/go-libp2p/core/protocol"
	"go.uber.org/goleak"

	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

func newHost(t testing.TB, tweak func(*Config)) *Host {
	t.Helper()
	key := filepath.Join(t.TempDir(), "id.key")
	if _, err := GenerateKey(key); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.KeyFile = key
	cfg.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0"}
	cfg.Metrics = NewMetrics()
	if tweak != nil {
		tweak(&cfg)
	}
	h, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func connect(t testing.TB, a, b *Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Connect(ctx, b.Addrs()[0]); err != nil {
		t.Fatal(err)
	}
}

type inbox struct {
	mu   sync.Mutex
	msgs []protocol.Message
}

func (b *inbox) handle(m protocol.Message) { b.mu.Lock(); b.msgs = append(b.msgs, m); b.mu.Unlock() }
func (b *inbox) count() int                { b.mu.Lock(); defer b.mu.Unlock(); return len(b.msgs) }

func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "k")
	id, err := GenerateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %v", st.Mode().Perm())
	}
	if _, err := GenerateKey(path); err == nil {
		t.Fatal("GenerateKey overwrote an existing key")
	}
	sk, err := LoadKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := peer.IDFromPrivateKey(sk); got != id {
		t.Fatal("loaded key has another id")
	}
	os.Chmod(path, 0o644)
	if _, err := LoadKey(path); !errors.Is(err, ErrKeyPermissions) || !strings.Contains(err.Error(), path) {
		t.Fatalf("world-readable key: %v", err)
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("garbage"), 0o600)
	if _, err := LoadKey(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("corrupt key: %v", err)
	}
	if _, err := LoadKey(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing key accepted")
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	c.Bootstrap = []string{"/ip4/1.2.3.4/tcp/1"}
	c.AllowList = []string{"nope"}
	err := c.Validate()
	for _, want := range []string{"key_file", "bootstrap", "allow_list"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

func TestLedgerDurability(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, err := OpenLedger(path, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Spend("s1", 1, 0, 2); err != nil {
		t.Fatal(err)
	}
	if err := l.Spend("s1", 2, 0, 0.5); !errors.Is(err, protocol.ErrAlreadyContributed) {
		t.Fatalf("second spend in a session: %v", err)
	}
	if err := l.Spend("s2", 1, 0, 1.5); !errors.Is(err, protocol.ErrBudgetExceeded) {
		t.Fatalf("spend past the budget: %v", err)
	}
	l.Close()
	// A crash mid-append leaves a torn line: ignored, and truncated away.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	f.WriteString(`{"session":"s3","rou`)
	f.Close()
	l, err = OpenLedger(path, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Spent() != 2 || !l.Contributed("s1") || l.Contributed("s3") {
		t.Fatalf("reopened: spent %v", l.Spent())
	}
	if err := l.Spend("s4", 1, 0, 1); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l, err = OpenLedger(path, 3, nil)
	if err != nil || l.Spent() != 3 {
		t.Fatalf("after torn tail and a new spend: %v, %v", l.Spent(), err)
	}
	l.Close()
	// A corrupt line in the middle is an error naming the file and line.
	b, _ := os.ReadFile(path)
	os.WriteFile(path, append([]byte("{broken}\n"), b...), 0o600)
	if _, err := OpenLedger(path, 3, nil); err == nil || !strings.Contains(err.Error(), path+":1") {
		t.Fatalf("corrupt ledger: %v", err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.json")
	for _, s := range []string{"one", "two"} {
		if err := WriteFileAtomic(p, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(p); string(b) != "two" {
		t.Fatalf("content %q", b)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(p), ".c.json.tmp-*")); len(m) != 0 {
		t.Fatalf("temporary files left: %v", m)
	}
}

func TestPubsubValidatorsAndStreams(t *testing.T) {
	// Registered first, so it runs after the hosts' cleanups have closed them.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	user, owner, stranger := newHost(t, nil), newHost(t, nil), newHost(t, nil)
	connect(t, owner, user)
	connect(t, stranger, owner)
	var got inbox
	owner.SetHandler(got.handle)
	if err := owner.SetTopicValidator(wire.TopicControl, func(from protocol.PeerID, _ []byte) protocol.Verdict {
		if from == user.ID() {
			return protocol.Accept
		}
		return protocol.Reject
	}); err != nil {
		t.Fatal(err)
	}
	if err := owner.Join(wire.TopicControl); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, h := range []*Host{user, stranger} {
		if err := h.WaitTopicPeers(ctx, wire.TopicControl, 1); err != nil {
			t.Fatal(err)
		}
	}
	stranger.Publish(ctx, wire.TopicControl, []byte("forged"))
	user.Publish(ctx, wire.TopicControl, []byte("genuine"))
	eventually(t, "the user's publication", func() bool { return got.count() >= 1 })
	time.Sleep(200 * time.Millisecond)
	got.mu.Lock()
	for _, m := range got.msgs {
		if string(m.Data) != "genuine" || m.From != user.ID() {
			t.Fatalf("delivered %q from %s", m.Data, m.From)
		}
	}
	got.mu.Unlock()
	if err := user.Publish(ctx, wire.TopicControl, make([]byte, user.cfg.MaxMessage)); err == nil {
		t.Fatal("oversized publish accepted")
	}
	// Direct messages.
	if err := user.Send(ctx, owner.ID(), wire.ProtoSession, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the direct message", func() bool { return got.count() == 2 })
	if err := user.Send(ctx, owner.ID(), wire.ProtoRing, make([]byte, wire.MaxSumFrameBytes+1)); err == nil {
		t.Fatal("oversized frame sent")
	}
	// Garbage on a raw stream: the receiver resets it, counts it, and keeps working.
	s, err := stranger.Host().NewStream(ctx, owner.Host().ID(), libp2pproto.ID(wire.ProtoShamir))
	if err != nil {
		t.Fatal(err)
	}
	s.Write([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	s.Close()
	if err := user.Send(ctx, owner.ID(), wire.ProtoSession, []byte("still alive")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a message after the garbage", func() bool { return got.count() == 3 })
	if err := WaitTopicPeersTimeout(owner); err == nil || !strings.Contains(err.Error(), "0 of 5") {
		t.Fatalf("WaitTopicPeers timeout error: %v", err)
	}
}

func WaitTopicPeersTimeout(h *Host) error {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	return h.WaitTopicPeers(ctx, "/ppboost/empty/1.0.0", 5)
}

func TestAllowListRefusesStrangers(t *testing.T) {
	friend := newHost(t, nil)
	gated := newHost(t, func(c *Config) { c.AllowList = []string{string(friend.ID())} })
	stranger := newHost(t, nil)
	var got inbox
	gated.SetHandler(got.handle)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := friend.Send(ctx, gated.ID(), wire.ProtoSession, []byte("ok")); err != nil {
		// the friend needs the address first
		friend.AddAddrs(gated.ID(), gated.Addrs())
		if err := friend.Send(ctx, gated.ID(), wire.ProtoSession, []byte("ok")); err != nil {
			t.Fatal(err)
		}
	}
	stranger.AddAddrs(gated.ID(), gated.Addrs())
	// The handshake may complete before the gater closes the connection, so
	// refusal shows as a failed stream, not necessarily a failed Connect.
	if err := stranger.Send(ctx, gated.ID(), wire.ProtoSession, []byte("let me in")); err == nil {
		time.Sleep(100 * time.Millisecond)
	}
	eventually(t, "the friend's message", func() bool { return got.count() >= 1 })
	time.Sleep(100 * time.Millisecond)
	got.mu.Lock()
	defer got.mu.Unlock()
	for _, m := range got.msgs {
		if m.From == stranger.ID() {
			t.Fatal("a peer outside the allow-list delivered a message")
		}
	}
}

func TestPrivateNetworkIsTCPOnly(t *testing.T) {
	dir := t.TempDir()
	psk := filepath.Join(dir, "swarm.key")
	os.WriteFile(psk, []byte("/key/swarm/psk/1.0.0/\n/base16/\n"+strings.Repeat("ab", 32)+"\n"), 0o600)
	a := newHost(t, func(c *Config) {
		c.PSKFile = psk
		c.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"}
	})
	b := newHost(t, func(c *Config) { c.PSKFile = psk })
	for _, addr := range a.Addrs() {
		if strings.Contains(addr, "quic") {
			t.Fatalf("private network listens on QUIC: %s", addr)
		}
	}
	var got inbox
	a.SetHandler(got.handle)
	connect(t, b, a)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Send(ctx, a.ID(), wire.ProtoSession, []byte("psk")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a message inside the private network", func() bool { return got.count() == 1 })
	outsider := newHost(t, nil)
	if err := outsider.Connect(ctx, a.Addrs()[0]); err == nil {
		t.Fatal("a peer without the key connected to the private network")
	}
}

// TestManyOwnersOneUser: 200 owner hosts bootstrap to one data-user host on
// loopback; every owner receives the user's publication and reaches the user
// with a direct message.
func TestManyOwnersOneUser(t *testing.T) {
	if testing.Short() {
		t.Skip("200 hosts: slow")
	}
	const n = 200
	user := newHost(t, func(c *Config) { c.ExpectedPeers = n })
	var got inbox
	user.SetHandler(got.handle)
	var recv atomic.Int64
	owners := make([]*Host, n)
	for i := range owners {
		owners[i] = newHost(t, func(c *Config) { c.Bootstrap = user.Addrs()[:1] })
		owners[i].SetHandler(func(protocol.Message) { recv.Add(1) })
		if err := owners[i].Join(wire.TopicControl); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := user.WaitTopicPeers(ctx, wire.TopicControl, n); err != nil {
		t.Fatal(err)
	}
	if err := user.Publish(ctx, wire.TopicControl, []byte("round 1")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every owner to receive the publication", func() bool { return recv.Load() == n })
	var wg sync.WaitGroup
	for _, o := range owners {
		wg.Add(1)
		go func(o *Host) {
			defer wg.Done()
			if err := o.Send(ctx, user.ID(), wire.ProtoSession, []byte(o.ID())); err != nil {
				t.Error(err)
			}
		}(o)
	}
	wg.Wait()
	eventually(t, "every owner's direct message", func() bool { return got.count() == n })
}

// BenchmarkOneHop measures Send-to-handler latency over loopback TCP on an
// open connection (each message opens a new yamux stream).
func BenchmarkOneHop(b *testing.B) {
	x, y := newHost(b, nil), newHost(b, nil)
	connect(b, x, y)
	done := make(chan struct{}, 1)
	y.SetHandler(func(protocol.Message) { done <- struct{}{} })
	ctx := context.Background()
	payload := bytes.Repeat([]byte{1}, 64)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := x.Send(ctx, y.ID(), wire.ProtoRing, payload); err != nil {
			b.Fatal(err)
		}
		<-done
	}
}

func ExampleGenerateKey() {
	dir, _ := os.MkdirTemp("", "ppboost")
	defer os.RemoveAll(dir)
	id, err := GenerateKey(filepath.Join(dir, "owner.key"))
	fmt.Println(err == nil, strings.HasPrefix(id.String(), "12D3KooW"))
	// Output: true true
}

func TestMetricsExposition(t *testing.T) {
	m := NewMetrics()
	m.ObserveRound(true, 5, 30*time.Millisecond)
	m.ObserveRound(false, 5, 0)
	m.Rejected("/ppboost/control/1.0.0", "rejected")
	m.SetBudgetSpent(2.5)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`ppboost_rounds_total{outcome="accepted"} 1`,
		`ppboost_rounds_total{outcome="dropped"} 1`,
		`ppboost_shares_received_total 10`,
		`ppboost_securesum_seconds_count 1`,
		`ppboost_rejected_messages_total{reason="rejected",where="/ppboost/control/1.0.0"} 1`,
		`ppboost_budget_spent 2.5`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("exposition lacks %q", want)
		}
	}
	if err := m.Serve(ctx, "256.0.0.1:1"); err == nil {
		t.Error("Serve on a bad address succeeded")
	}
}
