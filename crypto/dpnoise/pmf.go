package dpnoise

import "math"

// PolyaPMF is P(NB(shape, a) = k).
func PolyaPMF(shape, a float64, k int64) float64 {
	if k < 0 {
		return 0
	}
	x := float64(k)
	l1, _ := math.Lgamma(x + shape)
	l2, _ := math.Lgamma(shape)
	l3, _ := math.Lgamma(x + 1)
	return math.Exp(l1 - l2 - l3 + shape*math.Log1p(-a) + x*math.Log(a))
}

// DiffPMF is P(X - Y = d) for X, Y iid NB(shape, a): sum_j P(X = j + |d|)
// P(Y = j), summed until the terms are below 1e-18 of the total and
// decreasing (the terms decay like a^(2j) j^(2 shape - 2)).
func DiffPMF(shape, a float64, d int64) float64 {
	if d < 0 {
		d = -d
	}
	sum := 0.0
	prev := math.Inf(1)
	for j := int64(0); ; j++ {
		term := PolyaPMF(shape, a, j+d) * PolyaPMF(shape, a, j)
		sum += term
		if term < 1e-18*sum && term <= prev && j > 8 {
			return sum
		}
		prev = term
		if j > 1<<22 {
			return sum
		}
	}
}

// DLapPMF is P(DLap(a) = k) = (1-a)/(1+a) a^|k|.
func DLapPMF(a float64, k int64) float64 {
	if k < 0 {
		k = -k
	}
	return (1 - a) / (1 + a) * math.Pow(a, float64(k))
}

// SumPMF is the exact pmf of the sum of k contributors' shares: the
// difference of two NB(k/h, a).
func (p Params) SumPMF(k int, x int64) float64 {
	return DiffPMF(float64(k)/float64(p.Honest), p.A(), x)
}

// SumVariance is the variance of the sum of k shares: 2 r a / (1-a)^2 with
// r = k/h (DLap(t) has 2a/(1-a)^2 ~ 2 t^2).
func (p Params) SumVariance(k int) float64 {
	a := p.A()
	r := float64(k) / float64(p.Honest)
	return 2 * r * a / ((1 - a) * (1 - a))
}
