package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ppboost/ppboost/boost/dataset"
)

// runPartition splits a dataset into owner shards and the data user's own
// data, written as CSV files (features already scaled to [-1, 1]) that share
// one public schema file.
func runPartition(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("partition", "partition --data SPEC --owners L --out DIR", errOut)
	data := fs.String("data", "synthetic", "dataset: synthetic | adult | fashion | csv:PATH | idx:IMAGES,LABELS")
	owners := fs.Int("owners", 20, "number of owner shards L")
	per := fs.Int("samples-per-owner", 0, "samples per owner (0: split the data equally)")
	userN := fs.Int("user-samples", 1000, "samples kept for the data user (validation.csv)")
	samples := fs.Int("samples", 0, "synthetic: samples to generate (0: enough for the shards, user and test)")
	testN := fs.Int("test-samples", 2000, "samples kept as test.csv")
	seed := fs.Uint64("seed", 1, "seed for generation and shuffling")
	outDir := fs.String("out", "", "output directory (required)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *outDir == "" {
		return usagef("--out is required")
	}
	if *owners < 1 || *userN < 1 || *per < 0 || *testN < 0 {
		return usagef("--owners and --user-samples must be positive")
	}
	n := *samples
	if n == 0 {
		p := *per
		if p == 0 {
			p = 80
		}
		n = *owners*p + *userN + *testN
	}
	train, test, err := dataset.Named(*data, n, *seed, func(w string) { fmt.Fprintln(errOut, "warning:", w) })
	if err != nil {
		return err
	}
	train = train.Shuffle(*seed)
	if test == nil {
		if *testN >= train.Len() {
			return fmt.Errorf("%d samples cannot hold a test set of %d", train.Len(), *testN)
		}
		test, train = train.Split(*testN)
	}
	if *userN >= train.Len() {
		return fmt.Errorf("%d samples cannot hold the user's %d", train.Len(), *userN)
	}
	user, rest := train.Split(*userN)
	var sizes []int
	if *per > 0 {
		sizes = make([]int, *owners)
		for i := range sizes {
			sizes[i] = *per
		}
	}
	shards, err := rest.Partition(*owners, sizes, *seed)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return err
	}
	schemaPath := filepath.Join(*outDir, "schema.json")
	if err := user.IdentitySchema().Save(schemaPath); err != nil {
		return err
	}
	write := func(name string, d *dataset.Dataset) error {
		path := filepath.Join(*outDir, name)
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := d.WriteCSV(f); err != nil {
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
	if err := write("validation.csv", user); err != nil {
		return err
	}
	if err := write("test.csv", test); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %d owner shards of %d samples, validation.csv (%d), test.csv (%d) and schema.json to %s\n",
		len(shards), shards[0].Len(), user.Len(), test.Len(), *outDir)
	return nil
}
