package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// The high-water mark: what a ledger held after its last acknowledged
// append, kept in a file of its own (<ledger>.hwm) so that a ledger that
// lost records (truncated, emptied, deleted, or an older copy restored) is
// noticed at open instead of giving back budget that was spent.
//
// The file has two slots of markSlot bytes, each a JSON object padded with
// spaces to a newline and carrying a checksum. An append rewrites one slot
// in place (slot records%2) and fsyncs it; the mark is the valid slot with
// the most records. A write torn by a crash damages only the slot it was
// writing, and the other one still holds an earlier mark, which the ledger
// is ahead of: accepted. The slots are a block apart, so no sector or page
// holds both. The file is created, and replaced by a reset, whole
// (WriteFileAtomic, both slots the same).

// markSlot is the size of one slot.
const markSlot = 4096

// ledgerMark is one slot.
type ledgerMark struct {
	// Records counts the ledger's records (lines that hold one).
	Records int `json:"records"`
	// Size is the ledger's length in bytes after record Records's newline.
	Size int64 `json:"size"`
	// Last is the hex SHA-256 of record Records's line (the "prev" of the
	// next record); empty when Records is 0.
	Last string `json:"last"`
	// Check is the first 16 hex digits of the SHA-256 of the slot's JSON
	// with Check empty: a slot mixed from two writes is not read.
	Check string `json:"check"`
}

func (m ledgerMark) sum() string {
	m.Check = ""
	b, _ := json.Marshal(m)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// slot encodes m as one slot.
func (m ledgerMark) slot() []byte {
	m.Check = m.sum()
	b, _ := json.Marshal(m)
	s := bytes.Repeat([]byte{' '}, markSlot)
	copy(s, b)
	s[markSlot-1] = '\n'
	return s
}

// decodeSlot reads one slot; ok is false for a slot that is damaged or
// was never written.
func decodeSlot(b []byte) (m ledgerMark, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimRight(b, " \n")))
	dec.DisallowUnknownFields()
	if dec.Decode(&m) != nil || dec.More() || m.Check != m.sum() {
		return m, false
	}
	if d, err := hex.DecodeString(m.Last); m.Records < 0 || m.Size < 0 ||
		(m.Records == 0) != (m.Last == "") || (m.Last != "" && (err != nil || len(d) != sha256.Size)) {
		return m, false
	}
	return m, true
}

// readMark reads the mark at path: exists is false when there is no file;
// an error (ErrLedgerMarkCorrupt) when there is one without a valid slot.
func readMark(path string) (m ledgerMark, exists bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, true, fmt.Errorf("high-water mark %s: %w", path, err)
	}
	found := false
	for off := 0; off < len(b); off += markSlot {
		if s, ok := decodeSlot(b[off:min(off+markSlot, len(b))]); ok && (!found || s.Records > m.Records) {
			m, found = s, true
		}
	}
	if !found {
		return m, true, fmt.Errorf("high-water mark %s: %w: no readable slot in %d bytes", path, ErrLedgerMarkCorrupt, len(b))
	}
	return m, true, nil
}

// markProblem compares the ledger's records with its mark (as readMark
// returned it) and says what was lost, or nil when nothing was: the ledger
// holds at least the mark's records and its record at the mark's position
// is the one the mark names. missing says the ledger file did not exist.
func markProblem(ledger string, recs []ledgerRecord, missing bool, m ledgerMark, exists bool, merr error) error {
	mpath := markPath(ledger)
	switch {
	case merr != nil:
		return fmt.Errorf("ledger %s: %w: the records it held cannot be checked", ledger, merr)
	case !exists || m.Records == 0:
		return nil
	case missing:
		return fmt.Errorf("%w: ledger %s does not exist, its high-water mark %s says it held %d records (last hash %.16s...): the ledger was deleted or moved",
			ErrLedgerMissing, ledger, mpath, m.Records, m.Last)
	case len(recs) < m.Records:
		return fmt.Errorf("%w: ledger %s has %d records, its high-water mark %s says %d (last hash %.16s...): the ledger was truncated, emptied or rolled back to an older copy",
			ErrLedgerRolledBack, ledger, len(recs), mpath, m.Records, m.Last)
	}
	r := recs[m.Records-1]
	if h := hex.EncodeToString(r.hash[:]); h != m.Last || int64(r.end) != m.Size {
		return fmt.Errorf("%w: ledger %s: record %d hashes to %.16s... and ends at byte %d, its high-water mark %s says %.16s... and byte %d: the ledger was replaced by another or an older copy, or its lines were edited",
			ErrLedgerRolledBack, ledger, m.Records, h, r.end, mpath, m.Last, m.Size)
	}
	return nil
}

// markPath is the high-water mark file of the ledger at path.
func markPath(path string) string { return path + ".hwm" }

// mark is the ledger's current high-water mark.
func (l *FileLedger) mark() ledgerMark {
	m := ledgerMark{Records: l.records, Size: l.size}
	if l.records > 0 {
		m.Last = hex.EncodeToString(l.last[:])
	}
	return m
}

// resetMark replaces the mark file with the ledger's state in both slots
// and opens it for updates.
func (l *FileLedger) resetMark() error {
	s := l.mark().slot()
	if err := WriteFileAtomic(markPath(l.path), append(append([]byte{}, s...), s...)); err != nil {
		return fmt.Errorf("ledger %s: high-water mark: %w", l.path, err)
	}
	return l.openMark()
}

func (l *FileLedger) openMark() error {
	f, err := os.OpenFile(markPath(l.path), os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("ledger %s: high-water mark: %w", l.path, err)
	}
	l.markFile = f
	return nil
}

// writeMark records the ledger's state in slot records%2 and fsyncs it.
func (l *FileLedger) writeMark() error {
	if _, err := l.markFile.WriteAt(l.mark().slot(), int64(l.records%2)*markSlot); err != nil {
		return fmt.Errorf("ledger %s: write high-water mark: %w", l.path, err)
	}
	if err := l.markFile.Sync(); err != nil {
		return fmt.Errorf("ledger %s: fsync high-water mark: %w", l.path, err)
	}
	return nil
}
