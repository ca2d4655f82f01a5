package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ppboost/ppboost/dataset"
)

// runPartition splits a dataset into owner shards and the data user's own
// data, written as CSV files in the data's raw units (the original values,
// as read) that share one public schema file: the data's own schema, so the
// bounds are the original ones and a model trained on the shards predicts
// the same on the original raw file.
func runPartition(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("partition", "partition --data SPEC --owners L --out DIR", errOut)
	var df dataFlags
	df.register(fs, "synthetic", "")
	data := &df.data
	owners := fs.Int("owners", 20, "number of owner shards L")
	per := fs.Int("samples-per-owner", 0, "samples per owner (0: 80 for synthetic, else split the rest equally)")
	userN := fs.Int("user-samples", 0, "samples kept for the data user, validation.csv (0: 1000 for synthetic, else 10% of the data, at most 1000)")
	samples := fs.Int("samples", 0, "synthetic: samples to generate (0: enough for the shards, user and test)")
	testN := fs.Int("test-samples", 0, "samples kept as test.csv when the data has no test split (0: 2000 for synthetic, else 20% of the data)")
	seed := fs.Uint64("seed", 1, "seed for generation and shuffling")
	outDir := fs.String("out", "", "output directory (required)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *outDir == "" {
		return usagef("--out is required")
	}
	for _, f := range []struct {
		name string
		v    int
		min  int
	}{{"--owners", *owners, 1}, {"--samples-per-owner", *per, 0}, {"--user-samples", *userN, 0}, {"--test-samples", *testN, 0}, {"--samples", *samples, 0}} {
		if f.v < f.min {
			return usagef("%s must be at least %d, got %d", f.name, f.min, f.v)
		}
	}
	opt, err := df.options(errOut) // the schema, if given, is copied to DIR/schema.json
	if err != nil {
		return err
	}
	synthetic := *data == "synthetic"
	user, test := *userN, *testN
	if synthetic {
		user, test = or(user, 1000), or(test, 2000)
		opt.Samples = *samples
		if opt.Samples == 0 {
			opt.Samples = *owners*or(*per, 80) + user + test
		}
		opt.Seed = *seed
	}
	train, testSet, err := dataset.Load(*data, opt)
	if err != nil {
		return dataError(err)
	}
	n := train.Len()
	train = train.Shuffle(*seed)
	if testSet == nil {
		test = or(test, n/5)
		if test < 1 || test >= n {
			return usagef("--data %s has %d samples: not enough for --test-samples %d and more", *data, n, test)
		}
		testSet, train = train.Split(test)
	}
	user = or(user, min(1000, max(1, n/10)))
	if user < 1 || user >= train.Len() {
		return usagef("--data %s leaves %d samples after the test set: not enough for --user-samples %d and the owners", *data, train.Len(), user)
	}
	userData, rest := train.Split(user)
	var sizes []int
	if *per == 0 && synthetic {
		*per = 80
	}
	if *per > 0 {
		if *owners**per > rest.Len() {
			return usagef("--data %s leaves %d samples for the owners: not enough for --owners %d x --samples-per-owner %d", *data, rest.Len(), *owners, *per)
		}
		sizes = make([]int, *owners)
		for i := range sizes {
			sizes[i] = *per
		}
	} else if *owners > rest.Len() {
		return usagef("--data %s leaves %d samples for the owners: not enough for --owners %d", *data, rest.Len(), *owners)
	}
	shards, err := rest.Partition(*owners, sizes, *seed)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return err
	}
	if err := train.Schema.Save(filepath.Join(*outDir, "schema.json")); err != nil {
		return err
	}
	write := func(name string, d *dataset.Dataset) error {
		path := filepath.Join(*outDir, name)
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
	for i, s := range shards {
		if err := write(fmt.Sprintf("owner-%03d.csv", i), s); err != nil {
			return err
		}
	}
	if err := write("validation.csv", userData); err != nil {
		return err
	}
	if err := write("test.csv", testSet); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %d owner shards of %d samples, validation.csv (%d), test.csv (%d) and schema.json (raw units, label %q, %d classes) to %s\n",
		len(shards), shards[0].Len(), userData.Len(), testSet.Len(), train.Schema.Label, len(train.Schema.Classes), *outDir)
	return nil
}

// or returns v, or def if v is 0.
func or(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
