package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dataset"
)

func runPredict(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("predict", "predict --model FILE --data SPEC [--out FILE]", errOut)
	modelPath := fs.String("model", "", "model file written by sim, simulate, user or dpboost (required)")
	data := fs.String("data", "", "data to predict: csv:PATH | adult | fashion | synthetic | idx:IMAGES,LABELS (required)")
	samples := fs.Int("samples", 10000, "synthetic: number of samples to generate")
	seed := fs.Uint64("seed", 2, "synthetic: generator seed")
	outPath := fs.String("out", "", "write one predicted class name per line to this file instead of evaluating")
	asJSON := fs.Bool("json", false, "print the evaluation as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *modelPath == "" || *data == "" {
		return usagef("--model and --data are required")
	}
	m, err := loadPredictModel(*modelPath) // SAMME or DPBoost, by the file's format
	if err != nil {
		return err
	}
	var d *dataset.Dataset
	if path, ok := strings.CutPrefix(*data, "csv:"); ok && m.Schema != nil {
		// Encode raw records with the model's own schema and public bounds.
		d, err = dataset.LoadCSV(path, dataset.CSVOptions{Schema: m.Schema})
	} else {
		var test *dataset.Dataset
		d, test, err = dataset.Named(*data, *samples, *seed, func(w string) { fmt.Fprintln(errOut, "warning:", w) })
		if test != nil {
			d = test // evaluate on the held-out split when the source has one
		}
	}
	if err != nil {
		return err
	}
	if err := m.CheckData(d); err != nil {
		return err
	}
	if *outPath != "" {
		f, err := os.Create(*outPath)
		if err != nil {
			return err
		}
		w := bufio.NewWriter(f)
		for _, x := range d.X {
			fmt.Fprintln(w, m.ClassNames[m.Predict(x)])
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	ev, err := boost.Evaluate(d.X, d.Y, m.Classes, m.Predict)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(out).Encode(ev)
	}
	fmt.Fprintf(out, "%d samples, accuracy %.4f\nconfusion (rows: true, columns: predicted)\n", ev.N, ev.Accuracy)
	fmt.Fprintf(out, "%12s", "")
	for _, c := range m.ClassNames {
		fmt.Fprintf(out, " %10s", c)
	}
	fmt.Fprintln(out)
	for k, row := range ev.Confusion {
		fmt.Fprintf(out, "%12s", m.ClassNames[k])
		for _, v := range row {
			fmt.Fprintf(out, " %10d", v)
		}
		fmt.Fprintln(out)
	}
	return nil
}
