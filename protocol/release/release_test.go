package release

import (
	"errors"
	"math"
	"testing"

	"github.com/ppboost/ppboost/crypto/dpnoise"
	"github.com/ppboost/ppboost/crypto/field"
	"github.com/ppboost/ppboost/crypto/ldp"
	"github.com/ppboost/ppboost/protocol"
)

// Each mechanism's charge comes from its own parameters: a DLap design made
// for eps charges eps, the same design with half the scale charges 2 eps
// (a design error shows up in the ledger instead of hiding behind an eps
// passed alongside), an LDP mechanism charges its own eps, and a broken
// design is refused before the ledger is touched.
func TestChargeComesFromTheMechanism(t *testing.T) {
	codec, err := field.NewCodec(24)
	if err != nil {
		t.Fatal(err)
	}
	const eps, delta, coords = 0.5, 4.0, 2
	np, err := dpnoise.ForEpsilon(eps, delta, codec, coords, 1)
	if err != nil {
		t.Fatal(err)
	}
	d := DLap{Noise: np, IntSensitivity: dpnoise.IntSensitivity(delta, codec, coords)}
	if got := d.Epsilon(); math.Abs(got-eps) > 1e-12 {
		t.Fatalf("DLap designed for %v charges %v", eps, got)
	}
	half := d
	half.Noise.Scale /= 2
	if got := half.Epsilon(); math.Abs(got-2*eps) > 1e-12 {
		t.Fatalf("DLap with half the scale charges %v, want %v", got, 2*eps)
	}
	m, err := ldp.New(ldp.Piecewise, 3, 4, ldp.Clip)
	if err != nil {
		t.Fatal(err)
	}
	if got := (LDP{M: m}).Epsilon(); got != 3 {
		t.Fatalf("PM eps 3 charges %v", got)
	}
	led := protocol.NewMemLedger(10)
	g := Gate{Ledger: led}
	if got, err := g.Charge("s/err/1/0", 1, 0, d); err != nil || math.Abs(got-eps) > 1e-12 || math.Abs(led.Spent()-eps) > 1e-12 {
		t.Fatalf("charge %v, err %v, ledger %v", got, err, led.Spent())
	}
	if _, err := g.Charge("s/err/1/0", 1, 0, d); !errors.Is(err, protocol.ErrAlreadyContributed) {
		t.Fatalf("second charge of one key: %v", err)
	}
	for _, bad := range []Mechanism{DLap{}, LDP{}, Exact{Charge: 0}, Exact{Charge: math.Inf(1)}} {
		before := led.Spent()
		if _, err := g.Charge("s/bad", 1, 0, bad); !errors.Is(err, ErrUnbounded) || led.Spent() != before {
			t.Fatalf("%s: err %v, ledger moved %v -> %v", bad, err, before, led.Spent())
		}
	}
}

// Sequential adds, Parallel takes the largest: a tree of two levels and its
// leaves charges the sum of the levels' (each the worst node's) and the
// leaves' losses.
func TestComposition(t *testing.T) {
	e := func(v float64) Mechanism { return Exact{Charge: v} }
	tree := Sequential{Parallel{e(0.1)}, Parallel{e(0.1), e(0.2)}, e(0.5)}
	if got := tree.Epsilon(); math.Abs(got-0.8) > 1e-12 {
		t.Fatalf("tree charges %v, want 0.8", got)
	}
	if !math.IsInf(Sequential{}.Epsilon(), 1) || !math.IsInf(Parallel{}.Epsilon(), 1) {
		t.Fatal("an empty composition must not be chargeable")
	}
}
