package main

// worst.go owns `plexbench worst`: a record's worst tokens (or windows)
// from the token trace kept beside it (scoring/worst.go), as lines or as
// JSON.

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"plexbench/results"
	"plexbench/scoring"
)

func (c *cli) worstCmd() *cobra.Command {
	cmd, fs := c.command("worst", "RECORD.json|RECORD-NAME [-n 20] [--by kld|nll|delta_p] [--windows] [--json]", "a record's worst tokens (or windows) with their text")
	root := fs.String("results", "", resultsUsage("a record given by name is looked up in"))
	n := fs.IntP("count", "n", scoring.WorstN, "how many tokens (and windows) to list")
	by := fs.String("by", scoring.WorstByKLD, "rank by kld, nll (the NLL's increase over the base; without a base, the NLL) or delta_p (the drop in the true token's probability); without a base: nll")
	windows := fs.Bool("windows", false, "list the windows by the mean of the measure, with their opening text")
	asJSON := fs.Bool("json", false, `print {"tokens": [...], "windows": [...]} (both lists) on stdout`)
	return c.action(cmd, func(pos []string) int {
		if len(pos) != 1 {
			return c.fail(errors.New("worst: give one record (its file, or its name in the results root)"))
		}
		path, err := results.RecordPath(c.resultsRoot(*root), pos[0])
		if err != nil {
			return c.fail(err)
		}
		l, tr, err := c.worstOf(path, *by, *n, givenFlag(fs, "by"))
		if err != nil {
			return c.fail(err)
		}
		if *asJSON {
			data, err := json.MarshalIndent(l, "", "  ")
			if err == nil {
				err = writeJSON(c.stdout, data)
			}
			if err != nil {
				return c.fail(err)
			}
			return 0
		}
		what := "tokens"
		if *windows {
			what = "windows"
		}
		fmt.Fprintf(c.stdout, "worst %s of %s (%d tokens scored in %d windows)\n", what, path, tr.Scored(), len(tr.Windows))
		for _, line := range scoring.WorstLines(l, *windows) {
			fmt.Fprintln(c.stdout, line)
		}
		return 0
	})
}

// worstOf lists the record at path. Without a base and without an
// explicit --by, it ranks by NLL and says so on stderr.
func (c *cli) worstOf(path, by string, n int, byGiven bool) (scoring.WorstList, *scoring.TokenTrace, error) {
	rep, _, err := scoring.ReadRecord(path)
	if err != nil {
		return scoring.WorstList{}, nil, err
	}
	if rep.Object == "" {
		return scoring.WorstList{}, nil, fmt.Errorf("%s: not a run's report (an A/B summary?)", path)
	}
	if len(rep.Corpora) > 0 {
		return scoring.WorstList{}, nil, fmt.Errorf("%s: a record of %d corpora keeps no token trace; score the text alone for worst", path, len(rep.Corpora))
	}
	tr, err := results.ReadTrace(path, &rep)
	if err != nil {
		return scoring.WorstList{}, nil, err
	}
	if !tr.HasBase && !byGiven {
		by = scoring.DefaultWorstBy(tr)
		fmt.Fprintf(c.stderr, "plexbench: %s compared against no base: ranked by NLL (no KLD, Δp or base top token)\n", path)
	}
	l, err := scoring.Worst(tr, by, n)
	if err != nil {
		return l, nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, tr, nil
}
