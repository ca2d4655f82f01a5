package simulate

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol/fedboost"
)

// fedPlan: no owners is refused; otherwise the defaults are filled in and
// the session's id, roster (simulate's owner ids, in order) and beacon
// follow the seed, and the public configuration is validated (an empty one
// is refused with fedboost.ErrConfig). Fed sessions themselves run in
// protocol/fedboost's sim_test.go.
func TestFedPlan(t *testing.T) {
	if _, _, err := fedPlan(FedOptions{}); err == nil || !strings.Contains(err.Error(), "no owners") {
		t.Fatalf("no owners: %v", err)
	}
	o, pub, err := fedPlan(FedOptions{Owners: make([]*dataset.Dataset, 3), Seed: 7})
	if !errors.Is(err, fedboost.ErrConfig) {
		t.Fatalf("empty public configuration: %v", err)
	}
	if o.Delay != time.Millisecond || o.MaxVirtual != 24*time.Hour || o.Log == nil {
		t.Fatalf("defaults: delay %v, max virtual %v, log %v", o.Delay, o.MaxVirtual, o.Log)
	}
	if pub.Session != "fed-0000000000000007" || string(pub.Beacon) != "beacon-7" || len(pub.Roster) != 3 || pub.Roster[2] != OwnerID(2) {
		t.Fatalf("session %q, beacon %q, roster %v", pub.Session, pub.Beacon, pub.Roster)
	}
}
