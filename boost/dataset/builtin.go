package dataset

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
)

//go:embed data/*.gz
var builtin embed.FS

// AdultSchema is the public schema of UCI Adult: numeric bounds from the
// census documentation's ranges (age 17-90, fnlwgt 12,285-1,484,705,
// education-num 1-16, capital-gain 0-99,999, capital-loss 0-4,356,
// hours-per-week 1-99), the categories listed by UCI with "?" (missing) as a
// category where it occurs; 6 numeric + 102 one-hot = 108 features.
func AdultSchema() *Schema {
	num := func(name string, lo, hi float64) Column {
		return Column{Name: name, Kind: KindNumeric, Min: lo, Max: hi}
	}
	cat := func(name, cats string) Column {
		return Column{Name: name, Kind: KindCategorical, Categories: strings.Split(cats, "|")}
	}
	return &Schema{Version: 1, Label: "Salary", Classes: []string{"<=50K", ">50K"}, Columns: []Column{
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

func embedded(name string) ([]byte, error) {
	b, err := builtin.ReadFile("data/" + name)
	if err != nil {
		return nil, err
	}
	return gunzipIf(b, name)
}

// Adult loads the embedded UCI Adult training file (32,561 rows).
func Adult() (*Dataset, error) {
	b, err := embedded("adult.csv.gz")
	if err != nil {
		return nil, err
	}
	d, err := ReadCSV(bytes.NewReader(b), "adult.csv.gz", CSVOptions{Schema: AdultSchema()})
	if err != nil {
		return nil, err
	}
	d.Name = "adult"
	return d, nil
}

// Fashion loads the embedded Fashion-MNIST T-shirt/top (0) and Shirt (6)
// subset: 12,000 training and 2,000 test images, 49 pooled features.
func Fashion() (train, test *Dataset, err error) {
	load := func(images, labels string) (*Dataset, error) {
		img, err := embedded(images)
		if err != nil {
			return nil, err
		}
		lab, err := embedded(labels)
		if err != nil {
			return nil, err
		}
		return ReadIDX(bytes.NewReader(img), bytes.NewReader(lab), images, labels)
	}
	if train, err = load("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"); err != nil {
		return nil, nil, err
	}
	if test, err = load("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"); err != nil {
		return nil, nil, err
	}
	train.Name, test.Name = "fashion", "fashion-test"
	test.Schema = train.Schema
	return train, test, nil
}

// Named resolves a --data value:
//   - synthetic: DefaultSynthetic(samples, seed)
//   - adult: the embedded Adult data (no test split)
//   - fashion: the embedded Fashion T-shirt/Shirt train and test splits
//   - csv:PATH: LoadCSV with the schema PATH.schema.json (or schema.json in
//     the same directory) when present, else inferred with a warning; label
//     column "label" unless the schema names another
//   - idx:IMAGES,LABELS: LoadIDX
func Named(spec string, samples int, seed uint64, warn func(string)) (train, test *Dataset, err error) {
	switch {
	case spec == "synthetic":
		if samples < 1 {
			return nil, nil, fmt.Errorf("synthetic: %d samples requested", samples)
		}
		d, err := Synthetic(DefaultSynthetic(samples, seed))
		return d, nil, err
	case spec == "adult":
		d, err := Adult()
		return d, nil, err
	case spec == "fashion":
		return Fashion()
	case strings.HasPrefix(spec, "csv:"):
		path := strings.TrimPrefix(spec, "csv:")
		opt := CSVOptions{Label: "label", Warn: warn}
		for _, cand := range []string{path + ".schema.json", sibling(path, "schema.json")} {
			if s, err := LoadSchema(cand); err == nil {
				opt.Schema = s
				break
			} else if !isNotExist(err) {
				return nil, nil, err
			}
		}
		d, err := LoadCSV(path, opt)
		return d, nil, err
	case strings.HasPrefix(spec, "idx:"):
		parts := strings.Split(strings.TrimPrefix(spec, "idx:"), ",")
		if len(parts) != 2 {
			return nil, nil, fmt.Errorf("idx data must be idx:IMAGES,LABELS, got %q", spec)
		}
		d, err := LoadIDX(parts[0], parts[1])
		return d, nil, err
	}
	return nil, nil, fmt.Errorf("unknown data %q (want synthetic, adult, fashion, csv:PATH or idx:IMAGES,LABELS)", spec)
}
