package ldp

import (
	"math"
	"math/rand/v2"
)

// sampled is multi-dimensional PM or HM (d > 1): k of the d attributes,
// chosen uniformly without replacement, each perturbed with eps/k and
// scaled by d/k; the other coordinates are 0.
type sampled struct {
	base
	k     int
	scale float64 // d/k
	one   oneDim  // PM or HM at eps/k
}

func (m *sampled) Bound() float64 { return m.scale * m.one.bound() }

// maxFloyd is the largest k sampled with Floyd's algorithm, whose indices
// live on the stack; larger k (eps >= 82.5) uses selection sampling.
const maxFloyd = 32

func (m *sampled) Perturb(r *rand.Rand, t, out []float64) error {
	if err := m.check(t, out); err != nil {
		return err
	}
	if m.k > maxFloyd {
		m.selection(r, t, out)
		return nil
	}
	// Floyd's algorithm: k distinct indices uniformly from [0, d) with k
	// draws. The sampled inputs are read before out (maybe t) is cleared.
	var idxBuf [maxFloyd]int
	var valBuf [maxFloyd]float64
	idx := idxBuf[:0]
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
	for i, j := range idx {
		valBuf[i], _ = m.input(t[j])
	}
	clear(out)
	for i, j := range idx {
		out[j] = m.scale * m.one.perturb(r, valBuf[i])
	}
	return nil
}

// selection is Knuth's selection sampling (Algorithm S): attribute j is
// taken with probability (still needed)/(d - j), which draws a uniform
// k-subset in one pass with d integer draws. Each t[j] is read before
// out[j] is written, so out may be t.
func (m *sampled) selection(r *rand.Rand, t, out []float64) {
	need := m.k
	for j := range out {
		v, _ := m.input(t[j])
		if need > 0 && r.IntN(m.d-j) < need {
			need--
			out[j] = m.scale * m.one.perturb(r, v)
		} else {
			out[j] = 0
		}
	}
}

// Variance is (d/k)(Var_M(t_j, eps/k) + t_j^2) - t_j^2.
func (m *sampled) Variance(t []float64, j int) float64 {
	v, ok := m.at(t, j)
	if !ok {
		return math.NaN()
	}
	return m.scale*(m.one.variance(v)+v*v) - v*v
}

// duchiMulti is Duchi et al.'s l_inf mechanism for d > 1 attributes, with
// the tie rule that keeps it unbiased for even d.
type duchiMulti struct {
	base
	b    float64 // output magnitude B = D * C_d
	pPos float64 // E/(E+1), the probability of sampling from T+
}

func newDuchiMulti(b base) *duchiMulti {
	em1 := math.Expm1(b.eps)
	return &duchiMulti{base: b, b: (1 + 2/em1) * duchiCd(b.d), pPos: 1 - 1/(em1+2)}
}

// duchiCd is C_d = 2^(d-1)/binom(d-1, (d-1)/2) for odd d and
// (2^(d-1) + binom(d, d/2)/2)/binom(d-1, d/2) for even d. With
// central(m) = 4^m/binom(2m, m) that is central((d-1)/2) for odd d and
// central(d/2) + 1 for even d (2^(d-1)/binom(d-1, d/2) = central(d/2) and
// binom(d, d/2) = 2 binom(d-1, d/2)).
func duchiCd(d int) float64 {
	if d%2 == 1 {
		return central((d - 1) / 2)
	}
	return central(d/2) + 1
}

// central is 4^m/binom(2m, m) ~ sqrt(pi m), to a few ulps for every m: by
// the exact recurrence central(i+1) = central(i) 2(i+1)/(2i+1) for m <= 512
// (rounding error about 1e-15), by the asymptotic expansion
// binom(2m, m) = 4^m/sqrt(pi m) (1 - 1/(8m) + 1/(128m^2) + 5/(1024m^3) -
// 21/(32768m^4) + O(m^-5)) beyond (truncation below 1e-16). Log-gamma
// differences would lose about d ulps to cancellation.
func central(m int) float64 {
	if m <= 512 {
		c := 1.0
		for i := range m {
			c *= float64(2*i+2) / float64(2*i+1)
		}
		return c
	}
	x := 1 / float64(m)
	s := 1 + x*(-1.0/8+x*(1.0/128+x*(5.0/1024-x*21.0/32768)))
	return math.Sqrt(math.Pi*float64(m)) / s
}

func (m *duchiMulti) Bound() float64 { return m.b }

// Perturb draws v in {-1,1}^d with P(v_j = 1) = (1 + t_j)/2 and a side
// (T+ with probability E/(E+1)), then a uniform s from that side by
// rejection. Writing s = v * (-1)^w, w is a uniform bit vector independent
// of v, and s.v = d - 2|w|, so a uniform w is accepted when |w| <= d/2 (T+)
// or |w| >= d/2 (T-): each try succeeds with probability >= 1/2, so at most
// two tries are expected. Ties (|w| = d/2, even d) belong to both sets;
// without that rule the output is biased for even d.
//
// out is the scratch space, so any d works without allocating: out[j]
// carries v_j in its sign and w_j in its magnitude (1 or 2). Each t[j] is
// read before out[j] is written, so out may be t.
func (m *duchiMulti) Perturb(r *rand.Rand, t, out []float64) error {
	if err := m.check(t, out); err != nil {
		return err
	}
	for j, x := range t {
		v, _ := m.input(x)
		if r.Float64() < 0.5+0.5*v {
			out[j] = 1
		} else {
			out[j] = -1
		}
	}
	pos := r.Float64() < m.pPos
	for {
		flips := 0
		var w uint64
		for j, x := range out {
			if j%64 == 0 {
				w = r.Uint64()
			}
			bit := int(w & 1)
			w >>= 1
			flips += bit
			out[j] = math.Copysign(float64(1+bit), x)
		}
		dot := m.d - 2*flips
		if (pos && dot >= 0) || (!pos && dot <= 0) {
			break
		}
	}
	for j, x := range out {
		// s_j = v_j when |x| = 1, -v_j when |x| = 2: sign of x(3 - 2|x|).
		out[j] = math.Copysign(m.b, x*(3-2*math.Abs(x)))
	}
	return nil
}

// Variance is B^2 - t_j^2.
func (m *duchiMulti) Variance(t []float64, j int) float64 {
	v, ok := m.at(t, j)
	if !ok {
		return math.NaN()
	}
	return m.b*m.b - v*v
}
