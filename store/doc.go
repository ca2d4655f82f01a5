// Package store is a node's durable state: the owner's privacy-budget ledger
// (append-only JSON lines, fsynced before Spend returns, locked while open,
// a torn final line truncated, a corrupt line refused with its line number)
// and atomic file replacement for the data user's checkpoints.
//
// The ledger notices what it lost: its records are hash-chained (a record
// removed or changed before the last is refused, naming the line), and a
// high-water mark beside it (<ledger>.hwm: records, bytes, last hash,
// fsynced after every append) makes a truncated, emptied, deleted or
// rolled-back ledger refuse to open until the owner accepts the loss
// deliberately (LedgerOptions.ResetMark). A crash never causes a refusal:
// it leaves a torn final line (truncated) or a ledger ahead of its mark
// (caught up).
//
// It implements protocol.Ledger and must not do networking or learning.
//
// Where it sits: below node: it imports protocol (the Ledger interface) only;
// node and the CLI open ledgers and checkpoints through it.
package store
