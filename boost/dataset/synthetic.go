package dataset

import (
	"fmt"
	"math"
	"strconv"

	"github.com/ppboost/ppboost/crypto/rng"
)

// SyntheticConfig has the shape of scikit-learn's make_classification.
type SyntheticConfig struct {
	Samples, Features, Informative, Redundant, Classes, ClustersPerClass int
	ClassSep, FlipY                                                      float64
	Seed                                                                 uint64
}

// DefaultSynthetic is the papers' setting: 2 classes, 20 features (10
// informative, 10 redundant), 2 clusters per class, class separation 1,
// 1% of labels flipped.
func DefaultSynthetic(samples int, seed uint64) SyntheticConfig {
	return SyntheticConfig{Samples: samples, Features: 20, Informative: 10, Redundant: 10, Classes: 2,
		ClustersPerClass: 2, ClassSep: 1, FlipY: 0.01, Seed: seed}
}

// Synthetic generates make_classification-shaped data: each cluster draws
// its informative features N(0, I) times a random matrix A (entries
// uniform in [-1, 1]) plus a centroid at a distinct vertex of the hypercube
// [-ClassSep, ClassSep]^informative; redundant features are the informative
// ones times a random matrix B; the rest are N(0, 1) noise; FlipY of the
// labels are redrawn uniformly. Columns keep that order (informative,
// redundant, noise); rows are shuffled.
//
// Features are scaled to [-1, 1] with PUBLIC bounds derived analytically
// from the generator's parameters — per feature, the extreme cluster means
// plus or minus 4 standard deviations — never from the sampled data; the
// rare values beyond them (about 6e-5 per feature) are clipped.
func Synthetic(c SyntheticConfig) (*Dataset, error) {
	if c.Samples < 1 || c.Classes < 2 || c.Informative < 1 || c.ClustersPerClass < 1 ||
		c.Redundant < 0 || c.Features < c.Informative+c.Redundant || c.FlipY < 0 || c.FlipY > 1 || !(c.ClassSep > 0) {
		return nil, fmt.Errorf("synthetic: invalid configuration %+v", c)
	}
	clusters := c.Classes * c.ClustersPerClass
	if c.Informative < 63 && clusters > 1<<c.Informative {
		return nil, fmt.Errorf("synthetic: %d clusters need more than %d informative features", clusters, c.Informative)
	}
	r := rng.Derive(c.Seed, 0x53594e)
	ni, nr := c.Informative, c.Redundant
	// Distinct hypercube vertices as centroids.
	seen := map[uint64]bool{}
	cent := make([][]float64, clusters)
	for k := range cent {
		var code uint64
		for {
			code = 0
			for j := 0; j < ni && j < 64; j++ {
				code |= uint64(r.IntN(2)) << j
			}
			if !seen[code] || ni > 64 {
				break
			}
		}
		seen[code] = true
		cent[k] = make([]float64, ni)
		for j := range cent[k] {
			if j < 64 && code>>j&1 == 1 {
				cent[k][j] = c.ClassSep
			} else if j < 64 {
				cent[k][j] = -c.ClassSep
			} else if r.IntN(2) == 1 {
				cent[k][j] = c.ClassSep
			} else {
				cent[k][j] = -c.ClassSep
			}
		}
	}
	A := make([][][]float64, clusters) // per cluster ni x ni
	for k := range A {
		A[k] = uniformMatrix(r, ni, ni)
	}
	B := uniformMatrix(r, ni, nr)
	// Public bounds per feature.
	d := c.Features
	lo, hi := make([]float64, d), make([]float64, d)
	for j := range lo {
		lo[j], hi[j] = math.Inf(1), math.Inf(-1)
	}
	for k := 0; k < clusters; k++ {
		for j := 0; j < ni; j++ {
			sd := 0.0
			for i := 0; i < ni; i++ {
				sd += A[k][i][j] * A[k][i][j]
			}
			sd = math.Sqrt(sd)
			lo[j], hi[j] = math.Min(lo[j], cent[k][j]-4*sd), math.Max(hi[j], cent[k][j]+4*sd)
		}
		for q := 0; q < nr; q++ {
			mean, sd := 0.0, 0.0
			for j := 0; j < ni; j++ {
				mean += cent[k][j] * B[j][q]
			}
			for i := 0; i < ni; i++ {
				s := 0.0
				for j := 0; j < ni; j++ {
					s += A[k][i][j] * B[j][q]
				}
				sd += s * s
			}
			sd = math.Sqrt(sd)
			lo[ni+q], hi[ni+q] = math.Min(lo[ni+q], mean-4*sd), math.Max(hi[ni+q], mean+4*sd)
		}
	}
	for j := ni + nr; j < d; j++ {
		lo[j], hi[j] = -4, 4
	}
	n := c.Samples
	ds := &Dataset{Name: "synthetic", X: make([][]float64, n), Y: make([]int, n)}
	for k := 0; k < c.Classes; k++ {
		ds.Classes = append(ds.Classes, strconv.Itoa(k))
	}
	for j := 0; j < d; j++ {
		ds.Features = append(ds.Features, fmt.Sprintf("x%d", j))
	}
	back := make([]float64, n*d)
	z := make([]float64, ni)
	inf := make([]float64, ni)
	perm := r.Perm(n)
	for s := 0; s < n; s++ {
		k := s % clusters // equal cluster sizes (the remainder spread)
		for i := range z {
			z[i] = r.NormFloat64()
		}
		for j := 0; j < ni; j++ {
			v := cent[k][j]
			for i := 0; i < ni; i++ {
				v += z[i] * A[k][i][j]
			}
			inf[j] = v
		}
		x := back[perm[s]*d : (perm[s]+1)*d : (perm[s]+1)*d]
		copy(x, inf)
		for q := 0; q < nr; q++ {
			v := 0.0
			for j := 0; j < ni; j++ {
				v += inf[j] * B[j][q]
			}
			x[ni+q] = v
		}
		for j := ni + nr; j < d; j++ {
			x[j] = r.NormFloat64()
		}
		for j := range x {
			x[j] = math.Max(-1, math.Min(1, 2*(x[j]-lo[j])/(hi[j]-lo[j])-1))
		}
		y := k % c.Classes
		if c.FlipY > 0 && r.Float64() < c.FlipY {
			y = r.IntN(c.Classes)
		}
		ds.X[perm[s]], ds.Y[perm[s]] = x, y
	}
	ds.Schema = ds.IdentitySchema()
	return ds, nil
}

func uniformMatrix(r interface{ Float64() float64 }, rows, cols int) [][]float64 {
	m := make([][]float64, rows)
	for i := range m {
		m[i] = make([]float64, cols)
		for j := range m[i] {
			m[i][j] = 2*r.Float64() - 1
		}
	}
	return m
}
