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
	// ErrLedgerClosed: Spend after Close.
	ErrLedgerClosed = errors.New("ledger: closed")
)
