package pfds

import (
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
)

func adultAgent(b *testing.B) (*Domain, Local) {
	d, err := dataset.Adult()
	if err != nil {
		b.Fatal(err)
	}
	dom, err := NewDomain(d)
	if err != nil {
		b.Fatal(err)
	}
	return dom, Local{X: d.X[:300], Y: d.Y[:300]}
}

// BenchmarkMakeTree: one agent's tree (300 Adult rows, h_max 8, 4,096-leaf cap).
func BenchmarkMakeTree(b *testing.B) {
	dom, l := adultAgent(b)
	p := DefaultParams()
	r := rng.Seeded(1)
	for i := 0; i < b.N; i++ {
		MakeTree(dom, l.X, l.Y, p, r)
	}
}

// BenchmarkLeafSizes: Alg. 5's counts and the exact NNLS on that tree.
func BenchmarkLeafSizes(b *testing.B) {
	dom, l := adultAgent(b)
	p := DefaultParams()
	r := rng.Seeded(1)
	t := MakeTree(dom, l.X, l.Y, p, r)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := LeafSizes(dom, t, l.X, l.Y, p, r); err != nil {
			b.Fatal(err)
		}
	}
}
