// Command pagecheck checks a status page rendered by headless Chromium
// (testnet/status_check.sh): pagecheck [-rows N] DOM.html SHOT.png exits 0
// when status.CheckPage accepts them, 1 otherwise, and prints what it found.
//
// Where it sits: a test tool of status (its only import), run by
// testnet/status_check.sh; nothing imports it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ppboost/ppboost/status"
)

func main() {
	rows := flag.Int("rows", 1, "fewest round-table rows the DOM must have")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: pagecheck [-rows N] DOM.html SHOT.png")
		os.Exit(2)
	}
	dom, err := os.ReadFile(flag.Arg(0))
	if err == nil {
		var shot []byte
		if shot, err = os.ReadFile(flag.Arg(1)); err == nil {
			var c status.PageCheck
			c, err = status.CheckPage(dom, shot, *rows)
			fmt.Println("pagecheck:", c)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pagecheck:", err)
		os.Exit(1)
	}
}
