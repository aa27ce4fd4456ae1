package main

// compare.go owns `plexbench compare`: the records under a results root,
// one table per protocol (never blending two), rows best first, as an
// aligned table, Markdown, CSV or JSON.

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"plexbench/scoring"
	"plexbench/scoring/results"
)

func runCompare(args []string) int {
	fs := newFlags("compare", "[--results DIR] [--pattern GLOB]... [--format table|md|csv|json]")
	var patterns stringList
	fs.Var(&patterns, "pattern", "records to include, a glob in the results root (or a path); repeatable (default *.json)")
	resultsDir := fs.String("results", "", resultsUsage("the records are read from"))
	format := fs.String("format", "table", "table, md, csv or json")
	pos, code := parseInterleaved(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		return fail(fmt.Errorf("compare: unexpected argument %q (records are chosen with --pattern)", pos[0]))
	}
	if err := checkCompareFormat("compare", *format); err != nil {
		return fail(err)
	}
	root := results.Root(*resultsDir)
	recs, err := results.Records(root, patterns)
	if err != nil {
		return fail(fmt.Errorf("compare: %w", err))
	}
	if err := writeCompare(os.Stdout, results.CompareTables(scoring.GroupRecords(recs)), *format); err != nil {
		return fail(err)
	}
	return 0
}

// writeCompare writes the tables in format: table, md, csv or json.
func writeCompare(w io.Writer, out results.CompareOutput, format string) error {
	switch format {
	case "json":
		data, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		return writeJSON(w, data)
	case "csv":
		return writeCompareCSV(w, out)
	}
	return out.WriteText(w, format == "md")
}

// checkCompareFormat refuses a --format writeCompare does not write.
func checkCompareFormat(cmd, format string) error {
	switch format {
	case "table", "md", "csv", "json":
		return nil
	}
	return fmt.Errorf("%s: --format %q: want table, md, csv or json", cmd, format)
}

func writeCompareCSV(w io.Writer, out results.CompareOutput) error {
	cw := csv.NewWriter(w)
	// One header for every group: the perplexity columns, then a
	// multiple-choice record's accuracy and tasks.
	cw.Write(append([]string{"group", "protocol"}, append(results.CompareHeader(), "accuracy", "tasks", "record")...))
	for gi, g := range out.Groups {
		for i, r := range g.Rows {
			cells, acc, tasks := r.Cells(i), "–", "–"
			if g.IsChoice() {
				for c := 4; c < len(cells)-1; c++ {
					cells[c] = "–"
				}
				acc, tasks = r.Figure, fmt.Sprint(r.Tasks)
			}
			cw.Write(append([]string{fmt.Sprint(gi + 1), g.Title}, append(cells, acc, tasks, r.Record)...))
		}
	}
	cw.Flush()
	return cw.Error()
}
