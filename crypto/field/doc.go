// Package field is arithmetic modulo the Mersenne prime P = 2^61 - 1, a
// fixed-point Codec that carries reals through it, and the bit-budget check
// (Codec.CheckBudget) that says when a sum of encoded values decodes
// correctly. The secure sums (masked ring and Shamir) add encoded values in
// this field.
//
// It owns arithmetic and encoding only. It must not choose randomness (the
// caller passes the *math/rand/v2.Rand: crypto/rng.Secure in production, a
// seeded one in tests), do I/O, log, or know about parties and protocols.
// Library calls do not panic on bad input; the one documented exception is
// AddVec with slices of different lengths, a caller bug (VecAdd returns an
// error instead).
//
// # Representation
//
// An Elem is the canonical representative in [0, P). Negatives encode as
// P - |v| and decode with the centered lift (Elem.Int): values above
// (P-1)/2 are negative. A Codec with S = 2^k encodes v as round(v*S) mod P;
// because S is a power of two, v*S and the rounding are exact in float64, so
// Decode(Encode(v)) is within 1/(2S) of v exactly, and Encode refuses
// values whose rounded magnitude exceeds (P-1)/2 = 2^60 - 1.
//
// # Performance
//
// Measured on the shared 2-core build machine (Intel Xeon, go1.26,
// go test -run=^$ -bench . ./crypto/field, median of 3):
//
//	Mul, dependent chain (latency)            2.8 ns
//	Mul, 8 independent chains (throughput)    1.15 ns
//	MulAdd, 8 independent chains              2.4 ns
//	Inv (Fermat, ~120 multiplications)        205 ns
//	Codec.Encode                              5.5 ns
//
// Mul folds the 128-bit product once and finishes with one conditional
// subtraction (compiled to CMOV): 2.8 ns against 3.5 ns for a double fold.
//
// Where it sits: at the bottom: it imports nothing of ppboost; crypto/shamir,
// crypto/dpnoise, protocol/securesum and the systems encode into it.
package field
