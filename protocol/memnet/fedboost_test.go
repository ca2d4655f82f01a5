package memnet_test

import (
	"testing"

	"github.com/ppboost/ppboost/protocol/conformance"
)

// TestFedBoostConformance runs federated DPBoost's conformance subtests on
// the deterministic in-memory network.
func TestFedBoostConformance(t *testing.T) { conformance.RunFedBoost(t, harness{}) }
