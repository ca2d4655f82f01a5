package memnet_test

import (
	"testing"

	"github.com/ppboost/ppboost/protocol/conformance"
)

// TestFedBoostConformance runs federated DPBoost's conformance subtests on
// the deterministic in-memory network.
func TestFedBoostConformance(t *testing.T) { conformance.RunFedBoost(t, harness{}) }

// TestTwoSystemsOneEndpoint: one memnet endpoint per peer serves a W&C and
// a federated DPBoost session at once through a protocol.Mux.
func TestTwoSystemsOneEndpoint(t *testing.T) { conformance.RunTwoSystems(t, harness{}) }
