package dataset

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The example CSV files testdata/loans.csv (2 classes), testdata/trees.csv
// (3 classes) and testdata/activity.csv (10 classes) are made up by
// exampleCSVs below: class-conditional normal numbers, rounded as a person
// would record them, and categorical columns drawn with per-class
// frequencies (a few columns carry no signal at all, as real data has).
// They are deterministic (fixed PCG seeds); TestExampleCSVs checks that the
// committed files are what the generator writes, and
//
//	go test ./dataset -run TestExampleCSVs -update-examples
//
// rewrites them.
var updateExamples = flag.Bool("update-examples", false, "rewrite testdata/{loans,trees,activity}.csv from the generator")

// numCol is a numeric column: per-class mean and sd, clamped to [lo, hi]
// and rounded to digits decimals.
type numCol struct {
	name     string
	mean, sd []float64
	lo, hi   float64
	digits   int
}

// catCol is a categorical column: per-class weights of its values.
type catCol struct {
	name   string
	values []string
	weight [][]float64
}

type exampleSpec struct {
	file    string
	seed    uint64
	rows    int
	classes []string
	prior   []float64
	nums    []numCol
	cats    []catCol
	order   []string // column order of the file (the label last)
}

// same repeats v for k classes.
func same(k int, v float64) []float64 {
	out := make([]float64, k)
	for i := range out {
		out[i] = v
	}
	return out
}

func exampleSpecs() []exampleSpec {
	acts := []string{"walk", "run", "cycle", "sit", "stand", "lie", "climb_stairs", "descend_stairs", "drive", "swim"}
	return []exampleSpec{{
		file: "loans.csv", seed: 0x4c4f414e, rows: 1000,
		classes: []string{"repaid", "default"}, prior: []float64{0.62, 0.38},
		nums: []numCol{
			{"income_k", []float64{66, 40}, []float64{18, 14}, 8, 250, 1},
			{"age", []float64{45, 35}, []float64{12, 10}, 18, 90, 0},
			{"debt_ratio", []float64{0.26, 0.46}, []float64{0.1, 0.12}, 0, 1.5, 2},
			{"term_months", []float64{28, 40}, []float64{12, 14}, 6, 72, 0},
		},
		cats: []catCol{
			{"employment", []string{"salaried", "self-employed", "retired", "unemployed"}, [][]float64{{0.62, 0.2, 0.15, 0.03}, {0.38, 0.22, 0.1, 0.3}}},
			{"home", []string{"own", "mortgage", "rent"}, [][]float64{{0.38, 0.42, 0.2}, {0.12, 0.28, 0.6}}},
			{"branch", []string{"north", "south", "east", "west"}, [][]float64{{1, 1, 1, 1}, {1, 1, 1, 1}}},
		},
		order: []string{"age", "income_k", "employment", "home", "debt_ratio", "term_months", "branch"},
	}, {
		file: "trees.csv", seed: 0x54524545, rows: 600,
		classes: []string{"alder", "birch", "cedar"}, prior: []float64{0.45, 0.35, 0.2},
		nums: []numCol{
			{"height_m", []float64{14, 18, 26}, []float64{4, 4, 6}, 1, 60, 1},
			{"leaf_length_cm", []float64{8, 6, 2}, []float64{1.6, 1.4, 0.9}, 0.3, 20, 1},
			{"leaf_width_cm", []float64{6.5, 4, 0.4}, []float64{1.3, 1.1, 0.3}, 0.1, 15, 1},
			{"altitude_m", []float64{350, 600, 900}, []float64{200, 250, 300}, 0, 2500, 0},
		},
		cats: []catCol{
			{"bark", []string{"smooth", "rough", "peeling"}, [][]float64{{0.2, 0.75, 0.05}, {0.25, 0.1, 0.65}, {0.1, 0.6, 0.3}}},
			{"soil", []string{"clay", "loam", "sand", "peat"}, [][]float64{{0.45, 0.3, 0.05, 0.2}, {0.2, 0.35, 0.3, 0.15}, {0.15, 0.3, 0.4, 0.15}}},
		},
		order: []string{"height_m", "bark", "leaf_length_cm", "leaf_width_cm", "soil", "altitude_m"},
	}, {
		file: "activity.csv", seed: 0x41435449, rows: 2000,
		classes: acts, prior: []float64{0.16, 0.08, 0.09, 0.14, 0.1, 0.1, 0.06, 0.06, 0.12, 0.09},
		nums: []numCol{
			//                      walk run  cycle sit  stand lie  climb desc drive swim
			{"speed_kmh", []float64{4.8, 10, 18, 0, 0.2, 0, 2.2, 3, 45, 2.5}, []float64{0.8, 1.8, 4, 0.2, 0.3, 0.1, 0.6, 0.7, 15, 0.8}, 0, 140, 1},
			{"heart_rate", []float64{95, 150, 130, 68, 75, 60, 125, 105, 78, 135}, []float64{10, 12, 14, 7, 8, 6, 12, 10, 9, 12}, 40, 210, 0},
			{"cadence_spm", []float64{105, 165, 80, 0, 3, 0, 85, 100, 0, 45}, []float64{8, 10, 10, 2, 4, 1, 9, 9, 3, 10}, 0, 220, 0},
			{"accel_var", []float64{1.2, 3.5, 0.9, 0.05, 0.15, 0.03, 1.8, 1.5, 0.4, 1}, []float64{0.3, 0.7, 0.3, 0.03, 0.07, 0.02, 0.4, 0.35, 0.15, 0.3}, 0, 8, 2},
			{"altitude_change_m", []float64{0, 0, 0, 0, 0, 0, 3, -3, 0, 0}, []float64{0.8, 1, 2, 0.2, 0.2, 0.1, 0.8, 0.8, 3, 0.2}, -20, 20, 1},
			{"torso_angle_deg", []float64{85, 80, 55, 60, 88, 5, 75, 82, 60, 10}, []float64{4, 5, 6, 6, 3, 4, 5, 4, 6, 6}, 0, 90, 0},
			{"wrist_roll_deg", []float64{10, 20, 60, 20, 5, 15, 15, 12, 75, 90}, []float64{8, 10, 10, 15, 6, 15, 8, 8, 10, 20}, -180, 180, 0},
		},
		cats: []catCol{
			{"location", []string{"indoor", "outdoor", "road", "water"}, [][]float64{
				{0.3, 0.7, 0, 0}, {0.1, 0.85, 0.05, 0}, {0, 0.4, 0.6, 0}, {0.85, 0.15, 0, 0}, {0.6, 0.4, 0, 0},
				{0.95, 0.05, 0, 0}, {0.75, 0.25, 0, 0}, {0.75, 0.25, 0, 0}, {0, 0.05, 0.95, 0}, {0.1, 0, 0, 0.9}}},
			{"device", []string{"watch", "phone", "band"}, [][]float64{
				{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}}},
		},
		order: []string{"device", "speed_kmh", "heart_rate", "cadence_spm", "accel_var", "altitude_change_m", "torso_angle_deg", "wrist_roll_deg", "location"},
	}}
}

// draw picks an index with probability proportional to w.
func draw(r *rand.Rand, w []float64) int {
	t := 0.0
	for _, v := range w {
		t += v
	}
	u := r.Float64() * t
	for i, v := range w {
		if u < v {
			return i
		}
		u -= v
	}
	return len(w) - 1
}

// exampleCSV writes one example file.
func exampleCSV(s exampleSpec) []byte {
	r := rand.New(rand.NewPCG(s.seed, 0x6578616d706c65))
	var b bytes.Buffer
	b.WriteString(strings.Join(s.order, ",") + ",label\n")
	for range s.rows {
		y := draw(r, s.prior)
		vals := map[string]string{}
		for _, c := range s.nums {
			v := c.mean[y] + c.sd[y]*r.NormFloat64()
			v = math.Max(c.lo, math.Min(c.hi, v))
			p := math.Pow(10, float64(c.digits))
			v = math.Round(v*p) / p
			if v == 0 {
				v = 0 // no "-0"
			}
			vals[c.name] = fmt.Sprintf("%.*f", c.digits, v)
		}
		for _, c := range s.cats {
			vals[c.name] = c.values[draw(r, c.weight[y])]
		}
		for _, col := range s.order {
			b.WriteString(vals[col] + ",")
		}
		b.WriteString(s.classes[y] + "\n")
	}
	return b.Bytes()
}

// TestExampleCSVs checks the committed example files against the generator
// (or rewrites them with -update-examples), and that each loads with the
// class count and size it is meant to have.
func TestExampleCSVs(t *testing.T) {
	for _, s := range exampleSpecs() {
		t.Run(s.file, func(t *testing.T) {
			path := filepath.Join("testdata", s.file)
			want := exampleCSV(s)
			if *updateExamples {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update-examples to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s differs from what the generator writes (run with -update-examples)", path)
			}
			d, err := LoadCSV(path, CSVOptions{Label: LabelColumn})
			if err != nil {
				t.Fatal(err)
			}
			if d.Len() != s.rows || d.NumClasses() != len(s.classes) {
				t.Fatalf("%s: %d rows, %d classes; want %d and %d", path, d.Len(), d.NumClasses(), s.rows, len(s.classes))
			}
		})
	}
}
