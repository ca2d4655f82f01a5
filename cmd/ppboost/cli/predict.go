package cli

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/dataset"
)

func runPredict(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("predict", "predict --model FILE --data SPEC [--scores] [--out FILE] [--json]", errOut)
	modelPath := fs.String("model", "", "model file written by sim, simulate, user or dpboost (required)")
	data := fs.String("data", "", "data to predict: csv:PATH (or PATH.csv) | adult | fashion | synthetic | idx:IMAGES,LABELS (required)")
	samples := fs.Int("samples", 10000, "synthetic: number of samples to generate")
	seed := fs.Uint64("seed", 1, "synthetic: the problem's seed (sim's --seed; default 1 like sim)")
	draw := fs.Uint64("draw", 1, "synthetic: which draw of samples; sim and partition train on draw 0, so the default 1 gives fresh samples of the same problem")
	outPath := fs.String("out", "", "write one predicted class name per line to this file instead of evaluating (with --scores: the scores CSV)")
	scores := fs.Bool("scores", false, "instead of evaluating, write a CSV row per data row: the predicted class name, then one column per class, "+
		"headed prob:NAME (probabilities: newton models' sigmoid or softmax) or score:NAME (raw scores: SAMME's summed alpha of the "+
		"learners voting for the class; dpboost/para/seq/np's booster output, +-F for two classes); to stdout, or to --out")
	asJSON := fs.Bool("json", false, "print the evaluation as JSON (with the class names)")
	var lf loadFlags
	lf.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *modelPath == "" || *data == "" {
		return usagef("--model and --data are required")
	}
	if *samples < 1 {
		return usagef("--samples must be at least 1, got %d", *samples)
	}
	opt, err := lf.options(errOut)
	if err != nil {
		return err
	}
	m, err := loadPredictModel(*modelPath) // SAMME or DPBoost, by the file's format
	if err != nil {
		return err
	}
	partial := partialLabel(*modelPath)
	if partial != nil {
		fmt.Fprintf(errOut, "warning: %s: %s\n", *modelPath, partial)
	}
	opt.Samples, opt.Seed, opt.Draw = *samples, *seed, *draw
	if path, ok := csvPath(*data); ok && m.Schema != nil {
		// Encode raw records with the model's own schema and public bounds.
		opt.Schema = m.Schema
		if s, file, err := dataset.SchemaBeside(path); err == nil && s != nil && s.Digest() != m.Schema.Digest() {
			opt.Warn(fmt.Sprintf("%s: the schema %s beside it differs from the model's; using the model's (%s)", path, file, *modelPath))
		}
	}
	d, test, err := dataset.Load(*data, opt)
	if err != nil {
		return dataError(err)
	}
	if test != nil {
		d = test // evaluate on the held-out split when the source has one
	}
	if err := m.CheckData(d); err != nil {
		return err
	}
	if *scores {
		if *outPath == "" {
			return writeScores(out, m, d.X)
		}
		f, err := os.Create(*outPath)
		if err != nil {
			return err
		}
		if err := writeScores(f, m, d.X); err != nil {
			f.Close()
			return err
		}
		return f.Close()
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
		return json.NewEncoder(out).Encode(struct {
			boost.Evaluation
			ClassNames []string       `json:"class_names"`       // the confusion matrix's row and column order
			Partial    *boost.Partial `json:"partial,omitempty"` // the model's label when its session stopped early
		}{ev, m.ClassNames, partial})
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

// writeScores writes the scores CSV: a header "predicted,KIND:NAME,..." and
// per row the predicted class name and the values in Go's shortest
// round-trip format (strconv 'g', -1). KIND is "prob" where the model
// defines probabilities (a Newton model: sigmoid for two classes, softmax
// for more) and "score" otherwise (a SAMME model's summed alpha per class, a
// square-loss DPBoost model's booster outputs, -F and F for two classes).
// The predicted class is the model's own Predict: the argmax of these
// values, ties to the smaller class index (a two-class DP-GBDT model says
// class 1 exactly when F > 0, which a probability rounded to 1/2 does not
// show).
func writeScores(w io.Writer, m *predictModel, X [][]float64) error {
	cw := csv.NewWriter(w)
	head := []string{"predicted"}
	for _, c := range m.ClassNames {
		head = append(head, m.scoreKind+":"+c)
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	rec := make([]string, len(head))
	for _, x := range X {
		v := m.scores(x)
		if len(v) != len(m.ClassNames) {
			return fmt.Errorf("predict: the model gives %d scores for %d classes", len(v), len(m.ClassNames))
		}
		rec[0] = m.ClassNames[m.Predict(x)]
		for k, s := range v {
			rec[k+1] = strconv.FormatFloat(s, 'g', -1, 64)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// partialLabel reads the label of a model its session left partial (nil for
// a complete model or a file without one; loadPredictModel reports bad files).
func partialLabel(path string) *boost.Partial {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var head struct {
		Partial *boost.Partial `json:"partial"`
	}
	if json.Unmarshal(b, &head) != nil {
		return nil
	}
	return head.Partial
}
