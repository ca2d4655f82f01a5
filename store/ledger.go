package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/protocol"
)

// FileLedger is an owner's durable privacy-budget ledger (protocol.Ledger):
// an append-only file of JSON lines, spends and binds,
//
//	{"session":"s1","round":3,"attempt":0,"eps":0.5,"time":"2026-01-02T15:04:05Z","prev":"0000...0000"}
//	{"bind":"s1/x","digest":"9f2c...","round":0,"attempt":0,"time":"2026-01-02T15:04:05Z","prev":"5be1..."}
//
// chained by "prev": the hex SHA-256 of the previous record's line (its
// bytes without the newline), 64 zeros for the first record. A record
// removed, inserted, reordered or changed anywhere but at the end breaks the
// chain and is refused at open (ErrLedgerCorrupt naming the line). Records
// written before the chain existed have no "prev"; they are accepted before
// the first chained record (the first chained record covers the last of
// them), never after it. (An older ppboost refuses a chained ledger: it
// does not know the field.)
//
// Spend (and a first Bind) appends one line and fsyncs the file before it
// returns, so a share released after Spend returned is on disk even if the
// process dies next. Then it records the ledger's high-water mark (records,
// bytes, hash of the last record) in a file beside it, <path>.hwm, written
// in place and fsynced (mark.go): a release costs two fsyncs, the ledger's
// and the mark's, of which only the first must precede the share. OpenLedger
// refuses a ledger behind its mark: fewer records than the mark counts, or
// another record at the mark's position (ErrLedgerRolledBack: truncated,
// emptied, an older copy restored), or no ledger file where the mark says
// it held records (ErrLedgerMissing), so that a restore, rollback or
// mistake does not give back budget already spent. No crash does that: a
// crash between the ledger's fsync and the mark's leaves the ledger ahead
// of its mark, which is accepted and caught up. The deliberate way past a
// loss is LedgerOptions.ResetMark. A ledger without a mark (written by an
// older ppboost) is accepted and gets one. Deleting the ledger together
// with its mark (a whole state directory, say) cannot be told from a new
// owner's first start and is not detected; deleting the ledger alone is.
//
// OpenLedger replays the file; the budget is given at open, not stored.
// The file is locked (flock) while open: two processes sharing a ledger
// could otherwise both spend the same session. The lock covers the mark.
type FileLedger struct {
	mu       sync.Mutex
	f        *os.File
	markFile *os.File // the high-water mark (mark.go), rewritten in place
	path     string
	size     int64    // bytes of complete lines; a failed append is truncated back to it
	records  int      // lines that hold a record
	last     [32]byte // SHA-256 of the last record's line (without its newline)
	budget   float64
	spent    float64
	sessions map[string]bool
	keys     map[string]float64 // eps per key (SpentIn)
	binds    map[string]string  // release name -> value digest (Bind)
	failed   bool
	closed   bool
}

type ledgerEntry struct {
	Session string `json:"session,omitempty"`
	// Bind and Digest make a bind record (no epsilon): release Bind
	// carries the value whose SHA-256 digest is Digest (hex).
	Bind    string    `json:"bind,omitempty"`
	Digest  string    `json:"digest,omitempty"`
	Round   uint32    `json:"round"`
	Attempt uint32    `json:"attempt"`
	Eps     float64   `json:"eps,omitempty"`
	Time    time.Time `json:"time"`
	// Prev chains the records: the hex SHA-256 of the previous record's
	// line (its bytes without the newline), ledgerGenesis for the first.
	// Empty only in records written before the chain existed.
	Prev string `json:"prev,omitempty"`
}

// ledgerGenesis is the Prev of a ledger's first record.
const ledgerGenesis = "0000000000000000000000000000000000000000000000000000000000000000"

// ledgerRecord is a parsed line: its entry, the hash the next record's Prev
// names, and where it ends in the file.
type ledgerRecord struct {
	ledgerEntry
	hash [32]byte
	end  int // offset after its newline (after its last byte if unterminated)
}

var _ protocol.Ledger = (*FileLedger)(nil)

// OpenLedger opens (or creates, mode 0600) the ledger at path with a
// lifetime budget. An unterminated final line that does not parse, left by
// a crash in the middle of an append (Spend writes the line and its newline
// at once, so a partial append lacks the newline), is ignored with a warning
// and truncated away (its Spend never returned, so no share depended on
// it). A newline-terminated line that does not parse, the last one too, is
// an error (ErrLedgerCorrupt) naming the file and line: no crash leaves one,
// and dropping it would let its key be spent again. An unterminated final
// line that parses counts as spent and gets its newline. A record whose
// "prev" is not the hash of the record before it is ErrLedgerCorrupt. A
// ledger behind its high-water mark is refused (ErrLedgerRolledBack,
// ErrLedgerMissing; ErrLedgerMarkCorrupt for an unreadable mark), left as
// found, with what was found and what the mark says: see FileLedger and
// OpenLedgerWith. Records over the budget (a smaller budget than before)
// are kept and leave no room for further spends.
func OpenLedger(path string, budget float64, log hclog.Logger) (*FileLedger, error) {
	return OpenLedgerWith(path, budget, log, LedgerOptions{})
}

// LedgerOptions are OpenLedgerWith's choices; the zero value is
// OpenLedger's.
type LedgerOptions struct {
	// ResetMark accepts, knowingly, a ledger that lost records: one behind
	// its high-water mark, a missing one, or one whose mark is unreadable.
	// The loss is logged at warn level with what was found, the mark is
	// rewritten to the ledger as it is, and the budget of the lost records
	// can be spent again. With nothing lost it changes nothing.
	ResetMark bool
}

// OpenLedgerWith is OpenLedger with options.
func OpenLedgerWith(path string, budget float64, log hclog.Logger, opt LedgerOptions) (*FileLedger, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if !(budget > 0) || math.IsInf(budget, 0) {
		return nil, fmt.Errorf("ledger %s: budget must be positive and finite, got %v", path, budget)
	}
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, os.ErrNotExist)
	if created && !opt.ResetMark {
		// Refuse before creating it: a deleted ledger stays missing.
		m, exists, merr := readMark(markPath(path))
		if err := markProblem(path, nil, true, m, exists, merr); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	l := &FileLedger{f: f, path: path, budget: budget, sessions: map[string]bool{}, keys: map[string]float64{}, binds: map[string]string{}}
	if err := l.open(created, opt, log); err != nil {
		f.Close()
		if l.markFile != nil {
			l.markFile.Close()
		}
		return nil, err
	}
	if l.spent > budget {
		log.Warn("ledger records more than the budget; no further spends", "file", path, "spent", l.spent, "budget", budget)
	}
	return l, nil
}

func (l *FileLedger) open(created bool, opt LedgerOptions, log hclog.Logger) error {
	if err := lockFile(l.f); err != nil {
		return fmt.Errorf("ledger %s: %w", l.path, err)
	}
	if created {
		if err := SyncDir(filepath.Dir(l.path)); err != nil {
			return fmt.Errorf("ledger %s: %w", l.path, err)
		}
	}
	data, err := io.ReadAll(io.NewSectionReader(l.f, 0, math.MaxInt64))
	if err != nil {
		return fmt.Errorf("ledger %s: read: %w", l.path, err)
	}
	recs, keep, err := parseLedger(data)
	var torn *tornTail
	switch {
	case errors.As(err, &torn):
		log.Warn("ignoring a torn final ledger line (a crash during an append)", "file", l.path, "line", torn.line, "err", torn.err)
	case err != nil:
		return fmt.Errorf("%s:%w", l.path, err)
	}
	// Check the mark before repairing anything: a refused ledger is left
	// as it was found.
	m, markExists, merr := readMark(markPath(l.path))
	lost := markProblem(l.path, recs, created, m, markExists, merr)
	if lost != nil && !opt.ResetMark {
		return lost
	}
	for _, e := range recs {
		if e.Bind != "" {
			d, _ := hex.DecodeString(e.Digest) // checked by parseEntry
			if err := protocol.CheckBind(l.binds, e.Bind, d); err != nil {
				return fmt.Errorf("%s: %w: %v", l.path, ErrLedgerCorrupt, err)
			}
			continue
		}
		l.spent += e.Eps
		l.sessions[e.Session] = true
		l.keys[e.Session] += e.Eps
	}
	repaired := false
	if keep < len(data) {
		if err := l.f.Truncate(int64(keep)); err != nil {
			return fmt.Errorf("ledger %s: truncate torn tail: %w", l.path, err)
		}
		repaired = true
	}
	if keep > 0 && data[keep-1] != '\n' {
		if _, err := l.f.Write([]byte{'\n'}); err != nil {
			return fmt.Errorf("ledger %s: terminate last line: %w", l.path, err)
		}
		keep++
		repaired = true
	}
	if repaired {
		if err := l.f.Sync(); err != nil {
			return fmt.Errorf("ledger %s: fsync: %w", l.path, err)
		}
	}
	l.size = int64(keep)
	if l.records = len(recs); l.records > 0 {
		l.last = recs[l.records-1].hash
	}
	switch {
	case lost != nil:
		log.Warn("accepting a ledger that lost records, as asked (reset of its high-water mark): the budget of the lost records can be spent again",
			"file", l.path, "records", l.records, "found", lost.Error())
		return l.resetMark()
	case !markExists:
		if created {
			log.Debug("new ledger: creating its high-water mark", "file", l.path, "mark", markPath(l.path))
		} else {
			log.Info("ledger without a high-water mark (written by an older ppboost): creating one", "file", l.path, "mark", markPath(l.path), "records", l.records)
		}
		return l.resetMark()
	}
	if opt.ResetMark {
		log.Info("the ledger holds every record its high-water mark counts: nothing to reset", "file", l.path, "records", l.records)
	}
	if err := l.openMark(); err != nil {
		return err
	}
	if l.records > m.Records {
		// A crash after an append's fsync, before its mark's.
		log.Warn("ledger is ahead of its high-water mark (a crash after an append): the mark catches up", "file", l.path, "records", l.records, "mark", m.Records)
		if err := l.writeMark(); err != nil {
			return err
		}
	}
	return nil
}

// tornTail reports an unterminated final line that does not parse.
type tornTail struct {
	line int
	err  error
}

func (t *tornTail) Error() string { return fmt.Sprintf("%d: torn final line: %v", t.line, t.err) }

// parseLedger decodes the ledger's lines and checks their chain. keep is
// the length of the valid prefix (everything when there is no torn tail).
// An unterminated final line that does not parse is a torn append: it
// yields the records before it, their length, and a *tornTail. Any
// newline-terminated line that does not parse (the last one too: a crash
// leaves no newline after a partial append), and any record whose Prev is
// not the hash of the record before it, yields an error "LINE:
// ErrLedgerCorrupt: why".
//
// Records without Prev (written before the chain existed) are accepted
// before the first chained record, never after it.
func parseLedger(data []byte) (recs []ledgerRecord, keep int, err error) {
	lines := bytes.Split(data, []byte("\n"))
	off := 0
	prev, prevLine, chained := ledgerGenesis, 0, false
	for i, line := range lines {
		end := off + len(line)
		terminated := i < len(lines)-1
		if terminated {
			end++ // the newline
		}
		if len(bytes.TrimSpace(line)) == 0 {
			off = end
			continue
		}
		e, perr := parseEntry(line)
		if perr != nil {
			if !terminated {
				return recs, off, &tornTail{line: i + 1, err: perr}
			}
			return nil, 0, fmt.Errorf("%d: %w: %v", i+1, ErrLedgerCorrupt, perr)
		}
		switch {
		case e.Prev == "" && chained:
			return nil, 0, fmt.Errorf("%d: %w: a record without \"prev\" after chained records", i+1, ErrLedgerCorrupt)
		case e.Prev != "" && e.Prev != prev:
			before := "the genesis value, as for a first record"
			if prevLine > 0 {
				before = fmt.Sprintf("the hash of line %d", prevLine)
			}
			return nil, 0, fmt.Errorf("%d: %w: prev %.16s... is not %s (%.16s...): a record was removed, inserted or changed", i+1, ErrLedgerCorrupt, e.Prev, before, prev)
		case e.Prev != "":
			chained = true
		}
		h := sha256.Sum256(line)
		recs = append(recs, ledgerRecord{ledgerEntry: e, hash: h, end: end})
		prev, prevLine = hex.EncodeToString(h[:]), i+1
		off = end
	}
	return recs, len(data), nil
}

func parseEntry(line []byte) (ledgerEntry, error) {
	var e ledgerEntry
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return e, err
	}
	if dec.More() {
		return e, errors.New("trailing data after the record")
	}
	if d, err := hex.DecodeString(e.Prev); e.Prev != "" && (err != nil || len(d) != sha256.Size) {
		return e, fmt.Errorf("prev %q is not a hex SHA-256", e.Prev)
	}
	if e.Bind != "" {
		if e.Session != "" || e.Eps != 0 {
			return e, errors.New("a bind record with a session or an epsilon")
		}
		if d, err := hex.DecodeString(e.Digest); err != nil || len(d) == 0 {
			return e, fmt.Errorf("bind %q: digest %q is not hex", e.Bind, e.Digest)
		}
		return e, nil
	}
	if e.Session == "" {
		return e, errors.New("empty session")
	}
	if !(e.Eps > 0) || math.IsInf(e.Eps, 0) {
		return e, fmt.Errorf("epsilon %v is not positive and finite", e.Eps)
	}
	return e, nil
}

// Spend checks the rules (protocol.CheckSpend), appends the record and
// fsyncs it before returning nil. If the write fails the file is truncated
// back; if that or the fsync fails, the ledger counts the spend (it may be
// on disk) and refuses every later one with ErrLedgerFailed.
func (l *FileLedger) Spend(session string, round, attempt uint32, eps float64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if err := protocol.CheckSpend(l.budget, l.spent, l.sessions[session], session, eps); err != nil {
		return err
	}
	if err := l.append(ledgerEntry{Session: session, Round: round, Attempt: attempt, Eps: eps, Time: time.Now().UTC()}, func() { l.fail(session, eps) }); err != nil {
		return err
	}
	l.spent += eps
	l.sessions[session] = true
	l.keys[session] += eps
	return nil
}

// append writes e as one line and fsyncs it; onUnknown runs when the
// record may or may not be on disk (the ledger then refuses every later
// write with ErrLedgerFailed).
func (l *FileLedger) append(e ledgerEntry, onUnknown func()) error {
	e.Prev = ledgerGenesis
	if l.records > 0 {
		e.Prev = hex.EncodeToString(l.last[:])
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("ledger %s: encode: %w", l.path, err)
	}
	h := sha256.Sum256(b)
	b = append(b, '\n')
	if _, err := l.f.Write(b); err != nil {
		if terr := l.f.Truncate(l.size); terr != nil {
			l.failed = true
			onUnknown()
			return fmt.Errorf("ledger %s: append: %w; truncate back: %v: %w", l.path, err, terr, ErrLedgerFailed)
		}
		return fmt.Errorf("ledger %s: append: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		l.failed = true
		onUnknown()
		return fmt.Errorf("ledger %s: fsync: %w: %w", l.path, err, ErrLedgerFailed)
	}
	l.size += int64(len(b))
	l.records++
	l.last = h
	if err := l.writeMark(); err != nil {
		// The record is durable; without its mark a later rollback to
		// before it would go unnoticed, so stop (the next open catches up).
		l.failed = true
		onUnknown()
		return fmt.Errorf("%w: %w", err, ErrLedgerFailed)
	}
	return nil
}

// usable refuses a write to a closed or failed ledger (l.mu held).
func (l *FileLedger) usable() error {
	switch {
	case l.closed:
		return fmt.Errorf("ledger %s: %w", l.path, ErrLedgerClosed)
	case l.failed:
		return fmt.Errorf("ledger %s: %w", l.path, ErrLedgerFailed)
	}
	return nil
}

// Bind records that release name carries the value with digest (a line
// {"bind":name,"digest":hex}, fsynced): see protocol.Ledger.
func (l *FileLedger) Bind(name string, digest []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if old, ok := l.binds[name]; ok {
		if old != string(digest) {
			return fmt.Errorf("%s: %w", name, protocol.ErrRebound)
		}
		return nil
	}
	if name == "" || len(digest) == 0 {
		return fmt.Errorf("ledger %s: bind needs a name and a digest", l.path)
	}
	if err := l.append(ledgerEntry{Bind: name, Digest: hex.EncodeToString(digest), Time: time.Now().UTC()}, func() { l.binds[name] = string(digest) }); err != nil {
		return err
	}
	l.binds[name] = string(digest)
	return nil
}

// SpentIn is the epsilon recorded under session (protocol.Ledger).
func (l *FileLedger) SpentIn(session string) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return protocol.SumInSession(l.keys, session)
}

// fail records a spend whose durability is unknown and stops the ledger.
func (l *FileLedger) fail(session string, eps float64) {
	l.failed = true
	l.spent += eps
	l.sessions[session] = true
	l.keys[session] += eps
}

// Spent is the epsilon recorded so far.
func (l *FileLedger) Spent() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.spent
}

// Budget is the lifetime budget given at open.
func (l *FileLedger) Budget() float64 { return l.budget }

// Contributed reports whether session has a record.
func (l *FileLedger) Contributed(session string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sessions[session]
}

// Path is the ledger file.
func (l *FileLedger) Path() string { return l.path }

// Close releases the file and its lock. Idempotent.
func (l *FileLedger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	merr := l.markFile.Close()
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("ledger %s: close: %w", l.path, err)
	}
	if merr != nil {
		return fmt.Errorf("ledger %s: close high-water mark: %w", l.path, merr)
	}
	return nil
}

// WriteFileAtomic replaces path with data: it writes a temporary file in the
// same directory (mode 0600), fsyncs it, renames it over path and fsyncs the
// directory, so a reader (or a restart after a crash) sees the old content
// or the new, never a mix.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	name := tmp.Name()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// SyncDir fsyncs a directory so that a file created or renamed in it
// survives a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
