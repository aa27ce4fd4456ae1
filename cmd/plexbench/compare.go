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

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"plexbench/results"
	"plexbench/scoring"
)

func (c *cli) compareCmd() *cobra.Command {
	cmd, fs := c.command("compare", "[--results DIR] [--pattern GLOB]... [--bits-per-byte] [--format table|md|csv|json]", "the records under the results root, one table per protocol")
	var patterns stringList
	fs.Var(&patterns, "pattern", "records to include, a glob in the results root (or a path); repeatable (default *.json)")
	resultsDir := fs.String("results", "", resultsUsage("the records are read from"))
	format := fs.String("format", "table", "output as table, md, csv or json")
	width := fs.Int("width", 0, "fit the table in N columns, leaving out the least important (default: the terminal's width; none when not a terminal)")
	bytesOnly := fs.Bool("bits-per-byte", false, "one table per text across tokenizers: records scored from the same text with the same windows,\n"+
		"ranked by bits per byte, the one figure comparable when tokenizers differ (records of token ids are left out)")
	return c.action(cmd, func(pos []string) int {
		if len(pos) > 0 {
			return c.fail(fmt.Errorf("compare: unexpected argument %q (records are chosen with --pattern)", pos[0]))
		}
		if err := checkCompareFormat("compare", *format); err != nil {
			return c.fail(err)
		}
		root := c.resultsRoot(*resultsDir)
		recs, skipped, err := results.Records(root, patterns)
		c.skippedFiles("compare", skipped)
		if err != nil {
			return c.fail(fmt.Errorf("compare: %w", err))
		}
		tables := results.CompareTables(scoring.GroupRecords(recs))
		if *bytesOnly {
			groups, skipped := scoring.GroupByText(recs)
			if len(groups) == 0 {
				return c.fail(fmt.Errorf("compare --bits-per-byte: none of the %d records was scored from a text with its hash (token-id runs and records from before text_sha256 are left out)", len(recs)))
			}
			if skipped > 0 && *format != "json" {
				fmt.Fprintf(c.stderr, "plexbench: compare --bits-per-byte: %d of %d records left out (no text hash: token ids, a base's tokens, or older records; shards, task files)\n", skipped, len(recs))
			}
			tables = results.BytesTables(groups)
		}
		w := *width
		if w <= 0 {
			w = terminalWidth(c.stdout)
		}
		if err := writeCompareWidth(c.stdout, tables, *format, w); err != nil {
			return c.fail(err)
		}
		return 0
	})
}

// skippedFiles says once on stderr which files under the results root were
// left out of cmd's listing as not records (results.Records).
func (c *cli) skippedFiles(cmd string, skipped []error) {
	switch len(skipped) {
	case 0:
	case 1:
		fmt.Fprintf(c.stderr, "plexbench: %s: skipped a file that is not a record: %v\n", cmd, skipped[0])
	default:
		fmt.Fprintf(c.stderr, "plexbench: %s: skipped %d files that are not records, the first: %v\n", cmd, len(skipped), skipped[0])
	}
}

// writeCompare writes the tables in format: table, md, csv or json; a
// table fitted to the terminal when w is one.
func writeCompare(w io.Writer, out results.CompareOutput, format string) error {
	return writeCompareWidth(w, out, format, terminalWidth(w))
}

// writeCompareWidth is writeCompare with a table fitted in width columns
// (≤ 0: no limit).
func writeCompareWidth(w io.Writer, out results.CompareOutput, format string, width int) error {
	switch format {
	case "json":
		data, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		return writeJSON(w, data)
	case "csv":
		return writeCompareCSV(w, out)
	case "md":
		return out.WriteText(w, true)
	}
	return out.WriteTable(w, width)
}

// terminalWidth is the width of the terminal w is, 0 when it is none.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !isTerminal(w) {
		return 0
	}
	cols, _, err := term.GetSize(f.Fd())
	if err != nil {
		return 0
	}
	return cols
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
