package node

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/protocol"
)

// FileLedger is the owner's durable privacy-budget ledger: an append-only
// file of JSON lines, fsynced before Spend returns, replayed at open.
type FileLedger struct {
	mu       sync.Mutex
	f        *os.File
	path     string
	budget   float64
	spent    float64
	sessions map[string]bool
}

type ledgerEntry struct {
	Session string    `json:"session"`
	Round   uint32    `json:"round"`
	Attempt uint32    `json:"attempt"`
	Eps     float64   `json:"eps"`
	Time    time.Time `json:"time"`
}

var _ protocol.Ledger = (*FileLedger)(nil)

// OpenLedger opens (or creates) the ledger at path with a lifetime budget.
// A torn final line (a crash mid-append) is ignored with a warning; a
// corrupt earlier line is an error naming the file and line.
func OpenLedger(path string, budget float64, log hclog.Logger) (*FileLedger, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if !(budget > 0) {
		return nil, fmt.Errorf("ledger %s: budget must be positive, got %v", path, budget)
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if os.IsNotExist(statErr) {
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, err
		}
	}
	l := &FileLedger{f: f, path: path, budget: budget, sessions: map[string]bool{}}
	data, err := os.ReadFile(path)
	if err != nil {
		f.Close()
		return nil, err
	}
	lines := bytes.Split(data, []byte("\n"))
	valid := 0
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			if i < len(lines)-1 {
				valid += len(line) + 1
			}
			continue
		}
		var e ledgerEntry
		if err := json.Unmarshal(line, &e); err != nil || e.Session == "" || !(e.Eps > 0) {
			if i == len(lines)-1 {
				log.Warn("ignoring a torn final ledger line (crash during append)", "file", path, "line", i+1)
				break
			}
			f.Close()
			return nil, fmt.Errorf("%s:%d: corrupt ledger entry", path, i+1)
		}
		l.spent += e.Eps
		l.sessions[e.Session] = true
		valid += len(line) + 1
	}
	// Drop a torn tail so the next append starts on a clean line.
	if valid < len(data) {
		if err := f.Truncate(int64(valid)); err != nil {
			f.Close()
			return nil, err
		}
	}
	if _, err := f.Seek(0, 2); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// Spend appends and fsyncs the record before returning.
func (l *FileLedger) Spend(session string, round, attempt uint32, eps float64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := protocol.CheckSpend(l.budget, l.spent, l.sessions[session], session, eps); err != nil {
		return err
	}
	b, err := json.Marshal(ledgerEntry{Session: session, Round: round, Attempt: attempt, Eps: eps, Time: time.Now().UTC()})
	if err != nil {
		return err
	}
	w := bufio.NewWriter(l.f)
	w.Write(b)
	w.WriteByte('\n')
	if err := w.Flush(); err != nil {
		return fmt.Errorf("ledger %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("ledger %s: fsync: %w", l.path, err)
	}
	l.spent += eps
	l.sessions[session] = true
	return nil
}

func (l *FileLedger) Spent() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.spent
}

func (l *FileLedger) Budget() float64 { return l.budget }

func (l *FileLedger) Contributed(session string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sessions[session]
}

// Close closes the file.
func (l *FileLedger) Close() error { return l.f.Close() }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// WriteFileAtomic writes data to path through a temporary file, fsync and
// rename, then fsyncs the directory: readers see the old or the new file.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}
