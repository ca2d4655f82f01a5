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

// ExactNewtonSums is, per round t of a finished Newton session with public
// configuration p (as announced: session, roster and beacon filled in), the
// exact (noise-free) sum over the owners' rows of the leaf vector the
// owners dealt: each owner's vector at scores F built from the model's
// earlier rounds, as the owners built it.
func ExactNewtonSums(p *Public, parts []*dataset.Dataset, m *dpboost.Model) ([][]float64, error) {
	b, err := p.Binning()
	if err != nil {
		return nil, err
	}
	B, L := p.Boosters(), 1<<p.Boost.Depth
	var owners []*Owner
	for _, d := range parts {
		data, err := b.Quantize(d.X)
		if err != nil {
			return nil, err
		}
		o := &Owner{pub: p, binning: b, data: data, labels: d.Y, boost: B, F: make([]float64, data.Rows*B), trees: map[int]*partial{}}
		o.y = make([]float64, data.Rows)
		for i, c := range d.Y {
			o.y[i] = -1
			if c == 1 {
				o.y[i] = 1
			}
		}
		owners = append(owners, o)
	}
	out := make([][]float64, p.Boost.Trees)
	for t := 1; t <= p.Boost.Trees; t++ {
		tr := p.NewtonTree(b, t)
		tr.complete = true
		for k := range B {
			tr.leaf = append(tr.leaf, m.Boosters[k][t-1].Leaf...)
		}
		out[t-1] = make([]float64, 2*B*L)
		for _, o := range owners {
			o.trees[t] = tr
			for j, v := range o.newtonVector(t) {
				out[t-1][j] += v
			}
		}
		for _, o := range owners {
			Fd := o.data.Features
			for k := range B {
				c := tr.class(k)
				for i := range o.data.Rows {
					o.F[i*B+k] += c.leaf[c.nodeOf(o.data.Idx[i*Fd:(i+1)*Fd], p.Boost.Depth)]
				}
			}
		}
	}
	return out, nil
}
