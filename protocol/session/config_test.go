package session

import (
	"strings"
	"testing"
	"time"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
)

func tinyData() *dataset.Dataset {
	return &dataset.Dataset{X: [][]float64{{-0.5}, {0.5}}, Y: []int{0, 1}, Classes: []string{"a", "b"}, Features: []string{"f"}}
}

// TestUserConfigValidate: the default configuration (with the user's data)
// is valid, and each bad field is refused by an error that names it and the
// bad value.
func TestUserConfigValidate(t *testing.T) {
	good := func() UserConfig { c := DefaultUserConfig(); c.Own = tinyData(); return c }
	if c := good(); c.Validate() != nil {
		t.Fatalf("default user config refused: %v", c.Validate())
	}
	for _, tc := range []struct {
		name, want string
		mut        func(*UserConfig)
	}{
		{"announce", "session.UserConfig.Timing.AnnounceInterval: must be > 0, got 0s", func(c *UserConfig) { c.Timing.AnnounceInterval = 0 }},
		{"join", "session.UserConfig.Timing.JoinTimeout: must be > 0, got -1s", func(c *UserConfig) { c.Timing.JoinTimeout = -time.Second }},
		{"share", "session.UserConfig.Timing.ShareTimeout: must be > 0, got 0s", func(c *UserConfig) { c.Timing.ShareTimeout = 0 }},
		{"idle", "session.UserConfig.Timing.IdleTimeout: must be > 0, got 0s", func(c *UserConfig) { c.Timing.IdleTimeout = 0 }},
		{"own", "session.UserConfig.Own:", func(c *UserConfig) { c.Own = nil }},
		{"own empty", "session.UserConfig.Own:", func(c *UserConfig) { c.Own = &dataset.Dataset{} }},
		{"expected", "session.UserConfig.ExpectedOwners: must be >= 0, got -2", func(c *UserConfig) { c.ExpectedOwners = -2 }},
		{"window", "session.UserConfig.JoinWindow: must be >= 0, got -1s", func(c *UserConfig) { c.JoinWindow = -time.Second }},
		{"roster", "session.UserConfig.MaxRoster: must be >= 0, got -1", func(c *UserConfig) { c.MaxRoster = -1 }},
		{"resume", "session.UserConfig.Session: resuming session a but configured for b", func(c *UserConfig) { c.Session = "b"; c.Resume = &Checkpoint{Session: "a"} }},
		{"rounds", "session.UserConfig.Boost:", func(c *UserConfig) { c.Boost.Rounds = 0 }},
		{"epsilon", "session.UserConfig.Boost:", func(c *UserConfig) { c.Boost.Epsilon = -1 }},
		{"sum", "session.UserConfig.Sum:", func(c *UserConfig) { c.Sum.Method = "carrier-pigeon" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.mut(&c)
			err := c.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error starting %q", err, tc.want)
			}
		})
	}
}

// TestOwnerConfigValidate is the owner's table: the defaults with a user,
// data and a ledger are valid; each bad field is named.
func TestOwnerConfigValidate(t *testing.T) {
	ledger := protocol.NewMemLedger(10)
	good := func() OwnerConfig {
		c := DefaultOwnerConfig()
		c.User, c.Data, c.Ledger = "user", tinyData(), ledger
		return c
	}
	if c := good(); c.Validate() != nil {
		t.Fatalf("default owner config refused: %v", c.Validate())
	}
	if c := good(); func() error { c.Colluders = boost.ColludersAll; return c.Validate() }() != nil {
		t.Fatal("boost.ColludersAll (all co-dealers, like 0) refused")
	}
	for _, tc := range []struct {
		name, want string
		mut        func(*OwnerConfig)
	}{
		{"user", "session.OwnerConfig.User:", func(c *OwnerConfig) { c.User = "" }},
		{"data", "session.OwnerConfig.Data: no data", func(c *OwnerConfig) { c.Data = nil }},
		{"ledger", "session.OwnerConfig.Ledger:", func(c *OwnerConfig) { c.Ledger = nil }},
		{"eps", "session.OwnerConfig.MaxEpsilon: must be > 0, got 0", func(c *OwnerConfig) { c.MaxEpsilon = 0 }},
		{"none charge", "session.OwnerConfig.NoneCharge: must be > 0", func(c *OwnerConfig) { c.AllowNone = true; c.NoneCharge = 0 }},
		{"min parties", "session.OwnerConfig.MinParties: must be >= 0", func(c *OwnerConfig) { c.MinParties = -1 }},
		{"colluders", "session.OwnerConfig.Colluders: must be >= 0", func(c *OwnerConfig) { c.Colluders = -3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.mut(&c)
			err := c.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error starting %q", err, tc.want)
			}
		})
	}
	// The constructor refuses what Validate refuses, naming the field.
	c := good()
	c.MaxEpsilon = 0
	if _, err := NewOwner("o", nopPoster{}, c); err == nil || !strings.Contains(err.Error(), "MaxEpsilon") {
		t.Fatalf("NewOwner with MaxEpsilon 0: %v", err)
	}
	u := DefaultUserConfig()
	u.Own = tinyData()
	u.Timing.ShareTimeout = 0
	if _, err := NewUser("u", nopPoster{}, u); err == nil || !strings.Contains(err.Error(), "Timing.ShareTimeout") {
		t.Fatalf("NewUser with ShareTimeout 0: %v", err)
	}
}

// TestTimingValidate: the default timing is valid.
func TestTimingValidate(t *testing.T) {
	if err := DefaultTiming().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (Timing{}).Validate(); err == nil || !strings.HasPrefix(err.Error(), "session.Timing.AnnounceInterval") {
		t.Fatalf("zero timing: %v", err)
	}
}

type nopPoster struct{}

func (nopPoster) Send(protocol.PeerID, string, []byte) {}
func (nopPoster) Publish(string, []byte)               {}
