package protocol

import "time"

// Clock abstracts time for the state-machine drivers so that the in-memory
// network can run them in virtual time, deterministically.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once after d. On the real clock f runs on its own
	// goroutine; on the in-memory network's virtual clock it runs on the
	// network's event loop, serialized with message delivery.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not run yet and reports whether it did so.
	Stop() bool
}

// RealClock is the wall clock.
type RealClock struct{}

func (RealClock) Now() time.Time { return time.Now() }

func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
