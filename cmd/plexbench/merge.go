package main

// merge.go owns `plexbench merge`: shard records (score
// --perplexity-shard i/n) combined into the record one unsharded run
// gives, their token traces into its trace, written under the results
// root and printed as the JSON report.

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"plexbench/results"
	"plexbench/scoring"
)

func (c *cli) mergeCmd() *cobra.Command {
	cmd, fs := c.command("merge", "SHARD.json... [-o merged.json] [--results DIR]", "combine score --perplexity-shard i/n records into one run's record")
	out := fs.StringP("output", "o", "", "write the merged report here (default: stdout)")
	resultsDir := fs.String("results", "", resultsUsage("the merged record is written under"))
	return c.action(cmd, func(pos []string) int {
		if len(pos) == 0 {
			return c.fail(fmt.Errorf("merge: give the shard records"))
		}
		if code := c.checkFiles(outputFiles("the shard record", pos, "-o", *out, c.resultsRoot(*resultsDir))); code >= 0 {
			return code
		}
		var shards []scoring.Report
		for _, p := range pos {
			r, ok, err := scoring.ReadRecord(p)
			if err != nil {
				return c.fail(err)
			}
			if !ok {
				return c.fail(fmt.Errorf("%s: not a record (an A/B summary, or a stopped run)", p))
			}
			if r.Shards == 0 {
				return c.fail(fmt.Errorf("%s: not a shard record (score it with --perplexity-shard i/n)", p))
			}
			if r.Trace, err = results.ReadTrace(p, &r); errors.Is(err, results.ErrNoTrace) {
				fmt.Fprintf(c.stderr, "plexbench: %v; the merged record keeps no token trace\n", err)
			} else if err != nil {
				return c.fail(err)
			}
			shards = append(shards, r)
		}
		merged, err := scoring.MergeShards(shards)
		if err != nil {
			return c.fail(fmt.Errorf("merge: %w", err))
		}
		ri := scoring.MergedRecordInfo(shards, &merged)
		ri.Name = results.RecordName(&merged, &ri)
		merged.Record = &ri
		if err := c.writeReport(*out, &merged); err != nil {
			return c.fail(err)
		}
		path, err := results.WriteRecord(c.resultsRoot(*resultsDir), &merged)
		if err != nil {
			return c.fail(err)
		}
		fmt.Fprintf(c.stderr, "plexbench: record %s\n", path)
		return 0
	})
}
