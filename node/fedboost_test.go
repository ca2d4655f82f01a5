package node

import (
	"testing"

	"github.com/ppboost/ppboost/protocol/conformance"
)

// TestFedBoostLibp2p runs federated DPBoost's conformance subtests on real
// libp2p hosts in this process (skipped under -short).
func TestFedBoostLibp2p(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: libp2p hosts")
	}
	conformance.RunFedBoost(t, libp2pHarness{})
}
