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
// Measured on the shared 2-core build machine (go test -bench . ./crypto/field):
//
//	Mul, dependent chain (latency)        MEASURE
//	Mul, independent products (throughput) MEASURE
//	Inv (Fermat, ~120 multiplications)     MEASURE
//	Codec.Encode                           MEASURE
package field
