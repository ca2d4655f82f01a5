package node

import "errors"

// Errors returned by this package; check them with errors.Is.
var (
	// ErrKeyPermissions: the key file is readable by group or others.
	ErrKeyPermissions = errors.New("key file is readable by group or others")
	// ErrClosed: the host was closed.
	ErrClosed = errors.New("node: host closed")
	// ErrTooLarge: a payload exceeds the size cap of its topic or protocol.
	ErrTooLarge = errors.New("node: message exceeds the size cap")
	// ErrUnknownProtocol: Send was asked for a protocol this node does not speak.
	ErrUnknownProtocol = errors.New("node: not a ppboost stream protocol")
	// ErrLedgerCorrupt: a ledger line other than the last one does not parse.
	ErrLedgerCorrupt = errors.New("ledger: corrupt entry")
	// ErrLedgerLocked: another process (or another FileLedger) has the file open.
	ErrLedgerLocked = errors.New("ledger: file is in use by another ledger")
	// ErrLedgerFailed: an append failed and could not be rolled back, so the
	// file's state is unknown; the ledger refuses further spends.
	ErrLedgerFailed = errors.New("ledger: an earlier write failed; refusing further spends")
	// ErrLedgerClosed: Spend after Close.
	ErrLedgerClosed = errors.New("ledger: closed")
)
