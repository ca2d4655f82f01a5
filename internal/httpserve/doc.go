// Package httpserve runs ppboost's small HTTP servers (the status page and
// the Prometheus /metrics endpoint) with the same limits: a bounded number of
// connections at once, header, read, write and idle timeouts, a cap on header
// size, and a bounded graceful shutdown when the context ends.
//
// It must not know what it serves: handlers come from status/ and node/.
package httpserve
