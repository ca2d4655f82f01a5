package rng

import (
	crand "crypto/rand"
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
)

// Secure returns a generator keyed from the operating system's CSPRNG.
// It panics only if crypto/rand fails, which Go documents as never happening.
func Secure() *rand.Rand {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		panic("rng: crypto/rand failed: " + err.Error())
	}
	return rand.New(rand.NewChaCha8(seed))
}

// Seeded returns a deterministic generator for tests and reproducible runs.
func Seeded(seed uint64) *rand.Rand {
	return rand.New(rand.NewChaCha8(Key(seed)))
}

// Key expands a 64-bit seed and optional stream labels into a ChaCha8 key, so
// that independent streams (per owner, per round) can be derived from one seed.
func Key(seed uint64, labels ...uint64) [32]byte {
	var k [32]byte
	binary.LittleEndian.PutUint64(k[0:], seed)
	h := fnv.New64a()
	var b [8]byte
	for _, l := range labels {
		binary.LittleEndian.PutUint64(b[:], l)
		h.Write(b[:])
	}
	binary.LittleEndian.PutUint64(k[8:], h.Sum64())
	binary.LittleEndian.PutUint64(k[16:], uint64(len(labels)))
	binary.LittleEndian.PutUint64(k[24:], 0x7070626f6f7374) // "ppboost"
	return k
}

// Derive returns a deterministic generator for the stream (seed, labels...).
func Derive(seed uint64, labels ...uint64) *rand.Rand {
	return rand.New(rand.NewChaCha8(Key(seed, labels...)))
}

// ForName returns a deterministic generator seeded from a string, typically
// t.Name(), so each test has its own reproducible stream.
func ForName(name string) *rand.Rand {
	return Seeded(SeedOf(name))
}

// SeedOf hashes a string to a seed.
func SeedOf(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// SecretOf is a deterministic 32-byte secret for the stream (seed,
// labels...): a simulated owner's release-gate noise secret, so that
// reproducible runs stay reproducible (production secrets come from the
// node's identity key).
func SecretOf(seed uint64, labels ...uint64) []byte {
	k := Key(seed, labels...)
	return k[:]
}
