package boost

import (
	"errors"
	"fmt"
	"math"
)

// errClamp keeps alpha finite when a learner makes no (or only) mistakes.
const errClamp = 1e-10

// Alpha is SAMME's learner weight log((1-err)/err) + log(K-1). err is
// clamped to [1e-10, 1-1e-10] so that a perfect learner gets a large finite
// weight.
func Alpha(err float64, classes int) float64 {
	err = math.Min(math.Max(err, errClamp), 1-errClamp)
	return math.Log((1-err)/err) + math.Log(float64(classes-1))
}

// Ensemble is the list of accepted rounds: predictions are
// argmax_k sum_m alpha_m I(T_m(x) = k).
type Ensemble struct {
	Classes int          `json:"classes"`
	Rounds  []ModelRound `json:"rounds"`
}

// ModelRound is one accepted base learner and its weight.
type ModelRound struct {
	Alpha float64 `json:"alpha"`
	Err   float64 `json:"err"`
	Base  Base    `json:"base"`
}

// Predict is the weighted vote; ties go to the smaller class index.
func (e *Ensemble) Predict(x []float64) int {
	var buf [16]float64
	votes := buf[:0]
	if e.Classes <= len(buf) {
		votes = buf[:e.Classes]
	} else {
		votes = make([]float64, e.Classes)
	}
	for i := range e.Rounds {
		r := &e.Rounds[i]
		votes[r.Base.Predict(x)] += r.Alpha
	}
	return argmax(votes)
}

// Check validates every round against K and d.
func (e *Ensemble) Check(features int) error {
	if e.Classes < 2 {
		return fmt.Errorf("%w: %d classes", ErrBadModel, e.Classes)
	}
	for i := range e.Rounds {
		r := &e.Rounds[i]
		if !finite(r.Alpha) || r.Alpha <= 0 {
			return fmt.Errorf("%w: round %d alpha %v", ErrBadModel, i+1, r.Alpha)
		}
		if err := r.Base.Check(e.Classes, features); err != nil {
			return fmt.Errorf("round %d: %w", i+1, err)
		}
	}
	return nil
}

// Evaluation is accuracy and the confusion matrix (rows: true class,
// columns: predicted class).
type Evaluation struct {
	Accuracy  float64 `json:"accuracy"`
	Confusion [][]int `json:"confusion"`
	N         int     `json:"n"`
}

// ErrEmpty is returned when evaluating on no samples.
var ErrEmpty = errors.New("no samples to evaluate")

// Evaluate predicts every row with f and compares with y.
func Evaluate(X [][]float64, y []int, classes int, f func([]float64) int) (Evaluation, error) {
	if len(X) == 0 {
		return Evaluation{}, ErrEmpty
	}
	ev := Evaluation{Confusion: make([][]int, classes), N: len(X)}
	for k := range ev.Confusion {
		ev.Confusion[k] = make([]int, classes)
	}
	ok := 0
	for i, x := range X {
		p := f(x)
		ev.Confusion[y[i]][p]++
		if p == y[i] {
			ok++
		}
	}
	ev.Accuracy = float64(ok) / float64(len(X))
	return ev, nil
}
