package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/store"
)

// TestOwnerLedgerResetMark: `ppboost owner` refuses a state directory
// whose ledger lost records (here: truncated to 4 of its 8 spends), saying
// what it found and naming --ledger-reset-mark; with the flag it logs the
// loss at warn level and runs.
func TestOwnerLedgerResetMark(t *testing.T) {
	dir := t.TempDir()
	shards, key, state := filepath.Join(dir, "shards"), filepath.Join(dir, "owner.key"), filepath.Join(dir, "state")
	if code, _, errOut := run("partition", "--owners", "1", "--samples-per-owner", "30", "--user-samples", "100",
		"--holdout", "100", "--out", shards); code != 0 {
		t.Fatalf("partition: %s", errOut)
	}
	if code, _, errOut := run("keygen", "--out", key); code != 0 {
		t.Fatalf("keygen: %s", errOut)
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(state, "ledger.jsonl")
	l, err := store.OpenLedger(path, 10, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if err := l.Spend(fmt.Sprintf("s%d", i), 1, 0, 0.5); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	b, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.WriteFile(path, []byte(strings.Join(lines[:4], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	owner := []string{"owner", "--data", filepath.Join(shards, "owner-000.csv"), "--key", key, "--state", state,
		"--user", testUserID, "--listen", "/ip4/127.0.0.1/tcp/0", "--budget", "10", "--wait", "100ms", "--status", ""}
	code, _, errOut := run(owner...)
	if code != exitError || !strings.Contains(errOut, "has 4 records, its high-water mark") || !strings.Contains(errOut, "run once with --ledger-reset-mark") {
		t.Fatalf("owner on a truncated ledger: exit %d:\n%s", code, errOut)
	}
	code, _, errOut = run(append(owner, "--ledger-reset-mark")...)
	if code != exitRefused || !strings.Contains(errOut, "accepting a ledger that lost records") || !strings.Contains(errOut, "no announcement") {
		t.Fatalf("owner --ledger-reset-mark: exit %d:\n%s", code, errOut)
	}
	// The mark now follows the ledger: the flag is not needed again.
	l, err = store.OpenLedger(path, 10, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Spent() != 2 {
		t.Fatalf("spent %v after the reset, want 2", l.Spent())
	}
}

// TestOpenLedgerHint: every loss the mark notices names the flag; other
// errors do not.
func TestOpenLedgerHint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, err := openLedger(path, 3, false, "-", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Spend("s", 1, 0, 1); err != nil {
		t.Fatal(err)
	}
	l.Close()
	os.Remove(path)
	if _, err := openLedger(path, 3, false, "-", nil); !errors.Is(err, store.ErrLedgerMissing) || !strings.Contains(err.Error(), "run once with -ledger-reset-mark") {
		t.Fatalf("deleted ledger: %v", err)
	}
	if _, err := openLedger(path, 0, false, "-", nil); err == nil || strings.Contains(err.Error(), resetMarkFlag) {
		t.Fatalf("bad budget: %v", err)
	}
}
