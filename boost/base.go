package boost

import (
	"errors"
	"fmt"
	"math"
)

// Base is one base learner T_m. Exactly one of the fields is set.
type Base struct {
	Stump  *StumpModel  `json:"stump,omitempty"`
	NCC    *NCCModel    `json:"ncc,omitempty"`
	LogReg *LogRegModel `json:"logreg,omitempty"`
}

// StumpModel predicts Left when x[Feature] < Threshold, else Right.
type StumpModel struct {
	Feature   int     `json:"feature"`
	Threshold float64 `json:"threshold"`
	Left      int     `json:"left"`
	Right     int     `json:"right"`
}

// NCCModel predicts the class of the nearest centroid (squared Euclidean).
type NCCModel struct {
	Centroids [][]float64 `json:"centroids"` // K x d
}

// LogRegModel holds one parameter vector (d weights, then the intercept)
// for K = 2 (class 1 when theta.x + b >= 0), or K one-vs-rest vectors.
type LogRegModel struct {
	Theta [][]float64 `json:"theta"`
}

// ErrBadModel marks a base learner or model that does not fit its schema.
var ErrBadModel = errors.New("bad model")

// Predict returns the class T_m(x).
func (b *Base) Predict(x []float64) int {
	switch {
	case b.Stump != nil:
		s := b.Stump
		if x[s.Feature] < s.Threshold {
			return s.Left
		}
		return s.Right
	case b.NCC != nil:
		best, bestD := 0, math.Inf(1)
		for k, c := range b.NCC.Centroids {
			d := 0.0
			for j, v := range c {
				t := x[j] - v
				d += t * t
			}
			if d < bestD {
				best, bestD = k, d
			}
		}
		return best
	case b.LogReg != nil:
		th := b.LogReg.Theta
		if len(th) == 1 {
			if linear(th[0], x) >= 0 {
				return 1
			}
			return 0
		}
		best, bestV := 0, math.Inf(-1)
		for k, t := range th {
			if v := linear(t, x); v > bestV {
				best, bestV = k, v
			}
		}
		return best
	}
	return 0
}

// linear is theta[:d].x + theta[d].
func linear(theta, x []float64) float64 {
	d := len(x)
	s := theta[d]
	for j := 0; j < d; j++ {
		s += theta[j] * x[j]
	}
	return s
}

// Check validates a base learner against K classes and d features, so that
// Predict cannot index out of range on a learner received from the network.
func (b *Base) Check(classes, features int) error {
	n := 0
	if b.Stump != nil {
		n++
		s := b.Stump
		if s.Feature < 0 || s.Feature >= features {
			return fmt.Errorf("%w: stump feature %d outside [0,%d)", ErrBadModel, s.Feature, features)
		}
		if s.Left < 0 || s.Left >= classes || s.Right < 0 || s.Right >= classes {
			return fmt.Errorf("%w: stump labels %d/%d outside [0,%d)", ErrBadModel, s.Left, s.Right, classes)
		}
		if !finite(s.Threshold) {
			return fmt.Errorf("%w: stump threshold %v", ErrBadModel, s.Threshold)
		}
	}
	if b.NCC != nil {
		n++
		if len(b.NCC.Centroids) != classes {
			return fmt.Errorf("%w: ncc has %d centroids, want %d", ErrBadModel, len(b.NCC.Centroids), classes)
		}
		if err := checkMatrix(b.NCC.Centroids, features); err != nil {
			return fmt.Errorf("%w: ncc: %v", ErrBadModel, err)
		}
	}
	if b.LogReg != nil {
		n++
		want := classes
		if classes == 2 {
			want = 1
		}
		if len(b.LogReg.Theta) != want {
			return fmt.Errorf("%w: logreg has %d parameter vectors, want %d", ErrBadModel, len(b.LogReg.Theta), want)
		}
		if err := checkMatrix(b.LogReg.Theta, features+1); err != nil {
			return fmt.Errorf("%w: logreg: %v", ErrBadModel, err)
		}
	}
	if n != 1 {
		return fmt.Errorf("%w: base learner must have exactly one kind, has %d", ErrBadModel, n)
	}
	return nil
}

func checkMatrix(m [][]float64, cols int) error {
	for i, row := range m {
		if len(row) != cols {
			return fmt.Errorf("row %d has %d values, want %d", i, len(row), cols)
		}
		for j, v := range row {
			if !finite(v) {
				return fmt.Errorf("row %d value %d is %v", i, j, v)
			}
		}
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
