package cli

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/ppboost/ppboost/boost"
	"github.com/ppboost/ppboost/boost/dataset"
	"github.com/ppboost/ppboost/boost/dpboost"
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
		sc, err := loadScorer(*modelPath)
		if err != nil {
			return err
		}
		if *outPath == "" {
			return writeScores(out, m, sc, d.X)
		}
		f, err := os.Create(*outPath)
		if err != nil {
			return err
		}
		if err := writeScores(f, m, sc, d.X); err != nil {
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
			ClassNames []string `json:"class_names"` // the confusion matrix's row and column order
		}{ev, m.ClassNames})
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

// rowScorer gives one row's value per class: probabilities where the model
// defines them (kind "prob": a Newton model's sigmoid for two classes,
// softmax over its boosters for more), raw scores otherwise (kind "score":
// a SAMME model's summed alpha of the rounds whose learner votes for the
// class; a square-loss DPBoost model's booster outputs, -F and F for two
// classes). The predicted class printed beside them is the model's own
// Predict: the argmax of these values, ties to the smaller class index (a
// two-class DP-GBDT model says class 1 exactly when F > 0, which a
// probability rounded to 1/2 does not show).
type rowScorer struct {
	kind   string
	scores func(x []float64) []float64
}

// loadScorer reads a model file of either kind, told apart by its format
// like loadPredictModel (whose predictModel keeps only Predict), and returns
// its scorer.
func loadScorer(path string) (*rowScorer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	var head struct {
		Format string `json:"format"`
	}
	_ = json.Unmarshal(b, &head) // a bad file is reported by the reader below
	if head.Format == dpboost.ModelFormat {
		m, err := dpboost.ReadModel(bytes.NewReader(b), path)
		if err != nil {
			return nil, err
		}
		return dpScorer(m), nil
	}
	m, err := boost.ReadModel(bytes.NewReader(b), path)
	if err != nil {
		return nil, err
	}
	return &rowScorer{kind: "score", scores: func(x []float64) []float64 {
		votes := make([]float64, m.Classes)
		for i := range m.Rounds { // in order, as Ensemble.Predict sums them
			r := &m.Rounds[i]
			votes[r.Base.Predict(x)] += r.Alpha
		}
		return votes
	}}, nil
}

func dpScorer(m *dpboost.Model) *rowScorer {
	newton := m.Config.Method == dpboost.Newton
	kind := "score"
	if newton {
		kind = "prob"
	}
	return &rowScorer{kind: kind, scores: func(x []float64) []float64 {
		f := m.Scores(x, nil)
		if len(f) == 1 { // two classes: F is class 1's margin
			if newton {
				p := sigmoid(f[0])
				return []float64{1 - p, p}
			}
			return []float64{-f[0], f[0]}
		}
		if !newton {
			return f // one-vs-rest outputs
		}
		mx := math.Inf(-1)
		for _, v := range f {
			mx = max(mx, v)
		}
		z := 0.0
		for k, v := range f {
			f[k] = math.Exp(v - mx)
			z += f[k]
		}
		for k := range f {
			f[k] /= z
		}
		return f
	}}
}

// sigmoid is the logistic function, computed without overflow.
func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// writeScores writes the scores CSV: a header "predicted,KIND:NAME,..." and
// per row the predicted class name and the values in Go's shortest
// round-trip format (strconv 'g', -1).
func writeScores(w io.Writer, m *predictModel, sc *rowScorer, X [][]float64) error {
	cw := csv.NewWriter(w)
	head := []string{"predicted"}
	for _, c := range m.ClassNames {
		head = append(head, sc.kind+":"+c)
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	rec := make([]string, len(head))
	for _, x := range X {
		v := sc.scores(x)
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
