package pfds

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// softmaxProblem is the multinomial logistic regression objective over K
// classes with one weight vector of D = dim+1 coordinates per class
// (coordinate dim is the bias), stacked class by class:
//
//	J(W) = (1/n) sum_i [log sum_k exp(W_k.x_i) - W_{y_i}.x_i] + sum_k sum_j reg_j/2 W_kj^2
//
// with reg_j = lambda for the weights and 1e-9 for the biases, as the
// binary newton. The loss is invariant to adding one vector to every
// class; the L2 term makes the minimizer unique (along the common bias
// direction only through the 1e-9, where the gradient is 0 up to
// rounding, so the biases' common shift stays at its start, 0).
type softmaxProblem struct {
	rows   []sparse
	y      []int
	K, dim int
	D      int // dim + 1
	n      float64
	lambda float64
}

func (p *softmaxProblem) reg(j int) float64 {
	if j == p.dim {
		return 1e-9
	}
	return p.lambda
}

// probs sets pr to the softmax of row r's K scores and returns the row's
// loss.
func (p *softmaxProblem) probs(w []float64, r sparse, y int, pr []float64) float64 {
	mx := math.Inf(-1)
	for k := range pr {
		pr[k] = dot(w[k*p.D:(k+1)*p.D], r)
		mx = max(mx, pr[k])
	}
	zy := pr[y]
	sum := 0.0
	for k := range pr {
		pr[k] = math.Exp(pr[k] - mx)
		sum += pr[k]
	}
	for k := range pr {
		pr[k] /= sum
	}
	return mx + math.Log(sum) - zy
}

func (p *softmaxProblem) obj(w []float64) float64 {
	pr := make([]float64, p.K)
	s := 0.0
	for i, r := range p.rows {
		s += p.probs(w, r, p.y[i], pr)
	}
	s /= p.n
	for k := 0; k < p.K; k++ {
		for j := 0; j < p.D; j++ {
			v := w[k*p.D+j]
			s += p.reg(j) / 2 * v * v
		}
	}
	return s
}

// derivatives sets grad and H to J's gradient and Hessian at w:
// H_{(k,a),(l,b)} = (1/n) sum_i p_ik (delta_kl - p_il) x_ia x_ib + reg.
func (p *softmaxProblem) derivatives(w, grad, hraw []float64, H *mat.SymDense) {
	N := p.K * p.D
	clear(grad)
	clear(hraw)
	pr := make([]float64, p.K)
	for i, r := range p.rows {
		p.probs(w, r, p.y[i], pr)
		for k := 0; k < p.K; k++ {
			g := pr[k]
			if k == p.y[i] {
				g--
			}
			for a, ja := range r.idx {
				grad[k*p.D+int(ja)] += g * r.val[a]
			}
			for l := k; l < p.K; l++ {
				c := -pr[k] * pr[l]
				if l == k {
					c += pr[k]
				}
				if c == 0 {
					continue
				}
				for a, ja := range r.idx {
					row := (k*p.D + int(ja)) * N
					ca := c * r.val[a]
					b0 := 0
					if l == k {
						b0 = a
					}
					for b := b0; b < len(r.idx); b++ {
						hraw[row+l*p.D+int(r.idx[b])] += ca * r.val[b]
					}
				}
			}
		}
	}
	for k := 0; k < p.K; k++ {
		for j := 0; j < p.D; j++ {
			q := k*p.D + j
			grad[q] = grad[q]/p.n + p.reg(j)*w[q]
		}
	}
	for a := 0; a < N; a++ {
		for b := a; b < N; b++ {
			v := hraw[a*N+b] / p.n
			if a == b {
				v += p.reg(a % p.D)
			}
			H.SetSym(a, b, v)
		}
	}
}

// maxSoftmaxDim caps K(d+1), the side of the dense Hessian softmaxNewton
// factorizes (Adult's 108 features and 10 classes: 1,090).
const maxSoftmaxDim = 4096

// softmaxNewton minimizes softmaxProblem by Newton's method with Armijo
// backtracking, as newton does for the binary losses (same stopping rule:
// Newton decrement^2/2 below 1e-10, at most 50 steps).
func softmaxNewton(rows []sparse, y []int, K, dim int, lambda float64, warm []float64) ([]float64, error) {
	p := &softmaxProblem{rows: rows, y: y, K: K, dim: dim, D: dim + 1, n: float64(len(rows)), lambda: lambda}
	N := K * p.D
	if N > maxSoftmaxDim {
		return nil, fmt.Errorf("%w: multinomial logistic regression over %d classes and %d features has %d weights, "+
			"more than the %d a dense Newton Hessian is built for (2 x %d MB); use the one-vs-rest svm learner, or fewer features",
			ErrFit, K, dim, N, maxSoftmaxDim, 8*maxSoftmaxDim*maxSoftmaxDim>>20)
	}
	w := make([]float64, N)
	if warm != nil {
		copy(w, warm)
	}
	grad := make([]float64, N)
	hraw := make([]float64, N*N)
	H := mat.NewSymDense(N, nil)
	next := make([]float64, N)
	cur := p.obj(w)
	for it := 0; it < 50; it++ {
		p.derivatives(w, grad, hraw, H)
		step, dec, err := newtonStep(H, grad)
		if err != nil {
			return nil, err
		}
		if dec/2 < 1e-10 {
			return w, nil
		}
		t, v := 1.0, cur
		found := false
		for k := 0; k < 40; k++ {
			for j := range w {
				next[j] = w[j] - t*step.AtVec(j)
			}
			if v = p.obj(next); v <= cur-1e-4*t*dec {
				found = true
				break
			}
			t /= 2
		}
		if !found {
			return w, nil // no further progress possible at float precision
		}
		w, next = next, w
		cur = v
	}
	return w, nil
}
