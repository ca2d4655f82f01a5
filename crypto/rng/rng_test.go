package rng

import "testing"

func TestStreams(t *testing.T) {
	a, b := Seeded(1), Seeded(1)
	for i := 0; i < 10; i++ {
		if a.Uint64() != b.Uint64() {
			t.Fatal("same seed, different streams")
		}
	}
	if Derive(1, 2, 3).Uint64() == Derive(1, 2, 4).Uint64() || Derive(1, 2).Uint64() == Derive(1, 2, 0).Uint64() {
		t.Fatal("different labels gave the same stream")
	}
	if ForName("x").Uint64() != ForName("x").Uint64() || SeedOf("x") == SeedOf("y") {
		t.Fatal("ForName/SeedOf")
	}
	if Secure().Uint64() == Secure().Uint64() {
		t.Fatal("two secure generators agree (probability 2^-64)")
	}
}
