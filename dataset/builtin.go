package dataset

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// The embedded real data; provenance and licenses in data/README.md.
//
//go:embed data/*.gz
var builtin embed.FS

// AdultSchema is the public schema of the UCI Adult training file.
//
// Numeric bounds are the documented ranges of the census attributes, not
// values computed from the file: age 17-90, fnlwgt 12,285-1,484,705,
// education-num 1-16, capital-gain 0-99,999 (the census top-code),
// capital-loss 0-4,356, hours-per-week 1-99. Categorical columns list the
// categories published with the UCI dataset description, with "?" (a missing
// value, kept as an ordinary category) where it occurs: workclass,
// occupation and native-country. 6 numeric + 102 one-hot = 108 features.
// Label "Salary", classes "<=50K" and ">50K".
func AdultSchema() *Schema {
	num := func(name string, lo, hi float64) Column {
		return Column{Name: name, Kind: KindNumeric, Min: lo, Max: hi}
	}
	cat := func(name, cats string) Column {
		return Column{Name: name, Kind: KindCategorical, Categories: strings.Split(cats, "|")}
	}
	return &Schema{Version: SchemaVersion, Label: "Salary", Classes: []string{"<=50K", ">50K"}, Columns: []Column{
		num("age", 17, 90),
		cat("workclass", "?|Federal-gov|Local-gov|Never-worked|Private|Self-emp-inc|Self-emp-not-inc|State-gov|Without-pay"),
		num("fnlwgt", 12285, 1484705),
		cat("education", "10th|11th|12th|1st-4th|5th-6th|7th-8th|9th|Assoc-acdm|Assoc-voc|Bachelors|Doctorate|HS-grad|Masters|Preschool|Prof-school|Some-college"),
		num("education-num", 1, 16),
		cat("marital-status", "Divorced|Married-AF-spouse|Married-civ-spouse|Married-spouse-absent|Never-married|Separated|Widowed"),
		cat("occupation", "?|Adm-clerical|Armed-Forces|Craft-repair|Exec-managerial|Farming-fishing|Handlers-cleaners|Machine-op-inspct|Other-service|Priv-house-serv|Prof-specialty|Protective-serv|Sales|Tech-support|Transport-moving"),
		cat("relationship", "Husband|Not-in-family|Other-relative|Own-child|Unmarried|Wife"),
		cat("race", "Amer-Indian-Eskimo|Asian-Pac-Islander|Black|Other|White"),
		cat("sex", "Female|Male"),
		num("capital-gain", 0, 99999),
		num("capital-loss", 0, 4356),
		num("hours-per-week", 1, 99),
		cat("native-country", "?|Cambodia|Canada|China|Columbia|Cuba|Dominican-Republic|Ecuador|El-Salvador|England|France|Germany|Greece|Guatemala|Haiti|Holand-Netherlands|Honduras|Hong|Hungary|India|Iran|Ireland|Italy|Jamaica|Japan|Laos|Mexico|Nicaragua|Outlying-US(Guam-USVI-etc)|Peru|Philippines|Poland|Portugal|Puerto-Rico|Scotland|South|Taiwan|Thailand|Trinadad&Tobago|United-States|Vietnam|Yugoslavia"),
	}}
}

// Embedded file names.
const (
	adultFile         = "adult.csv.gz"
	fashionTrainImage = "train-images-idx3-ubyte.gz"
	fashionTrainLabel = "train-labels-idx1-ubyte.gz"
	fashionTestImage  = "t10k-images-idx3-ubyte.gz"
	fashionTestLabel  = "t10k-labels-idx1-ubyte.gz"
)

func embedded(name string) (*bytes.Reader, error) {
	b, err := builtin.ReadFile("data/" + name)
	if err != nil {
		return nil, fmt.Errorf("embedded data %s: %w", name, err)
	}
	return bytes.NewReader(b), nil
}

// Adult loads the embedded UCI Adult training file (32,561 rows, 108
// features, about 24% ">50K") with the public AdultSchema.
func Adult() (*Dataset, error) {
	r, err := embedded(adultFile)
	if err != nil {
		return nil, err
	}
	zr, err := maybeGunzip(bufio.NewReaderSize(r, 64<<10), adultFile)
	if err != nil {
		return nil, err
	}
	d, err := ReadCSV(zr, adultFile, CSVOptions{Schema: AdultSchema()})
	if err != nil {
		return nil, err
	}
	d.Name = "adult"
	return d, nil
}

// Fashion loads the embedded Fashion-MNIST T-shirt/top (label 0) and Shirt
// (label 6) subset: 12,000 training and 2,000 test images, 49 pooled
// features (see LoadIDX), classes "0" and "6".
func Fashion() (train, test *Dataset, err error) {
	load := func(images, labels string) (*Dataset, error) {
		ri, err := embedded(images)
		if err != nil {
			return nil, err
		}
		rl, err := embedded(labels)
		if err != nil {
			return nil, err
		}
		return ReadIDX(ri, rl, images, labels)
	}
	if train, err = load(fashionTrainImage, fashionTrainLabel); err != nil {
		return nil, nil, err
	}
	if test, err = load(fashionTestImage, fashionTestLabel); err != nil {
		return nil, nil, err
	}
	if !slices.Equal(train.Classes, test.Classes) {
		return nil, nil, fmt.Errorf("%w: fashion test classes %v differ from the training classes %v", ErrInvalid, test.Classes, train.Classes)
	}
	train.Name, test.Name = "fashion", "fashion-test"
	test.Schema = train.Schema
	return train, test, nil
}

// Named resolves a CLI --data value with the default LoadOptions (missing
// values are errors): Load(spec, LoadOptions{Samples: samples, Seed: seed,
// Warn: warn}).
func Named(spec string, samples int, seed uint64, warn func(string)) (train, test *Dataset, err error) {
	return Load(spec, LoadOptions{Samples: samples, Seed: seed, Warn: warn})
}

// LoadOptions configures Load.
type LoadOptions struct {
	Samples int    // synthetic: rows to generate
	Seed    uint64 // synthetic: the problem and its samples
	Draw    uint64 // synthetic: which independent draw of samples (0: the training draw)
	// Schema, if set, encodes csv: data instead of a schema file found
	// beside it (predict uses the model's own schema).
	Schema *Schema
	// Label is the label column of a csv: file without a schema
	// (default LabelColumn, "label").
	Label string
	// Categorical, Missing, Fill and Report are passed to LoadCSV (Fill
	// belongs to the model whose Schema is given).
	Categorical []string
	Missing     MissingPolicy
	Fill        *Fill
	Report      *CSVReport
	// Warn receives warnings (nil discards them).
	Warn func(string)
}

// Load resolves a CLI --data value:
//   - "synthetic": Synthetic(DefaultSynthetic(Samples, Seed)) with Draw;
//   - "adult": the embedded Adult data (no test split);
//   - "fashion": the embedded Fashion-MNIST T-shirt/Shirt training split, and
//     its test split as the second value;
//   - "csv:PATH", or a PATH ending in .csv or .csv.gz: LoadCSV with
//     opt.Schema, else the public schema PATH.schema.json if present, else
//     schema.json in the same directory (what `ppboost partition` writes),
//     announced through Warn, else a schema inferred from the data, with a
//     privacy warning through Warn; the label column is opt.Label ("label")
//     unless the schema names another;
//   - "idx:IMAGES,LABELS": LoadIDX.
//
// test is nil when the source has no test split.
func Load(spec string, opt LoadOptions) (train, test *Dataset, err error) {
	kind, arg, _ := strings.Cut(spec, ":")
	if !strings.Contains(spec, ":") && (strings.HasSuffix(spec, ".csv") || strings.HasSuffix(spec, ".csv.gz")) {
		kind, arg = "csv", spec // a plain file name
	}
	warn := opt.Warn
	if warn == nil {
		warn = func(string) {}
	}
	switch {
	case spec == "synthetic":
		cfg := DefaultSynthetic(opt.Samples, opt.Seed)
		cfg.Draw = opt.Draw
		d, err := Synthetic(cfg)
		return d, nil, err
	case spec == "adult":
		d, err := Adult()
		return d, nil, err
	case spec == "fashion":
		return Fashion()
	case kind == "csv" && arg != "":
		label := opt.Label
		if label == "" {
			label = LabelColumn
		}
		copt := CSVOptions{Label: label, Schema: opt.Schema, Categorical: opt.Categorical, Missing: opt.Missing,
			Fill: opt.Fill, Report: opt.Report, Warn: opt.Warn}
		if copt.Schema == nil {
			s, path, err := SchemaBeside(arg)
			if err != nil {
				return nil, nil, err
			}
			if s != nil {
				warn(fmt.Sprintf("%s: using the public schema %s found beside it", arg, path))
				copt.Schema = s
			}
		}
		d, err := LoadCSV(arg, copt)
		return d, nil, err
	case kind == "idx":
		images, labels, ok := strings.Cut(arg, ",")
		if !ok || images == "" || labels == "" || strings.Contains(labels, ",") {
			return nil, nil, fmt.Errorf("%w: idx data must be idx:IMAGES,LABELS, got %q", ErrConfig, spec)
		}
		d, err := LoadIDX(images, labels)
		return d, nil, err
	}
	return nil, nil, fmt.Errorf("%w: unknown data %q (want synthetic, adult, fashion, csv:PATH, a file ending in .csv, or idx:IMAGES,LABELS)", ErrConfig, spec)
}

// SchemaBeside looks for the public schema of the CSV file path:
// PATH.schema.json (X.csv.schema.json), then X.schema.json for X.csv (what
// `ppboost schema infer --out X.schema.json` writes), then schema.json in
// the same directory. It returns the schema and the file it came from, or
// nil and "" if there is none.
func SchemaBeside(path string) (*Schema, string, error) {
	cands := []string{path + ".schema.json"}
	if base, ok := strings.CutSuffix(path, ".csv"); ok {
		cands = append(cands, base+".schema.json")
	}
	cands = append(cands, filepath.Join(filepath.Dir(path), "schema.json"))
	for _, cand := range cands {
		s, err := LoadSchema(cand)
		if err == nil {
			return s, cand, nil
		}
		if !isNotExist(err) {
			return nil, "", err
		}
	}
	return nil, "", nil
}
