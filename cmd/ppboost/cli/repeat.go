package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
)

// repeatHelp is --repeat's help on every one-process trainer (sim,
// dpboost, fed, pfds sim); what moves with the seed is the command's own
// (repeatSeeds).
const repeatHelp = "run the whole training N times, with seeds --seed, --seed+1, ..., --seed+N-1 (%s), " +
	"and print each run's test error, then their mean ± sd, min and max and the majority-class baseline " +
	"(the plan and privacy lines are the first run's; --model, on sim and dpboost, keeps the first run's model; sim --json prints the runs and the summary). " +
	"With 1 (the default), a hint says when the test set alone makes one run's test error uncertain: " +
	"its binomial sd sqrt(p(1-p)/n) above 0.03"

// repeatFlag is --repeat N.
type repeatFlag struct{ n int }

// register adds --repeat; seeds says what the seed moves in this command.
func (r *repeatFlag) register(fs *flag.FlagSet, seeds string) {
	fs.IntVar(&r.n, "repeat", 1, fmt.Sprintf(repeatHelp, seeds))
}

// check refuses N < 1, naming the flag.
func (r *repeatFlag) check() error {
	if r.n < 1 {
		return usagef("--repeat: must be at least 1 (the number of runs), got %d", r.n)
	}
	return nil
}

// runResult is one run of a --repeat series.
type runResult struct {
	Seed      uint64  `json:"seed"`
	TestError float64 `json:"test_error"`
	TestRows  int     `json:"test_rows"`
	// Majority is the test error of the majority class of the run's
	// training rows (its test set moves with the seed).
	Majority float64 `json:"majority_error"`
	private  bool    // the trainer adds noise (the majority warning applies)
}

// repeatSummary is the result of a --repeat series (the JSON of sim
// --json --repeat N).
type repeatSummary struct {
	Runs []runResult `json:"runs"`
	// Mean and SD (the sample sd, N-1) of the runs' test errors.
	Mean     float64 `json:"mean_test_error"`
	SD       float64 `json:"sd_test_error"`
	Min      float64 `json:"min_test_error"`
	Max      float64 `json:"max_test_error"`
	Majority float64 `json:"majority_error_mean"`
}

func summarize(runs []runResult) repeatSummary {
	s := repeatSummary{Runs: runs, Min: math.Inf(1), Max: math.Inf(-1)}
	for _, r := range runs {
		s.Mean += r.TestError / float64(len(runs))
		s.Majority += r.Majority / float64(len(runs))
		s.Min, s.Max = math.Min(s.Min, r.TestError), math.Max(s.Max, r.TestError)
	}
	if len(runs) > 1 {
		ss := 0.0
		for _, r := range runs {
			ss += (r.TestError - s.Mean) * (r.TestError - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(len(runs)-1))
	}
	return s
}

// runLine prints one run of a series.
func runLine(out io.Writer, i, n int, r runResult) {
	fmt.Fprintf(out, "run %d/%d (seed %d): test error %.4f (%d rows), majority class %.4f\n", i+1, n, r.Seed, r.TestError, r.TestRows, r.Majority)
}

// report prints the series' summary (or its JSON) and warns when a
// private trainer's mean does not beat the majority class's.
func (s repeatSummary) report(out, errOut io.Writer, asJSON bool) error {
	private := len(s.Runs) > 0 && s.Runs[0].private
	if private && s.Mean >= s.Majority {
		fmt.Fprintf(errOut, "warning: the private model (mean test error %.4f) does not beat the majority class (%.4f): the noise this budget needs swamps the signal; raise --eps, or use more rows\n", s.Mean, s.Majority)
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	fmt.Fprintf(out, "test error: %.4f ± %.4f over %d runs (min %.4f, max %.4f)\n", s.Mean, s.SD, len(s.Runs), s.Min, s.Max)
	same := true
	for _, r := range s.Runs {
		same = same && r.Majority == s.Runs[0].Majority
	}
	if same {
		fmt.Fprintf(out, "majority-class baseline: test error %.4f\n", s.Majority)
	} else {
		fmt.Fprintf(out, "majority-class baseline: test error %.4f (mean over the runs' test sets)\n", s.Majority)
	}
	return nil
}

// singleRunHint says, after a single run, when its test error is
// uncertain from the test set alone: its binomial sd sqrt(p(1-p)/n) is
// above 0.03. That is a floor on the run-to-run spread when the seed
// draws the test rows; the noise adds to it, so no estimate of that part
// is printed.
func singleRunHint(errOut io.Writer, testErr float64, n int) {
	if n <= 0 {
		return
	}
	sd := math.Sqrt(testErr * (1 - testErr) / float64(n))
	if sd <= 0.03 {
		return
	}
	fmt.Fprintf(errOut, "hint: on %d test rows this test error alone has sd ≈ %.3f (sqrt(p(1-p)/n)), and other seeds draw other splits and noise; use --repeat 5 to see the spread of single runs\n", n, sd)
}

// withErrOut is errOut for the first run of a series and io.Discard for
// the others (their plan and privacy lines repeat the first's).
func withErrOut(i int, errOut io.Writer) io.Writer {
	if i == 0 {
		return errOut
	}
	return io.Discard
}

// runFailed wraps a run's error with its place in the series.
func runFailed(i, n int, seed uint64, err error) error {
	if n == 1 || err == nil {
		return err
	}
	// %w keeps the error's kind (usage, data) for the exit status.
	return fmt.Errorf("run %d/%d (seed %d): %w", i+1, n, seed, err)
}

// modelLine says which run's model --model holds (on errOut beside JSON).
func modelLine(out, errOut io.Writer, asJSON bool, path string, seed uint64) {
	w := out
	if asJSON {
		w = errOut
	}
	fmt.Fprintf(w, "model of run 1 (seed %d) written to %s\n", seed, path)
}
