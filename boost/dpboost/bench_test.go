package dpboost

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
)

// benchTrees trains boosters of `trees` trees b.N times and reports trees
// per second and the heap in use after training (data, gradients,
// histograms).
func benchTrees(b *testing.B, cfg Config, bin *Binning, data *Binned, y []float64) {
	b.ReportAllocs()
	r := rng.Seeded(1)
	b.ResetTimer()
	for range b.N {
		if _, err := Train(cfg, bin, data, y, r, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cfg.Trees*b.N)/b.Elapsed().Seconds(), "trees/s")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MB-heap")
}

func BenchmarkAdult(b *testing.B) {
	d, err := dataset.Adult()
	if err != nil {
		b.Fatal(err)
	}
	train, _ := d.Shuffle(1).Split(26000)
	bin, _ := NewBinning(train.Schema, train.Dim(), 255)
	data, _ := bin.Quantize(train.X)
	y := make([]float64, train.Len())
	for i, c := range train.Y {
		y[i] = float64(2*c - 1)
	}
	for _, m := range Methods() {
		b.Run(m.String(), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Method, cfg.Trees, cfg.EnsembleSize = m, 50, 50
			benchTrees(b, cfg, bin, data, y)
		})
	}
}

// BenchmarkSynthetic1M is the paper's synthetic_cls shape: 10^6 rows x 400
// features with 255 bins, binned directly (uniform random bins, labels
// from a noisy linear rule on 10 features) so that the 3.2 GB float64
// matrix is never built: the trainer only reads the 400 MB of bins.
func BenchmarkSynthetic1M(b *testing.B) {
	const n, F = 1_000_000, 400
	r := rand.New(rand.NewPCG(1, 2))
	data := &Binned{Rows: n, Features: F, Idx: make([]uint8, n*F)}
	for i := 0; i < len(data.Idx); i += 8 {
		v := r.Uint64()
		for k := range 8 {
			data.Idx[i+k] = uint8(v>>(8*k)) % 255
		}
	}
	y := make([]float64, n)
	for i := range y {
		s := r.NormFloat64() * 100
		for f := range 10 {
			s += float64(data.Idx[i*F+f]) - 127
		}
		y[i] = -1
		if s > 0 {
			y[i] = 1
		}
	}
	bins := make([]int, F)
	lo := make([]float64, F)
	for f := range bins {
		bins[f], lo[f] = 255, -1
	}
	bin, _ := newBinning(bins, lo)
	// Two trees each: DPBoost's two subsets (T_e = 2) hold 53% and 47% of
	// the rows; SEQ with clipped gradients grows private trees on all rows,
	// like NP, which isolates the cost of the mechanisms.
	for _, c := range []struct {
		name   string
		method Method
		clip   bool
	}{{"dpboost", DPBoost, false}, {"seq-clip", SEQ, true}, {"np", NP, false}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Method, cfg.Trees, cfg.EnsembleSize, cfg.ClipGradients = c.method, 2, 2, c.clip
			benchTrees(b, cfg, bin, data, y)
		})
	}
}
