// Package rng provides the random sources used by ppboost's privacy code.
//
// Production code draws privacy noise, secure-sum masks and Shamir coefficients
// from Secure(): a ChaCha8 generator (math/rand/v2, a cryptographically strong
// stream cipher construction) keyed with 32 bytes from crypto/rand. Tests and
// reproducible simulations use Seeded or ForName, which key the same generator
// deterministically. A *rand.Rand is not safe for concurrent use: give every
// goroutine its own.
//
// Where it sits: at the bottom: it imports nothing of ppboost; every package
// that draws randomness (boost, dataset, the protocols, the simulator, the
// CLI) takes its generators from here, so the secure and the seeded sources
// are chosen in one place.
package rng
