package protocol

import "github.com/ppboost/ppboost/protocol/engine"

// Clock abstracts time for the state-machine drivers so that the in-memory
// network can run them in virtual time, deterministically (engine.Clock).
type Clock = engine.Clock

// Timer is a pending AfterFunc call (engine.Timer).
type Timer = engine.Timer

// RealClock is the wall clock (engine.RealClock): a Loop on it runs its
// events on its own worker goroutine.
type RealClock = engine.RealClock
