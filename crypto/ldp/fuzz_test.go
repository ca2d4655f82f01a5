package ldp

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

// FuzzParseKind: ParseKind reads mechanism names from flags, config files
// and session announcements.
func FuzzParseKind(f *testing.F) {
	for _, s := range []string{"none", "pm", "HM", "Duchi", "laplace", "", "gauss", "pm\x00", "ﬀ", "PM "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKind(s)
		if err != nil {
			if !errors.Is(err, ErrKind) {
				t.Fatalf("ParseKind(%q): error %v does not wrap ErrKind", s, err)
			}
			return
		}
		if !strings.EqualFold(k.String(), s) {
			t.Fatalf("ParseKind(%q) = %v", s, k)
		}
		if back, err := ParseKind(k.String()); err != nil || back != k {
			t.Fatalf("round trip of %v: %v, %v", k, back, err)
		}
	})
}

// FuzzPerturb: arbitrary parameters and input bytes (read as float64s, so
// NaN, Inf, subnormals and out-of-range values all occur) give either a
// sentinel error, with out untouched, or finite outputs within Bound.
func FuzzPerturb(f *testing.F) {
	vec := func(xs ...float64) []byte {
		b := make([]byte, 0, 8*len(xs))
		for _, x := range xs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
		return b
	}
	f.Add(uint8(Piecewise), 1.0, uint8(1), uint8(Reject), uint64(1), vec(0.5))
	f.Add(uint8(Hybrid), 5.0, uint8(3), uint8(Clip), uint64(2), vec(2, -1, 0.25))
	f.Add(uint8(Duchi), 0.1, uint8(4), uint8(Reject), uint64(3), vec(1, -1, 1, -1))
	f.Add(uint8(Laplace), 1e-9, uint8(2), uint8(Clip), uint64(4), vec(math.Inf(1), 0))
	f.Add(uint8(None), math.NaN(), uint8(2), uint8(Clip), uint64(5), vec(-3, math.NaN()))
	f.Add(uint8(Piecewise), 100.0, uint8(40), uint8(Reject), uint64(6), vec(0.1))
	f.Add(uint8(7), 1.0, uint8(0), uint8(9), uint64(7), []byte{})
	f.Fuzz(func(t *testing.T, kind uint8, eps float64, d uint8, policy uint8, seed uint64, data []byte) {
		m, err := New(Kind(kind), eps, int(d%70), Range(policy))
		if err != nil {
			for _, e := range []error{ErrKind, ErrEpsilon, ErrDimension, ErrRange} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("New: unexpected error %v", err)
		}
		dim := m.Dim()
		in := make([]float64, dim)
		for j := range in {
			if len(data) >= 8*(j+1) {
				in[j] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*j:]))
			} else if len(data) > 0 {
				in[j] = float64(int8(data[j%len(data)])) / 100
			}
		}
		out := make([]float64, dim)
		for j := range out {
			out[j] = 42
		}
		if err := m.Perturb(rng.Seeded(seed), in, out); err != nil {
			if !errors.Is(err, ErrNotFinite) && !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("Perturb(%v): unexpected error %v", in, err)
			}
			if slices.ContainsFunc(out, func(x float64) bool { return x != 42 }) {
				t.Fatalf("Perturb(%v) failed but wrote %v", in, out)
			}
			return
		}
		for j, x := range out {
			if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > m.Bound() {
				t.Fatalf("%s eps=%v d=%d: output %v for %v (bound %v)", m.Kind(), eps, dim, out, in, m.Bound())
			}
			if v := m.Variance(in, j); math.IsNaN(v) || v < 0 {
				t.Fatalf("%s eps=%v d=%d: variance %v at %d for %v", m.Kind(), eps, dim, v, j, in)
			}
		}
	})
}
