package cli

import (
	"flag"
	"io"

	"github.com/ppboost/ppboost/dataset"
)

// dataFlags are the data flags every command that reads a dataset takes
// (sim, simulate, dpboost, fed, pfds sim|testnet, partition): --data, and for
// CSV data --schema, --label, --categorical and --missing (loadFlags).
type dataFlags struct {
	data, schema string
	loadFlags
}

// dataSpecHelp lists the --data values every command accepts.
const dataSpecHelp = "synthetic | adult | fashion | csv:PATH (or PATH.csv) | idx:IMAGES,LABELS"

// register adds the five flags; def is --data's default and kinds, if not
// empty, replaces dataSpecHelp in its help (commands that take fewer kinds).
func (d *dataFlags) register(fs *flag.FlagSet, def, kinds string) {
	if kinds == "" {
		kinds = dataSpecHelp
	}
	fs.StringVar(&d.data, "data", def, "dataset: "+kinds)
	fs.StringVar(&d.schema, "schema", "", "public schema of CSV data (default: PATH.schema.json, X.schema.json for X.csv, or schema.json beside the file; a file given here must exist)")
	d.loadFlags.register(fs)
}

// isCSV says whether --data names a CSV file.
func (d *dataFlags) isCSV() bool {
	_, ok := csvPath(d.data)
	return ok
}

// options returns the load options the flags choose: the --schema file
// read (a CSV-only flag; a file given but not found is an error naming
// it), the label, categorical and missing-value policy, warnings to errOut.
func (d *dataFlags) options(errOut io.Writer) (dataset.LoadOptions, error) {
	opt, err := d.loadFlags.options(errOut)
	if err != nil {
		return opt, err
	}
	if d.schema != "" {
		if !d.isCSV() {
			return opt, usagef("--schema applies to CSV data only, not --data %s", d.data)
		}
		if opt.Schema, err = dataset.LoadSchema(d.schema); err != nil {
			return opt, usagef("--schema %s: %v", d.schema, err)
		}
	}
	return opt, nil
}

// load reads the data (synthetic: samples rows drawn with seed): the
// training rows, and the test split if the source has one (else nil).
func (d *dataFlags) load(errOut io.Writer, samples int, seed uint64) (train, test *dataset.Dataset, err error) {
	opt, err := d.options(errOut)
	if err != nil {
		return nil, nil, err
	}
	opt.Samples, opt.Seed = samples, seed
	if train, test, err = dataset.Load(d.data, opt); err != nil {
		return nil, nil, dataError(err)
	}
	return train, test, nil
}
