package node

import (
	"testing"
	"time"
)

// TestMDNSDiscovery: two hosts listening on 0.0.0.0 with mDNS find and
// connect to each other without a bootstrap address. Skipped under -short:
// it needs multicast on a real interface.
func TestMDNSDiscovery(t *testing.T) {
	if testing.Short() {
		t.Skip("mDNS needs multicast on a real interface")
	}
	mk := func() *Host {
		return newHost(t, func(c *Config) {
			c.MDNS = true
			c.MDNSService = "ppboost-test-" + t.Name()
			c.ListenAddrs = []string{"/ip4/0.0.0.0/tcp/0"}
		})
	}
	a, b := mk(), mk()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if a.ConnectedPeers() > 0 && b.ConnectedPeers() > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the two hosts did not find each other over mDNS within 10 s")
}
