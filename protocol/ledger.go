package protocol

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// Ledger errors.
var (
	ErrBudgetExceeded     = errors.New("privacy budget exceeded")
	ErrAlreadyContributed = errors.New("owner already contributed to this session")
)

// Ledger is an owner's privacy-budget ledger. Spend must make the record
// durable before it returns: a share may leave the node only after Spend
// returned nil. node/ implements it as an fsynced append-only file.
type Ledger interface {
	// Spend records a release of eps for (session, round, attempt). It fails
	// with ErrAlreadyContributed if the session already has a record and with
	// ErrBudgetExceeded if the lifetime budget would be exceeded.
	Spend(session string, round, attempt uint32, eps float64) error
	// Spent is the total epsilon recorded so far.
	Spent() float64
	// Budget is the lifetime budget.
	Budget() float64
	// Contributed reports whether the session already has a record.
	Contributed(session string) bool
}

// MemLedger is an in-memory Ledger for simulations and tests.
type MemLedger struct {
	mu       sync.Mutex
	budget   float64
	spent    float64
	sessions map[string]bool
}

// NewMemLedger returns an empty ledger with the given lifetime budget.
func NewMemLedger(budget float64) *MemLedger {
	return &MemLedger{budget: budget, sessions: map[string]bool{}}
}

// CheckSpend applies the ledger rules shared by every Ledger implementation.
// budgetSlack absorbs float rounding when an owner spends its budget in
// several equal parts.
func CheckSpend(budget, spent float64, contributed bool, session string, eps float64) error {
	if eps <= 0 || math.IsNaN(eps) || math.IsInf(eps, 0) {
		return fmt.Errorf("ledger: invalid epsilon %v", eps)
	}
	if contributed {
		return fmt.Errorf("session %s: %w", session, ErrAlreadyContributed)
	}
	const budgetSlack = 1e-9
	if spent+eps > budget+budgetSlack {
		return fmt.Errorf("spend %.4g with %.4g of %.4g spent: %w", eps, spent, budget, ErrBudgetExceeded)
	}
	return nil
}

func (l *MemLedger) Spend(session string, round, attempt uint32, eps float64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := CheckSpend(l.budget, l.spent, l.sessions[session], session, eps); err != nil {
		return err
	}
	l.spent += eps
	l.sessions[session] = true
	return nil
}

func (l *MemLedger) Spent() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.spent
}

func (l *MemLedger) Budget() float64 { return l.budget }

func (l *MemLedger) Contributed(session string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sessions[session]
}
