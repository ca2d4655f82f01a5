package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ppboost/ppboost/audit"
)

func init() {
	register("audit", "empirical privacy audit of every owner release (lower confidence bound on eps vs the claim)", runAudit)
}

// defaultAuditDraws is the long run's draws per neighbour (RESULTS.md,
// "Privacy audit").
const defaultAuditDraws = 1_000_000

func runAudit(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("audit", "audit [--draws N] [--confidence c] [--only NAME] [--out DIR] [--seed S]", errOut)
	draws := fs.Int("draws", defaultAuditDraws, "outputs drawn per neighbour (half choose the events, half measure them)")
	conf := fs.Float64("confidence", audit.DefaultConfidence, "probability that all the Clopper–Pearson bounds of one estimate hold")
	only := fs.String("only", "", "audit only the entries whose name starts with NAME (e.g. ldp/pm, dpboost/split)")
	dir := fs.String("out", "", "directory for audit.csv and audit.json (none if empty)")
	seed := fs.Uint64("seed", 1, "seed of the audit's random streams")
	list := fs.Bool("list", false, "list the entries and their neighbouring inputs, run nothing")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *draws < 4 {
		return usagef("--draws: %d, want at least 4", *draws)
	}
	if !(*conf > 0 && *conf < 1) {
		return usagef("--confidence: %v, want a probability strictly between 0 and 1", *conf)
	}
	entries, err := audit.Entries()
	if err != nil {
		return err
	}
	var sel []audit.Entry
	for _, e := range entries {
		if strings.HasPrefix(e.Name, *only) {
			sel = append(sel, e)
		}
	}
	if len(sel) == 0 {
		return usagef("--only: no entry name starts with %q (ppboost audit --list names them)", *only)
	}
	if *list {
		for _, e := range sel {
			fmt.Fprintf(out, "%s  eps %g: %s\n", e.Name, e.Epsilon, e.Neighbours)
		}
		return nil
	}
	o := audit.Options{Draws: *draws, Confidence: *conf, Seed: *seed}
	start := time.Now()
	const row = "%-28s %-12s %-10s %-16s %-13s %-9s %s\n"
	fmt.Fprintf(out, row, "entry", "eps (delta)", "eps_lo", "control eps_lo", "verdict", "draws", "time")
	var reps []audit.Report
	failed, known := 0, 0
	for _, e := range sel {
		rep, err := audit.Run(e, o)
		if err != nil {
			return err
		}
		reps = append(reps, rep)
		switch rep.Verdict() {
		case "pass":
		case "FAIL (known)":
			known++
		default:
			failed++
		}
		fmt.Fprintf(out, row, rep.Name, claim(rep), fmt.Sprintf("%.3f", rep.Release.EpsLo),
			controls(rep), rep.Verdict(), strconv.Itoa(rep.Draws), rep.Elapsed.Round(time.Millisecond))
	}
	fmt.Fprintf(out, "%d entries, %d draws per neighbour, confidence %v, %s\n", len(reps), *draws, *conf, time.Since(start).Round(time.Millisecond))
	for _, r := range reps {
		if r.Known != "" && !r.Pass {
			fmt.Fprintf(out, "known: %s: %s\n", r.Name, r.Known)
		}
	}
	if *dir != "" {
		if err := writeAudit(*dir, reps); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote %s and %s\n", filepath.Join(*dir, "audit.csv"), filepath.Join(*dir, "audit.json"))
	}
	if failed+known > 0 {
		return fmt.Errorf("%d of %d entries failed or have an uncaught control (%d of them known)", failed+known, len(reps), known)
	}
	return nil
}

func claim(r audit.Report) string {
	if r.Delta > 0 {
		return fmt.Sprintf("%g (%g)", r.Epsilon, r.Delta)
	}
	return fmt.Sprintf("%g", r.Epsilon)
}

// controls lists every control's eps_lo, a star marking one not caught.
func controls(r audit.Report) string {
	var s []string
	for _, c := range r.Controls {
		v := fmt.Sprintf("%.3f", c.Result.EpsLo)
		if !c.Caught {
			v += "*"
		}
		s = append(s, v)
	}
	return strings.Join(s, ", ")
}

func writeAudit(dir string, reps []audit.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "audit.csv"))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"entry", "epsilon", "delta", "eps_lo", "event", "control", "control_eps_lo", "control_caught", "verdict", "draws", "seconds"})
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, r := range reps {
		for _, c := range r.Controls {
			_ = w.Write([]string{r.Name, g(r.Epsilon), g(r.Delta), g(r.Release.EpsLo), r.Release.Event, c.Name, g(c.Result.EpsLo),
				strconv.FormatBool(c.Caught), r.Verdict(), strconv.Itoa(r.Draws), g(r.Elapsed.Seconds())})
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(reps, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "audit.json"), append(b, '\n'), 0o644)
}
