package simulate

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/memnet"
	"github.com/ppboost/ppboost/protocol/securesum"
	"github.com/ppboost/ppboost/protocol/session"
)

// Options configures one simulated run.
type Options struct {
	Boost boost.Config
	Sum   securesum.Params
	Data  boost.Data
	// Delay is the virtual one-way latency of every link (default 1 ms).
	Delay time.Duration
	// MaxVirtual bounds the run in virtual time (default 24 h).
	MaxVirtual time.Duration
	Log        hclog.Logger
	OnRound    func(session.RoundReport)
	// Setup, if set, may change the network before the session starts
	// (link parameters, partitions).
	Setup func(n *memnet.Network, user protocol.PeerID, owners []protocol.PeerID)
	// DropRate loses each message with this probability on every link.
	DropRate float64
	// Faults are played at their virtual times (fault scenarios).
	Faults []Fault
	// Timing overrides the session's timing (zero fields keep the defaults).
	Timing session.Timing
	// OwnerColluders is every owner's own colluder bound
	// (session.OwnerConfig.Colluders; 0: all, the default).
	OwnerColluders int
	// SilentPerRound kills this many owners after every round attempt,
	// chosen on a seeded stream among the live ones: each secure sum then
	// meets owners that fell silent since the last (the scale test's "one
	// silent owner per sum").
	SilentPerRound int
	// Tap, if set, is the network's memnet.Options.Tap (an adversary).
	Tap func(from, to protocol.PeerID, topic bool, name string, data []byte) [][]byte
	// Owner, if set, may change owner i's configuration.
	Owner func(i int, c *session.OwnerConfig)
	// Unchecked runs the data user without its plan check (a hostile user
	// runs whatever plan it likes: session.UserConfig.Unchecked).
	Unchecked bool

	// noShare runs the owners as production runs them, each decoding and
	// computing its own (tests compare the two).
	noShare bool
}

// FaultKind names what a Fault does.
type FaultKind int

const (
	KillOwner    FaultKind = iota // the owner's process dies for good
	PauseOwner                    // the owner is frozen for For, then continues (SIGSTOP/SIGCONT)
	IsolateOwner                  // the owner is cut off for For, then the partition heals
	KillUser                      // the data user dies
	RestartUser                   // a data user with the same id starts again from the last checkpoint
)

// Fault is one scheduled event of a fault scenario.
type Fault struct {
	At    time.Duration // virtual time after the session starts
	Kind  FaultKind
	Owner int // owner index (owner faults)
	For   time.Duration
}

// Result is what a run measured.
type Result struct {
	Model   *boost.Model
	Rounds  []session.RoundReport
	Owners  int
	Wall    time.Duration
	Virtual time.Duration
	// Per-owner traffic, averaged over owners; the user's own traffic.
	OwnerMsgs, OwnerBytes float64
	UserMsgs, UserBytes   int64
	TotalMsgs             int64
	// Dropped messages by reason, summed over all participants.
	Dropped map[string]int
	// PeakHeap is the largest heap in use observed during the run.
	PeakHeap uint64
	// Per owner, at the end: its state, how many shares it released in the
	// session, how many err dealings it was charged for, and its ledger's
	// total spend.
	OwnerStates []session.OwnerState
	Releases    []int
	Dealings    []int
	Spent       []float64
	// Ledgers are the owners' ledgers.
	Ledgers []protocol.Ledger
	// Killed marks owners a fault killed.
	Killed []bool
	// UserRestarts counts data users started from a checkpoint.
	UserRestarts int
	// Outcome is the (last) data user's; OwnerOutcomes[i] the last one
	// owner i logged (zero if it left no session).
	Outcome       protocol.Outcome
	OwnerOutcomes []protocol.Outcome
}

// countingLedger counts the spends that reached a ledger: shares (the
// session's key) and err dealings (its "/err/" keys) apart.
type countingLedger struct {
	protocol.Ledger
	shares, dealings *int
}

func (l countingLedger) Spend(session string, round, attempt uint32, eps float64) error {
	if err := l.Ledger.Spend(session, round, attempt, eps); err != nil {
		return err
	}
	if strings.Contains(session, "/err/") {
		*l.dealings++
	} else {
		*l.shares++
	}
	return nil
}

// OwnerID names owner i so that sorting by id is sorting by index, which
// keeps the distributed selection identical to boost.Train's.
func OwnerID(i int) protocol.PeerID { return protocol.PeerID(fmt.Sprintf("owner-%06d", i)) }

// UserID is the data user's id.
const UserID protocol.PeerID = "user"
