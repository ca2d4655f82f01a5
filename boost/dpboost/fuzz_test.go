package dpboost

import (
	"bytes"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
)

// FuzzReadModel: ReadModel never panics, and a model it accepts predicts
// without panicking on any row of the right width.
func FuzzReadModel(f *testing.F) {
	d, err := dataset.Synthetic(dataset.DefaultSynthetic(300, 1))
	if err != nil {
		f.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Trees, cfg.EnsembleSize, cfg.Depth, cfg.Bins = 2, 2, 2, 4
	m, err := TrainClassifier(cfg, d, rng.Seeded(1), nil)
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	m.Write(&buf)
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format":"ppboost-dpboost-model","version":1}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ReadModel(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		x := make([]float64, len(m.Features))
		for _, v := range []float64{-1, 0, 1} {
			for i := range x {
				x[i] = v
			}
			m.Predict(x)
		}
	})
}
