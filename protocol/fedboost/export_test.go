package fedboost

import (
	"fmt"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/protocol"
)

// What the external tests (sim_test.go, on protocol/simulate) use of the
// package's internals and test helpers.
var (
	TestData         = testData
	TestPublic       = testPublic
	TestLog          = testLog
	PrivateSetup     = privateSetup
	NewtonTestConfig = newtonTestConfig
	LedgerKey        = ledgerKey
	NewtonLedgerKey  = newtonLedgerKey
)

// OwnerID names owner i as the simulator does (simulate.OwnerID): sorting
// by id is sorting by index.
func OwnerID(i int) protocol.PeerID { return protocol.PeerID(fmt.Sprintf("owner-%06d", i)) }

// AddRootCounts adds one quantized row to the exact count cells of a root
// histogram (the columns' layout of the count half of a node's sum).
func AddRootCounts(s *dataset.Schema, b *dpboost.Binning, row []uint8, exact []float64) {
	off := 0
	for _, c := range columnsOf(s, b) {
		exact[off+c.cell(row)]++
		off += c.cells(b)
	}
}
