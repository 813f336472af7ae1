package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"floe/proof/checker"
	"floe/proof/history"
)

func main() {
	wwDeps := flag.Bool("ww-deps", false, "let write-write edges close G1c cycles (then allowed), as Jepsen's :ww-deps")
	jsonOut := flag.String("json", "", "write the JSON result to this file")
	timeout := flag.Duration("cycle-search-timeout", time.Second, "bound on the cycle search of each strongly connected component")
	flag.Parse()
	valid, err := run(flag.Arg(0), *jsonOut, checker.Options{WWDeps: *wwDeps, CycleSearchTimeout: *timeout})
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkhistory:", err)
		os.Exit(2)
	}
	if !valid {
		os.Exit(1)
	}
}

func run(path, jsonOut string, opts checker.Options) (bool, error) {
	var in io.Reader = os.Stdin
	if path != "" && path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return false, err
		}
		defer f.Close()
		in = f
	}
	h, err := history.ReadJSON(in)
	if err != nil {
		return false, err
	}
	res, err := checker.Check(h, opts)
	if err != nil {
		return false, err
	}
	if jsonOut != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return false, err
		}
		if err := os.WriteFile(jsonOut, b, 0o644); err != nil {
			return false, err
		}
	}
	if err := checker.WriteMarkdown(os.Stdout, res); err != nil {
		return false, err
	}
	return res.Valid, nil
}
