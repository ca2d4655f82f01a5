package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFirstHourExamplesExist: the experiment's example CSVs are where it
// looks for them, from the repository root (it failed at once when
// dataset/ moved out of boost/).
func TestFirstHourExamplesExist(t *testing.T) {
	for _, f := range []string{"loans.csv", "trees.csv", "activity.csv"} {
		if _, err := os.Stat(filepath.Join("..", "..", "..", exampleDir, f)); err != nil {
			t.Errorf("firsthour-csv's example %s: %v", f, err)
		}
	}
}
