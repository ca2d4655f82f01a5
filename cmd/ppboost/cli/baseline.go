package cli

import (
	"fmt"
	"io"

	"github.com/ppboost/ppboost/dataset"
)

// baseline is the majority-class predictor a classifier must beat: the
// most frequent class of the training rows, and its error on the test rows.
type baseline struct {
	Class string
	Error float64
}

func majorityBaseline(train, test *dataset.Dataset) baseline {
	counts := make([]int, max(train.NumClasses(), test.NumClasses()))
	for _, c := range train.Y {
		counts[c]++
	}
	best := 0
	for c, n := range counts {
		if n > counts[best] {
			best = c
		}
	}
	wrong := 0
	for _, c := range test.Y {
		if c != best {
			wrong++
		}
	}
	name := fmt.Sprint(best)
	if best < len(train.Classes) {
		name = train.Classes[best]
	}
	return baseline{Class: name, Error: float64(wrong) / float64(max(1, test.Len()))}
}

// report prints the baseline beside a test error and warns when a private
// model does not beat it.
func (b baseline) report(out, errOut io.Writer, testErr float64, private bool) {
	fmt.Fprintf(out, "majority-class baseline: test error %.4f (always %q)\n", b.Error, b.Class)
	if private && testErr >= b.Error {
		fmt.Fprintf(errOut, "warning: the private model (test error %.4f) does not beat the majority class (%.4f): the noise this budget needs swamps the signal; raise --eps, or use more rows\n", testErr, b.Error)
	}
}
