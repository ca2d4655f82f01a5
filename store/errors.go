package store

import "errors"

// Errors returned by this package; check them with errors.Is.
var (
	// ErrLedgerCorrupt: a newline-terminated ledger line does not parse (only
	// an unterminated final line is a torn append).
	ErrLedgerCorrupt = errors.New("ledger: corrupt entry")
	// ErrLedgerLocked: another process (or another FileLedger) has the file open.
	ErrLedgerLocked = errors.New("ledger: file is in use by another ledger")
	// ErrLedgerFailed: an append failed and could not be rolled back, so the
	// file's state is unknown; the ledger refuses further spends.
	ErrLedgerFailed = errors.New("ledger: an earlier write failed; refusing further spends")
	// ErrLedgerRolledBack: the ledger holds fewer records than its
	// high-water mark says it held, or another record at the mark's
	// position: truncated, emptied, replaced or rolled back to an older copy.
	ErrLedgerRolledBack = errors.New("ledger: behind its high-water mark")
	// ErrLedgerMissing: the ledger file is gone but its high-water mark,
	// which says it held records, is there.
	ErrLedgerMissing = errors.New("ledger: missing, but its high-water mark is there")
	// ErrLedgerMarkCorrupt: the high-water mark file has no readable slot.
	ErrLedgerMarkCorrupt = errors.New("ledger: high-water mark unreadable")
	// ErrLedgerClosed: Spend after Close.
	ErrLedgerClosed = errors.New("ledger: closed")
)
