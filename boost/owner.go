package boost

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ppboost/ppboost/crypto/ldp"
	"github.com/ppboost/ppboost/dataset"
)

// Share is one owner's released (perturbed) local share.
type Share struct {
	Values []float64 // layout defined by the learner (Spec.ShareDim)
	Labels []int     // ncc only: label of each perturbed sample
}

// Owner is one data owner's private state: its data and sample weights. It
// is what an owner node keeps; nothing in it is released except through
// LocalShare (perturbed) and the secure sums of Evaluate and WeightSum.
type Owner struct {
	Data *dataset.Dataset
	W    []float64

	miss    []bool // I(y_i != T(x_i)) for the last evaluated learner
	missFor *Base
}

// ErrNotEvaluated is returned by Update before Evaluate ran on that learner.
var ErrNotEvaluated = errors.New("weights update before evaluating the learner")

// NewOwner starts with w_i = 1/N (Alg. 2, line 3).
func NewOwner(d *dataset.Dataset) (*Owner, error) {
	n := d.Len()
	if n == 0 {
		return nil, fmt.Errorf("owner %q: no samples", d.Name)
	}
	o := &Owner{Data: d, W: make([]float64, n), miss: make([]bool, n)}
	for i := range o.W {
		o.W[i] = 1 / float64(n)
	}
	return o, nil
}

// Reset restores the initial weights 1/N for a new session.
func (o *Owner) Reset() error {
	n := len(o.W)
	for i := range o.W {
		o.W[i] = 1 / float64(n)
	}
	o.missFor = nil
	return nil
}

// WeightSum is sum_i w_i.
func (o *Owner) WeightSum() float64 {
	s := 0.0
	for _, w := range o.W {
		s += w
	}
	return s
}

// Evaluate returns (sum_i w_i I(y_i != T(x_i)), sum_i w_i), the owner's
// contribution to the err_m secure sum, and remembers the mistakes for Update.
func (o *Owner) Evaluate(b *Base) (werr, wsum float64) {
	for i, x := range o.Data.X {
		m := b.Predict(x) != o.Data.Y[i]
		o.miss[i] = m
		if m {
			werr += o.W[i]
		}
		wsum += o.W[i]
	}
	o.missFor = b
	return werr, wsum
}

// Update applies w_i <- w_i exp(alpha I(y_i != T(x_i))) for the learner last
// passed to Evaluate and returns the new weight sum (the owner's input to the
// renormalization secure sum).
func (o *Owner) Update(b *Base, alpha float64) (float64, error) {
	if o.missFor != b {
		return 0, ErrNotEvaluated
	}
	f := math.Exp(alpha)
	s := 0.0
	for i, m := range o.miss {
		if m {
			o.W[i] *= f
		}
		s += o.W[i]
	}
	o.missFor = nil
	return s, nil
}

// Renormalize scales the weights by owners/total, where total is the secure
// sum of all owners' weight sums and owners the number of owners it covers.
func (o *Owner) Renormalize(total float64, owners int) error {
	if !(total > 0) || math.IsInf(total, 0) {
		return fmt.Errorf("renormalize: weight total %v is not positive and finite", total)
	}
	f := float64(owners) / total
	for i := range o.W {
		o.W[i] *= f
	}
	return nil
}

// LocalShare builds and perturbs this owner's share for one round. r supplies
// the privacy noise (rng.Secure in production).
func (o *Owner) LocalShare(s *Spec, r *rand.Rand) (Share, error) {
	d := o.Data
	if d.Dim() != s.Features {
		return Share{}, fmt.Errorf("owner %q: data has %d features, session wants %d", d.Name, d.Dim(), s.Features)
	}
	if d.NumClasses() != s.Classes {
		return Share{}, fmt.Errorf("owner %q: data has %d classes, session wants %d", d.Name, d.NumClasses(), s.Classes)
	}
	switch s.Learner {
	case Stump:
		v := stumpStatistic(s, d.X, d.Y, o.W)
		return perturbOnce(s, v, r)
	case LogReg:
		v, err := fitLogReg(s, d.X, d.Y, o.W)
		if err != nil {
			return Share{}, fmt.Errorf("owner %q: %w", d.Name, err)
		}
		return perturbOnce(s, v, r)
	case NCC:
		return nccShare(s, d.X, d.Y, o.W, r)
	}
	return Share{}, fmt.Errorf("unknown learner %q", s.Learner)
}

// perturbOnce releases the vector v with the whole budget. With mechanism
// none it is released unclipped (the exact non-private statistic).
func perturbOnce(s *Spec, v []float64, r *rand.Rand) (Share, error) {
	if s.Mechanism == ldp.None {
		return Share{Values: v}, nil
	}
	m, err := ldp.New(s.Mechanism, s.Epsilon, len(v), ldp.Clip)
	if err != nil {
		return Share{}, err
	}
	if err := m.Perturb(r, v, v); err != nil {
		return Share{}, err
	}
	return Share{Values: v}, nil
}
