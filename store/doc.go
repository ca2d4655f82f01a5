// Package store is a node's durable state: the owner's privacy-budget ledger
// (append-only JSON lines, fsynced before Spend returns, locked while open,
// a torn final line truncated, a corrupt line refused with its line number)
// and atomic file replacement for the data user's checkpoints.
//
// It implements protocol.Ledger and must not do networking or learning.
//
// Where it sits: below node: it imports protocol (the Ledger interface) only;
// node and the CLI open ledgers and checkpoints through it.
package store
