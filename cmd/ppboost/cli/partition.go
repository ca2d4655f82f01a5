package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ppboost/ppboost/dataset"
)

// partitionSetup is what `ppboost partition` cuts and where it writes.
type partitionSetup struct {
	df                                 dataFlags
	owners, per, userN, samples, testN int // testN: synthetic test rows
	seed                               uint64
	outDir                             string
}

// buildPartition checks `ppboost partition`'s flags (defaults < flags).
func buildPartition(args []string, errOut io.Writer) (*partitionSetup, error) {
	fs := newFlagSet("partition", "partition --data SPEC --owners L --out DIR", errOut)
	s := &partitionSetup{}
	s.df.register(fs, "synthetic", "")
	fs.IntVar(&s.owners, "owners", 20, "number of owner shards L")
	fs.IntVar(&s.per, "samples-per-owner", 0, "samples per owner (0: 80 for synthetic, else split the rest equally)")
	fs.IntVar(&s.userN, "user-samples", 0, "samples kept for the data user, validation.csv (0: 1000 for synthetic, else 10% of the data, at most 1000)")
	fs.IntVar(&s.samples, "samples", 0, "synthetic: samples to generate (0: enough for the shards, user and test)")
	fs.Uint64Var(&s.seed, "seed", 1, "seed for generation and shuffling")
	fs.StringVar(&s.outDir, "out", "", "output directory (required)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if s.outDir == "" {
		return nil, usagef("--out is required")
	}
	for _, f := range []struct {
		name string
		v    int
		min  int
	}{{"--owners", s.owners, 1}, {"--samples-per-owner", s.per, 0}, {"--user-samples", s.userN, 0}, {"--samples", s.samples, 0}} {
		if f.v < f.min {
			return nil, usagef("%s must be at least %d, got %d", f.name, f.min, f.v)
		}
	}
	if err := s.df.checkTest(); err != nil {
		return nil, err
	}
	if s.df.data == "synthetic" {
		if s.df.holdout.set && s.df.holdout.rows == 0 {
			return nil, usagef("--holdout %s: synthetic data draws its test rows; give a row count (default 2000), or --test FILE", s.df.holdout.String())
		}
		s.userN, s.testN = or(s.userN, 1000), or(s.df.holdout.rows, 2000)
		if s.df.test != "" {
			s.testN = 0 // test.csv is --test's rows
		}
		s.per = or(s.per, 80)
	}
	return s, nil
}

// runPartition splits a dataset into owner shards and the data user's own
// data, written as CSV files in the data's raw units (the original values,
// as read) that share one public schema file: the data's own schema, so the
// bounds are the original ones and a model trained on the shards predicts
// the same on the original raw file.
func runPartition(args []string, out, errOut io.Writer) error {
	s, err := buildPartition(args, errOut)
	if err != nil {
		return err
	}
	train, testSet, err := s.load(errOut)
	if err != nil {
		return err
	}
	user := s.userN
	if user < 1 || user >= train.Len() {
		return usagef("--data %s leaves %d samples after the test set: not enough for --user-samples %d and the owners", s.df.data, train.Len(), user)
	}
	userData, rest := train.Split(user)
	shards, err := s.shards(rest)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.outDir, 0o755); err != nil {
		return err
	}
	if err := train.Schema.Save(filepath.Join(s.outDir, "schema.json")); err != nil {
		return err
	}
	type file struct {
		name string
		d    *dataset.Dataset
	}
	var files []file
	for i, sh := range shards {
		files = append(files, file{fmt.Sprintf("owner-%03d.csv", i), sh})
	}
	files = append(files, file{"validation.csv", userData}, file{"test.csv", testSet})
	for _, f := range files {
		if err := writeRawCSV(filepath.Join(s.outDir, f.name), f.d); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "wrote %d owner shards of %d samples, validation.csv (%d), test.csv (%d) and schema.json (raw units, label %q, %d classes) to %s\n",
		len(shards), shards[0].Len(), userData.Len(), testSet.Len(), train.Schema.Label, len(train.Schema.Classes), s.outDir)
	return nil
}

// load loads --data (generating enough synthetic samples for the shards,
// the user and the test set), shuffles it, and holds out the test set when
// the data has none. The user's rows default to a tenth of all rows loaded
// (at most 1000).
func (s *partitionSetup) load(errOut io.Writer) (train, test *dataset.Dataset, err error) {
	opt, err := s.df.options(errOut) // the schema, if given, is copied to DIR/schema.json
	if err != nil {
		return nil, nil, err
	}
	if s.df.data == "synthetic" {
		opt.Samples = s.samples
		if opt.Samples == 0 {
			opt.Samples = s.owners*s.per + s.userN + s.testN
		}
		opt.Seed = s.seed
	}
	train, test, err = dataset.Load(s.df.data, opt)
	if err != nil {
		return nil, nil, dataError(err)
	}
	if s.df.test != "" {
		if test, err = s.df.loadTest(errOut, train); err != nil {
			return nil, nil, err
		}
	}
	n := train.Len()
	s.userN = or(s.userN, min(1000, max(1, n/10)))
	train = train.Shuffle(s.seed)
	if test == nil {
		testN := s.df.holdout.of(n)
		if s.df.data == "synthetic" {
			testN = s.testN
		}
		if testN < 1 || testN >= n {
			return nil, nil, usagef("--holdout %s: --data %s has %d samples, not enough for %d test rows and more", s.df.holdout.String(), s.df.data, n, testN)
		}
		test, train = train.Split(testN)
	}
	return train, test, nil
}

// shards cuts the owners' rows: --samples-per-owner each, or all of them
// split equally.
func (s *partitionSetup) shards(rest *dataset.Dataset) ([]*dataset.Dataset, error) {
	var sizes []int
	if s.per > 0 {
		if s.owners*s.per > rest.Len() {
			return nil, usagef("--data %s leaves %d samples for the owners: not enough for --owners %d x --samples-per-owner %d", s.df.data, rest.Len(), s.owners, s.per)
		}
		sizes = make([]int, s.owners)
		for i := range sizes {
			sizes[i] = s.per
		}
	} else if s.owners > rest.Len() {
		return nil, usagef("--data %s leaves %d samples for the owners: not enough for --owners %d", s.df.data, rest.Len(), s.owners)
	}
	return rest.Partition(s.owners, sizes, s.seed)
}

// writeRawCSV writes d in its raw units to path.
func writeRawCSV(path string, d *dataset.Dataset) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := d.WriteRawCSV(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// or returns v, or def if v is 0.
func or(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
