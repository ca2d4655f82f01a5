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

// TestTwoSystemsOneHostLibp2p: one libp2p host per peer serves a W&C and a
// federated DPBoost session at once through a protocol.Mux (routing by
// topic and protocol ID); both complete (skipped under -short).
func TestTwoSystemsOneHostLibp2p(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: libp2p hosts")
	}
	conformance.RunTwoSystems(t, libp2pHarness{})
}
