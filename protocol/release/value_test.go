package release

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ppboost/ppboost/crypto/ldp"
	"github.com/ppboost/ppboost/protocol"
)

// draw is a value made from a noise stream: one Laplace-like draw per
// coordinate of input, so two makes with different streams differ.
func draw(input []float64) func(r *rand.Rand) (any, error) {
	return func(r *rand.Rand) (any, error) {
		out := make([]float64, len(input))
		for i, v := range input {
			out[i] = v + r.NormFloat64()
		}
		return out, nil
	}
}

func laplace(t *testing.T, eps float64) Mechanism {
	m, err := ldp.New(ldp.Laplace, eps, 2, ldp.Clip)
	if err != nil {
		t.Fatal(err)
	}
	return LDP{M: m}
}

// TestValuesSameNameSameValue: a name is charged once and gets the same
// value on every request (memory), after the memory is gone (re-derived
// from the secret and the name), and never for another input (ErrRebound)
// or under another secret after a restart; other names get other noise.
func TestValuesSameNameSameValue(t *testing.T) {
	led := protocol.NewMemLedger(10)
	n := Name{System: "fed", Session: "s", Kind: "leaves", Round: 1}
	c := Charge{Key: "s/newton", Mech: laplace(t, 1)}
	in := []float64{3, 4}
	g := &Values{Ledger: led, Secret: []byte("secret")}
	v1, eps, fresh, err := g.Value(n, c, Floats(nil, in...), draw(in))
	if err != nil || eps != 1 || !fresh {
		t.Fatalf("first: eps %v fresh %v err %v", eps, fresh, err)
	}
	v2, eps, fresh, err := g.Value(n, c, Floats(nil, in...), draw(in))
	if err != nil || eps != 0 || fresh || !equal(v1, v2) {
		t.Fatalf("second: eps %v fresh %v err %v same %v", eps, fresh, err, equal(v1, v2))
	}
	// Another input under the same name: refused, nothing made.
	if _, _, _, err := g.Value(n, c, Floats(nil, 3, 5), draw([]float64{3, 5})); !errors.Is(err, protocol.ErrRebound) {
		t.Fatalf("another input: %v", err)
	}
	// A restart: a new gate over the same ledger and secret re-derives the
	// same bytes without a second charge.
	g2 := &Values{Ledger: led, Secret: []byte("secret")}
	v3, eps, _, err := g2.Value(n, c, Floats(nil, in...), draw(in))
	if err != nil || eps != 0 || !equal(v1, v3) {
		t.Fatalf("restart: eps %v err %v same %v", eps, err, equal(v1, v3))
	}
	if led.Spent() != 1 {
		t.Fatalf("spent %v, want one charge", led.Spent())
	}
	// A restart with another secret: its noise would differ, so it is refused.
	g3 := &Values{Ledger: led, Secret: []byte("other")}
	if _, _, _, err := g3.Value(n, c, Floats(nil, in...), draw(in)); !errors.Is(err, protocol.ErrRebound) {
		t.Fatalf("another secret: %v", err)
	}
	// Another name under the same charge: covered, other noise.
	n2 := n
	n2.Round = 2
	v4, eps, _, err := g.Value(n2, c, Floats(nil, in...), draw(in))
	if err != nil || eps != 0 || equal(v1, v4) {
		t.Fatalf("tree 2: eps %v err %v same noise %v", eps, err, equal(v1, v4))
	}
	// Negative control: without memory every request draws again.
	led2 := protocol.NewMemLedger(10)
	f := &Values{Ledger: led2, Secret: []byte("secret"), Forget: true}
	a, _, _, _ := f.Value(n, c, Floats(nil, in...), draw(in))
	b, _, _, _ := f.Value(n, c, Floats(nil, in...), draw(in))
	if equal(a, b) {
		t.Fatal("negative control: a gate without memory gave the same value twice")
	}
}

func equal(a, b any) bool {
	x, y := a.([]float64), b.([]float64)
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// TestValuesSessionCap: a charge that would take the session past the cap
// is refused before anything is made; other sessions are not counted.
func TestValuesSessionCap(t *testing.T) {
	led := protocol.NewMemLedger(100)
	g := &Values{Ledger: led, Secret: []byte("k"), SessionMax: 2.5}
	made := 0
	mk := func(r *rand.Rand) (any, error) { made++; return made, nil }
	for a := range 3 {
		n := Name{System: "wc", Session: "s", Kind: "err", Round: 1, Attempt: a}
		_, _, _, err := g.Value(n, Charge{Key: "s/err/1/" + string(rune('0'+a)), Mech: Exact{Charge: 1}}, nil, mk)
		if a < 2 && err != nil {
			t.Fatalf("attempt %d: %v", a, err)
		}
		if a == 2 && !errors.Is(err, ErrSessionCap) {
			t.Fatalf("attempt 2 past the cap: %v", err)
		}
	}
	if made != 2 || led.SpentIn("s") != 2 {
		t.Fatalf("made %d, spent %v in the session", made, led.SpentIn("s"))
	}
	if _, _, _, err := g.Value(Name{System: "wc", Session: "t", Kind: "share"}, Charge{Key: "t", Mech: Exact{Charge: 2}}, nil, mk); err != nil {
		t.Fatalf("another session: %v", err)
	}
	// A key outside the name's session is a bug, refused.
	if _, _, _, err := g.Value(Name{System: "wc", Session: "u", Kind: "share"}, Charge{Key: "s", Mech: Exact{Charge: 1}}, nil, mk); err == nil {
		t.Fatal("a charge key outside the session was accepted")
	}
}

// TestNameString: names print injectively (a session with a slash cannot
// pose as another name).
func TestNameString(t *testing.T) {
	a := Name{System: "fed", Session: "a/leaves", Kind: "node"}
	b := Name{System: "fed", Session: "a", Kind: "leaves/node"}
	if a.String() == b.String() {
		t.Fatalf("two names print %q", a.String())
	}
	if got := sessionOf(a.String()); got != "a/leaves" {
		t.Fatalf("sessionOf %q", got)
	}
}
