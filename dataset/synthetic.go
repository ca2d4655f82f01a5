package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/ppboost/ppboost/crypto/rng"
)

// SyntheticConfig has the parameters of scikit-learn's make_classification
// (hypercube=True, shift 0, scale 1).
type SyntheticConfig struct {
	Samples, Features, Informative, Redundant, Classes, ClustersPerClass int
	ClassSep, FlipY                                                      float64
	Seed                                                                 uint64
	// Draw selects an independent draw of samples from the problem Seed
	// defines (clusters, matrices, bounds): draw 0 is the one every command
	// trains on; another draw gives fresh samples of the same problem, to
	// score a model on data it was not trained on.
	Draw uint64
}

// Limits on a synthetic configuration, far above any experiment, so that a
// typo fails clearly instead of exhausting memory.
const (
	maxSyntheticValues   = 1 << 31 // Samples x Features
	maxSyntheticClusters = 1 << 16 // Classes x ClustersPerClass
	maxSyntheticInform   = 1 << 10
)

// DefaultSynthetic is the papers' setting: 2 classes, 20 features (10
// informative, 10 redundant, no noise), 2 clusters per class, ClassSep 1,
// FlipY 0.01. Wang & Chang state the classes, the features and equal class
// sizes; clusters per class, ClassSep and FlipY are not stated, and these
// are scikit-learn's make_classification defaults, which the papers used.
func DefaultSynthetic(samples int, seed uint64) SyntheticConfig {
	return SyntheticConfig{Samples: samples, Features: 20, Informative: 10, Redundant: 10, Classes: 2,
		ClustersPerClass: 2, ClassSep: 1, FlipY: 0.01, Seed: seed}
}

// Validate checks the configuration; errors name the field and the value.
func (c SyntheticConfig) Validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("%w: synthetic %s = %v, %s", ErrConfig, field, v, want)
	}
	switch {
	case c.Samples < 1:
		return bad("Samples", c.Samples, "want at least 1")
	case c.Classes < 2:
		return bad("Classes", c.Classes, "want at least 2")
	case c.ClustersPerClass < 1:
		return bad("ClustersPerClass", c.ClustersPerClass, "want at least 1")
	case c.Classes > maxSyntheticClusters || c.ClustersPerClass > maxSyntheticClusters/c.Classes:
		return bad("Classes x ClustersPerClass", c.Classes*c.ClustersPerClass, fmt.Sprintf("want at most %d", maxSyntheticClusters))
	case c.Informative < 1 || c.Informative > maxSyntheticInform:
		return bad("Informative", c.Informative, fmt.Sprintf("want 1 to %d", maxSyntheticInform))
	case c.Redundant < 0:
		return bad("Redundant", c.Redundant, "want at least 0")
	case c.Features < c.Informative+c.Redundant:
		return bad("Features", c.Features, fmt.Sprintf("want at least Informative + Redundant = %d", c.Informative+c.Redundant))
	case c.Features > maxSyntheticValues/c.Samples:
		return bad("Samples x Features", float64(c.Samples)*float64(c.Features), fmt.Sprintf("want at most %d", maxSyntheticValues))
	case !(c.ClassSep > 0) || math.IsInf(c.ClassSep, 0):
		return bad("ClassSep", c.ClassSep, "want a finite value > 0")
	case !(c.FlipY >= 0 && c.FlipY <= 1):
		return bad("FlipY", c.FlipY, "want a value in [0, 1]")
	}
	if clusters := c.Classes * c.ClustersPerClass; c.Informative < 62 && clusters > 1<<c.Informative {
		return bad("Classes x ClustersPerClass", clusters, fmt.Sprintf("want at most 2^Informative = %d (distinct hypercube vertices)", 1<<c.Informative))
	}
	return nil
}

// Synthetic generates data shaped like scikit-learn's make_classification,
// exactly reproducible from cfg.Seed (with this Go version's math/rand/v2):
//
//   - Classes x ClustersPerClass clusters, cluster k of class k mod Classes,
//     with equal sizes (Samples mod clusters of them get one more row),
//     assigned to the rows by a random permutation (so rows come shuffled);
//   - cluster k's informative features are z*A_k + c_k: z ~ N(0, I), A_k an
//     Informative x Informative matrix with uniform(-1, 1) entries, c_k a
//     distinct vertex of the hypercube [-ClassSep, ClassSep]^Informative;
//   - redundant features are the informative ones times B, an Informative x
//     Redundant matrix with uniform(-1, 1) entries;
//   - the remaining Features - Informative - Redundant are N(0, 1) noise;
//   - a FlipY fraction of the labels (in expectation) is replaced by a
//     uniformly random class, as scikit-learn does;
//   - columns are NOT shuffled: informative first (x0..), then redundant,
//     then noise.
//
// Every feature is then scaled to [-1, 1] with PUBLIC bounds derived
// analytically from the generator's parameters, never from the sample: the
// smallest cluster mean minus 4 standard deviations to the largest cluster
// mean plus 4 standard deviations (cluster k's informative feature j has
// mean c_k[j] and variance sum_i A_k[i][j]^2; a redundant feature's are those
// of the linear map through B; noise is [-4, 4]). Values beyond the bounds
// are clipped to -1 or 1: at most 2*Phi(-4) = 6.3e-5 of any feature.
//
// The rows are slices of one backing array.
func Synthetic(cfg SyntheticConfig) (*Dataset, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := rng.Derive(cfg.Seed, streamSynthetic)
	ni, nr, d := cfg.Informative, cfg.Redundant, cfg.Features
	clusters := cfg.Classes * cfg.ClustersPerClass
	g := &synthModel{ni: ni, nr: nr, d: d}
	g.cent = hypercubeVertices(r, clusters, ni, cfg.ClassSep)
	g.a = make([][]float64, clusters) // a[k][i*ni+j] = A_k[i][j]
	for k := range g.a {
		g.a[k] = uniformMatrix(r, ni, ni)
	}
	g.b = uniformMatrix(r, ni, nr) // b[j*nr+q] = B[j][q]
	g.bounds()

	if cfg.Draw != 0 {
		r = rng.Derive(cfg.Seed, streamSyntheticDraw, cfg.Draw)
	}
	n := cfg.Samples
	ds := &Dataset{Name: "synthetic", Y: make([]int, n), Classes: make([]string, cfg.Classes), Features: make([]string, d)}
	for k := range ds.Classes {
		ds.Classes[k] = strconv.Itoa(k)
	}
	for j := range d {
		ds.Features[j] = "x" + strconv.Itoa(j)
	}
	back := make([]float64, n*d)
	z := make([]float64, ni)
	// Row i comes from cluster perm[i] mod clusters: the clusters' sizes are
	// fixed and the rows come out shuffled, while the rows are still written
	// in order (scattering them would cost a cache miss per row).
	perm := r.Perm(n)
	for row := range n {
		k := perm[row] % clusters
		g.row(back[row*d:(row+1)*d:(row+1)*d], z, k, r)
		y := k % cfg.Classes
		if cfg.FlipY > 0 && r.Float64() < cfg.FlipY {
			y = r.IntN(cfg.Classes)
		}
		ds.Y[row] = y
	}
	ds.X = rowsOf(back, n, d)
	ds.Schema = ds.IdentitySchema()
	return ds, nil
}

// synthModel is Synthetic's generator: the clusters' centres and maps,
// the redundant features' map, and the public scaling of every feature.
type synthModel struct {
	ni, nr, d int
	cent      [][]float64 // cluster centres (hypercube vertices)
	a         [][]float64 // a[k][i*ni+j] = A_k[i][j]
	b         []float64   // b[j*nr+q] = B[j][q]
	mid, inv  []float64   // feature j maps to (x - mid[j]) * inv[j]
}

// bounds derives the public bounds, as midpoint and inverse half-width per
// feature, from the generator's parameters (see Synthetic).
func (g *synthModel) bounds() {
	ni, nr, d := g.ni, g.nr, g.d
	lo, hi := make([]float64, d), make([]float64, d)
	for j := range d {
		lo[j], hi[j] = math.Inf(1), math.Inf(-1)
	}
	cov := make([]float64, ni*nr) // A_k B
	for k := range g.a {
		ak, ck := g.a[k], g.cent[k]
		for j := range ni {
			v := 0.0
			for i := range ni {
				v += ak[i*ni+j] * ak[i*ni+j]
			}
			sd := math.Sqrt(v)
			lo[j], hi[j] = min(lo[j], ck[j]-4*sd), max(hi[j], ck[j]+4*sd)
		}
		clear(cov)
		for i := range ni {
			for j := range ni {
				for q := range nr {
					cov[i*nr+q] += ak[i*ni+j] * g.b[j*nr+q]
				}
			}
		}
		for q := range nr {
			mean, v := 0.0, 0.0
			for j := range ni {
				mean += ck[j] * g.b[j*nr+q]
			}
			for i := range ni {
				v += cov[i*nr+q] * cov[i*nr+q]
			}
			sd := math.Sqrt(v)
			lo[ni+q], hi[ni+q] = min(lo[ni+q], mean-4*sd), max(hi[ni+q], mean+4*sd)
		}
	}
	for j := ni + nr; j < d; j++ {
		lo[j], hi[j] = -4, 4
	}
	g.mid, g.inv = make([]float64, d), make([]float64, d)
	for j := range d {
		if !(hi[j] > lo[j]) { // a redundant feature with B's column all zero: constant
			lo[j], hi[j] = lo[j]-1, hi[j]+1
		}
		g.mid[j], g.inv[j] = lo[j]/2+hi[j]/2, 1/(hi[j]/2-lo[j]/2)
	}
}

// row writes one scaled row of cluster k into x (len d); z is scratch of
// len ni.
func (g *synthModel) row(x, z []float64, k int, r *rand.Rand) {
	ni, nr, d := g.ni, g.nr, g.d
	for i := range z {
		z[i] = r.NormFloat64()
	}
	inf := x[:ni:ni]
	copy(inf, g.cent[k])
	ak := g.a[k]
	for i, zi := range z {
		ai := ak[i*ni : (i+1)*ni]
		ai = ai[:len(inf)]
		for j := range inf {
			inf[j] += zi * ai[j]
		}
	}
	red := x[ni : ni+nr : ni+nr]
	for j, v := range inf {
		bj := g.b[j*nr : (j+1)*nr]
		bj = bj[:len(red)]
		for q := range red {
			red[q] += v * bj[q]
		}
	}
	for j := ni + nr; j < d; j++ {
		x[j] = r.NormFloat64()
	}
	mid, inv := g.mid[:len(x)], g.inv[:len(x)]
	for j, v := range x {
		x[j] = clip((v - mid[j]) * inv[j])
	}
}

// hypercubeVertices draws `count` distinct vertices of [-sep, sep]^dim
// uniformly (rejecting repeats; Validate ensures count <= 2^dim).
func hypercubeVertices(r *rand.Rand, count, dim int, sep float64) [][]float64 {
	seen := make(map[string]bool, count)
	bits := make([]byte, dim)
	out := make([][]float64, count)
	for k := range out {
		for {
			for j := range bits {
				bits[j] = byte(r.Uint64() & 1)
			}
			if !seen[string(bits)] {
				seen[string(bits)] = true
				break
			}
		}
		out[k] = make([]float64, dim)
		for j, bit := range bits {
			out[k][j] = sep * float64(2*int(bit)-1)
		}
	}
	return out
}

// uniformMatrix returns a rows x cols matrix, row-major, with uniform(-1, 1) entries.
func uniformMatrix(r *rand.Rand, rows, cols int) []float64 {
	m := make([]float64, rows*cols)
	for i := range m {
		m[i] = 2*r.Float64() - 1
	}
	return m
}
