package node

import (
	crand "crypto/rand"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

func randomPeer(t testing.TB) string {
	_, pk, err := crypto.GenerateEd25519Key(crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pk)
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
}

func TestConfigValidate(t *testing.T) {
	friend, stranger := randomPeer(t), randomPeer(t)
	valid := DefaultConfig()
	valid.KeyFile = "id.key"
	if err := valid.Validate(); err != nil {
		t.Fatalf("default config with a key file: %v", err)
	}
	tests := []struct {
		name  string
		tweak func(*Config)
		want  []string // every substring must appear in the error
	}{
		{"no key file", func(c *Config) { c.KeyFile = "" }, []string{"KeyFile", "required"}},
		{"no listen address", func(c *Config) { c.ListenAddrs = nil }, []string{"ListenAddrs"}},
		{"bad multiaddr", func(c *Config) { c.ListenAddrs = []string{"/ip4/1.2.3/tcp/1"} }, []string{"ListenAddrs[0]", "/ip4/1.2.3/tcp/1"}},
		{"websocket listener", func(c *Config) { c.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/1/ws"} }, []string{"ListenAddrs[0]", "/ws"}},
		{"psk with quic only", func(c *Config) {
			c.PSKFile = "swarm.key"
			c.ListenAddrs = []string{"/ip4/127.0.0.1/udp/0/quic-v1"}
		}, []string{"swarm.key", "TCP"}},
		{"bootstrap without peer id", func(c *Config) { c.Bootstrap = []string{"/ip4/1.2.3.4/tcp/1"} }, []string{"Bootstrap[0]", "/ip4/1.2.3.4/tcp/1"}},
		{"bootstrap outside the allow-list", func(c *Config) {
			c.AllowList = []string{friend}
			c.Bootstrap = []string{"/ip4/1.2.3.4/tcp/1/p2p/" + stranger}
		}, []string{"Bootstrap[0]", stranger, "AllowList"}},
		{"bad allow-list entry", func(c *Config) { c.AllowList = []string{"nope"} }, []string{"AllowList[0]", `"nope"`}},
		{"bad trusted network", func(c *Config) { c.TrustedNetworks = []string{"10.0.0.0/33"} }, []string{"TrustedNetworks[0]", "10.0.0.0/33"}},
		{"mdns without a service", func(c *Config) { c.MDNS, c.MDNSService = true, "" }, []string{"MDNSService"}},
		{"no expected peers", func(c *Config) { c.ExpectedPeers = 0 }, []string{"ExpectedPeers", "0"}},
		{"tiny max message", func(c *Config) { c.MaxMessage = 100 }, []string{"MaxMessage", "100"}},
		{"mesh high below gossipsub's", func(c *Config) { c.MeshHigh = 5 }, []string{"MeshHigh", "5", "12"}},
		{"negative mesh high", func(c *Config) { c.MeshHigh = -1 }, []string{"MeshHigh", "-1"}},
		{"no dial timeout", func(c *Config) { c.DialTimeout = 0 }, []string{"DialTimeout", "0s"}},
		{"negative stream timeout", func(c *Config) { c.StreamTimeout = -time.Second }, []string{"StreamTimeout", "-1s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := valid
			c.ListenAddrs = append([]string(nil), valid.ListenAddrs...)
			tc.tweak(&c)
			err := c.Validate()
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	t.Run("every problem reported", func(t *testing.T) {
		c := valid
		c.KeyFile, c.ExpectedPeers, c.DialTimeout = "", 0, 0
		err := c.Validate()
		for _, w := range []string{"KeyFile", "ExpectedPeers", "DialTimeout"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("error %v does not mention %s", err, w)
			}
		}
	})
	t.Run("good allow-list and bootstrap", func(t *testing.T) {
		c := valid
		c.AllowList = []string{friend}
		c.Bootstrap = []string{"/ip4/1.2.3.4/tcp/1/p2p/" + friend}
		c.TrustedNetworks = []string{"10.0.0.0/8", "fd00::/8"}
		c.PSKFile = "swarm.key" // the TCP default address satisfies it
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzConfigValidate: addresses, peer ids and prefixes come from flags and
// files; Validate must judge any string without panicking, and whatever it
// accepts must be usable by New's parsers.
func FuzzConfigValidate(f *testing.F) {
	for _, s := range []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1", "/ip6/::1/tcp/4001",
		"/ip4/1.2.3.4/tcp/1/p2p/12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA", "", "/", "//tcp", "10.0.0.0/8",
		"/ip4/1.2.3.4/tcp/1/ws", "/dns4/example.com/tcp/1", "\x00\xff"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, addr, id string) {
		base := DefaultConfig()
		base.KeyFile = "k"
		c := base
		c.ListenAddrs = []string{addr}
		if c.Validate() == nil {
			if a, err := ma.NewMultiaddr(addr); err != nil || transportOf(a) == "" {
				t.Fatalf("accepted %q as a listen address: %v", addr, err)
			}
		}
		c = base
		c.Bootstrap = []string{addr}
		if c.Validate() == nil {
			if _, err := peer.AddrInfoFromString(addr); err != nil {
				t.Fatalf("accepted %q as a bootstrap address: %v", addr, err)
			}
		}
		c = base
		c.AllowList = []string{id}
		if c.Validate() == nil {
			if _, err := peer.Decode(id); err != nil {
				t.Fatalf("accepted %q as a peer id: %v", id, err)
			}
		}
		c = base
		c.TrustedNetworks = []string{id}
		if c.Validate() == nil {
			if _, err := netip.ParsePrefix(id); err != nil {
				t.Fatalf("accepted %q as a network prefix: %v", id, err)
			}
		}
	})
}
