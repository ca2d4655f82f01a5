// Package httpserve runs ppboost's small HTTP servers (the status page and
// the Prometheus /metrics endpoint) with the same limits: a bounded number of
// connections at once, header, read, write and idle timeouts, a cap on header
// size, and a bounded graceful shutdown when the context ends.
//
// It must not know what it serves: handlers come from status/ and node/.
//
// Where it sits: internal, at the bottom: it imports nothing of ppboost; node
// (/metrics) and status (the status page) serve through it.
package httpserve
