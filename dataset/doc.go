// Package dataset owns ppboost's data: the Dataset type (features scaled to
// [-1, 1] with PUBLIC bounds, integer labels 0..K-1), public feature schemas
// (a small JSON file whose SHA-256 digest owners and the data user compare),
// loaders for CSV (gzip or not) and IDX (MNIST format) files, a seeded
// synthetic generator shaped like scikit-learn's make_classification, a
// reproducible partitioner into owner shards, and the embedded real data
// (UCI Adult; the Fashion-MNIST T-shirt/Shirt subset; see data/README.md).
//
// It must not learn anything (no weights, models or privacy noise: that is
// package boost and crypto/ldp), must not touch the network, and must not
// derive feature bounds from private data silently: the only place that
// does, InferSchema and ReadCSV without a schema, warns through
// CSVOptions.Warn, because bounds computed from private data leak it.
//
// Loading never guesses silently: a CSV column is categorical only if the
// schema says so or none of its values is a number; a missing value is an
// error unless a MissingPolicy says how to handle it (and the handled values
// are counted and reported); values outside the public bounds are clipped
// and counted; a schema found beside a file is announced.
//
// Bad input never panics: loaders return a *ParseError that names the file
// and the line (text) or byte offset (binary), for a value also the column
// and the value, and wraps one of the sentinel errors (ErrEmpty,
// ErrFieldCount, ErrNotNumber, ErrNotFinite, ErrMagnitude, ErrMissing,
// ErrEmptyLabel, ErrUnknownLabel, ErrUnknownCategory, ErrCSV, ErrGzip,
// ErrMagic, ErrIDXSize, ErrCountMismatch, ErrSchema). The fuzz targets FuzzReadCSV, FuzzLoadIDX and
// FuzzSchema cover the parsers.
//
// Measured on the 2-core development machine (Intel Xeon, Go 1.26,
// go test -run XXX -bench . -benchtime 5x ./dataset/):
//
//	Synthetic, DefaultSynthetic 1,000,000 x 20     363 ms   200 MB   53 allocs
//	LoadCSV data/adult.csv.gz (32,561 rows, 108)    43 ms    37 MB   33,211 allocs
//	LoadIDX Fashion training split (12,000, 49)     76 ms     7 MB   4,241 allocs
//	Partition 1,000,000 rows into 10,000 owners     60 ms    46 MB   49,905 allocs
//
// Where it sits: at the top level, below the learners: it imports crypto/rng
// only, and the three learners (boost, boost/dpboost, boost/pfds), the
// protocols (the announced schema), the simulator, the status page and the CLI
// read data through it. It must not import a learner or a protocol package.
package dataset
