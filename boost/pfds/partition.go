package pfds

import (
	"fmt"
	"math"
	"slices"

	"github.com/ppboost/ppboost/crypto/rng"
)

// Streams for partitioning.
const (
	streamNonIID = 0x4e4f4e494944 // "NONIID"
	streamFolds  = 0x464f4c44     // "FOLD"
)

// NonIID splits n records among agents as the paper does: agent i draws
// a_i uniformly in the public domain of attribute attr (numeric: [-1, 1];
// categorical: a category index), and record x goes to agent i with
// probability proportional to 1/|x_attr - a_i| (a distance below 1e-9
// counts as 1e-9). It returns the record indices of every agent.
func NonIID(dom *Domain, X [][]float64, agents, attr int, seed uint64) ([][]int, error) {
	if agents < 1 {
		return nil, fmt.Errorf("pfds: %d agents", agents)
	}
	if attr < 0 || attr >= len(dom.Attrs) {
		return nil, fmt.Errorf("pfds: attribute %d out of range [0, %d)", attr, len(dom.Attrs))
	}
	r := rng.Derive(seed, streamNonIID)
	at := dom.Attrs[attr]
	a := make([]float64, agents)
	for i := range a {
		if at.Cats > 0 {
			a[i] = float64(r.IntN(at.Cats))
		} else {
			a[i] = -1 + 2*r.Float64()
		}
	}
	out := make([][]int, agents)
	w := make([]float64, agents)
	for k, x := range X {
		v := dom.value(attr, x)
		total := 0.0
		for i := range a {
			w[i] = 1 / math.Max(math.Abs(v-a[i]), 1e-9)
			total += w[i]
		}
		u := r.Float64() * total
		i := 0
		for ; i < agents-1; i++ {
			if u < w[i] {
				break
			}
			u -= w[i]
		}
		out[i] = append(out[i], k)
	}
	return out, nil
}

// IID splits n records among agents uniformly at random (sizes differ by
// at most one).
func IID(n, agents int, seed uint64) [][]int {
	perm := rng.Derive(seed, streamNonIID, 1).Perm(n)
	out := make([][]int, agents)
	for k, i := range perm {
		out[k%agents] = append(out[k%agents], i)
	}
	return out
}

// StratifiedFolds returns k disjoint test-index sets covering 0..len(y)-1,
// each with the classes in (nearly) the overall proportions.
func StratifiedFolds(y []int, k int, seed uint64) [][]int {
	r := rng.Derive(seed, streamFolds)
	byClass := map[int][]int{}
	for i, c := range y {
		byClass[c] = append(byClass[c], i)
	}
	classes := make([]int, 0, len(byClass))
	for c := range byClass {
		classes = append(classes, c)
	}
	slices.Sort(classes)
	folds := make([][]int, k)
	next := 0
	for _, c := range classes {
		idx := byClass[c]
		r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		for _, i := range idx {
			folds[next] = append(folds[next], i)
			next = (next + 1) % k
		}
	}
	for _, f := range folds {
		slices.Sort(f)
	}
	return folds
}
