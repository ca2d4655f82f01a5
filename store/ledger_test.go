package store

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ppboost/ppboost/protocol"
)

func openLedger(t testing.TB, path string, budget float64) *FileLedger {
	t.Helper()
	l, err := OpenLedger(path, budget, testLogger(t, "ledger"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestLedgerRules(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l := openLedger(t, path, 3)
	if err := l.Spend("s1", 1, 0, 2); err != nil {
		t.Fatal(err)
	}
	if err := l.Spend("s1", 2, 1, 0.5); !errors.Is(err, protocol.ErrAlreadyContributed) {
		t.Fatalf("second spend in a session: %v", err)
	}
	if err := l.Spend("s2", 1, 0, 1.5); !errors.Is(err, protocol.ErrBudgetExceeded) {
		t.Fatalf("spend past the budget: %v", err)
	}
	for _, eps := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if err := l.Spend("s3", 1, 0, eps); err == nil {
			t.Fatalf("spend of %v accepted", eps)
		}
	}
	if err := l.Spend("s2", 1, 0, 1); err != nil { // exactly the rest of the budget
		t.Fatal(err)
	}
	if l.Spent() != 3 || !l.Contributed("s1") || !l.Contributed("s2") || l.Contributed("s3") || l.Budget() != 3 {
		t.Fatalf("spent %v, contributed s1 %v s2 %v s3 %v", l.Spent(), l.Contributed("s1"), l.Contributed("s2"), l.Contributed("s3"))
	}
	// Refused spends leave no trace in the file.
	b, _ := os.ReadFile(path)
	if n := bytes.Count(b, []byte("\n")); n != 2 {
		t.Fatalf("%d lines in the ledger, want 2:\n%s", n, b)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := l.Spend("s4", 1, 0, 0.1); !errors.Is(err, ErrLedgerClosed) {
		t.Fatalf("spend after Close: %v", err)
	}
	if _, err := OpenLedger(path, 0, nil); err == nil {
		t.Fatal("zero budget accepted")
	}
}

func TestLedgerSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l := openLedger(t, path, 2)
	if err := l.Spend("s1", 4, 2, 1.25); err != nil {
		t.Fatal(err)
	}
	l.Close()
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("ledger mode %#o, want 0600", st.Mode().Perm())
	}
	l = openLedger(t, path, 2)
	if l.Spent() != 1.25 || !l.Contributed("s1") {
		t.Fatalf("after reopen: spent %v, contributed %v", l.Spent(), l.Contributed("s1"))
	}
	if err := l.Spend("s1", 5, 0, 0.5); !errors.Is(err, protocol.ErrAlreadyContributed) {
		t.Fatalf("same session after reopen: %v", err)
	}
	if err := l.Spend("s2", 1, 0, 1); !errors.Is(err, protocol.ErrBudgetExceeded) {
		t.Fatalf("budget after reopen: %v", err)
	}
	l.Close()
	// A smaller budget at the next open leaves no room.
	l = openLedger(t, path, 1)
	if err := l.Spend("s3", 1, 0, 0.01); !errors.Is(err, protocol.ErrBudgetExceeded) {
		t.Fatalf("spend with the budget already exceeded: %v", err)
	}
}

func TestLedgerTornTail(t *testing.T) {
	for _, tail := range []string{
		`{"session":"s9","rou`, // cut mid-record
		"\x00\x00\x00\x00",     // delayed allocation: zeros instead of data
	} {
		t.Run(fmt.Sprintf("%q", tail), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.jsonl")
			l := openLedger(t, path, 3)
			if err := l.Spend("s1", 1, 0, 2); err != nil {
				t.Fatal(err)
			}
			l.Close()
			appendTo(t, path, tail)
			l = openLedger(t, path, 3)
			if l.Spent() != 2 || !l.Contributed("s1") || l.Contributed("s9") {
				t.Fatalf("after a torn tail: spent %v", l.Spent())
			}
			if err := l.Spend("s4", 1, 0, 1); err != nil {
				t.Fatal(err)
			}
			l.Close()
			l = openLedger(t, path, 3)
			if l.Spent() != 3 || !l.Contributed("s4") {
				t.Fatalf("the spend after the repair was lost: spent %v", l.Spent())
			}
		})
	}
}

// A complete record whose newline did not reach the disk counts as spent.
func TestLedgerUnterminatedRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	mustWrite(t, path, `{"session":"s1","round":1,"attempt":0,"eps":0.5,"time":"2026-01-01T00:00:00Z"}`, 0o600)
	l := openLedger(t, path, 3)
	if l.Spent() != 0.5 || !l.Contributed("s1") {
		t.Fatalf("unterminated record: spent %v", l.Spent())
	}
	if err := l.Spend("s2", 1, 0, 1); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = openLedger(t, path, 3)
	if l.Spent() != 1.5 {
		t.Fatalf("records merged on one line? spent %v", l.Spent())
	}
}

// TestLedgerCorruptLine: a newline-terminated line that does not parse is
// refused with its line number, the last line too (a torn append has no
// newline): dropping it would let its key be spent again.
func TestLedgerCorruptLine(t *testing.T) {
	good := `{"session":"s1","round":1,"attempt":0,"eps":0.5,"time":"2026-01-01T00:00:00Z"}`
	for _, c := range []struct {
		name    string
		content string
		line    int
	}{
		{"garbage", good + "\n{broken}\n" + good + "\n", 2},
		{"negative eps", good + "\n" + strings.Replace(good, "0.5", "-0.5", 1) + "\n" + good + "\n", 2},
		{"empty session", good + "\n" + strings.Replace(good, `"s1"`, `""`, 1) + "\n" + good + "\n", 2},
		{"unknown field", good + "\n" + strings.Replace(good, `"round"`, `"rownd"`, 1) + "\n" + good + "\n", 2},
		{"two on a line", good + "\n" + good + good + "\n" + good + "\n", 2},
		{"blank then bad", good + "\n\n{}\n" + good + "\n", 3},
		{"terminated garbage last line", good + "\n{broken}\n", 2},
		{"cut record with a newline last", good + "\n" + good[:40] + "\n", 2},
		{"terminated zeros last", good + "\n\x00\x00\x00\n", 2},
		{"bad last line then blank lines", good + "\n{}\n\n  ", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.jsonl")
			mustWrite(t, path, c.content, 0o600)
			_, err := OpenLedger(path, 3, nil)
			want := fmt.Sprintf("%s:%d:", path, c.line)
			if !errors.Is(err, ErrLedgerCorrupt) || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v, want ErrLedgerCorrupt naming %s", err, want)
			}
			if b, _ := os.ReadFile(path); string(b) != c.content {
				t.Fatalf("a refused ledger was changed:\n%q", b)
			}
		})
	}
}

func TestLedgerLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l := openLedger(t, path, 3)
	if _, err := OpenLedger(path, 3, nil); !errors.Is(err, ErrLedgerLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second open of a ledger in use: %v", err)
	}
	l.Close()
	l2 := openLedger(t, path, 3) // released by Close
	l2.Close()
}

// Concurrent spends for one session: exactly one wins, the file has one line.
func TestLedgerConcurrentSpends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l := openLedger(t, path, 100)
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if l.Spend("same", uint32(i), 0, 1) == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(path)
	if wins != 1 || bytes.Count(b, []byte("\n")) != 1 || l.Spent() != 1 {
		t.Fatalf("%d spends won, file:\n%s", wins, b)
	}
}

func appendTo(t testing.TB, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "checkpoint.json")
	for _, s := range []string{"one", "two"} {
		if err := WriteFileAtomic(p, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(p); string(b) != "two" {
		t.Fatalf("content %q", b)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".checkpoint.json.tmp-*")); len(m) != 0 {
		t.Fatalf("temporary files left: %v", m)
	}
	// A failure leaves the old content and no temporary file.
	if err := WriteFileAtomic(filepath.Join(dir, "missing-dir", "x"), []byte("x")); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	if err := os.Mkdir(filepath.Join(dir, "taken"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "taken", "f"), nil, 0o600)
	if err := WriteFileAtomic(filepath.Join(dir, "taken"), []byte("x")); err == nil {
		t.Fatal("rename over a non-empty directory succeeded")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".taken.tmp-*")); len(m) != 0 {
		t.Fatalf("temporary files left after a failure: %v", m)
	}
}

// FuzzOpenLedger: whatever the file holds, OpenLedger either fails with a
// clear error or opens a ledger whose state survives a spend and a reopen.
func FuzzOpenLedger(f *testing.F) {
	good := `{"session":"s1","round":1,"attempt":0,"eps":0.5,"time":"2026-01-01T00:00:00Z"}`
	for _, s := range []string{"", "\n", good, good + "\n", good + "\n" + good, good + "\n{", "{}\n" + good,
		good + "\n\x00\x00", "null\n", `{"session":"a","eps":1e308}` + "\n" + `{"session":"b","eps":1e308}` + "\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "ledger")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := OpenLedger(path, 10, nil)
		if err != nil {
			if !errors.Is(err, ErrLedgerCorrupt) {
				t.Fatalf("open failed with an unexpected error: %v", err)
			}
			return
		}
		spent := l.Spent()
		if !(spent >= 0) {
			t.Fatalf("spent %v", spent)
		}
		spendErr := l.Spend("fuzz-session-never-in-seeds", 1, 0, 0.25)
		if spendErr == nil {
			spent += 0.25
		} else if !errors.Is(spendErr, protocol.ErrBudgetExceeded) && !errors.Is(spendErr, protocol.ErrAlreadyContributed) {
			t.Fatalf("spend: %v", spendErr)
		}
		l.Close()
		l, err = OpenLedger(path, 10, nil)
		if err != nil {
			t.Fatalf("reopen after a repair and a spend: %v", err)
		}
		defer l.Close()
		if got := l.Spent(); got != spent && !(math.IsInf(got, 1) && math.IsInf(spent, 1)) {
			t.Fatalf("reopened spent %v, want %v", got, spent)
		}
	})
}
