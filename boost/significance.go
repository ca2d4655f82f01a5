package boost

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Significant tests whether the base learner b is better than chance on the
// weighted labelled data (X, y, w): the data user's validation set with its
// current SAMME weights. It returns the test statistic z and whether b passes
// at the one-sided level (for example 0.05).
//
// Chance is a classifier whose predictions are independent of the labels
// and as frequent as b's: with pi_k the weighted share of class k and
// q_k the weighted share of the predictions equal to k, its expected error
// is e0 = 1 - sum_k q_k pi_k. Under that null each sample i is misclassified
// independently with probability 1 - pi_{b(x_i)}, so the weighted error
// err = sum_i w_i I(b(x_i) != y_i) (w normalized to sum 1) has mean e0 and
// variance sum_i w_i^2 pi_{b(x_i)} (1 - pi_{b(x_i)}). z = (e0 - err)/sd, and
// b passes when z >= the (1 - level) normal quantile and err < (K-1)/K (so
// that alpha > 0).
//
// A constant classifier has err = e0 exactly (z = 0) and never passes, however
// unbalanced the weights are: such null learners would otherwise get a small
// positive alpha and spend a group of owners for nothing. A learner whose
// predictions carry no information about the labels passes with probability
// about level.
func Significant(b *Base, X [][]float64, y []int, w []float64, classes int, level float64) (z float64, ok bool) {
	if len(X) == 0 || classes < 2 {
		return 0, false
	}
	pred := make([]int, len(X))
	pi := make([]float64, classes)
	q := make([]float64, classes)
	tot, werr := 0.0, 0.0
	for i, x := range X {
		p := b.Predict(x)
		pred[i] = p
		pi[y[i]] += w[i]
		q[p] += w[i]
		tot += w[i]
		if p != y[i] {
			werr += w[i]
		}
	}
	if !(tot > 0) {
		return 0, false
	}
	e0 := 1.0
	for k := range pi {
		pi[k] /= tot
		q[k] /= tot
		e0 -= q[k] * pi[k]
	}
	werr /= tot
	v := 0.0
	for i, p := range pred {
		wi := w[i] / tot
		v += wi * wi * pi[p] * (1 - pi[p])
	}
	if !(v > 0) {
		return 0, false
	}
	z = (e0 - werr) / math.Sqrt(v)
	crit := distuv.UnitNormal.Quantile(1 - level)
	return z, z >= crit && werr < float64(classes-1)/float64(classes)
}
