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
	// ErrRebound: a release name was bound to a value with another digest
	// before (a data user that equivocated what the value depends on, or a
	// different noise secret after a restore): the owner never makes a
	// second value under one name.
	ErrRebound = errors.New("release name already carries a different value")
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
	// Bind records that the release called name carries the value whose
	// digest is digest. The first Bind of a name is durable before it
	// returns; a later Bind of the same name and digest returns nil and
	// records nothing; another digest fails with ErrRebound. Binds cost no
	// budget: the charge that covers the name is a Spend.
	Bind(name string, digest []byte) error
	// SpentIn is the epsilon recorded under session: every key equal to
	// session or starting with session + "/" (the per-session cap).
	SpentIn(session string) float64
}

// KeyInSession reports whether ledger key belongs to session (is session
// or starts with session + "/").
func KeyInSession(key, session string) bool {
	return key == session || (len(key) > len(session) && key[len(session)] == '/' && key[:len(session)] == session)
}

// MemLedger is an in-memory Ledger for simulations and tests.
type MemLedger struct {
	mu       sync.Mutex
	budget   float64
	spent    float64
	sessions map[string]bool
	keys     map[string]float64 // eps per key (SpentIn)
	binds    map[string]string  // name -> digest
}

// NewMemLedger returns an empty ledger with the given lifetime budget.
func NewMemLedger(budget float64) *MemLedger {
	return &MemLedger{budget: budget, sessions: map[string]bool{}, keys: map[string]float64{}, binds: map[string]string{}}
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
	l.keys[session] += eps
	return nil
}

func (l *MemLedger) Bind(name string, digest []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return CheckBind(l.binds, name, digest)
}

// CheckBind applies Bind's rule to binds (name -> digest), recording a
// new name: nil for a new name or the same digest, ErrRebound otherwise.
func CheckBind(binds map[string]string, name string, digest []byte) error {
	if name == "" || len(digest) == 0 {
		return fmt.Errorf("ledger: bind needs a name and a digest, got %q and %d bytes", name, len(digest))
	}
	if old, ok := binds[name]; ok {
		if old != string(digest) {
			return fmt.Errorf("%s: %w", name, ErrRebound)
		}
		return nil
	}
	binds[name] = string(digest)
	return nil
}

func (l *MemLedger) SpentIn(session string) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return SumInSession(l.keys, session)
}

// SumInSession adds the epsilon of every key of keys (key -> eps) that
// belongs to session (KeyInSession): Ledger.SpentIn of every
// implementation.
func SumInSession(keys map[string]float64, session string) float64 {
	sum := 0.0
	for k, e := range keys {
		if KeyInSession(k, session) {
			sum += e
		}
	}
	return sum
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

// Forget removes key's record (its charge and its session mark): a charge
// that never happened. Only for negative controls of audits that read a
// ledger (protocol/hostile).
func (l *MemLedger) Forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spent -= l.keys[key]
	delete(l.keys, key)
	delete(l.sessions, key)
}

// KeySpent is the epsilon recorded under key exactly.
func (l *MemLedger) KeySpent(key string) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keys[key]
}
