package dpboost

import "math/rand/v2"

// synth makes n rows of d features uniform in [-1, 1] with labels +-1 from
// a noisy threshold on the first two features.
func synth(r *rand.Rand, n, d int) ([][]float64, []float64) {
	X := make([][]float64, n)
	y := make([]float64, n)
	for i := range X {
		X[i] = make([]float64, d)
		for j := range X[i] {
			X[i][j] = 2*r.Float64() - 1
		}
		y[i] = -1
		if X[i][0]+0.5*X[i][1]+0.3*r.NormFloat64() > 0 {
			y[i] = 1
		}
	}
	return X, y
}
