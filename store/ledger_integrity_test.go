package store

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/protocol"
)

// spendN opens a ledger at path (budget 10), spends 0.5 under sessions
// s<from>..s<to> and closes it.
func spendN(t testing.TB, path string, from, to int) {
	t.Helper()
	l := openLedger(t, path, 10)
	for i := from; i <= to; i++ {
		if err := l.Spend(fmt.Sprintf("s%d", i), 1, 0, 0.5); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// ledgerLines is the ledger's lines without their newlines.
func ledgerLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func writeLines(t testing.TB, path string, lines []string) {
	t.Helper()
	s := strings.Join(lines, "\n")
	if len(lines) > 0 {
		s += "\n"
	}
	mustWrite(t, path, s, 0o600)
}

// TestLedgerChain: every record names the hash of the one before it, so a
// record removed, inserted, reordered or edited before the last is refused
// at open with the line where the chain breaks.
func TestLedgerChain(t *testing.T) {
	legacy := `{"session":"old","round":1,"attempt":0,"eps":0.5,"time":"2026-01-01T00:00:00Z"}`
	for _, c := range []struct {
		name string
		edit func([]string) []string
		line int // where the chain breaks
	}{
		{"middle line edited", func(l []string) []string { l[2] = strings.Replace(l[2], `"eps":0.5`, `"eps":0.25`, 1); return l }, 4},
		{"middle line removed", func(l []string) []string { return append(l[:2], l[3:]...) }, 3},
		{"first line removed", func(l []string) []string { return l[1:] }, 1},
		{"two lines swapped", func(l []string) []string { l[3], l[4] = l[4], l[3]; return l }, 4},
		{"line duplicated", func(l []string) []string { return append(l[:4], l[3:]...) }, 5},
		{"unchained line inserted", func(l []string) []string { return append(l[:4], append([]string{legacy}, l[4:]...)...) }, 5},
		{"prev rewritten", func(l []string) []string {
			l[5] = l[5][:strings.Index(l[5], `"prev":"`)+8] + strings.Repeat("ab", 32) + `"}`
			return l
		}, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.jsonl")
			spendN(t, path, 1, 8)
			writeLines(t, path, c.edit(ledgerLines(t, path)))
			os.Remove(markPath(path)) // the chain alone must catch it
			_, err := OpenLedger(path, 10, nil)
			want := fmt.Sprintf("%s:%d:", path, c.line)
			if !errors.Is(err, ErrLedgerCorrupt) || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v, want ErrLedgerCorrupt naming %s", err, want)
			}
		})
	}
}

// TestLedgerLegacyLines: a ledger written before the chain (no "prev") and
// without a high-water mark opens with its spends; the next record chains
// to its last line, and from then on the chain holds.
func TestLedgerLegacyLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	var old []string
	for i := 1; i <= 3; i++ {
		old = append(old, fmt.Sprintf(`{"session":"old%d","round":1,"attempt":0,"eps":0.5,"time":"2026-01-01T00:00:00Z"}`, i))
	}
	old = append(old, `{"bind":"old1/x","digest":"abcd","round":0,"attempt":0,"time":"2026-01-01T00:00:00Z"}`)
	writeLines(t, path, old)
	l := openLedger(t, path, 10)
	if l.Spent() != 1.5 || !l.Contributed("old3") {
		t.Fatalf("legacy ledger: spent %v", l.Spent())
	}
	if err := l.Spend("new", 1, 0, 1); err != nil {
		t.Fatal(err)
	}
	l.Close()
	lines := ledgerLines(t, path)
	if len(lines) != 5 || !strings.Contains(lines[4], `"prev":"`) || strings.Contains(lines[4], ledgerGenesis) {
		t.Fatalf("the first new record does not chain to the legacy lines:\n%s", strings.Join(lines, "\n"))
	}
	l = openLedger(t, path, 10)
	if l.Spent() != 2.5 {
		t.Fatalf("after reopen: spent %v", l.Spent())
	}
	l.Close()
	// The chain does not cover the legacy lines before the last; the
	// mark's byte size notices an edit that changes a line's length.
	edited := append([]string{strings.Replace(lines[0], `"eps":0.5`, `"eps":0.05`, 1)}, lines[1:]...)
	writeLines(t, path, edited)
	if _, err := OpenLedger(path, 10, nil); !errors.Is(err, ErrLedgerRolledBack) || !strings.Contains(err.Error(), "ends at byte") {
		t.Fatalf("legacy line edited: %v", err)
	}
	// The last legacy line is covered by the first chained record.
	writeLines(t, path, append(append([]string{}, lines[:3]...), lines[4]))
	os.Remove(markPath(path))
	if _, err := OpenLedger(path, 10, nil); !errors.Is(err, ErrLedgerCorrupt) || !strings.Contains(err.Error(), path+":4:") {
		t.Fatalf("last legacy line removed: %v", err)
	}
}

// TestLedgerHighWaterMark: a ledger that holds fewer records than its mark
// says, or another record at the mark's position, or none at all, is
// refused (and left as found) until the owner accepts the loss with
// ResetMark, which is logged and then opens the ledger as it is.
func TestLedgerHighWaterMark(t *testing.T) {
	for _, c := range []struct {
		name string
		// lose changes the ledger at path, which has 8 spends of 0.5 and
		// the copy after the first 4 at old.
		lose  func(t *testing.T, path, old string)
		want  error
		msg   string  // in the error
		spent float64 // after the reset
	}{
		{"truncated to 4 of 8", func(t *testing.T, path, _ string) { writeLines(t, path, ledgerLines(t, path)[:4]) },
			ErrLedgerRolledBack, "has 4 records, its high-water mark", 2},
		{"emptied", func(t *testing.T, path, _ string) { writeLines(t, path, nil) },
			ErrLedgerRolledBack, "has 0 records", 0},
		{"deleted", func(t *testing.T, path, _ string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, ErrLedgerMissing, "does not exist", 0},
		{"rolled back to an older copy", func(t *testing.T, path, old string) { copyFile(t, old, path) },
			ErrLedgerRolledBack, "has 4 records", 2},
		{"last record edited", func(t *testing.T, path, _ string) {
			l := ledgerLines(t, path)
			l[7] = strings.Replace(l[7], `"eps":0.5`, `"eps":0.1`, 1)
			writeLines(t, path, l)
		}, ErrLedgerRolledBack, "record 8 hashes to", 3.6},
		{"replaced by another ledger of 8 records", func(t *testing.T, path, _ string) {
			other := filepath.Join(t.TempDir(), "other.jsonl")
			spendN(t, other, 11, 18)
			copyFile(t, other, path)
		}, ErrLedgerRolledBack, "record 8 hashes to", 4},
		{"mark unreadable", func(t *testing.T, path, _ string) { mustWrite(t, markPath(path), "{}\n", 0o600) },
			ErrLedgerMarkCorrupt, "no readable slot", 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path, old := filepath.Join(dir, "ledger.jsonl"), filepath.Join(dir, "old.jsonl")
			spendN(t, path, 1, 4)
			copyFile(t, path, old)
			spendN(t, path, 5, 8)
			c.lose(t, path, old)
			before, _ := os.ReadFile(path)
			for range 2 { // refused again: the first refusal repaired nothing
				_, err := OpenLedger(path, 10, nil)
				if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), path) {
					t.Fatalf("got %v, want %v saying %q", err, c.want, c.msg)
				}
			}
			if after, err := os.ReadFile(path); string(after) != string(before) || (c.want == ErrLedgerMissing) != os.IsNotExist(err) {
				t.Fatalf("a refused ledger was changed (or created): %q, %v", after, err)
			}
			// The deliberate recovery: logged, then the ledger as it is.
			var logs strings.Builder
			l, err := OpenLedgerWith(path, 10, bufLogger(&logs), LedgerOptions{ResetMark: true})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(logs.String(), "[WARN]") || !strings.Contains(logs.String(), "accepting a ledger that lost records") || !strings.Contains(logs.String(), c.msg) {
				t.Fatalf("the reset was not logged with what was found:\n%s", logs.String())
			}
			if got := l.Spent(); math.Abs(got-c.spent) > 1e-9 {
				t.Fatalf("after the reset: spent %v, want %v", got, c.spent)
			}
			if err := l.Spend("after", 1, 0, 0.5); err != nil {
				t.Fatal(err)
			}
			l.Close()
			l = openLedger(t, path, 10) // the mark now follows the ledger
			if got := l.Spent(); math.Abs(got-c.spent-0.5) > 1e-9 {
				t.Fatalf("reopened after the reset: spent %v, want %v", got, c.spent+0.5)
			}
		})
	}
}

// TestLedgerResetMarkWithNothingLost: ResetMark on a ledger that lost
// nothing changes nothing and says so.
func TestLedgerResetMarkWithNothingLost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	spendN(t, path, 1, 3)
	before, _ := os.ReadFile(markPath(path))
	var logs strings.Builder
	l, err := OpenLedgerWith(path, 10, bufLogger(&logs), LedgerOptions{ResetMark: true})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if after, _ := os.ReadFile(markPath(path)); string(after) != string(before) || strings.Contains(logs.String(), "[WARN]") || !strings.Contains(logs.String(), "nothing to reset") {
		t.Fatalf("mark changed %v, logs:\n%s", string(after) != string(before), logs.String())
	}
}

// TestLedgerAheadOfMark: a crash after an append's fsync and before its
// mark's leaves the ledger ahead of the mark; that is no loss, the ledger
// opens and the mark catches up (a later truncation is then noticed).
func TestLedgerAheadOfMark(t *testing.T) {
	for _, c := range []struct {
		name  string
		crash func(t *testing.T, mark string, old []byte)
	}{
		// The mark write never happened.
		{"mark not written", func(t *testing.T, mark string, old []byte) { mustWrite(t, mark, string(old), 0o600) }},
		// The mark write was torn: the slot it wrote (5%2 = 1) is garbage,
		// the other still holds the mark of 4.
		{"mark write torn", func(t *testing.T, mark string, _ []byte) {
			b, _ := os.ReadFile(mark)
			copy(b[markSlot+10:], "\x00garbage\x00")
			mustWrite(t, mark, string(b), 0o600)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.jsonl")
			spendN(t, path, 1, 4)
			old, _ := os.ReadFile(markPath(path))
			spendN(t, path, 5, 5)
			c.crash(t, markPath(path), old)
			if m, _, err := readMark(markPath(path)); err != nil || m.Records != 4 {
				t.Fatalf("the simulated crash left a mark of %d records (%v), want 4", m.Records, err)
			}
			l := openLedger(t, path, 10)
			if l.Spent() != 2.5 || !l.Contributed("s5") {
				t.Fatalf("spent %v", l.Spent())
			}
			l.Close()
			if m, _, err := readMark(markPath(path)); err != nil || m.Records != 5 {
				t.Fatalf("the mark did not catch up: %d records, %v", m.Records, err)
			}
			writeLines(t, path, ledgerLines(t, path)[:4])
			if _, err := OpenLedger(path, 10, nil); !errors.Is(err, ErrLedgerRolledBack) {
				t.Fatalf("truncated after the catch-up: %v", err)
			}
		})
	}
}

// TestLedgerTornTailWithMark: an append torn by a crash (an unterminated
// line, never counted by the mark) is repaired as before the mark existed.
func TestLedgerTornTailWithMark(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	spendN(t, path, 1, 8)
	appendTo(t, path, `{"session":"s9","round":1,"att`)
	l := openLedger(t, path, 10)
	if l.Spent() != 4 || l.Contributed("s9") {
		t.Fatalf("spent %v", l.Spent())
	}
	if err := l.Spend("s9", 1, 0, 0.5); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if l = openLedger(t, path, 10); l.Spent() != 4.5 {
		t.Fatalf("reopened: spent %v", l.Spent())
	}
}

// TestLedgerUpgradeCreatesMark: a ledger from before the mark opens, gets
// a mark, and a truncation after that is noticed.
func TestLedgerUpgradeCreatesMark(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	spendN(t, path, 1, 8)
	if err := os.Remove(markPath(path)); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	l, err := OpenLedgerWith(path, 10, bufLogger(&logs), LedgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if m, _, err := readMark(markPath(path)); err != nil || m.Records != 8 || !strings.Contains(logs.String(), "without a high-water mark") {
		t.Fatalf("mark %+v, %v; logs:\n%s", m, err, logs.String())
	}
	if st, _ := os.Stat(markPath(path)); st.Mode().Perm() != 0o600 {
		t.Fatalf("mark mode %#o, want 0600", st.Mode().Perm())
	}
	writeLines(t, path, ledgerLines(t, path)[:4])
	if _, err := OpenLedger(path, 10, nil); !errors.Is(err, ErrLedgerRolledBack) {
		t.Fatalf("truncated after the upgrade: %v", err)
	}
}

// TestLedgerBind: bind records are durable, chained and counted in the
// mark like spends; a rebind with another digest after a reopen is
// refused.
func TestLedgerBind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l := openLedger(t, path, 10)
	if err := l.Spend("s1", 1, 0, 0.5); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"s1/a", "s1/b"} {
		if err := l.Bind(name, []byte(name+"-digest")); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Bind("s1/a", []byte("s1/a-digest")); err != nil {
		t.Fatalf("same digest again: %v", err)
	}
	if err := l.Bind("s1/a", []byte("other")); !errors.Is(err, protocol.ErrRebound) {
		t.Fatalf("another digest: %v", err)
	}
	l.Close()
	if n := len(ledgerLines(t, path)); n != 3 {
		t.Fatalf("%d lines, want a spend and two binds", n)
	}
	l = openLedger(t, path, 10)
	if err := l.Bind("s1/a", []byte("other")); !errors.Is(err, protocol.ErrRebound) {
		t.Fatalf("another digest after reopen: %v", err)
	}
	if err := l.Bind("s1/b", []byte("s1/b-digest")); err != nil {
		t.Fatalf("same digest after reopen: %v", err)
	}
	l.Close()
	lines := ledgerLines(t, path)
	if m, _, err := readMark(markPath(path)); err != nil || m.Records != 3 || len(lines) != 3 {
		t.Fatalf("mark %+v (%v), %d lines: want 3 records", m, err, len(lines))
	}
	// The last bind lost (its name could be bound to another value).
	writeLines(t, path, lines[:2])
	if _, err := OpenLedger(path, 10, nil); !errors.Is(err, ErrLedgerRolledBack) {
		t.Fatalf("bind record truncated away: %v", err)
	}
	// A bind line edited in the middle breaks the chain.
	writeLines(t, path, []string{lines[0], strings.Replace(lines[1], `"digest":"`, `"digest":"00`, 1), lines[2]})
	if _, err := OpenLedger(path, 10, nil); !errors.Is(err, ErrLedgerCorrupt) || !strings.Contains(err.Error(), path+":3:") {
		t.Fatalf("bind record edited: %v", err)
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, to, string(b), 0o600)
}

func bufLogger(w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "ledger", Output: w, Level: hclog.Debug})
}
