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

// duchiMulti is Duchi et al.'s l_inf mechanism for d > 1 attributes. For
// even d, patterns s with s.v = 0 (ties) weigh 1/2 toward each side, which
// keeps it both unbiased and eps-LDP (see keep and doc.go).
type duchiMulti struct {
	base
	b    float64 // output magnitude B = D * C_d
	pPos float64 // E/(E+1): P(output in T+ | s not a tie)
	pNeg float64 // 1/(E+1) = 1 - pPos, computed without cancellation
}

func newDuchiMulti(b base) *duchiMulti {
	em1 := math.Expm1(b.eps)
	return &duchiMulti{base: b, b: (1 + 2/em1) * duchiCd(b.d), pPos: 1 - 1/(em1+2), pNeg: 1 / (em1 + 2)}
}

// duchiCd is C_d = 2^(d-1)/binom(d-1, (d-1)/2) for odd d and
// 2^(d-1)/binom(d-1, d/2) for even d (the half-weighted tie rule). With
// central(m) = 4^m/binom(2m, m) both are central(floor(d/2)): for d = 2m+1,
// 2^(2m)/binom(2m, m); for d = 2m, 2^(2m-1)/binom(2m-1, m) and
// binom(2m, m) = 2 binom(2m-1, m). So C_(2m) = C_(2m+1).
//
// Why it is unbiased: given v, Perturb outputs B s with s uniform and kept
// with probability keep(s.v), so E[o | v] = (B/2^d) sum_s (2 keep(s.v) - 1) s
// = B (2p - 1)/2^d sum_{s.v != 0} sign(s.v) s, p = E/(E+1), since ties
// (2 keep - 1 = 1) come in pairs s, -s and cancel. By symmetry
// sum_s sign(s.v) s_j = v_j sum_s sign(s_1 + R) s_1 with R the sum of the
// other d-1 signs, and sign(1 + R) - sign(R - 1) is 2 at R = 0 (odd d) or 1
// at R = +-1 (even d), 0 otherwise: the sum is 2 binom(d-1, floor(d/2)) v_j.
// With 2p - 1 = 1/D, E[o | v] = B/(D C_d) v = v, and E[o | t] = t.
func duchiCd(d int) float64 {
	return central(d / 2)
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

// keep is the decision rule of Perturb: given the uniform pattern s and
// dot = s.v, the probability that the output is B s (else -B s). Off ties
// the output lands in T+ = {o : o.v > 0} with probability E/(E+1); ties
// (dot = 0, even d only) output B s, which is itself a tie (so are -B s and
// every choice between them). Given v, an output o then has probability
// (keep(o.v) + 1 - keep(-o.v))/2^d: 2p/2^d on T+, 2(1-p)/2^d on T- and
// 1/2^d on ties, p = E/(E+1), all within a factor E of each other; the
// exact enumeration in duchi_test.go reads its probabilities from here.
func (m *duchiMulti) keep(dot int) float64 {
	switch {
	case dot > 0:
		return m.pPos
	case dot < 0:
		return m.pNeg
	}
	return 1
}

// Perturb draws v in {-1,1}^d with P(v_j = 1) = (1 + t_j)/2, a uniform
// pattern s = v * (-1)^w (w a uniform bit vector independent of v, so s is
// uniform and independent of v, and s.v = d - 2|w|), and one uniform u;
// it outputs B s if u < keep(s.v), else -B s. That is exact and takes a
// fixed number of draws: d Float64s for v, ceil(d/64) Uint64s for w, one
// Float64 for the side (Float64() < 1 always holds, so ties keep s).
//
// out is the scratch space, so any d works without allocating: out[j]
// holds s_j. Each t[j] is read before out[j] is written, so out may be t.
func (m *duchiMulti) Perturb(r *rand.Rand, t, out []float64) error {
	if err := m.check(t, out); err != nil {
		return err
	}
	flips := 0
	var w uint64
	for j, x := range t {
		v, _ := m.input(x)
		s := -1.0
		if r.Float64() < 0.5+0.5*v {
			s = 1
		}
		if j%64 == 0 {
			w = r.Uint64()
		}
		if w&1 == 1 { // s_j = -v_j
			s = -s
			flips++
		}
		w >>= 1
		out[j] = s
	}
	side := m.b
	if r.Float64() >= m.keep(m.d-2*flips) {
		side = -m.b
	}
	for j, s := range out {
		out[j] = side * s
	}
	return nil
}

// Variance is B^2 - t_j^2: every output coordinate is +-B, so E o_j^2 = B^2,
// and E o_j = t_j (unbiased); the tie rule does not change it.
func (m *duchiMulti) Variance(t []float64, j int) float64 {
	v, ok := m.at(t, j)
	if !ok {
		return math.NaN()
	}
	return m.b*m.b - v*v
}
