package boost

import (
	"fmt"
	"math"
	"slices"

	"github.com/ppboost/ppboost/dataset"
)

// Thresholds computes the public stump thresholds eta_j from the data
// user's own labelled data (the papers let the user pre-compute them).
//
//   - median: the per-feature median.
//   - boosted (the default): every (feature, threshold) that 10 rounds of
//     boosting with free-threshold stumps on the user's own data used, plus
//     the best split of each feature they did not use. On the synthetic
//     setting it beat best and median both non-privately and with PM.
//   - best: per feature, the midpoint between consecutive distinct values
//     whose stump (each side predicting its majority class) classifies the
//     user's data best; ties keep the smallest threshold. Exact sweep over the
//     sorted values, O(n log n) per feature.
//
// With perFeature > 1 each feature also gets the thresholds at the
// quantiles i/perFeature (i = 1..perFeature-1) of the user's data, without
// repeats, so the stump may split each feature at several public points.
func Thresholds(method ThresholdMethod, perFeature int, user *dataset.Dataset) ([]Split, error) {
	n, d, K := user.Len(), user.Dim(), user.NumClasses()
	if n == 0 {
		return nil, fmt.Errorf("thresholds: the data user has no samples")
	}
	if perFeature < 1 {
		return nil, fmt.Errorf("thresholds: %d splits per feature", perFeature)
	}
	eta := make([]float64, d)
	var splits []Split
	var boosted map[int][]float64
	if method == ThresholdBoosted {
		boosted = boostedSplits(user, boostedRounds)
	}
	type pt struct {
		v float64
		y int
	}
	col := make([]pt, n)
	total := make([]int, K)
	for _, y := range user.Y {
		total[y]++
	}
	left := make([]int, K)
	for j := 0; j < d; j++ {
		for i, x := range user.X {
			col[i] = pt{x[j], user.Y[i]}
		}
		slices.SortFunc(col, func(a, b pt) int {
			switch {
			case a.v < b.v:
				return -1
			case a.v > b.v:
				return 1
			}
			return a.y - b.y
		})
		switch method {
		case ThresholdMedian:
			if n%2 == 1 {
				eta[j] = col[n/2].v
			} else {
				eta[j] = (col[n/2-1].v + col[n/2].v) / 2
			}
		case ThresholdBestSplit, ThresholdBoosted:
			clear(left)
			// Threshold below every value: everything goes right.
			best, bestT := maxInt(total), col[0].v
			for i := 0; i < n-1; i++ {
				left[col[i].y]++
				if col[i].v == col[i+1].v {
					continue
				}
				correct := 0
				lm, rm := 0, 0
				for k := 0; k < K; k++ {
					lm = max(lm, left[k])
					rm = max(rm, total[k]-left[k])
				}
				correct = lm + rm
				if correct > best {
					best, bestT = correct, (col[i].v+col[i+1].v)/2
				}
			}
			eta[j] = bestT
		default:
			return nil, fmt.Errorf("thresholds: unknown method %q", method)
		}
		cands := []float64{eta[j]}
		if ts, ok := boosted[j]; ok {
			cands = ts // every threshold the user's own boosting used on feature j
		}
		for i := 1; i < perFeature; i++ {
			q := col[min(n-1, i*n/perFeature)].v
			if !slices.Contains(cands, q) && q > col[0].v {
				cands = append(cands, q)
			}
		}
		slices.Sort(cands)
		for _, c := range cands {
			splits = append(splits, Split{Feature: j, Threshold: c})
		}
	}
	return splits, nil
}

// Split is one public candidate split of a stump: x[Feature] < Threshold.
type Split struct {
	Feature   int     `json:"feature"`
	Threshold float64 `json:"threshold"`
}

// PerFeature makes one split per feature from a threshold per feature.
func PerFeature(thresholds []float64) []Split {
	s := make([]Split, len(thresholds))
	for j, t := range thresholds {
		s[j] = Split{Feature: j, Threshold: t}
	}
	return s
}

func maxInt(v []int) int {
	m := v[0]
	for _, x := range v[1:] {
		m = max(m, x)
	}
	return m
}

// boostedRounds is how many rounds of local boosting choose the "boosted"
// thresholds: the papers' sessions run 10.
const boostedRounds = 10

// boostedSplits runs SAMME with exact weighted best-split stumps on the
// user's own data for up to `rounds` rounds and returns, per feature, the
// thresholds it used.
func boostedSplits(user *dataset.Dataset, rounds int) map[int][]float64 {
	n, d, K := user.Len(), user.Dim(), user.NumClasses()
	order := make([][]int, d)
	for j := range order {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int {
			switch va, vb := user.X[a][j], user.X[b][j]; {
			case va < vb:
				return -1
			case va > vb:
				return 1
			}
			return a - b
		})
		order[j] = idx
	}
	w := make([]float64, n)
	for i := range w {
		w[i] = 1 / float64(n)
	}
	total := make([]float64, K)
	left := make([]float64, K)
	chosen := map[int][]float64{}
	for r := 0; r < rounds; r++ {
		clear(total)
		for i, y := range user.Y {
			total[y] += w[i]
		}
		bestJ, bestT, bestCorrect := -1, 0.0, -1.0
		var bestLab [2]int
		for j := 0; j < d; j++ {
			clear(left)
			idx := order[j]
			for p := 0; p < n-1; p++ {
				i := idx[p]
				left[user.Y[i]] += w[i]
				a, b := user.X[i][j], user.X[idx[p+1]][j]
				if a == b {
					continue
				}
				lk, rk := 0, 0
				for k := 1; k < K; k++ {
					if left[k] > left[lk] {
						lk = k
					}
					if total[k]-left[k] > total[rk]-left[rk] {
						rk = k
					}
				}
				if c := left[lk] + total[rk] - left[rk]; c > bestCorrect {
					bestJ, bestT, bestCorrect, bestLab = j, (a+b)/2, c, [2]int{lk, rk}
				}
			}
		}
		if bestJ < 0 {
			break
		}
		sum := 0.0
		for _, v := range w {
			sum += v
		}
		err := 1 - bestCorrect/sum
		alpha := Alpha(err, K)
		if alpha <= 0 {
			break
		}
		if !slices.Contains(chosen[bestJ], bestT) {
			chosen[bestJ] = append(chosen[bestJ], bestT)
		}
		f := math.Exp(alpha)
		for i, x := range user.X {
			pred := bestLab[0]
			if x[bestJ] >= bestT {
				pred = bestLab[1]
			}
			if pred != user.Y[i] {
				w[i] *= f
			}
		}
	}
	return chosen
}

// TopSplits keeps the max splits whose stumps (each branch predicting its
// majority class) classify the user's data best, in their original order;
// ties keep the earlier split.
func TopSplits(splits []Split, max int, user *dataset.Dataset) []Split {
	if max >= len(splits) {
		return splits
	}
	K := user.NumClasses()
	score := make([]int, len(splits))
	cnt := make([]int, 2*K)
	for s, sp := range splits {
		clear(cnt)
		for i, x := range user.X {
			b := 0
			if x[sp.Feature] >= sp.Threshold {
				b = 1
			}
			cnt[b*K+user.Y[i]]++
		}
		score[s] = maxInt(cnt[:K]) + maxInt(cnt[K:])
	}
	idx := make([]int, len(splits))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return score[b] - score[a] })
	idx = idx[:max]
	slices.Sort(idx)
	out := make([]Split, len(idx))
	for i, j := range idx {
		out[i] = splits[j]
	}
	return out
}
