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
	"strings"
	"text/tabwriter"

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
	return writeCompareText(w, out, format == "md")
}

// checkCompareFormat refuses a --format writeCompare does not write.
func checkCompareFormat(cmd, format string) error {
	switch format {
	case "table", "md", "csv", "json":
		return nil
	}
	return fmt.Errorf("%s: --format %q: want table, md, csv or json", cmd, format)
}

func writeCompareText(w io.Writer, out results.CompareOutput, md bool) error {
	for gi, g := range out.Groups {
		if gi > 0 {
			fmt.Fprintln(w)
		}
		if md {
			fmt.Fprintf(w, "### Group %d: %s\n\n", gi+1, g.Title)
			fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(g.Header(), " | "), strings.Repeat(" --- |", len(g.Header())))
			for i := range g.Rows {
				fmt.Fprintf(w, "| %s |\n", strings.Join(g.RowCells(i), " | "))
			}
			if notes := results.FloorNotes(g); len(notes) > 0 {
				fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "  \n"))
			}
			continue
		}
		fmt.Fprintf(w, "group %d: %s\n", gi+1, g.Title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(g.Header(), "\t"))
		for i := range g.Rows {
			fmt.Fprintln(tw, strings.Join(g.RowCells(i), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, n := range results.FloorNotes(g) {
			fmt.Fprintln(w, n)
		}
	}
	if len(out.Differ) > 0 {
		if md {
			fmt.Fprintln(w)
		}
		_, err := fmt.Fprintf(w, "\nlegend: the %d groups differ in %s; their numbers are not comparable across groups\n",
			len(out.Groups), strings.Join(out.Differ, ", "))
		return err
	}
	return nil
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
