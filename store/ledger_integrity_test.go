package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	// The last legacy line is covered by the first chained record.
	writeLines(t, path, append(append([]string{}, lines[:3]...), lines[4]))
	os.Remove(markPath(path))
	if _, err := OpenLedger(path, 10, nil); !errors.Is(err, ErrLedgerCorrupt) || !strings.Contains(err.Error(), path+":4:") {
		t.Fatalf("last legacy line removed: %v", err)
	}
}
