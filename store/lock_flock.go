//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package store

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive, non-blocking flock on f, held until f is
// closed. flock locks belong to the open file description, so a second
// OpenLedger of the same file fails even within one process.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLedgerLocked
	}
	if err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	return nil
}
