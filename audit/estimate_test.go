package audit

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ppboost/ppboost/crypto/rng"
)

// randomizedResponse reports the neighbour's bit truthfully with
// probability e^eps/(1+e^eps): exactly eps-DP, and the events {x = 1} and
// {x = 0} achieve eps.
func randomizedResponse(eps float64) Sampler {
	keep := math.Exp(eps) / (1 + math.Exp(eps))
	return func(r *rand.Rand, nb int) float64 {
		if r.Float64() < keep {
			return float64(nb)
		}
		return float64(1 - nb)
	}
}

// TestEstimateRandomizedResponse: the bound is below eps (it is a lower
// confidence bound) and close to it. With n = 100,000 measured draws per
// neighbour and alpha = 1e-6/(2 m) per bound (z ~ 5.5), each bound is off by
// about z sqrt(p(1-p)/n) ~ 0.008 at p = e/(1+e) = 0.73, so the log ratio is
// about eps - 0.008 (1/0.73 + 1/0.27) = eps - 0.04; allow 0.1.
func TestEstimateRandomizedResponse(t *testing.T) {
	for _, eps := range []float64{0.5, 1, 2} {
		res, err := Estimate(randomizedResponse(eps), Options{Draws: 200_000, Confidence: DefaultConfidence, Seed: rng.SeedOf(t.Name())})
		if err != nil {
			t.Fatal(err)
		}
		if res.EpsLo > eps || res.EpsLo < eps-0.1 {
			t.Errorf("eps %v: eps_lo %.4f (%s), want in [eps - 0.1, eps]", eps, res.EpsLo, res.Event)
		}
	}
}

// TestEstimateLaplace: a continuous mechanism (shift 2, scale 2/eps:
// eps-DP, tight in both tails). The bound stays below eps and finds most
// of it; halving the scale is caught.
func TestEstimateLaplace(t *testing.T) {
	lap := func(scale float64) Sampler {
		return func(r *rand.Rand, nb int) float64 {
			return float64(2*nb-1) + scale*(r.ExpFloat64()-r.ExpFloat64())
		}
	}
	o := Options{Draws: 100_000, Confidence: DefaultConfidence, Seed: rng.SeedOf(t.Name())}
	res, err := Estimate(lap(2), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.EpsLo > 1 || res.EpsLo < 0.8 {
		t.Errorf("eps_lo %.4f (%s), want in [0.8, 1]", res.EpsLo, res.Event)
	}
	ctl, err := Estimate(lap(1), o)
	if err != nil {
		t.Fatal(err)
	}
	if ctl.EpsLo <= 1 {
		t.Errorf("half-noise control: eps_lo %.4f (%s), want > 1", ctl.EpsLo, ctl.Event)
	}
}

// TestEstimateDelta: an (eps, delta) mechanism that outputs its input with
// probability delta and otherwise runs randomized response: scored with
// delta, the bound is at most eps; scored without, the point masses show a
// much larger loss.
func TestEstimateDelta(t *testing.T) {
	const eps, delta = 0.5, 0.05
	rr := randomizedResponse(eps)
	s := func(r *rand.Rand, nb int) float64 {
		if r.Float64() < delta {
			return float64(10 + nb)
		}
		return rr(r, nb)
	}
	o := Options{Draws: 200_000, Confidence: DefaultConfidence, Seed: rng.SeedOf(t.Name()), Delta: delta}
	res, err := Estimate(s, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.EpsLo > eps {
		t.Errorf("with delta: eps_lo %.4f (%s), want <= %v", res.EpsLo, res.Event, eps)
	}
	o.Delta = 0
	if res, err = Estimate(s, o); err != nil {
		t.Fatal(err)
	}
	if res.EpsLo < 3 {
		t.Errorf("without delta: eps_lo %.4f (%s), want >= 3", res.EpsLo, res.Event)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{
		{Draws: 2, Confidence: 0.9},
		{Draws: 100, Confidence: 1},
		{Draws: 100, Confidence: 0.9, Delta: -1},
		{Draws: 100, Confidence: 0.9, Events: -1},
	} {
		if _, err := Estimate(randomizedResponse(1), o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
