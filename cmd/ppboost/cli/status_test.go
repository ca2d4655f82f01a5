package cli

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol/session"
	"github.com/ppboost/ppboost/status"
)

// A --status address that cannot be bound (taken, or not HOST:PORT) is a
// usage error naming the flag, for the owner and the data user, and for the
// user's config-file key; nothing starts.
func TestStatusBindIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	key, userKey := filepath.Join(dir, "owner.key"), filepath.Join(dir, "user.key")
	run("keygen", "--out", key)
	_, uid, _ := run("keygen", "--out", userKey)
	data := filepath.Join(dir, "d.csv")
	if err := os.WriteFile(data, []byte("a,label\n0.5,x\n-0.5,y\n0.1,x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "schema.json"), []byte(`{"version":1,"label":"label","classes":["x","y"],"columns":[{"name":"a","kind":"numeric","min":-1,"max":1}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "user.json")
	if err := os.WriteFile(conf, []byte(`{"status": "`+ln.Addr().String()+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	owner := []string{"owner", "--data", data, "--key", key, "--state", filepath.Join(dir, "ostate"),
		"--user", strings.TrimSpace(uid), "--listen", "/ip4/127.0.0.1/tcp/0"}
	user := []string{"user", "--key", userKey, "--state", filepath.Join(dir, "ustate"), "--data", data,
		"--model", filepath.Join(dir, "m.json"), "--listen", "/ip4/127.0.0.1/tcp/0"}
	for name, args := range map[string][]string{
		"owner, taken":        append(owner, "--status", ln.Addr().String()),
		"owner, no port":      append(owner, "--status", "localhost"),
		"user, taken":         append(user, "--status", ln.Addr().String()),
		"user, config key":    append(user, "--config", conf),
		"user, bad progress":  append(user, "--progress", "sometimes"),
		"user, linger < 0":    append(user, "--status", "127.0.0.1:0", "--status-linger", "-1s"),
		"owner, negative lin": append(owner, "--status", "127.0.0.1:0", "--status-linger", "-1s"),
	} {
		t.Run(name, func(t *testing.T) {
			args = append(args[:len(args):len(args)], "--state", t.TempDir())
			code, _, errOut := run(args...)
			want := "--status"
			if strings.Contains(name, "progress") {
				want = "--progress"
			}
			if code != exitUsage || !strings.Contains(errOut, want) {
				t.Fatalf("exit %d, stderr %q; want %d naming %s", code, errOut, exitUsage, want)
			}
		})
	}
}

func TestProgressLine(t *testing.T) {
	cfg := &session.SessionSummary{Rounds: 5}
	for _, tc := range []struct {
		name string
		s    status.Status
		want string
	}{
		{"joining", status.Status{State: "joining", Elapsed: 4, Owners: &status.Owners{Joined: 3, Expected: 6, NotJoined: 1}},
			"waiting for owners: 3 joined of 6 expected, 1 would not join · 4 s"},
		{"shares", status.Status{State: "shares", Config: cfg, Round: 2, Attempt: 1, Elapsed: 12, Kept: 1,
			Rounds: []status.Round{{Round: 1, Accepted: true, ValAccuracy: 0.8125}, {Round: 2, Verdict: "dropped"}},
			Owners: &status.Owners{Roster: 9, Selected: 2, Shares: 1},
			Budget: status.Budget{PerOwnerMax: 5}},
			"round 2/5 attempt 1: shares 1/2 · kept 1 · validation acc 81.2 % · owners 9 · ε per owner ≤ 5.0 · 12 s"},
		{"err sum", status.Status{State: "err-sum", Config: cfg, Round: 1, Elapsed: 1, Owners: &status.Owners{Roster: 9}},
			"round 1/5: err-sum · kept 0 · owners 9 · ε per owner ≤ 0.0 · 1 s"},
		{"done", status.Status{State: "done", Outcome: "complete: 5 of 5 rounds", Elapsed: 30, Budget: status.Budget{PerOwnerMax: 5.5}},
			"complete: 5 of 5 rounds · ε per owner ≤ 5.5 · 30 s"},
		// A partial session's state is "failed"; the line is its outcome.
		{"partial", status.Status{State: "failed", Ended: true, Outcome: "partial: 2 of 3 rounds (round 3: no learner accepted)",
			Elapsed: 9, Budget: status.Budget{PerOwnerMax: 5}},
			"partial: 2 of 3 rounds (round 3: no learner accepted) · ε per owner ≤ 5.0 · 9 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := progressLine(tc.s); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	long := progressLine(status.Status{State: "failed", Outcome: strings.Repeat("é", 500)})
	if n := len([]rune(long)); n > 160 {
		t.Fatalf("a line of %d runes", n)
	}
}

// On a terminal the line is redrawn in place and log lines go above it;
// otherwise every report is a plain line.
func TestProgressWriter(t *testing.T) {
	var buf bytes.Buffer
	p, err := newProgress(&buf, "tty")
	if err != nil || p == nil || !p.tty {
		t.Fatalf("tty progress: %v", err)
	}
	done := status.Status{State: "done", Outcome: "complete", Elapsed: 2}
	p.show(done)
	p.Write([]byte("a log line\n"))
	p.show(done)
	p.board = nil
	p.finish()
	want := "\r\x1b[Kcomplete · ε per owner ≤ 0.0 · 2 s" + // the line
		"\r\x1b[Ka log line\n" + "complete · ε per owner ≤ 0.0 · 2 s" + // cleared, the log, redrawn
		"\r\x1b[Kcomplete · ε per owner ≤ 0.0 · 2 s" + "\r\x1b[K" // redrawn, cleared at the end
	if buf.String() != want {
		t.Fatalf("terminal output\n%q\nwant\n%q", buf.String(), want)
	}
	buf.Reset()
	p, _ = newProgress(&buf, "auto") // a buffer is not a terminal
	if p.tty {
		t.Fatal("a buffer taken for a terminal")
	}
	p.show(done)
	p.Write([]byte("log\n"))
	if buf.String() != "complete · ε per owner ≤ 0.0 · 2 s\nlog\n" {
		t.Fatalf("plain output %q", buf.String())
	}
	if p, err := newProgress(&buf, "off"); p != nil || err != nil {
		t.Fatal("--progress off made a reporter")
	}
}

// syncBuffer is a bytes.Buffer for a writer on another goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The reporter's goroutine prints a line when a round ends and stops on
// finish (run with -race: it reads the board while rounds are recorded).
func TestProgressReportsRounds(t *testing.T) {
	var out syncBuffer
	p, _ := newProgress(&out, "plain")
	b := status.NewUserBoard("p", func() session.UserSnapshot {
		return session.UserSnapshot{State: session.UserShares, Round: 2, Roster: 4, Ensemble: boost.Ensemble{Rounds: make([]boost.ModelRound, 1)},
			Config: session.SessionSummary{Rounds: 3, Mechanism: "pm", Epsilon: 2, Alpha: "validation"}}
	}, nil)
	p.start(b)
	b.Round(session.RoundReport{RoundInfo: boost.RoundInfo{Round: 1, Accepted: true, Owners: 1, Charged: 2}})
	p.round()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "round 2/3: shares 0/0 · kept 1 · owners 4 · ε per owner ≤ 2.0") {
		if time.Now().After(deadline) {
			p.finish()
			t.Fatalf("no progress line after a round: %q", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.finish()
	p.finish() // idempotent
}
