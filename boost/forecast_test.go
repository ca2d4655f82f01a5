package boost

import (
	"math"
	"testing"

	"github.com/ppboost/ppboost/crypto/ldp"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
)

func forecastUser(t *testing.T, cfg Config) *UserState {
	t.Helper()
	d, err := dataset.Synthetic(dataset.DefaultSynthetic(400, 3))
	if err != nil {
		t.Fatal(err)
	}
	u, err := NewUserState(cfg, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestForecastRound1: without noise a first-round stump beats the majority
// class in every draw; with eps 0.01 (negative control) the noise decides
// the split and labels, and it beats it in far fewer draws than the plan
// target; more owners per round never forecast much worse.
func TestForecastRound1(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Mechanism = "none"
	f, err := forecastUser(t, cfg).ForecastRound1(50, 1, ForecastDraws, 1)
	if err != nil {
		t.Fatal(err)
	}
	if f.Beat != 1 || !f.Likely() || f.NoiseSD != 0 || !(f.MeanErr < f.Majority) || !(f.Signal > 0) || !math.IsInf(f.SNR(), 1) {
		t.Fatalf("no noise: %+v", f)
	}
	cfg.Mechanism, cfg.Epsilon = "pm", 0.01
	low, err := forecastUser(t, cfg).ForecastRound1(50, 1, ForecastDraws, 1)
	if err != nil {
		t.Fatal(err)
	}
	// At eps 0.01 one owner's release has sd ~ 2/eps * sqrt(d) in the
	// hundreds, the mean of 50 still tens, against class differences
	// below 1: the chosen stump is a coin flip between the features and
	// labels, which beats the majority in about half of the draws at best.
	// 0.7 is planTarget's 0.8 less two standard errors of a 100-draw
	// proportion (2 sqrt(0.25/100) = 0.1).
	// The signal/noise ratio says the same before any draw: a mean value
	// of at most 1 against a noise sd in the hundreds.
	if snr := low.SNR(); !(snr > 0 && snr < 0.05) {
		t.Fatalf("eps 0.01: signal/noise %v, want (0, 0.05)", snr)
	}
	if low.Beat > 0.7 || low.Likely() && low.Beat >= 0.8 {
		t.Fatalf("eps 0.01 forecast beats the majority in %.2f of the draws: %+v", low.Beat, low)
	}
	cfg.Epsilon = 2
	u := forecastUser(t, cfg)
	small, err := u.ForecastRound1(10, 1, ForecastDraws, 1)
	if err != nil {
		t.Fatal(err)
	}
	big, err := u.ForecastRound1(1000, 1, ForecastDraws, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Two independent 100-draw proportions: the difference has sd at most
	// sqrt(2 x 0.25/100) = 0.07; 0.21 is three of them.
	if big.Beat < small.Beat-0.21 {
		t.Fatalf("1000 owners forecast worse than 10: %.2f < %.2f", big.Beat, small.Beat)
	}
	if !(big.NoiseSD < small.NoiseSD) {
		t.Fatalf("noise sd does not fall with owners: %v vs %v", big.NoiseSD, small.NoiseSD)
	}
}

// TestForecastNoiseSD: the forecast's NoiseSD is the standard deviation of
// one value of the mean of H releases of the mechanism, measured: 4,000
// means of H = 25 PM releases of an owner's stump statistic. The sample sd
// of n normal-ish draws has relative standard error 1/sqrt(2n) = 1.1%, and
// the mean over the values has less; 5% is over four of them. Halving the
// owners (negative control) must move it by sqrt(2), far outside.
func TestForecastNoiseSD(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Epsilon = 3
	u := forecastUser(t, cfg)
	o, err := NewOwner(u.User.Subset([]int{0}))
	if err != nil {
		t.Fatal(err)
	}
	const h, n = 25, 4000
	want := u.noiseSD(h, o)
	v := stumpStatistic(&u.Spec, o.Data.X, o.Data.Y, o.W)
	m, err := ldp.New(u.Spec.Mechanism, u.Spec.Epsilon, len(v), ldp.Clip)
	if err != nil {
		t.Fatal(err)
	}
	r := rng.ForName(t.Name())
	sum := make([]float64, len(v))
	sq := make([]float64, len(v))
	out := make([]float64, len(v))
	for range n {
		mean := make([]float64, len(v))
		for range h {
			if err := m.Perturb(r, v, out); err != nil {
				t.Fatal(err)
			}
			for j, x := range out {
				mean[j] += x / h
			}
		}
		for j, x := range mean {
			sum[j] += x
			sq[j] += x * x
		}
	}
	var variance float64
	for j := range v {
		mu := sum[j] / n
		variance += sq[j]/n - mu*mu
	}
	got := math.Sqrt(variance / float64(len(v)))
	if math.Abs(got-want) > 0.05*want {
		t.Fatalf("measured sd %.4f of the mean of %d releases, forecast says %.4f", got, h, want)
	}
	if half := u.noiseSD(h/2, o); math.Abs(got-half) <= 0.05*half {
		t.Fatalf("negative control: the sd for %d owners (%.4f) also matches %.4f", h/2, half, got)
	}
}
