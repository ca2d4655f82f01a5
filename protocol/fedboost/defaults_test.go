package fedboost

import (
	"errors"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
)

type nopPoster struct{}

func (nopPoster) Send(protocol.PeerID, string, []byte) {}
func (nopPoster) Publish(string, []byte)               {}

// TestOwnerConfigValidate: the defaults with a user, data and a ledger are
// valid; each bad field is refused by an ErrConfig naming it.
func TestOwnerConfigValidate(t *testing.T) {
	data := &dataset.Dataset{X: [][]float64{{0}}, Y: []int{1}, Classes: []string{"a", "b"}, Features: []string{"f"}}
	good := func() OwnerConfig {
		c := DefaultOwnerConfig()
		c.User, c.Data, c.Ledger = "user", data, protocol.NewMemLedger(10)
		return c
	}
	if c := good(); c.Validate() != nil {
		t.Fatalf("default owner config refused: %v", c.Validate())
	}
	for _, tc := range []struct {
		name, want string
		mut        func(*OwnerConfig)
	}{
		{"user", "fedboost.OwnerConfig.User:", func(c *OwnerConfig) { c.User = "" }},
		{"data", "fedboost.OwnerConfig.Data: no data", func(c *OwnerConfig) { c.Data = &dataset.Dataset{} }},
		{"ledger", "fedboost.OwnerConfig.Ledger:", func(c *OwnerConfig) { c.Ledger = nil }},
		{"eps", "fedboost.OwnerConfig.MaxEpsilon: must be > 0, got -1", func(c *OwnerConfig) { c.MaxEpsilon = -1 }},
		{"none", "fedboost.OwnerConfig.NoneCharge: must be > 0", func(c *OwnerConfig) { c.AllowNoNoise = true }},
		{"min parties", "fedboost.OwnerConfig.MinParties: must be >= 0", func(c *OwnerConfig) { c.MinParties = -1 }},
		{"colluders", "fedboost.OwnerConfig.Colluders: must be >= 0", func(c *OwnerConfig) { c.Colluders = -2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.mut(&c)
			err := c.Validate()
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrConfig with %q", err, tc.want)
			}
			if _, err := NewOwner("o", nopPoster{}, c); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewOwner: got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestUserConfigValidate: the user's own fields are named; the public
// part's errors come prefixed with the field that holds it.
func TestUserConfigValidate(t *testing.T) {
	union, parts := testData(t, 2000, 100)
	cfg := dpboost.DefaultConfig()
	cfg.Trees, cfg.EnsembleSize = 20, 10
	pub := testPublic(union, parts, cfg, 1, true)
	pub.Session, pub.Beacon = "s", []byte("b")
	for i := range 100 {
		pub.Roster = append(pub.Roster, OwnerID(i))
	}
	if err := pub.Validate(); err != nil {
		t.Fatalf("test public refused: %v", err)
	}
	for _, tc := range []struct {
		name, want string
		mut        func(*UserConfig)
	}{
		{"public", "fedboost.UserConfig.Public: no configuration", func(c *UserConfig) { c.Public = nil }},
		{"delay", "fedboost.UserConfig.AnnounceDelay: must be >= 0, got -1ns", func(c *UserConfig) { c.AnnounceDelay = -1 }},
		{"classes", "fedboost.UserConfig.ClassNames: want 2 class names", func(c *UserConfig) { c.ClassNames = []string{"x"} }},
		{"public session", "fedboost.UserConfig.Public: fedboost: bad configuration: no session id", func(c *UserConfig) { p := *c.Public; p.Session = ""; c.Public = &p }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pub
			c := UserConfig{Public: &p}
			if err := c.Validate(); err != nil {
				t.Fatalf("good user config refused: %v", err)
			}
			tc.mut(&c)
			err := c.Validate()
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrConfig with %q", err, tc.want)
			}
		})
	}
}
