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

func runSchema(args []string, out, errOut io.Writer) error {
	if len(args) == 0 || (args[0] != "infer" && args[0] != "check") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintf(errOut, "Usage: ppboost %s\n", schemaSynopsis)
			return nil
		}
		return usagef("want a subcommand: infer or check\nUsage: ppboost %s", schemaSynopsis)
	}
	sub := args[0]
	fset := newFlagSet("schema "+sub, schemaSynopsis, errOut)
	data := fset.String("data", "", "CSV file (PATH or csv:PATH; may be gzip-compressed) (required)")
	outPath := fset.String("out", "", "infer: where to write the schema (required; an existing file is kept unless --force)")
	force := fset.Bool("force", false, "infer: overwrite --out")
	schemaPath := fset.String("schema", "", "check: the schema file to check --data against (required)")
	var lf loadFlags
	lf.register(fset)
	if err := parse(fset, args[1:]); err != nil {
		return err
	}
	path, ok := csvPath(*data)
	if !ok {
		if *data == "" || strings.Contains(*data, ":") {
			return usagef("--data must be a CSV file (PATH or csv:PATH), got %q", *data)
		}
		path = *data
	}
	opt, err := lf.options(errOut)
	if err != nil {
		return err
	}
	copt := dataset.CSVOptions{Missing: opt.Missing, Warn: opt.Warn}
	if sub == "check" {
		if *schemaPath == "" {
			return usagef("schema check: --schema is required")
		}
		if copt.Schema, err = dataset.LoadSchema(*schemaPath); err != nil {
			return err
		}
		var rep dataset.CSVReport
		copt.Report = &rep
		d, err := dataset.LoadCSV(path, copt)
		if err != nil {
			return dataError(err)
		}
		fmt.Fprintf(out, "%s fits %s: %d rows, %d features, %d classes; %d values clipped, %d filled, %d rows dropped\n",
			path, *schemaPath, d.Len(), d.Dim(), d.NumClasses(), rep.Clipped(), sumCounts(rep.Filled), rep.Skipped)
		return nil
	}
	if *outPath == "" {
		return usagef("schema infer: --out is required")
	}
	if _, err := os.Stat(*outPath); err == nil && !*force {
		return usagef("schema infer: --out %s exists (it may hold your edits); pass --force to overwrite it", *outPath)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	s, err := dataset.InferSchema(path, lf.label, opt.Categorical...)
	if err != nil {
		return dataError(err)
	}
	// Load the file with it: missing values, empty labels and bad numbers
	// are reported now, not when the owners load their data.
	copt.Schema = s
	if _, err := dataset.LoadCSV(path, copt); err != nil {
		return dataError(err)
	}
	if err := s.Save(*outPath); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s: label %q with %d classes (%s), %d features\n", *outPath, s.Label, len(s.Classes), strings.Join(s.Classes, ", "), s.Dim())
	for _, c := range s.Columns {
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
		"set \"kind\": \"categorical\" or \"ignore\" where needed, and share the edited file with the owners before any of them loads data\n", path, *outPath)
	return nil
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
