package audit

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/ppboost/ppboost/crypto/rng"
)

// Sampler draws one output of a release on neighbour 0 or 1 from r and
// returns a one-dimensional statistic of it (the output itself when it is a
// number). A Sampler may keep scratch space: it is called from one
// goroutine at a time.
type Sampler func(r *rand.Rand, neighbour int) float64

// Options fix one estimate.
type Options struct {
	// Draws is the number of outputs drawn on EACH neighbour: the first half
	// chooses the events, the second half measures them.
	Draws int
	// Confidence is the probability that every Clopper–Pearson bound of the
	// measurement holds at once (so that ε_lo is below the true loss).
	Confidence float64
	// Delta is the δ of an (ε, δ) claim: events are scored by
	// log((P₀ - δ)/P₁).
	Delta float64
	// Events is how many (event, direction) pairs the selection half passes
	// on to the measurement half (default 8); the Bonferroni split is over
	// these.
	Events int
	// Seed derives the two neighbours' random streams.
	Seed uint64
}

// DefaultConfidence is the confidence the tests and the command use.
const DefaultConfidence = 1 - 1e-6

// Validate names the bad field.
func (o Options) Validate() error {
	switch {
	case o.Draws < 4:
		return fmt.Errorf("audit: Draws %d, want at least 4", o.Draws)
	case !(o.Confidence > 0 && o.Confidence < 1):
		return fmt.Errorf("audit: Confidence %v, want in (0, 1)", o.Confidence)
	case !(o.Delta >= 0 && o.Delta < 1):
		return fmt.Errorf("audit: Delta %v, want in [0, 1)", o.Delta)
	case o.Events < 0:
		return fmt.Errorf("audit: Events %d, want >= 0", o.Events)
	}
	return nil
}

// Kind is the shape of an event on the statistic x.
type Kind uint8

const (
	AtLeast Kind = iota // x >= T
	AtMost              // x <= T
	Equal               // x == T
)

func (k Kind) String() string {
	switch k {
	case AtLeast:
		return ">="
	case AtMost:
		return "<="
	}
	return "=="
}

// Event is a set of statistic values and the direction it is scored in:
// Swap false scores log(P₀/P₁), true log(P₁/P₀).
type Event struct {
	Kind Kind
	T    float64
	Swap bool
}

func (e Event) String() string {
	dir := "P0/P1"
	if e.Swap {
		dir = "P1/P0"
	}
	return fmt.Sprintf("x %s %.6g (%s)", e.Kind, e.T, dir)
}

func (e Event) in(x float64) bool {
	switch e.Kind {
	case AtLeast:
		return x >= e.T
	case AtMost:
		return x <= e.T
	}
	return x == e.T
}

// Result is one estimate.
type Result struct {
	// EpsLo is the lower confidence bound on the privacy loss (>= 0).
	EpsLo float64 `json:"eps_lo"`
	// Event is the measured event that gave EpsLo (zero if none gave a
	// positive bound), with its measurement counts K0, K1 out of N each and
	// the bounds P0Lo/P1Hi (for a swapped event the roles of 0 and 1 are
	// exchanged: the numerator is neighbour 1's).
	Event      string  `json:"event"`
	K0         int     `json:"k0"`
	K1         int     `json:"k1"`
	N          int     `json:"measure_draws"`
	NumLo      float64 `json:"num_lo"`
	DenHi      float64 `json:"den_hi"`
	Draws      int     `json:"draws"`
	Measured   int     `json:"events_measured"`
	Confidence float64 `json:"confidence"`
}

// Estimate runs the audit of s: o.Draws outputs of each neighbour, events
// chosen on the first half and measured on the second.
func Estimate(s Sampler, o Options) (Result, error) {
	if o.Events == 0 {
		o.Events = 8
	}
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	var x [2][]float64
	for nb := range x {
		r := rng.Derive(o.Seed, uint64(nb))
		x[nb] = make([]float64, o.Draws)
		for i := range x[nb] {
			v := s(r, nb)
			if math.IsNaN(v) {
				return Result{}, errors.New("audit: the statistic is NaN")
			}
			x[nb][i] = v
		}
	}
	h := o.Draws / 2
	sel := [2][]float64{x[0][:h], x[1][:h]}
	mea := [2][]float64{x[0][h:], x[1][h:]}
	for nb := range 2 {
		slices.Sort(sel[nb])
		slices.Sort(mea[nb])
	}
	alpha := (1 - o.Confidence) / float64(2*o.Events)
	events := choose(sel, candidates(sel), o.Events, alpha, o.Delta)
	res := Result{N: len(mea[0]), Draws: o.Draws, Measured: len(events), Confidence: o.Confidence}
	if len(events) == 0 {
		return res, nil
	}
	alpha = (1 - o.Confidence) / float64(2*len(events))
	for _, e := range events {
		k0, k1 := count(mea[0], e), count(mea[1], e)
		eps, lo, hi := score(e, k0, k1, len(mea[0]), len(mea[1]), alpha, o.Delta)
		if eps > res.EpsLo {
			res.EpsLo, res.Event, res.K0, res.K1, res.NumLo, res.DenHi = eps, e.String(), k0, k1, lo, hi
		}
	}
	return res, nil
}

// score is log((P_num,lo - δ)/P_den,hi) for event e with counts k0 of n0
// and k1 of n1 (-Inf if the numerator's bound is at most δ).
func score(e Event, k0, k1, n0, n1 int, alpha, delta float64) (eps, lo, hi float64) {
	kn, nn, kd, nd := k0, n0, k1, n1
	if e.Swap {
		kn, nn, kd, nd = k1, n1, k0, n0
	}
	lo = ClopperPearsonLower(kn, nn, alpha)
	hi = ClopperPearsonUpper(kd, nd, alpha)
	if !(lo > delta) {
		return math.Inf(-1), lo, hi
	}
	return math.Log((lo - delta) / hi), lo, hi
}

// count is the number of values of the sorted slice x in e.
func count(x []float64, e Event) int {
	lo := sort.SearchFloat64s(x, e.T) // first x >= T
	switch e.Kind {
	case AtLeast:
		return len(x) - lo
	case AtMost:
		return sort.Search(len(x), func(i int) bool { return x[i] > e.T })
	}
	hi := sort.Search(len(x), func(i int) bool { return x[i] > e.T })
	return hi - lo
}

// maxCells is the largest number of distinct values for which every value
// is also tried as a cell {x = v}.
const maxCells = 256

// candidates are the events tried on the selection half: thresholds at
// every distinct value when there are few of them (plus the cells), else at
// quantiles of the pooled sample, evenly spaced in the middle and
// geometrically spaced toward both tails, where the largest ratios of a
// noise distribution are.
func candidates(sel [2][]float64) []Event {
	pool := append(slices.Clone(sel[0]), sel[1]...)
	slices.Sort(pool)
	distinct := slices.Compact(slices.Clone(pool))
	var ts []float64
	var out []Event
	if len(distinct) <= maxCells {
		ts = distinct
		for _, t := range ts {
			out = append(out, Event{Kind: Equal, T: t})
		}
	} else {
		n := len(pool)
		var qs []float64
		for k := 1; k < 100; k++ {
			qs = append(qs, float64(k)/100)
		}
		for q := 0.01; q*float64(n) >= 1; q /= math.Sqrt2 {
			qs = append(qs, q, 1-q)
		}
		for _, q := range qs {
			i := min(n-1, max(0, int(q*float64(n))))
			ts = append(ts, pool[i])
		}
		slices.Sort(ts)
		ts = slices.Compact(ts)
	}
	for _, t := range ts {
		out = append(out, Event{Kind: AtLeast, T: t}, Event{Kind: AtMost, T: t})
	}
	for i := range out {
		e := out[i]
		e.Swap = true
		out = append(out, e)
	}
	return out
}

// choose scores every candidate on the selection half by its own
// Clopper–Pearson lower bound and keeps the best k with a finite score.
func choose(sel [2][]float64, cands []Event, k int, alpha, delta float64) []Event {
	type scored struct {
		e   Event
		eps float64
	}
	var all []scored
	for _, e := range cands {
		eps, _, _ := score(e, count(sel[0], e), count(sel[1], e), len(sel[0]), len(sel[1]), alpha, delta)
		if !math.IsInf(eps, -1) {
			all = append(all, scored{e, eps})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].eps > all[j].eps })
	out := make([]Event, 0, k)
	for _, s := range all[:min(k, len(all))] {
		out = append(out, s.e)
	}
	return out
}
