package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ppboost/ppboost/dataset"
)

// loadFlags are the data-loading flags of the commands that read CSV files
// (partition, predict, schema infer).
type loadFlags struct {
	missing, label, categorical string
}

func (l *loadFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.missing, "missing", "error", "missing values in CSV data (empty, ?, NA, N/A, NaN, null): error | skip (drop the row) | zero | mean (fill; categorical: most frequent; predict fills with the model's training values)")
	fs.StringVar(&l.label, "label", dataset.LabelColumn, "label column of a CSV file without a schema")
	fs.StringVar(&l.categorical, "categorical", "", "comma-separated columns of a CSV file without a schema to treat as categorical even if they hold numbers")
}

// options turns the flags into dataset.LoadOptions; warnings go to errOut.
func (l *loadFlags) options(errOut io.Writer) (dataset.LoadOptions, error) {
	p, err := dataset.ParseMissingPolicy(l.missing)
	if err != nil {
		return dataset.LoadOptions{}, usagef("--missing: %v", err)
	}
	opt := dataset.LoadOptions{Missing: p, Label: l.label, Warn: warnTo(errOut)}
	if l.categorical != "" {
		opt.Categorical = strings.Split(l.categorical, ",")
	}
	return opt, nil
}

// warnTo prints warnings as "warning: ..." lines.
func warnTo(errOut io.Writer) func(string) {
	return func(w string) { fmt.Fprintln(errOut, "warning:", w) }
}

// dataError adds what a CLI user can do about a data error.
func dataError(err error) error {
	switch {
	case errors.Is(err, dataset.ErrMissing):
		return fmt.Errorf("%w\n  (fix the file, or choose a policy: --missing skip|zero|mean)", err)
	case errors.Is(err, dataset.ErrNotNumber):
		return fmt.Errorf("%w\n  (fix the value; if the column is categorical, declare it: --categorical NAME, or kind \"categorical\" in the schema file)", err)
	case errors.Is(err, dataset.ErrConfig):
		return usageError{err}
	}
	return err
}

// csvPath returns the file of a csv: data spec (or a plain .csv path).
func csvPath(spec string) (string, bool) {
	if p, ok := strings.CutPrefix(spec, "csv:"); ok {
		return p, p != ""
	}
	if !strings.Contains(spec, ":") && (strings.HasSuffix(spec, ".csv") || strings.HasSuffix(spec, ".csv.gz")) {
		return spec, true
	}
	return "", false
}

// loadDataFile loads one node's CSV file (an owner's shard, the user's
// validation or test file) the way the data commands do: with the schema
// file schemaPath if given, else the one beside the file (announced through
// opt.Warn), else an inferred one (with the privacy warning); opt.Missing
// and the other load flags apply. For owner and user: give them loadFlags
// and call this instead of reading the file with dataset.LoadCSV directly.
func loadDataFile(path, schemaPath string, opt dataset.LoadOptions) (*dataset.Dataset, error) {
	if schemaPath != "" {
		s, err := dataset.LoadSchema(schemaPath)
		if err != nil {
			return nil, err
		}
		opt.Schema = s
	}
	d, _, err := dataset.Load("csv:"+path, opt)
	if err != nil {
		return nil, dataError(err)
	}
	return d, nil
}
