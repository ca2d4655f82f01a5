package ldp

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// sampled is multi-dimensional PM or HM: k of d attributes, each perturbed
// with eps/k and scaled by d/k; the other coordinates are 0.
type sampled struct {
	base
	k     int
	scale float64
	one   oneDim
}

func (m *sampled) Bound() float64 { return m.scale * m.one.bound() }

// maxStack is how many sampled attributes are handled without allocating.
const maxStack = 32

func (m *sampled) Perturb(r *rand.Rand, t, out []float64) error {
	if err := m.lengths(t, out); err != nil {
		return err
	}
	if m.d == 1 {
		v, err := m.input(t[0])
		if err != nil {
			return fmt.Errorf("coordinate 0: %w", err)
		}
		out[0] = m.one.perturb(r, v)
		return nil
	}
	// Validate every input (not just the sampled ones), so that the error
	// does not depend on the random choice.
	for j, v := range t {
		if _, err := m.input(v); err != nil {
			return fmt.Errorf("coordinate %d: %w", j, err)
		}
	}
	var idxBuf [maxStack]int
	var valBuf [maxStack]float64
	idx, val := idxBuf[:0], valBuf[:0]
	if m.k > maxStack {
		idx, val = make([]int, 0, m.k), make([]float64, 0, m.k)
	}
	// Floyd's algorithm: k distinct indices uniformly from [0, d).
	for j := m.d - m.k; j < m.d; j++ {
		c := r.IntN(j + 1)
		for _, p := range idx {
			if p == c {
				c = j
				break
			}
		}
		idx = append(idx, c)
	}
	for _, j := range idx {
		v, _ := m.input(t[j])
		val = append(val, v)
	}
	clear(out)
	for i, j := range idx {
		out[j] = m.scale * m.one.perturb(r, val[i])
	}
	return nil
}

func (m *sampled) Variance(t []float64, j int) float64 {
	v := m.clipped(t[j])
	if m.d == 1 {
		return m.one.variance(v)
	}
	return m.scale*(m.one.variance(v)+v*v) - v*v
}

// duchiMulti is Duchi et al.'s l_inf mechanism for d attributes with the
// tie rule that keeps it unbiased for even d.
type duchiMulti struct {
	base
	b    float64 // output magnitude B = D * C_d
	pPos float64 // E/(E+1)
}

// duchiCd is C_d: 2^(d-1)/binom(d-1, (d-1)/2) for odd d, and
// (2^(d-1) + binom(d, d/2)/2)/binom(d-1, d/2) = 2^(d-1)/binom(d-1, d/2) + 1
// for even d (binom(d, d/2) = 2 binom(d-1, d/2)). Log-gamma keeps large d finite.
func duchiCd(d int) float64 {
	lnBinom := func(n, k int) float64 {
		a, _ := math.Lgamma(float64(n + 1))
		b, _ := math.Lgamma(float64(k + 1))
		c, _ := math.Lgamma(float64(n - k + 1))
		return a - b - c
	}
	if d%2 == 1 {
		return math.Exp(float64(d-1)*math.Ln2 - lnBinom(d-1, (d-1)/2))
	}
	return math.Exp(float64(d-1)*math.Ln2-lnBinom(d-1, d/2)) + 1
}

func newDuchiMulti(b base) *duchiMulti {
	e := math.Exp(b.eps)
	return &duchiMulti{base: b, b: (e + 1) / (e - 1) * duchiCd(b.d), pPos: e / (e + 1)}
}

func (m *duchiMulti) Bound() float64 { return m.b }

func (m *duchiMulti) Perturb(r *rand.Rand, t, out []float64) error {
	if err := m.lengths(t, out); err != nil {
		return err
	}
	for j, v := range t {
		if _, err := m.input(v); err != nil {
			return fmt.Errorf("coordinate %d: %w", j, err)
		}
	}
	// v in {-1,1}^d with P(v_j = 1) = (1 + t_j)/2, as bits (1 = +1).
	words := (m.d + 63) / 64
	var vBuf, sBuf [8]uint64
	v, s := vBuf[:0], sBuf[:0]
	if words > len(vBuf) {
		v, s = make([]uint64, 0, words), make([]uint64, 0, words)
	}
	v, s = v[:words], s[:words]
	clear(v)
	for j, x := range t {
		tv, _ := m.input(x)
		if r.Float64() < 0.5+0.5*tv {
			v[j/64] |= 1 << (j % 64)
		}
	}
	pos := r.Float64() < m.pPos
	// Rejection: a uniform sign vector s lands in T+ = {s.v >= 0} (or
	// T- = {s.v <= 0}) with probability >= 1/2, so at most 2 draws are
	// expected. Ties (s.v = 0, even d) belong to both sets: without that
	// rule the output is biased for even d.
	for {
		diff := 0
		for w := range s {
			s[w] = r.Uint64()
			if w == words-1 && m.d%64 != 0 {
				s[w] &= 1<<(m.d%64) - 1
			}
			diff += bits.OnesCount64(s[w] ^ v[w])
		}
		dot := m.d - 2*diff
		if (pos && dot >= 0) || (!pos && dot <= 0) {
			break
		}
	}
	for j := range out {
		if s[j/64]>>(j%64)&1 == 1 {
			out[j] = m.b
		} else {
			out[j] = -m.b
		}
	}
	return nil
}

func (m *duchiMulti) Variance(t []float64, j int) float64 {
	v := m.clipped(t[j])
	return m.b*m.b - v*v
}

// laplace adds Lap(2d/eps) noise to every coordinate (eps/d each).
type laplace struct {
	base
	scale float64
}

func (m *laplace) Bound() float64 { return math.Inf(1) }

func (m *laplace) Perturb(r *rand.Rand, t, out []float64) error {
	if err := m.lengths(t, out); err != nil {
		return err
	}
	for j, x := range t {
		v, err := m.input(x)
		if err != nil {
			return fmt.Errorf("coordinate %d: %w", j, err)
		}
		// Inverse CDF of a uniform u in (-1/2, 1/2); 1 - 2|u| > 0 always
		// because Float64 < 1.
		u := r.Float64() - 0.5
		if u < 0 {
			out[j] = v + m.scale*math.Log(1+2*u)
		} else {
			out[j] = v - m.scale*math.Log(1-2*u)
		}
	}
	return nil
}

func (m *laplace) Variance([]float64, int) float64 { return 2 * m.scale * m.scale }
