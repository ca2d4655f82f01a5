package pfds

import (
	"strings"
	"testing"

	"github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/protocol"
)

// TestConfigValidate: a complete agent configuration is valid; each missing
// field is refused by Validate and by NewAgent with an error naming it.
func TestConfigValidate(t *testing.T) {
	good := func() Config {
		return Config{ID: "a", Announcer: "u", Domain: &pfds.Domain{}, Ledger: protocol.NewMemLedger(1), Rand: rng.Seeded(1)}
	}
	if c := good(); c.Validate() != nil {
		t.Fatalf("complete config refused: %v", c.Validate())
	}
	for _, tc := range []struct {
		field string
		mut   func(*Config)
	}{
		{"Config.ID", func(c *Config) { c.ID = "" }},
		{"Config.Announcer", func(c *Config) { c.Announcer = "" }},
		{"Config.Domain", func(c *Config) { c.Domain = nil }},
		{"Config.Ledger", func(c *Config) { c.Ledger = nil }},
		{"Config.Rand", func(c *Config) { c.Rand = nil }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			c := good()
			tc.mut(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate: got %v, want an error naming %s", err, tc.field)
			}
			if _, err := NewAgent(c); err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("NewAgent: got %v, want an error naming %s", err, tc.field)
			}
		})
	}
}
