package fedboost

import (
	"fmt"

	"github.com/ppboost/ppboost/protocol/role"
	"github.com/ppboost/ppboost/protocol/securesum"
)

// Role configuration in one place: DefaultOwnerConfig is an owner that
// trusts no one, and each role's Validate names the field and the bad value
// of its first mistake ("fedboost.OwnerConfig.MaxEpsilon: must be > 0, got
// 0"). NewOwner and NewUser fill the runtime defaults (clock, logger, random
// sources) and then call Validate. The session's public part is checked by
// Public.Validate (config.go).

// DefaultOwnerMaxEpsilon is DefaultOwnerConfig's per-ensemble cap.
const DefaultOwnerMaxEpsilon = 5

// DefaultOwnerConfig is a fedboost owner's configuration with every
// trust-bearing field at its safe default: noise sized for all co-dealers
// colluding (Colluders 0), no session without noise, the default smallest
// dealer set. The caller adds the pinned data user, its data and its ledger.
func DefaultOwnerConfig() OwnerConfig {
	return OwnerConfig{MaxEpsilon: DefaultOwnerMaxEpsilon, MinParties: securesum.DefaultMinParties}
}

func fieldError(field, format string, a ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrConfig, field, fmt.Sprintf(format, a...))
}

// Validate checks an owner's configuration; the error names the field.
func (c *OwnerConfig) Validate() error {
	rows := 0
	if c.Data != nil {
		rows = c.Data.Len()
	}
	err := role.OwnerLimits{User: c.User, Rows: rows, Ledger: c.Ledger, MaxEpsilon: c.MaxEpsilon,
		AllowExact: c.AllowNoNoise, AllowExactField: "AllowNoNoise", NoneCharge: c.NoneCharge, MinParties: c.MinParties,
		Colluders: c.Colluders, SessionMax: c.SessionMaxEpsilon}.Validate("fedboost.OwnerConfig")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// withRuntimeDefaults fills the owner's zero values: the shared ones
// (role.Runtime) and the noise source.
func (c OwnerConfig) withRuntimeDefaults() OwnerConfig {
	role.Runtime{MinParties: &c.MinParties, Clock: &c.Clock, Log: &c.Log, SumRand: &c.SumRand, Secret: &c.NoiseSecret}.Fill()
	return c
}

// Validate checks the data user's configuration: its session's public part
// (Public.Validate) and its own fields.
func (c *UserConfig) Validate() error {
	const p = "fedboost.UserConfig"
	if c.Public == nil {
		return fieldError(p+".Public", "no configuration")
	}
	if c.AnnounceDelay < 0 {
		return fieldError(p+".AnnounceDelay", "must be >= 0, got %v", c.AnnounceDelay)
	}
	if n, k := len(c.ClassNames), c.Public.Classes(); n != 0 && n != k {
		return fieldError(p+".ClassNames", "want %d class names (the schema's classes), got %d", k, n)
	}
	if err := c.Public.Validate(); err != nil {
		return fmt.Errorf("%s.Public: %w", p, err)
	}
	return nil
}

func (c UserConfig) withRuntimeDefaults() UserConfig {
	role.Runtime{Clock: &c.Clock, Log: &c.Log, SumRand: &c.SumRand}.Fill()
	return c
}
