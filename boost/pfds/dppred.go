package pfds

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ppboost/ppboost/crypto/dlap"
	"gonum.org/v1/gonum/mat"
)

// FitDP trains the DP-Pred baseline's eps-DP predictor on one agent's data:
// objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2) for
// LogReg and SVM, the functional mechanism (Zhang et al. 2012) for LinReg.
// Labels with more than two classes (K = the largest label + 1; FitDPClasses
// names K) get K one-vs-rest machines, each eps/K-DP by objective
// perturbation: every machine reads every row, so they compose
// sequentially to eps. (The multinomial loss has no curvature bound of the
// form objective perturbation's privacy proof needs per coordinate block;
// one-vs-rest keeps the binary proof.)
//
// Both need ||x|| <= 1: rows (with the bias feature 1) are divided by
// sqrt(attrs+1), which bounds the norm since a numeric attribute is in
// [-1, 1] and a categorical one has exactly one hot feature. The returned
// model works on unscaled rows. LinReg targets must lie in [-1, 1].
func FitDP(l Learner, X [][]float64, y []int, target []float64, attrs int, eps, lambda float64, r *rand.Rand) (*Model, error) {
	k := 2
	if l != LinReg {
		for _, v := range y {
			k = max(k, v+1)
		}
	}
	return FitDPClasses(l, X, y, target, k, attrs, eps, lambda, r)
}

// FitDPClasses is FitDP with K classes named (labels 0..K-1; ignored for
// LinReg). For K = 2 it is the binary objective perturbation at eps.
func FitDPClasses(l Learner, X [][]float64, y []int, target []float64, classes, attrs int, eps, lambda float64, r *rand.Rand) (*Model, error) {
	if len(X) == 0 {
		return nil, fmt.Errorf("%w: no rows", ErrFit)
	}
	dim := len(X[0])
	s := 1 / math.Sqrt(float64(attrs+1))
	rows := toSparse(X, s, s)
	unscale := func(w []float64) []float64 {
		for j := range w {
			w[j] *= s
		}
		return w
	}
	if l == LinReg {
		w, err := functional(rows, target, dim, eps, lambda, r)
		if err != nil {
			return nil, err
		}
		return &Model{Learner: l, W: unscale(w)}, nil
	}
	if classes <= 2 {
		w, err := objectivePerturbation(l, rows, signs(y), dim, eps, lambda, r)
		if err != nil {
			return nil, err
		}
		return &Model{Learner: l, W: unscale(w)}, nil
	}
	m := &Model{Learner: l, Multi: make([][]float64, classes)}
	t := make([]float64, len(y))
	for k := range m.Multi {
		ovrTargets(t, y, k)
		w, err := objectivePerturbation(l, rows, t, dim, eps/float64(classes), lambda, r)
		if err != nil {
			return nil, fmt.Errorf("class %d against the rest: %w", k, err)
		}
		m.Multi[k] = unscale(w)
	}
	return m, nil
}

func objectivePerturbation(l Learner, rows []sparse, y []float64, dim int, eps, lambda float64, r *rand.Rand) ([]float64, error) {
	n := float64(len(rows))
	c := l.curvature()
	epsP := eps - math.Log(1+2*c/(n*lambda)+c*c/(n*n*lambda*lambda))
	delta := 0.0
	if epsP <= 0 {
		delta = c/(n*(math.Exp(eps/4)-1)) - lambda
		epsP = eps / 2
	}
	D := dim + 1
	// b has density proportional to exp(-epsP ||b|| / 2): its norm is
	// Gamma(D, 2/epsP) (a sum of D exponentials) and its direction uniform.
	norm := 0.0
	for k := 0; k < D; k++ {
		norm += r.ExpFloat64() * 2 / epsP
	}
	b := make([]float64, D)
	ss := 0.0
	for j := range b {
		b[j] = r.NormFloat64()
		ss += b[j] * b[j]
	}
	for j := range b {
		b[j] *= norm / math.Sqrt(ss)
	}
	return newton(l, rows, y, dim, fitOpts{lambda: lambda + delta, regBias: true, linear: b})
}

// functional perturbs the coefficients of the squared loss's polynomial in
// w with Lap(Delta/eps), Delta = 2(1 + 2D + D^2), then minimizes the noisy
// quadratic after adding n*lambda*I and lifting its eigenvalues to at least
// n*lambda (the noisy matrix need not be positive definite).
func functional(rows []sparse, t []float64, dim int, eps, lambda float64, r *rand.Rand) ([]float64, error) {
	D := dim + 1
	n := float64(len(rows))
	sens := 2 * (1 + 2*float64(D) + float64(D*D))
	alpha := make([]float64, D) // linear coefficients: -2 sum y x_j
	M := make([]float64, D*D)   // quadratic: sum x_j x_l
	for i, row := range rows {
		for a, ja := range row.idx {
			alpha[ja] -= 2 * t[i] * row.val[a]
			for b2, jb := range row.idx {
				M[int(ja)*D+int(jb)] += row.val[a] * row.val[b2]
			}
		}
	}
	// Every coefficient released (D linear, D(D+1)/2 quadratic) goes through
	// one grid mechanism: L1 sensitivity sens over that many coordinates
	// (crypto/dlap: exact discrete Laplace, each coordinate's rounding
	// counted in the integer sensitivity), eps' = mech.Epsilon() <= eps.
	mech, err := dlap.New(sens, D+D*(D+1)/2, eps)
	if err != nil {
		return nil, fmt.Errorf("%w: functional mechanism: %v", ErrFit, err)
	}
	for j := range alpha {
		alpha[j] = mech.Release(r, alpha[j])
	}
	S := mat.NewSymDense(D, nil)
	for a := 0; a < D; a++ {
		for b2 := a; b2 < D; b2++ {
			v := mech.Release(r, M[a*D+b2])
			if a == b2 {
				v += n * lambda
			}
			S.SetSym(a, b2, v)
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(S, true) {
		return nil, fmt.Errorf("%w: eigen-decomposition failed", ErrFit)
	}
	vals := eig.Values(nil)
	var V mat.Dense
	eig.VectorsTo(&V)
	// w = -(1/2) V diag(1/max(v, n lambda)) V^T alpha
	va := make([]float64, D)
	for k := 0; k < D; k++ {
		s := 0.0
		for j := 0; j < D; j++ {
			s += V.At(j, k) * alpha[j]
		}
		va[k] = s / math.Max(vals[k], n*lambda)
	}
	w := make([]float64, D)
	for j := 0; j < D; j++ {
		s := 0.0
		for k := 0; k < D; k++ {
			s += V.At(j, k) * va[k]
		}
		w[j] = -s / 2
	}
	return w, nil
}

// Ensemble is DP-Pred's aggregate: the plurality vote of the models'
// classes (ties to the smallest class; for two classes the majority vote,
// ties to class 0) or, for LinReg, the mean prediction.
type Ensemble []*Model

// Class is the plurality vote.
func (e Ensemble) Class(x []float64) int {
	k := 2
	for _, m := range e {
		k = max(k, m.Classes())
	}
	votes := make([]int, k)
	for _, m := range e {
		votes[m.Class(x)]++
	}
	best := 0
	for c, v := range votes {
		if v > votes[best] {
			best = c
		}
	}
	return best
}

// Predict is the committee average of the scores.
func (e Ensemble) Predict(x []float64) float64 {
	s := 0.0
	for _, m := range e {
		s += m.Score(x)
	}
	return s / float64(len(e))
}
