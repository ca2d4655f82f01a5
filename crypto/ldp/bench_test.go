package ldp

import (
	"fmt"
	"math"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

func benchPerturb(b *testing.B, k Kind, eps float64, d int) {
	m, err := New(k, eps, d, Reject)
	if err != nil {
		b.Fatal(err)
	}
	r := rng.Seeded(1)
	in := make([]float64, d)
	for j := range in {
		in[j] = math.Sin(float64(j))
	}
	out := make([]float64, d)
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Perturb(r, in, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*d)/b.Elapsed().Seconds(), "coords/s")
	if s, ok := m.(*sampled); ok {
		// Coordinates actually run through PM/HM (k of d).
		b.ReportMetric(float64(b.N*s.k)/b.Elapsed().Seconds(), "perturbed/s")
	}
}

// BenchmarkPerturb: go test -run XXX -bench Perturb ./crypto/ldp
func BenchmarkPerturb(b *testing.B) {
	for _, k := range []Kind{Piecewise, Hybrid} {
		for _, eps := range []float64{1, 5} {
			for _, d := range []int{1, 20, 100} {
				b.Run(fmt.Sprintf("%s/eps=%g/d=%d", k, eps, d), func(b *testing.B) { benchPerturb(b, k, eps, d) })
			}
		}
	}
	for _, k := range []Kind{Duchi, Laplace} {
		for _, d := range []int{1, 20} {
			b.Run(fmt.Sprintf("%s/eps=1/d=%d", k, d), func(b *testing.B) { benchPerturb(b, k, 1, d) })
		}
	}
}
