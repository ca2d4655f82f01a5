//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package store

import "os"

// lockFile is a no-op where flock is unavailable: on these systems nothing
// stops two processes from opening the same ledger, so do not share one.
func lockFile(*os.File) error { return nil }
