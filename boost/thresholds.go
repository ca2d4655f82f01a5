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
func Thresholds(method ThresholdMethod, user *dataset.Dataset) ([]float64, error) {
	n, d, K := user.Len(), user.Dim(), user.NumClasses()
	if n == 0 {
		return nil, fmt.Errorf("thresholds: the data user has no samples")
	}
	eta := make([]float64, d)
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
	}
	return eta, nil
}

func maxInt(v []int) int {
	m := v[0]
	for _, x := range v[1:] {
		m = max(m, x)
	}
	return m
}
