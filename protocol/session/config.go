package session

import (
	"fmt"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/protocol/role"
	"github.com/ppboost/ppboost/protocol/securesum"
)

// Configuration of the two roles in one place: DefaultUserConfig and
// DefaultOwnerConfig give what a deployment starts from (the CLI's flag
// defaults are these), and Validate names the field and the bad value of the
// first mistake, as "session.UserConfig.Timing.ShareTimeout: must be > 0,
// got 0s". NewUser and NewOwner fill the runtime defaults (clock, logger,
// random sources) and then call Validate: a configuration either starts as
// given or is refused with that message.

// fieldError is a configuration error naming its field.
func fieldError(field, format string, a ...any) error {
	return fmt.Errorf("%s: %s", field, fmt.Sprintf(format, a...))
}

// Validate checks that every step of the session has a positive duration.
func (t Timing) Validate() error { return t.validate("session.Timing") }

func (t Timing) validate(prefix string) error {
	for _, f := range []struct {
		name string
		v    interface{ Nanoseconds() int64 }
	}{
		{"AnnounceInterval", t.AnnounceInterval}, {"JoinTimeout", t.JoinTimeout},
		{"ShareTimeout", t.ShareTimeout}, {"IdleTimeout", t.IdleTimeout},
	} {
		if f.v.Nanoseconds() <= 0 {
			return fieldError(prefix+"."+f.name, "must be > 0, got %v", f.v)
		}
	}
	return nil
}

// DefaultUserConfig is a data user's configuration with the defaults of
// boost.DefaultConfig, securesum.DefaultParams and DefaultTiming. The
// caller adds its own data (Own), the hooks and, for a reproducible run, a
// session id and random sources.
func DefaultUserConfig() UserConfig {
	return UserConfig{Boost: boost.DefaultConfig(), Sum: securesum.DefaultParams(), Timing: DefaultTiming()}
}

// Validate checks a data user's configuration; the error names the field.
// Runtime defaults (session id, clock, logger, SumRand, an IdleTimeout of
// 0) are filled by NewUser before it validates.
func (c *UserConfig) Validate() error {
	const p = "session.UserConfig"
	if err := c.Timing.validate(p + ".Timing"); err != nil {
		return err
	}
	if c.Own == nil || c.Own.Len() == 0 {
		return fieldError(p+".Own", "the data user's own labelled data is required (thresholds, validation)")
	}
	if c.ExpectedOwners < 0 {
		return fieldError(p+".ExpectedOwners", "must be >= 0, got %d", c.ExpectedOwners)
	}
	if c.JoinWindow < 0 {
		return fieldError(p+".JoinWindow", "must be >= 0, got %v", c.JoinWindow)
	}
	if c.MaxRoster < 0 {
		return fieldError(p+".MaxRoster", "must be >= 0, got %d", c.MaxRoster)
	}
	if c.Resume != nil && c.Session != "" && c.Session != c.Resume.Session {
		return fieldError(p+".Session", "resuming session %s but configured for %s", c.Resume.Session, c.Session)
	}
	if err := c.Boost.Validate(); err != nil {
		return fieldError(p+".Boost", "%v", err)
	}
	if err := c.Sum.Validate(); err != nil {
		return fieldError(p+".Sum", "%v", err)
	}
	return nil
}

// withRuntimeDefaults fills what a configuration may leave zero: the
// session id (the checkpoint's when resuming), the clock, the logger, the
// secure random source and the owners' idle timeout.
func (c UserConfig) withRuntimeDefaults() UserConfig {
	if c.Resume != nil && c.Session == "" {
		c.Session = c.Resume.Session
	}
	if c.Session == "" {
		c.Session = NewSessionID()
	}
	role.Runtime{Clock: &c.Clock, Log: &c.Log, SumRand: &c.SumRand}.Fill()
	if c.Timing.IdleTimeout == 0 {
		c.Timing.IdleTimeout = DefaultTiming().IdleTimeout
	}
	return c
}

// DefaultOwnerMaxEpsilon is the per-share cap of DefaultOwnerConfig: it fits
// a default session (boost.DefaultConfig's epsilon), so an owner with
// default settings can give one share of a default session.
const DefaultOwnerMaxEpsilon = 5

// DefaultOwnerConfig is an owner's configuration that trusts no one: noise
// sized for all co-dealers colluding (Colluders 0, boost.ColludersAll in
// boost's terms), no share without noise,
// the default smallest aggregate. The caller adds the pinned data user, its
// data and its ledger.
func DefaultOwnerConfig() OwnerConfig {
	return OwnerConfig{MaxEpsilon: DefaultOwnerMaxEpsilon, MinParties: securesum.DefaultMinParties}
}

// Validate checks an owner's configuration; the error names the field.
func (c *OwnerConfig) Validate() error {
	rows := 0
	if c.Data != nil {
		rows = c.Data.Len()
	}
	return role.OwnerLimits{User: c.User, Rows: rows, Ledger: c.Ledger, MaxEpsilon: c.MaxEpsilon,
		AllowExact: c.AllowNone, AllowExactField: "AllowNone", NoneCharge: c.NoneCharge, MinParties: c.MinParties,
		Colluders: c.Colluders, SessionMax: c.SessionMaxEpsilon}.Validate("session.OwnerConfig")
}

// withRuntimeDefaults fills the owner's zero values: the smallest
// aggregate, the clock, the logger and the secure random source.
func (c OwnerConfig) withRuntimeDefaults() OwnerConfig {
	role.Runtime{MinParties: &c.MinParties, Clock: &c.Clock, Log: &c.Log, SumRand: &c.SumRand, Secret: &c.NoiseSecret}.Fill()
	return c
}
