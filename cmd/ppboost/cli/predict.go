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

// predictSetup is what `ppboost predict` does (buildPredict): the model,
// the data to load with its options, and where the result goes.
type predictSetup struct {
	modelPath, data, outPath string
	samples                  int
	seed, draw               uint64
	scores, asJSON           bool
	load                     loadFlags
}

// buildPredict checks `ppboost predict`'s flags (defaults < flags).
func buildPredict(args []string, errOut io.Writer) (*predictSetup, error) {
	fs := newFlagSet("predict", "predict --model FILE --data SPEC [--scores] [--out FILE] [--json]", errOut)
	s := &predictSetup{}
	fs.StringVar(&s.modelPath, "model", "", "model file written by any trainer: sim, simulate, testnet, user, dpboost, fed, fed-user or pfds (required)")
	fs.StringVar(&s.data, "data", "", "data to predict: csv:PATH (or PATH.csv) | adult | fashion | synthetic | idx:IMAGES,LABELS (required)")
	fs.IntVar(&s.samples, "samples", 10000, "synthetic: number of samples to generate")
	fs.Uint64Var(&s.seed, "seed", 1, "synthetic: the problem's seed (sim's --seed; default 1 like sim)")
	fs.Uint64Var(&s.draw, "draw", 1, "synthetic: which draw of samples; sim and partition train on draw 0, so the default 1 gives fresh samples of the same problem")
	fs.StringVar(&s.outPath, "out", "", "write one predicted class name per line to this file instead of evaluating (with --scores: the scores CSV)")
	fs.BoolVar(&s.scores, "scores", false, "instead of evaluating, write a CSV row per data row: the predicted class name, then one column per class, "+
		"headed prob:NAME (probabilities: newton models' sigmoid or softmax) or score:NAME (raw scores: SAMME's summed alpha of the "+
		"learners voting for the class; dpboost/para/seq/np's booster output, +-F for two classes; pfds: +-F for two classes, the K linear scores for more); to stdout, or to --out")
	fs.BoolVar(&s.asJSON, "json", false, "print the evaluation as JSON (with the class names)")
	s.load.register(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if s.modelPath == "" || s.data == "" {
		return nil, usagef("--model and --data are required")
	}
	if s.samples < 1 {
		return nil, usagef("--samples must be at least 1, got %d", s.samples)
	}
	if _, err := s.load.options(io.Discard); err != nil {
		return nil, err
	}
	return s, nil
}

func runPredict(args []string, out, errOut io.Writer) error {
	s, err := buildPredict(args, errOut)
	if err != nil {
		return err
	}
	m, err := loadPredictModel(s.modelPath) // SAMME or DPBoost, by the file's format
	if err != nil {
		return err
	}
	partial := partialLabel(s.modelPath)
	if partial != nil {
		fmt.Fprintf(errOut, "warning: %s: %s\n", s.modelPath, partial)
	}
	d, err := s.loadData(m, errOut)
	if err != nil {
		return err
	}
	switch {
	case s.scores && s.outPath == "":
		return writeScores(out, m, d.X)
	case s.scores:
		return writeFile(s.outPath, func(w io.Writer) error { return writeScores(w, m, d.X) })
	case s.outPath != "":
		return writeFile(s.outPath, func(w io.Writer) error {
			for _, x := range d.X {
				fmt.Fprintln(w, m.ClassNames[m.Predict(x)])
			}
			return nil
		})
	}
	ev, err := boost.Evaluate(d.X, d.Y, m.Classes, m.Predict)
	if err != nil {
		return err
	}
	if s.asJSON {
		return json.NewEncoder(out).Encode(struct {
			boost.Evaluation
			ClassNames []string       `json:"class_names"`       // the confusion matrix's row and column order
			Partial    *boost.Partial `json:"partial,omitempty"` // the model's label when its session stopped early
		}{ev, m.ClassNames, partial})
	}
	printConfusion(out, ev, m.ClassNames)
	return nil
}

// loadData loads --data for model m: raw CSV records are encoded with the
// model's own schema; a source with a test split gives that split.
func (s *predictSetup) loadData(m *predictModel, errOut io.Writer) (*dataset.Dataset, error) {
	opt, err := s.load.options(errOut)
	if err != nil {
		return nil, err
	}
	opt.Samples, opt.Seed, opt.Draw = s.samples, s.seed, s.draw
	if path, ok := csvPath(s.data); ok && m.Schema != nil {
		// Encode raw records with the model's own schema and public bounds,
		// and fill gaps with its training values: a row then scores the
		// same whatever other rows the file holds.
		opt.Schema, opt.Fill = m.Schema, m.Fill
		if w := fillWarning(opt.Missing, m); w != "" {
			opt.Warn(fmt.Sprintf("%s: %s", s.modelPath, w))
		}
		if sc, file, err := dataset.SchemaBeside(path); err == nil && sc != nil && sc.Digest() != m.Schema.Digest() {
			opt.Warn(fmt.Sprintf("%s: the schema %s beside it differs from the model's; using the model's (%s)", path, file, s.modelPath))
		}
	}
	d, test, err := dataset.Load(s.data, opt)
	if err != nil {
		return nil, dataError(err)
	}
	if test != nil {
		d = test // evaluate on the held-out split when the source has one
	}
	if err := m.CheckData(d); err != nil {
		return nil, err
	}
	return d, nil
}

// fillWarning says, for a model without stored fill values (written before
// models carried them), that policy fills from the predicted file itself;
// "" when the policy needs no training values.
func fillWarning(p dataset.MissingPolicy, m *predictModel) string {
	if m.Fill != nil {
		return ""
	}
	needs := p == dataset.MissingMean
	for _, c := range m.Schema.Columns {
		needs = needs || (p == dataset.MissingZero && c.Kind == dataset.KindCategorical)
	}
	if !needs {
		return ""
	}
	return fmt.Sprintf("the model stores no training fill values (written by an older ppboost); --missing %s fills gaps "+
		"with this file's own means and most frequent categories, so a row's scores depend on the other rows in the file", p)
}

// writeFile creates path, writes it through a buffer with write, and
// closes it, returning the first error.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := write(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// printConfusion prints the accuracy and the confusion matrix.
func printConfusion(out io.Writer, ev boost.Evaluation, names []string) {
	fmt.Fprintf(out, "%d samples, accuracy %.4f\n", ev.N, ev.Accuracy)
	// The majority baseline: the most frequent true class of these rows,
	// predicted for every row (a model that does not beat it learned
	// nothing these rows can show).
	best, most := 0, -1
	for k, row := range ev.Confusion {
		n := 0
		for _, v := range row {
			n += v
		}
		if n > most {
			best, most = k, n
		}
	}
	if ev.N > 0 && best < len(names) {
		fmt.Fprintf(out, "majority class %q for every row: accuracy %.4f\n", names[best], float64(most)/float64(ev.N))
	}
	fmt.Fprintf(out, "confusion (rows: true, columns: predicted)\n")
	fmt.Fprintf(out, "%12s", "")
	for _, c := range names {
		fmt.Fprintf(out, " %10s", c)
	}
	fmt.Fprintln(out)
	for k, row := range ev.Confusion {
		fmt.Fprintf(out, "%12s", names[k])
		for _, v := range row {
			fmt.Fprintf(out, " %10d", v)
		}
		fmt.Fprintln(out)
	}
}

// writeScores writes the scores CSV: a header "predicted,KIND:NAME,..." and
// per row the predicted class name and the values in Go's shortest
// round-trip format (strconv 'g', -1). KIND is "prob" where the model
// defines probabilities (a Newton model: sigmoid for two classes, softmax
// for more) and "score" otherwise (a SAMME model's summed alpha per class, a
// square-loss DPBoost model's booster outputs, -F and F for two classes; a
// PFDS predictor's -F and F for two classes, its K linear scores for more).
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
