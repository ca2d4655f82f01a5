package boost

import (
	"fmt"
	"slices"

	"github.com/ppboost/ppboost/boost/dataset"
)

// Thresholds computes the public stump thresholds eta_j from the data
// user's own labelled data (the papers let the user pre-compute them).
//
//   - median: the per-feature median.
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
		case ThresholdBestSplit:
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
