package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/wire"
)

// cliChildEnv makes the test binary run Main with its arguments: the
// restart test runs `ppboost owner` as a real OS process that it can crash.
const cliChildEnv = "PPBOOST_CLI_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(outsiderEnv) != "" {
		os.Exit(runOutsiders(os.Args[1:], os.Stdout)) // silent_test.go
	}
	if os.Getenv(cliChildEnv) != "" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// fakeUser is a data user that does what the test says, not what the
// protocol says: it selects the same owner again after a crash.
type fakeUser struct {
	h   *node.Host
	mu  sync.Mutex
	got map[string][]protocol.PeerID // envelope kind -> authors
	seq uint64
}

func (u *fakeUser) handle(m protocol.Message) {
	env, err := wire.Unmarshal(m.Data, wire.MaxControlBytes)
	if err != nil {
		return
	}
	kind := ""
	switch {
	case env.GetJoin() != nil:
		kind = "join"
	case env.GetShare() != nil:
		kind = "share"
	case env.GetRefuse() != nil:
		kind = "refuse"
	default:
		return
	}
	u.mu.Lock()
	u.got[kind] = append(u.got[kind], m.From)
	u.mu.Unlock()
}

func (u *fakeUser) count(kind string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.got[kind])
}

func (u *fakeUser) publish(t *testing.T, round uint32, body *wire.Envelope) {
	t.Helper()
	u.seq++
	body.Header = &wire.Header{Version: wire.Version, Session: "restart", Round: round, Seq: u.seq}
	b, err := wire.Marshal(body, wire.MaxControlBytes)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := u.h.Publish(ctx, wire.TopicControl, b); err != nil {
		t.Fatal(err)
	}
}

// until polls cond for up to 30 s; the owner child is a separate process,
// so there is nothing to wait on but its messages.
func until(t *testing.T, what string, cond func() bool, log *lockedBuffer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; owner log:\n%s", what, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOwnerProcessRestartNeverContributesTwice runs `ppboost owner` as an OS
// process, lets it release its share, SIGKILLs it, starts it again on the
// same --state directory, and has a deviating data user select it again in
// the same session: the restarted owner refuses, no second share leaves,
// and its ledger holds one spend.
func TestOwnerProcessRestartNeverContributesTwice(t *testing.T) {
	dir := t.TempDir()
	shards := filepath.Join(dir, "shards")
	if code, _, errOut := run("partition", "--owners", "1", "--samples-per-owner", "50", "--user-samples", "10",
		"--holdout", "10", "--out", shards); code != 0 {
		t.Fatalf("partition: %s", errOut)
	}
	data := filepath.Join(shards, "owner-000.csv")
	d, err := loadOwnerData(data, "", loadFlags{missing: "error", label: "label"}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	userKey, ownerKey := filepath.Join(dir, "user.key"), filepath.Join(dir, "owner.key")
	if _, err := node.GenerateKey(userKey); err != nil {
		t.Fatal(err)
	}
	if _, err := node.GenerateKey(ownerKey); err != nil {
		t.Fatal(err)
	}
	cfg := node.DefaultConfig()
	cfg.KeyFile, cfg.ListenAddrs = userKey, []string{"/ip4/127.0.0.1/tcp/0"}
	h, err := node.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	u := &fakeUser{h: h, got: map[string][]protocol.PeerID{}}
	h.SetHandler(u.handle)
	for _, topic := range []string{wire.TopicControl, wire.TopicShares} {
		if err := h.Join(topic); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	startOwner := func(log *lockedBuffer) *exec.Cmd {
		cmd := exec.Command(exe, "owner", "--data", data, "--key", ownerKey, "--listen", "/ip4/127.0.0.1/tcp/0",
			"--bootstrap", h.Addrs()[0], "--user", string(h.ID()), "--eps", "1", "--budget", "5", "--state", state, "--stay",
			"--log-level", "debug")
		cmd.Env = append(os.Environ(), cliChildEnv+"=1")
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	announce := &wire.Envelope{Body: &wire.Envelope_Announce{Announce: &wire.Announce{Config: &wire.SessionConfig{
		Learner: "stump", Mechanism: "pm", Epsilon: 1, Rounds: 3, OwnersPerRound: 1, Classes: 2,
		Features: uint32(d.Dim()), Thresholds: make([]float64, d.Dim()), AlphaMode: "validation",
		SumMethod: "ring", SumCommittee: 1, ScaleBits: 24, MinParties: 3, SchemaDigest: d.Schema.Digest()}}}}
	joinAndSelect := func(log *lockedBuffer, round uint32, joins int) protocol.PeerID {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := h.WaitTopicPeers(ctx, wire.TopicControl, 1); err != nil {
			t.Fatalf("%v; owner log:\n%s", err, log)
		}
		// Announce until the owner answers: its subscription may reach
		// the user's mesh a moment after the topic peer shows up.
		until(t, "the owner's join", func() bool {
			if u.count("join") < joins {
				u.publish(t, 0, announce)
				time.Sleep(200 * time.Millisecond)
			}
			return u.count("join") >= joins
		}, log)
		u.mu.Lock()
		owner := u.got["join"][joins-1]
		u.mu.Unlock()
		u.publish(t, round, &wire.Envelope{Body: &wire.Envelope_Select{Select: &wire.Select{
			Selected: []string{string(owner)}, RosterVersion: 1}}})
		return owner
	}

	var log1 lockedBuffer
	first := startOwner(&log1)
	owner := joinAndSelect(&log1, 1, 1)
	until(t, "the first share", func() bool { return u.count("share") == 1 }, &log1)
	first.Process.Kill() // crash: no clean shutdown
	first.Wait()

	var log2 lockedBuffer
	second := startOwner(&log2)
	defer func() {
		second.Process.Signal(syscall.SIGTERM)
		second.Wait()
	}()
	// The restarted owner's ledger says it gave this session a share: it
	// does not join again (it logs why), and a Select naming it anyway
	// finds no one to answer.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.WaitTopicPeers(ctx, wire.TopicControl, 1); err != nil {
		t.Fatalf("%v; owner log:\n%s", err, &log2)
	}
	until(t, "the restarted owner's refusal to rejoin", func() bool {
		u.publish(t, 0, announce)
		time.Sleep(200 * time.Millisecond)
		return strings.Contains(log2.String(), "already has this owner's share")
	}, &log2)
	u.publish(t, 1, &wire.Envelope{Body: &wire.Envelope_Select{Select: &wire.Select{
		Selected: []string{string(owner)}, RosterVersion: 1}}})
	time.Sleep(500 * time.Millisecond) // a second share would have arrived by now
	if n := u.count("join"); n != 1 {
		t.Fatalf("%d joins; the restarted owner joined again; log:\n%s", n, &log2)
	}
	if n := u.count("share"); n != 1 {
		t.Fatalf("%d shares in one session; owner log:\n%s", n, &log2)
	}
	ledger, err := os.ReadFile(filepath.Join(state, "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// One spend (and the bind of the share's name to its value, which
	// costs nothing).
	if spends := strings.Count(string(ledger), `"eps":`); spends != 1 {
		t.Fatalf("ledger has %d spends:\n%s", spends, ledger)
	}
}

// lockedBuffer collects a child process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
