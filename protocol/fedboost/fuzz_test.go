package fedboost

import (
	"fmt"
	"testing"

	"github.com/ppboost/ppboost/boost/dpboost"
	"github.com/ppboost/ppboost/protocol/wire"
	"google.golang.org/protobuf/proto"
)

// FuzzParsePublic: an owner decodes the announced configuration from the
// wire; whatever the bytes, it returns a validated configuration or an
// error, never panics.
func FuzzParsePublic(f *testing.F) {
	union, parts := testData(&testing.T{}, 200, 10)
	cfg := dpboost.DefaultConfig()
	cfg.Trees, cfg.EnsembleSize, cfg.Depth = 4, 2, 2
	p := testPublic(union, parts, cfg, 2, true)
	p.Session, p.Beacon = "s", []byte("b")
	for i := range 10 {
		p.Roster = append(p.Roster, OwnerID(i))
	}
	b, err := p.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	huge := p.Wire()
	huge.Boost.Trees, huge.Boost.Depth = 1000000, 16
	hb, err := proto.Marshal(huge)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(hb)
	addrs := p.Wire()
	for i, id := range addrs.Roster {
		addrs.RosterAddrs = append(addrs.RosterAddrs, fmt.Sprintf("/ip4/10.0.0.%d/tcp/4001/p2p/%s /ip4/10.0.0.%d/udp/4001/quic-v1/p2p/%s", i, id, i, id))
	}
	ab, err := proto.Marshal(addrs)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ab)
	f.Add([]byte{})
	f.Add([]byte(`{"boost":{"trees":1000000,"depth":16}}`)) // version 1's JSON: not a FedConfig
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := ParsePublic(b)
		if err == nil {
			if err := q.Validate(); err != nil {
				t.Fatalf("parsed but invalid: %v", err)
			}
		}
	})
}

// FuzzParseTree: a FedTree from the wire is checked against the binning
// before an owner walks rows with it.
func FuzzParseTree(f *testing.F) {
	union, _ := testData(&testing.T{}, 50, 2)
	b, err := dpboost.NewBinning(union.Schema, union.Dim(), 8)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint32(1), []byte{0}, []byte{3}, 0, false)
	f.Add(uint32(2), []byte{0, 1, 2}, []byte{3, 4, 5}, 4, true)
	f.Fuzz(func(t *testing.T, levels uint32, feat, bins []byte, leaves int, complete bool) {
		w := &wire.FedTree{Levels: levels, Complete: complete}
		for _, x := range feat {
			w.Feature = append(w.Feature, uint32(x))
		}
		for _, x := range bins {
			w.Bin = append(w.Bin, uint32(x))
		}
		for i := 0; i < leaves%64; i++ {
			w.Leaf = append(w.Leaf, float64(i))
		}
		p, err := parseTree(w, b, 2, 1)
		if err != nil {
			return
		}
		row := make([]uint8, b.Features())
		d := p.levels
		if n := p.nodeOf(row, d); n < 0 || n >= 1<<d {
			t.Fatalf("node %d at depth %d", n, d)
		}
	})
}
