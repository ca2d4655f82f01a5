// Command encode loads CSV files with ppboost's loader (dataset.ReadCSV, the
// path `ppboost predict` takes) and prints their encoded rows, for
// python/test_reader.py to compare with the Python reader on edge cases.
//
//	go run ./python/testdata/encode SCHEMA.json POLICY FILE...
//
// For every file: a line "# FILE", then one line per row (the features in
// strconv's shortest format, then the class index), or "ERR" if the loader
// refuses the file.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ppboost/ppboost/dataset"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: encode SCHEMA.json POLICY FILE...")
		os.Exit(2)
	}
	s, err := dataset.LoadSchema(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	p, err := dataset.ParseMissingPolicy(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for _, path := range os.Args[3:] {
		fmt.Fprintln(w, "#", path)
		d, err := dataset.LoadCSV(path, dataset.CSVOptions{Schema: s, Missing: p})
		if err != nil {
			fmt.Fprintln(w, "ERR")
			continue
		}
		for i, x := range d.X {
			f := make([]string, 0, len(x)+1)
			for _, v := range x {
				f = append(f, strconv.FormatFloat(v, 'g', -1, 64))
			}
			fmt.Fprintln(w, strings.Join(append(f, strconv.Itoa(d.Y[i])), ","))
		}
	}
}
