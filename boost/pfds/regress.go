package pfds

import (
	"math"

	"github.com/ppboost/ppboost/crypto/rng"
)

// Buckets is the discretization of a continuous label for regression
// tasks (Sec. 3.1): B equal-width buckets of the PUBLIC target range
// [Lo, Hi]. The trees and the vote work on bucket indices; a synthetic
// record's target is drawn uniformly inside its voted bucket.
type Buckets struct {
	Lo, Hi float64
	B      int // the paper uses 10
}

// Of returns the bucket of target v (clamped to the range).
func (b Buckets) Of(v float64) int {
	k := int(math.Floor((v - b.Lo) / (b.Hi - b.Lo) * float64(b.B)))
	return min(max(k, 0), b.B-1)
}

// Labels maps targets to bucket indices.
func (b Buckets) Labels(targets []float64) []int {
	out := make([]int, len(targets))
	for i, v := range targets {
		out[i] = b.Of(v)
	}
	return out
}

// streamTarget labels the stream of synthetic targets.
const streamTarget = 0x54415247 // "TARG"

// Targets draws each synthetic record's target uniformly in its bucket,
// from the share's public seed, so receivers regenerate the same values.
func (b Buckets) Targets(labels []int, seed uint64) []float64 {
	r := rng.Derive(seed, streamTarget)
	w := (b.Hi - b.Lo) / float64(b.B)
	out := make([]float64, len(labels))
	for i, k := range labels {
		out[i] = b.Lo + (float64(k)+r.Float64())*w
	}
	return out
}

// RegressionUnion is Union for a regression task: the agent's own targets
// followed by every share's regenerated targets.
func RegressionUnion(own Local, shares []Shared, b Buckets) Local {
	u := Union(own, shares)
	u.Target = append([]float64(nil), own.Target...)
	for _, s := range shares {
		u.Target = append(u.Target, b.Targets(s.Data.Labels, s.Data.Seed)...)
	}
	return u
}
