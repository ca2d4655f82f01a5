package lifecycle

import "fmt"

// Phase is where a role stands in one session; the same for every system.
type Phase int

const (
	// Idle: no session. An owner waits for an announcement; a data user
	// has not announced yet.
	Idle Phase = iota
	// Admitting: the session is announced and its roster not fixed. An
	// owner has joined and waits for the roster; a data user collects
	// joins.
	Admitting
	// Running: the roster is fixed and the rounds run.
	Running
	// Done: the session ended with a result (a final model, or PFDS's
	// shared data); its outcome may still be partial.
	Done
	// Aborted: the session ended without a result (an abort, an idle
	// timeout, a refusal after joining).
	Aborted
)

var phaseNames = [...]string{Idle: "idle", Admitting: "admitting", Running: "running", Done: "done", Aborted: "aborted"}

func (p Phase) String() string {
	if p >= 0 && int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", int(p))
}

// Ended reports whether p is Done or Aborted.
func (p Phase) Ended() bool { return p == Done || p == Aborted }

// valid is the transition-validity table: valid[from][to]. A role in an
// ended phase takes the next announced session (owners serve one session
// after another); a resumed role enters Running straight from Idle (its
// roster comes from the checkpoint); an owner the roster leaves out goes
// back to Idle. Nothing leaves Running but an end.
var valid = [...][5]bool{
	Idle:      {Admitting: true, Running: true, Aborted: true},
	Admitting: {Idle: true, Running: true, Aborted: true},
	Running:   {Done: true, Aborted: true},
	Done:      {Idle: true, Admitting: true},
	Aborted:   {Idle: true, Admitting: true, Running: true},
}

// CanGo reports whether a role may move from p to q.
func (p Phase) CanGo(q Phase) bool {
	if p < 0 || int(p) >= len(valid) || q < 0 || int(q) >= len(valid[p]) {
		return false
	}
	return valid[p][q]
}

// OwnerState is what an owner of any system shows its operator (status
// pages, exit paths): the lifecycle phases folded into three. The systems
// re-export it (session.OwnerState, fedboost.OwnerState).
type OwnerState int

const (
	OwnerIdle   OwnerState = iota // no session: waiting for an announcement (again, after an abort or the idle timeout)
	OwnerJoined                   // in a session: admitting or running
	OwnerDone                     // the session ended with its final model
)

func (s OwnerState) String() string {
	switch s {
	case OwnerIdle:
		return "idle"
	case OwnerJoined:
		return "joined"
	case OwnerDone:
		return "done"
	}
	return fmt.Sprintf("OwnerState(%d)", int(s))
}

// OwnerStateOf folds an owner's phase: admitting and running are joined,
// done is done, and idle and aborted are idle (an aborted owner has left
// for the next announcement).
func OwnerStateOf(p Phase) OwnerState {
	switch p {
	case Admitting, Running:
		return OwnerJoined
	case Done:
		return OwnerDone
	}
	return OwnerIdle
}
