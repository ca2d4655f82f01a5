package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/ppboost/ppboost/dataset"
)

func init() {
	register("schema", "draft a public schema from a CSV file (infer), or check a CSV file against one (check)", runSchema)
}

const schemaSynopsis = `schema infer --data FILE.csv --out schema.json [--label NAME] [--categorical A,B] [--missing POLICY]
       ppboost schema check --data FILE.csv --schema schema.json [--missing POLICY]`

// schemaSetup is what `ppboost schema infer|check` does (buildSchema).
type schemaSetup struct {
	sub, path, outPath, schemaPath string
	force                          bool
	load                           loadFlags
}

// buildSchema checks `ppboost schema`'s subcommand and flags. It returns
// (nil, nil) after printing the usage for -h.
func buildSchema(args []string, errOut io.Writer) (*schemaSetup, error) {
	if len(args) == 0 || (args[0] != "infer" && args[0] != "check") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintf(errOut, "Usage: ppboost %s\n", schemaSynopsis)
			return nil, nil
		}
		return nil, usagef("want a subcommand: infer or check\nUsage: ppboost %s", schemaSynopsis)
	}
	s := &schemaSetup{sub: args[0]}
	fset := newFlagSet("schema "+s.sub, schemaSynopsis, errOut)
	data := fset.String("data", "", "CSV file (PATH or csv:PATH; may be gzip-compressed) (required)")
	fset.StringVar(&s.outPath, "out", "", "infer: where to write the schema (required; an existing file is kept unless --force)")
	fset.BoolVar(&s.force, "force", false, "infer: overwrite --out")
	fset.StringVar(&s.schemaPath, "schema", "", "check: the schema file to check --data against (required)")
	s.load.register(fset)
	if err := parse(fset, args[1:]); err != nil {
		return nil, err
	}
	path, ok := csvPath(*data)
	if !ok {
		if *data == "" || strings.Contains(*data, ":") {
			return nil, usagef("--data must be a CSV file (PATH or csv:PATH), got %q", *data)
		}
		path = *data
	}
	s.path = path
	if _, err := s.load.options(io.Discard); err != nil {
		return nil, err
	}
	switch {
	case s.sub == "check" && s.schemaPath == "":
		return nil, usagef("schema check: --schema is required")
	case s.sub == "infer" && s.outPath == "":
		return nil, usagef("schema infer: --out is required")
	}
	return s, nil
}

func runSchema(args []string, out, errOut io.Writer) error {
	s, err := buildSchema(args, errOut)
	if s == nil || err != nil {
		return err
	}
	opt, err := s.load.options(errOut)
	if err != nil {
		return err
	}
	copt := dataset.CSVOptions{Missing: opt.Missing, Warn: opt.Warn}
	if s.sub == "check" {
		return s.check(copt, out)
	}
	return s.infer(copt, opt.Categorical, out, errOut)
}

// check loads --data with --schema and reports what loading did to it.
func (s *schemaSetup) check(copt dataset.CSVOptions, out io.Writer) error {
	var err error
	if copt.Schema, err = dataset.LoadSchema(s.schemaPath); err != nil {
		return err
	}
	var rep dataset.CSVReport
	copt.Report = &rep
	d, err := dataset.LoadCSV(s.path, copt)
	if err != nil {
		return dataError(err)
	}
	fmt.Fprintf(out, "%s fits %s: %d rows, %d features, %d classes; %d values clipped, %d filled, %d rows dropped\n",
		s.path, s.schemaPath, d.Len(), d.Dim(), d.NumClasses(), rep.Clipped(), sumCounts(rep.Filled), rep.Skipped)
	return nil
}

// infer drafts a schema from --data, checks that the data loads with it,
// writes it and warns that its bounds come from the data.
func (s *schemaSetup) infer(copt dataset.CSVOptions, categorical []string, out, errOut io.Writer) error {
	if _, err := os.Stat(s.outPath); err == nil && !s.force {
		return usagef("schema infer: --out %s exists (it may hold your edits); pass --force to overwrite it", s.outPath)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	sc, err := dataset.InferSchema(s.path, s.load.label, categorical...)
	if err != nil {
		return dataError(err)
	}
	// Load the file with it: missing values, empty labels and bad numbers
	// are reported now, not when the owners load their data.
	copt.Schema = sc
	if _, err := dataset.LoadCSV(s.path, copt); err != nil {
		return dataError(err)
	}
	if err := sc.Save(s.outPath); err != nil {
		return err
	}
	codes, err := dataset.CodeColumns(s.path, sc)
	if err != nil {
		return dataError(err)
	}
	for _, w := range codes {
		fmt.Fprintf(errOut, "warning: %s: %s\n", s.path, w)
	}
	fmt.Fprintf(out, "wrote %s: label %q with %d classes (%s), %d features\n", s.outPath, sc.Label, len(sc.Classes), strings.Join(sc.Classes, ", "), sc.Dim())
	for _, c := range sc.Columns {
		switch c.Kind {
		case dataset.KindNumeric:
			fmt.Fprintf(out, "  %-20s numeric      [%g, %g]\n", c.Name, c.Min, c.Max)
		case dataset.KindCategorical:
			fmt.Fprintf(out, "  %-20s categorical  %d categories\n", c.Name, len(c.Categories))
		}
	}
	fmt.Fprintf(errOut, "warning: %s: the bounds and categories in %s were computed from the data itself and leak it "+
		"(its extreme records, its rare categories). Review the file: replace every min and max by a public bound "+
		"(a documented range, a physical limit), list categories from public documentation rather than from the data, "+
		"set \"kind\": \"categorical\" or \"ignore\" where needed, and share the edited file with the owners before any of them loads data\n", s.path, s.outPath)
	return nil
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
