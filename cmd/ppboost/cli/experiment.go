package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ppboost/ppboost/experiment"
)

func init() {
	register("experiment", "regenerate the papers' figures and tables (experiment list names them)", runExperiment)
}

func runExperiment(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("experiment", "experiment [flags] NAME|all|list", errOut)
	dir := fs.String("out", "results", "directory for the CSV/JSON numbers and the PNG/SVG plots")
	seeds := fs.String("seeds", "1,2,3", "comma-separated seeds; results are the mean and spread over them")
	short := fs.Bool("short", false, "tiny sizes (checks that an experiment runs; its numbers mean nothing)")
	proto := fs.Bool("protocol", false, "run the full protocol over the in-memory network where the experiment supports it")
	quiet := fs.Bool("quiet", false, "no progress bar")
	// The name comes first or last: `experiment NAME --out d` and `experiment --out d NAME`.
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return parseErr(err)
	}
	switch {
	case name == "" && fs.NArg() == 1:
		name = fs.Arg(0)
	case fs.NArg() > 0:
		return usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	case name == "":
		return usagef("experiment: name an experiment, all or list")
	}
	if name == "list" {
		for _, s := range experiment.List() {
			fmt.Fprintf(out, "%-28s %-40s %s\n", s.Name, s.Paper, s.Summary)
		}
		return nil
	}
	var seedList []uint64
	for _, f := range strings.Split(*seeds, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return usagef("--seeds: %q is not a seed (want comma-separated non-negative integers)", f)
		}
		seedList = append(seedList, v)
	}
	var specs []experiment.Spec
	if name == "all" {
		specs = experiment.List()
	} else {
		s, ok := experiment.Lookup(name)
		if !ok {
			return usagef("experiment: unknown experiment %q (ppboost experiment list names them)", name)
		}
		specs = []experiment.Spec{s}
	}
	var bar *experiment.Progress
	if !*quiet {
		bar = experiment.NewProgress(errOut)
	}
	start := time.Now()
	for _, s := range specs {
		t0 := time.Now()
		r := &experiment.Run{Out: *dir, Seeds: seedList, Short: *short, Protocol: *proto, Log: out, Progress: bar}
		fmt.Fprintf(out, "== %s (%s)\n", s.Name, s.Paper)
		if err := s.Run(r); err != nil {
			return fmt.Errorf("experiment %s: %w", s.Name, err)
		}
		fmt.Fprintf(out, "== %s done in %s\n", s.Name, time.Since(t0).Round(time.Millisecond))
	}
	if len(specs) > 1 {
		fmt.Fprintf(out, "all %d experiments done in %s; outputs in %s\n", len(specs), time.Since(start).Round(time.Second), *dir)
	}
	return nil
}

// parseErr turns a flag parse error into a usage error (help stays help).
func parseErr(err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usageError{err}
}
