package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/ppboost/ppboost/dataset"
)

// dataFlags are the data flags every command that reads a dataset takes
// (sim, simulate, dpboost, fed, pfds sim|testnet, partition): --data, and for
// CSV data --schema, --label, --categorical and --missing (loadFlags).
type dataFlags struct {
	data, schema, test string
	holdout            holdoutFlag
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
	fs.StringVar(&d.test, "test", "", testHelp)
	fs.Var(&d.holdout, "holdout", holdoutHelp)
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
// training rows, and the test rows of --test, or the source's own test
// split, or nil (the caller holds out --holdout's rows: cut).
func (d *dataFlags) load(errOut io.Writer, samples int, seed uint64) (train, test *dataset.Dataset, err error) {
	opt, err := d.options(errOut)
	if err != nil {
		return nil, nil, err
	}
	opt.Samples, opt.Seed = samples, seed
	if err := d.checkTest(); err != nil {
		return nil, nil, err
	}
	if train, test, err = dataset.Load(d.data, opt); err != nil {
		return nil, nil, dataError(err)
	}
	if d.test != "" {
		if test, err = d.loadTest(errOut, train); err != nil {
			return nil, nil, err
		}
	}
	return train, test, nil
}

// holdoutFlag is --holdout: the test rows held out of --data when neither
// --test nor the data's own test split gives them, as a fraction of the rows
// (0 < f < 1) or a row count (a whole number >= 1). Every command that
// trains takes it with the same meaning and default (0.2).
type holdoutFlag struct {
	frac float64
	rows int
	set  bool
}

// defaultHoldout is the fraction held out when --holdout is not given.
const defaultHoldout = 0.2

func (h *holdoutFlag) String() string {
	if h == nil || h.rows == 0 {
		if h == nil || h.frac == 0 {
			return strconv.FormatFloat(defaultHoldout, 'g', -1, 64)
		}
		return strconv.FormatFloat(h.frac, 'g', -1, 64)
	}
	return strconv.Itoa(h.rows)
}

func (h *holdoutFlag) Set(v string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	switch {
	case err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0:
		return errors.New("want a fraction in (0, 1) or a row count of at least 1")
	case f < 1:
		h.frac, h.rows = f, 0
	case f == math.Trunc(f) && f <= math.MaxInt32:
		h.frac, h.rows = 0, int(f)
	default:
		return errors.New("want a fraction in (0, 1) or a whole row count")
	}
	h.set = true
	return nil
}

// of is the number of test rows to hold out of n rows (at least 1 for a
// fraction).
func (h *holdoutFlag) of(n int) int {
	if h.rows > 0 {
		return h.rows
	}
	f := h.frac
	if f == 0 {
		f = defaultHoldout
	}
	return max(1, int(float64(n)*f))
}

// holdoutHelp is --holdout's help, the same on every command.
const holdoutHelp = "test rows held out of --data when there is no --test and the data has no test split: a fraction in (0, 1) or a row count (default 0.2)"

// testHelp is --test's help, the same on every command.
const testHelp = "labelled CSV file to score the model on (encoded with the training data's schema and filled with its values); replaces the data's own test split and --holdout"

// checkTest refuses --test together with --holdout (one says where the
// test rows come from), and --test on data that is not CSV-encoded.
func (d *dataFlags) checkTest() error {
	if d.test == "" {
		return nil
	}
	if d.holdout.set {
		return usagef("--holdout %s and --test %s: give one (--test scores a file; --holdout cuts test rows out of --data)", d.holdout.String(), d.test)
	}
	if _, ok := csvPath(d.test); !ok {
		return usagef("--test %s: want a CSV file (PATH.csv or csv:PATH)", d.test)
	}
	return nil
}

// loadTest reads --test for a model trained on train: the file's records are
// encoded with train's schema (the same features and category codes), and
// with --missing mean|zero gaps are filled with train's values, so a test
// row scores the same whatever other rows the file holds.
func (d *dataFlags) loadTest(errOut io.Writer, train *dataset.Dataset) (*dataset.Dataset, error) {
	opt, err := d.loadFlags.options(errOut)
	if err != nil {
		return nil, err
	}
	opt.Schema = train.Schema
	if opt.Missing == dataset.MissingMean || opt.Missing == dataset.MissingZero {
		opt.Fill = dataset.FillOf(train)
	}
	test, _, err := dataset.Load(d.test, opt)
	if err != nil {
		return nil, dataError(fmt.Errorf("--test %s: %w", d.test, err))
	}
	if test.Dim() != train.Dim() {
		return nil, usagef("--test %s has %d features, --data %s %d: encode both with one schema (--schema)", d.test, test.Dim(), d.data, train.Dim())
	}
	if test.Len() == 0 {
		return nil, usagef("--test %s has no rows", d.test)
	}
	return test, nil
}

// cut returns the training and test rows: --test's file when given, else
// the data's own test split, else --holdout's rows cut from the shuffled
// data (seed). what names the rows' use in a refusal.
func (d *dataFlags) cut(train, test *dataset.Dataset, seed uint64) (*dataset.Dataset, *dataset.Dataset, error) {
	if test != nil {
		return train, test, nil
	}
	n := train.Len()
	k := d.holdout.of(n)
	if k >= n {
		return nil, nil, usagef("--holdout %s: --data %s has %d rows; hold out fewer (at most %d), or give --test FILE", d.holdout.String(), d.data, n, max(1, n/2))
	}
	a, b := train.Shuffle(seed).Split(n - k)
	return a, b, nil
}
