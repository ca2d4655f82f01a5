package pfds

import (
	"errors"
	"fmt"
	"math"
)

// ErrParams marks an invalid Params value.
var ErrParams = errors.New("pfds: invalid parameters")

// Params are the public hyper-parameters of a PFDS run. Every agent uses the
// same values; in the distributed session the announcer fixes them.
type Params struct {
	// Eps is each agent's total privacy budget: Eps/2 for the tree (Alg. 3,
	// eps' = Eps/(2*HMax) per level) and Eps/2 for the node counts of
	// optPrivateGen (Alg. 5). PFDS is Eps-DP (Thm 3.3).
	Eps float64
	// HMax is the tree depth in levels (root = level 1, leaves at HMax): at
	// most HMax-1 splits on a path. The paper uses 8.
	HMax int
	// T is the number of random candidate split values of a numeric
	// attribute (the paper uses 10).
	T int
	// P is the number of levels the post-processing looks at: the node
	// counts of levels 1..P-1 plus the leaves (the paper uses 4).
	P int
	// MaxLeaves caps the number of leaves of a tree. It is NOT in the paper:
	// with categorical attributes branching on every category (Adult's
	// native-country has 42), h_max = 8 trees reach millions of leaves. A
	// node with leaf budget B draws its attribute uniformly among those with
	// at most B branches and gives each of its k children the budget B/k; a
	// node with B < 2 becomes a leaf early. The cap is public and
	// data-independent, so it costs no privacy. 0 means no cap.
	MaxLeaves int
	// Optimize enables the least-squares post-processing (line 3 of Alg. 5).
	// Without it (the paper's PFDS-) the leaf sizes are the noisy leaf
	// counts clipped at zero and the level counts are not queried.
	Optimize bool
}

// DefaultParams are the paper's settings (h_max 8, t 10, p 4) with eps 1 and
// a 4096-leaf cap.
func DefaultParams() Params {
	return Params{Eps: 1, HMax: 8, T: 10, P: 4, MaxLeaves: 4096, Optimize: true}
}

// Validate checks every field and names the bad one.
func (p Params) Validate() error {
	switch {
	case !(p.Eps > 0) || math.IsInf(p.Eps, 0):
		return fmt.Errorf("%w: Eps %v must be positive and finite", ErrParams, p.Eps)
	case p.HMax < 1 || p.HMax > 32:
		return fmt.Errorf("%w: HMax %d must be in [1, 32]", ErrParams, p.HMax)
	case p.T < 1 || p.T > 1<<16:
		return fmt.Errorf("%w: T %d must be in [1, 65536]", ErrParams, p.T)
	case p.P < 2 || p.P > p.HMax+1:
		return fmt.Errorf("%w: P %d must be in [2, HMax+1 = %d]", ErrParams, p.P, p.HMax+1)
	case p.MaxLeaves < 0 || p.MaxLeaves > 1<<22:
		return fmt.Errorf("%w: MaxLeaves %d must be in [0, 4194304]", ErrParams, p.MaxLeaves)
	}
	return nil
}

// TreeEps is the per-level budget eps' = Eps/(2*HMax) of Alg. 3.
func (p Params) TreeEps() float64 { return p.Eps / (2 * float64(p.HMax)) }

// CountEps is the budget of each level count of Alg. 5: (Eps/2)/(P-1).
func (p Params) CountEps() float64 { return p.Eps / 2 / float64(p.P-1) }
