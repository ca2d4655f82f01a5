package boost

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/ppboost/ppboost/crypto/ldp"
)

// stumpStatistic is the owner's weighted cross-table statistic (see doc.go).
// For K = 2 it is compact: the left-branch class difference s_j0 of each
// split and, last, the owner's total class difference T, from which the
// user recovers every right branch as s_j1 = T - s_j0.
func stumpStatistic(s *Spec, X [][]float64, Y []int, W []float64) []float64 {
	K := s.Classes
	v := make([]float64, s.ShareDim(len(X)))
	S := len(s.Splits)
	for i, x := range X {
		w, y := W[i], Y[i]
		if K == 2 {
			if y != 0 {
				w = -w
			}
			v[S] += w
		}
		for j, sp := range s.Splits {
			b := 0
			if x[sp.Feature] >= sp.Threshold {
				b = 1
			}
			if K == 2 {
				if b == 0 {
					v[j] += w
				}
			} else {
				v[(2*j+b)*K+y] += w
			}
		}
	}
	return v
}

// StumpScores returns, for every candidate split of the spec, the
// aggregated score the data user maximizes: sum over branches of the
// majority class's aggregated weight (for K = 2 the paper's
// phi_j = |S_j0| + |S_j1|, equation 5), with each branch's majority class.
// The shares are summed in order.
func StumpScores(s *Spec, shares []Share) (phi []float64, labels [][2]int, err error) {
	K := s.Classes
	S := len(s.Splits)
	sum := make([]float64, s.ShareDim(0))
	for i, sh := range shares {
		if len(sh.Values) != len(sum) {
			return nil, nil, fmt.Errorf("share %d has %d values, want %d", i, len(sh.Values), len(sum))
		}
		for k, v := range sh.Values {
			sum[k] += v
		}
	}
	phi = make([]float64, S)
	labels = make([][2]int, S)
	for j := 0; j < S; j++ {
		for b := 0; b < 2; b++ {
			if K == 2 {
				v := sum[j]
				if b == 1 {
					v = sum[S] - sum[j]
				}
				phi[j] += math.Abs(v)
				if v < 0 {
					labels[j][b] = 1
				}
				continue
			}
			row := sum[(2*j+b)*K : (2*j+b+1)*K]
			arg := argmax(row)
			labels[j][b] = arg
			phi[j] += row[arg]
		}
	}
	return phi, labels, nil
}

// aggregateStump picks the split whose branches' majority classes carry the
// most aggregated weight, and labels each branch with its majority.
func aggregateStump(s *Spec, shares []Share) (*Base, error) {
	phi, labels, err := StumpScores(s, shares)
	if err != nil {
		return nil, err
	}
	best := 0
	for j, p := range phi {
		if p > phi[best] {
			best = j
		}
	}
	sp := s.Splits[best]
	lab := labels[best]
	return &Base{Stump: &StumpModel{Feature: sp.Feature, Threshold: sp.Threshold, Left: lab[0], Right: lab[1]}}, nil
}

func argmax(v []float64) int {
	a := 0
	for i, x := range v {
		if x > v[a] {
			a = i
		}
	}
	return a
}

// nccShare perturbs each weighted sample u_i = clip(N w_i x_i) with eps/N
// (Alg. 5, line 8) and releases it with its label. N w_i is 1 on average, so
// in the first round u_i = x_i: the paper's release. The weight is inside the
// perturbed vector and never released on its own.
func nccShare(s *Spec, X [][]float64, Y []int, W []float64, r *rand.Rand) (Share, error) {
	n, d := len(X), s.Features
	sh := Share{Values: make([]float64, n*d), Labels: make([]int, n)}
	var m ldp.Mechanism
	if s.Mechanism != ldp.None {
		var err error
		if m, err = ldp.New(s.Mechanism, s.Epsilon/float64(n), d, ldp.Clip); err != nil {
			return Share{}, err
		}
	}
	for i, x := range X {
		v := float64(n) * W[i]
		row := sh.Values[i*d : (i+1)*d]
		for j := 0; j < d; j++ {
			row[j] = v * x[j]
		}
		if m != nil {
			if err := m.Perturb(r, row, row); err != nil {
				return Share{}, err
			}
		}
		sh.Labels[i] = Y[i]
	}
	return sh, nil
}

// aggregateNCC computes each class centroid as sum_i u_i' / (n_k f_k): the
// released count n_k of class-k samples times f_k, the class's average
// weight relative to all samples (Spec.ClassWeight, estimated by the data
// user on its own validation data; 1 when unset, as in the first round).
// The denominator is public and positive, so a centroid never collapses to
// the origin through noise. A class with no released sample keeps the
// origin (it cannot be estimated at all).
func aggregateNCC(s *Spec, shares []Share) (*Base, error) {
	d, K := s.Features, s.Classes
	num := make([][]float64, K)
	cnt := make([]float64, K)
	for k := range num {
		num[k] = make([]float64, d)
	}
	for i, sh := range shares {
		if len(sh.Values) != len(sh.Labels)*d {
			return nil, fmt.Errorf("share %d has %d values for %d labels, want %d per label", i, len(sh.Values), len(sh.Labels), d)
		}
		for r, y := range sh.Labels {
			if y < 0 || y >= K {
				return nil, fmt.Errorf("share %d: label %d outside [0,%d)", i, y, K)
			}
			row := sh.Values[r*d : (r+1)*d]
			for j := 0; j < d; j++ {
				num[y][j] += row[j]
			}
			cnt[y]++
		}
	}
	for k := range num {
		if cnt[k] == 0 {
			continue
		}
		f := 1.0
		if len(s.ClassWeight) == K && s.ClassWeight[k] > 0 && finite(s.ClassWeight[k]) {
			f = s.ClassWeight[k]
		}
		for j := range num[k] {
			num[k][j] /= cnt[k] * f
		}
	}
	return &Base{NCC: &NCCModel{Centroids: num}}, nil
}

// fitLogReg fits the owner's weighted, L2-regularized logistic regression by
// Newton's method (IRLS) and returns its parameters clipped to [-1, 1]:
// d weights and the intercept per vector, one vector for K = 2, K vectors
// one-vs-rest otherwise.
func fitLogReg(s *Spec, X [][]float64, Y []int, W []float64) ([]float64, error) {
	n, d := len(X), s.Features
	a := make([]float64, n) // sample weights N w_i, average 1
	for i := range a {
		a[i] = float64(n) * W[i]
	}
	vectors := s.Classes
	if s.Classes == 2 {
		vectors = 1
	}
	out := make([]float64, 0, vectors*(d+1))
	y := make([]float64, n)
	for c := 0; c < vectors; c++ {
		pos := c
		if s.Classes == 2 {
			pos = 1
		}
		for i := range y {
			y[i] = 0
			if Y[i] == pos {
				y[i] = 1
			}
		}
		theta, err := irls(X, y, a, s.LogRegL2, s.LogRegIterations)
		if err != nil {
			return nil, err
		}
		if s.LogRegNormalize {
			mx := 0.0
			for _, v := range theta {
				mx = math.Max(mx, math.Abs(v))
			}
			if mx > 0 {
				for j := range theta {
					theta[j] /= mx
				}
			}
		}
		for j := range theta {
			theta[j] = math.Max(-1, math.Min(1, theta[j]))
		}
		out = append(out, theta...)
	}
	return out, nil
}

// irls minimizes (1/n) sum a_i logloss(y_i, sigmoid(theta.x_i + b)) + l2/2 |theta|^2.
func irls(X [][]float64, y, a []float64, l2 float64, iters int) ([]float64, error) {
	n, d := len(X), len(X[0])
	p := d + 1
	theta := make([]float64, p)
	H := mat.NewSymDense(p, nil)
	g := mat.NewVecDense(p, nil)
	step := mat.NewVecDense(p, nil)
	var chol mat.Cholesky
	xa := make([]float64, p)
	inv := 1 / float64(n)
	for it := 0; it < iters; it++ {
		H.Zero()
		g.Zero()
		hd := H.RawSymmetric().Data
		gd := g.RawVector().Data
		for i, x := range X {
			copy(xa, x)
			xa[d] = 1
			z := 0.0
			for j, v := range xa {
				z += theta[j] * v
			}
			pr := sigmoid(z)
			gr := a[i] * (pr - y[i]) * inv
			hw := a[i] * pr * (1 - pr) * inv
			for j, vj := range xa {
				gd[j] += gr * vj
				if hw == 0 {
					continue
				}
				row := hd[j*p:]
				for k := j; k < p; k++ {
					row[k] += hw * vj * xa[k]
				}
			}
		}
		for j := 0; j < p; j++ {
			hd[j*p+j] += l2
			gd[j] += l2 * theta[j]
		}
		if ok := chol.Factorize(H); !ok {
			return nil, fmt.Errorf("logreg: Hessian not positive definite")
		}
		if err := chol.SolveVecTo(step, g); err != nil {
			return nil, fmt.Errorf("logreg: %w", err)
		}
		for j := range theta {
			theta[j] -= step.AtVec(j)
		}
	}
	return theta, nil
}

func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// aggregateLogReg averages the perturbed parameter vectors (Alg. 7, line 12).
func aggregateLogReg(s *Spec, shares []Share) (*Base, error) {
	dim := s.ShareDim(0)
	mean := make([]float64, dim)
	for i, sh := range shares {
		if len(sh.Values) != dim {
			return nil, fmt.Errorf("share %d has %d values, want %d", i, len(sh.Values), dim)
		}
		for k, v := range sh.Values {
			mean[k] += v
		}
	}
	for k := range mean {
		mean[k] /= float64(len(shares))
	}
	p := s.Features + 1
	theta := make([][]float64, dim/p)
	for c := range theta {
		theta[c] = mean[c*p : (c+1)*p]
	}
	return &Base{LogReg: &LogRegModel{Theta: theta}}, nil
}

// Aggregate builds the round's base learner T_m from the perturbed shares
// (the data user's side of Alg. 5-7). Shares are summed in the order given;
// callers order them by owner so that runs are reproducible.
func Aggregate(s *Spec, shares []Share) (*Base, error) {
	if len(shares) == 0 {
		return nil, fmt.Errorf("aggregate: no shares")
	}
	for i, sh := range shares {
		for k, v := range sh.Values {
			if !finite(v) {
				return nil, fmt.Errorf("aggregate: share %d value %d is %v", i, k, v)
			}
		}
	}
	var b *Base
	var err error
	switch s.Learner {
	case Stump:
		b, err = aggregateStump(s, shares)
	case NCC:
		b, err = aggregateNCC(s, shares)
	case LogReg:
		b, err = aggregateLogReg(s, shares)
	default:
		err = fmt.Errorf("unknown learner %q", s.Learner)
	}
	if err != nil {
		return nil, fmt.Errorf("aggregate: %w", err)
	}
	return b, nil
}

// CheckShare validates a share received from the network against the spec
// before it is aggregated: right length, finite values, labels in range.
func CheckShare(s *Spec, sh Share) error {
	switch s.Learner {
	case NCC:
		if len(sh.Labels) == 0 || len(sh.Values) != len(sh.Labels)*s.Features {
			return fmt.Errorf("ncc share: %d values for %d labels", len(sh.Values), len(sh.Labels))
		}
		for _, y := range sh.Labels {
			if y < 0 || y >= s.Classes {
				return fmt.Errorf("ncc share: label %d outside [0,%d)", y, s.Classes)
			}
		}
	default:
		if len(sh.Values) != s.ShareDim(0) || len(sh.Labels) != 0 {
			return fmt.Errorf("%s share: %d values and %d labels, want %d values", s.Learner, len(sh.Values), len(sh.Labels), s.ShareDim(0))
		}
	}
	bound := math.Inf(1)
	if s.Mechanism != ldp.None {
		eps, dim := s.Epsilon, len(sh.Values)
		if s.Learner == NCC {
			eps, dim = s.Epsilon/float64(len(sh.Labels)), s.Features
		}
		if m, err := ldp.New(s.Mechanism, eps, dim, ldp.Clip); err == nil {
			bound = m.Bound() * (1 + 1e-12)
		}
	}
	for k, v := range sh.Values {
		if !finite(v) {
			return fmt.Errorf("share value %d is %v", k, v)
		}
		if math.Abs(v) > bound {
			return fmt.Errorf("share value %d is %v, outside the %s mechanism's output range [-%.6g, %.6g]", k, v, s.Mechanism, bound, bound)
		}
	}
	return nil
}
