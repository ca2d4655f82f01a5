package pfds

import (
	"fmt"
	"math/rand/v2"

	"github.com/ppboost/ppboost/crypto/rng"
)

// Mode is the PFDS variant of the paper's Table 2.
type Mode int

const (
	Full  Mode = iota // PFDS: labels by the vote of every shared tree
	Self              // PFDS(s): labels by the agent's own tree only
	Minus             // PFDS-: no least-squares post-processing
)

func (m Mode) String() string {
	switch m {
	case Full:
		return "PFDS"
	case Self:
		return "PFDS(s)"
	case Minus:
		return "PFDS-"
	case Variant:
		return "PFDS-cv"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// Local is one agent's private data: encoded rows and class labels (for a
// regression task, the bucket of each target; Target holds the values).
type Local struct {
	X      [][]float64
	Y      []int
	Target []float64 // LinReg only
}

// DataShare is what an agent publishes in the data-sharing phase: the
// records per leaf of its tree, the public seed the rows are sampled from
// and their labels. With the agent's (public) tree it regenerates the rows.
type DataShare struct {
	Counts []int  // records per leaf, leaves in preorder
	Seed   uint64 // public sampling seed
	Labels []int  // one per record, in sampling order
}

// Rows regenerates the records of a share made on tree t.
func (s *DataShare) Rows(dom *Domain, t *Tree) ([][]float64, error) {
	leaves := t.Leaves()
	if len(leaves) != len(s.Counts) {
		return nil, fmt.Errorf("pfds: share has %d leaf counts, the tree %d leaves", len(s.Counts), len(leaves))
	}
	sz := &Sizes{Leaves: leaves, Counts: s.Counts}
	if sz.Total() != len(s.Labels) {
		return nil, fmt.Errorf("pfds: share has %d records and %d labels", sz.Total(), len(s.Labels))
	}
	return Sample(dom, t, sz, s.Seed), nil
}

// Streams of the per-agent randomness.
const streamAgent = 0x4147454e54 // "AGENT"

// AgentRand is agent i's noise source in reproducible runs; the reference
// and the distributed session draw from it in the same order (tree, then
// leaf sizes, then the sampling seed), so seeded runs agree exactly.
// Production agents use rng.Secure instead.
func AgentRand(seed uint64, agent int) *rand.Rand {
	return rng.Derive(seed, streamAgent, uint64(agent))
}

// ShareData is the data-sharing phase of one agent (Alg. 4): leaf sizes of
// its own tree (Alg. 5), a public sampling seed drawn from r, the sampled
// rows and their labels by the vote of trees (every shared tree; for
// PFDS(s) only its own). It returns the share and the rows.
func ShareData(dom *Domain, own *Tree, trees []*Tree, l Local, p Params, r *rand.Rand) (*DataShare, [][]float64, error) {
	sizes, err := LeafSizes(dom, own, l.X, l.Y, p, r)
	if err != nil {
		return nil, nil, err
	}
	seed := r.Uint64()
	rows := Sample(dom, own, sizes, seed)
	return &DataShare{Counts: sizes.Counts, Seed: seed, Labels: Vote(dom, trees, rows)}, rows, nil
}

// Shared is one agent's published output in a reference run.
type Shared struct {
	Tree *Tree // public (no counts)
	Data *DataShare
	Rows [][]float64
}

// Simulate runs both sharing phases for every agent in one process: the
// oracle of protocol/pfds. Agent i draws from AgentRand(seed, i). In mode
// Minus p.Optimize is turned off; in mode Self every agent labels with its
// own tree.
func Simulate(dom *Domain, agents []Local, p Params, mode Mode, seed uint64) ([]Shared, error) {
	if mode == Variant {
		return nil, fmt.Errorf("%w: mode %s runs with SimulateVariant", ErrParams, mode)
	}
	if mode == Minus {
		p.Optimize = false
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	rs := make([]*rand.Rand, len(agents))
	trees := make([]*Tree, len(agents))
	public := make([]*Tree, len(agents))
	for i, a := range agents {
		rs[i] = AgentRand(seed, i)
		trees[i] = MakeTree(dom, a.X, a.Y, p, rs[i])
		public[i] = trees[i].Public()
	}
	out := make([]Shared, len(agents))
	for i, a := range agents {
		voters := public
		if mode == Self {
			voters = public[i : i+1]
		}
		ds, rows, err := ShareData(dom, trees[i], voters, a, p, rs[i])
		if err != nil {
			return nil, fmt.Errorf("agent %d: %w", i, err)
		}
		out[i] = Shared{Tree: public[i], Data: ds, Rows: rows}
	}
	return out, nil
}

// Union is the training set of an agent's final ERM (Alg. 1, line 3): its
// own data followed by every share's rows and labels.
func Union(own Local, shares []Shared) Local {
	u := Local{X: append([][]float64(nil), own.X...), Y: append([]int(nil), own.Y...)}
	for _, s := range shares {
		u.X = append(u.X, s.Rows...)
		u.Y = append(u.Y, s.Data.Labels...)
	}
	return u
}

// SimulateSizes runs the tree and the counting part only and returns each
// agent's synthetic dataset size (the data-fidelity measure of the paper's
// Fig. 3a), without sampling or labelling.
func SimulateSizes(dom *Domain, agents []Local, p Params, mode Mode, seed uint64) ([]int, error) {
	if mode == Minus {
		p.Optimize = false
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	out := make([]int, len(agents))
	for i, a := range agents {
		r := AgentRand(seed, i)
		t := MakeTree(dom, a.X, a.Y, p, r)
		s, err := LeafSizes(dom, t, a.X, a.Y, p, r)
		if err != nil {
			return nil, err
		}
		out[i] = s.Total()
	}
	return out, nil
}
