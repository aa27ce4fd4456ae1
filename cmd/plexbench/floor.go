package main

// floor.go owns `plexbench floor`'s flags and output: the measurement
// itself (a model scored against its own bases, so the user knows what
// the KLD figures of that protocol can resolve) is workbench.Floor. The
// last self-compare is kept as a record carrying the floor object, in the
// same compare group as every run against the same top-k base (keep it
// with --perplexity-kld-base-out); compare marks results within 2× of the
// floor.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"plexbench/profiles"
	"plexbench/scoring"
	"plexbench/workbench"
)

func (c *cli) floorCmd() *cobra.Command {
	cmd, fs := c.command("floor", "[--model M.gguf] [--profile P.toml] [--against C.gguf] [flags]", "a model against its own bases: what its KLD figures can resolve")
	p := profiles.Default()
	p.BindFlags(fs)
	profilePath := fs.String("profile", "", "a TOML profile; flags given beside it override its settings")
	against := fs.String("against", "", "also compare this model with the full-vocabulary base: its full and top-k KLD on the same tokens")
	topOut := fs.String("perplexity-kld-base-out", "", "keep the top-k base here (default: a temporary file); runs compared with it share the floor's compare group")
	fullOut := fs.String("full-base-out", "", "keep the llama.cpp-format full-vocabulary base here (default: a temporary file)")
	output := fs.String("perplexity-output", "", "write the floor's JSON report here (default: stdout)")
	resultsDir := fs.String("results", "", resultsUsage("the floor's record is written under"))
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	return c.action(cmd, func(_ []string) int {
		if fs.NArg() > 0 {
			return c.fail(fmt.Errorf("floor: unexpected argument %q", fs.Arg(0)))
		}
		p, err := withProfile(fs, p, *profilePath)
		if err != nil {
			return c.fail(err)
		}
		if p.Method != "" && p.Method != scoring.MethodChunks {
			return c.fail(fmt.Errorf("floor: --perplexity-method %s: the full-vocabulary base is llama.cpp's, which holds chunks only", p.Method))
		}
		if *against != "" {
			if _, err := os.Stat(*against); err != nil {
				return c.fail(fmt.Errorf("floor: --against: %w", err))
			}
		}
		if code := c.checkFiles(floorFiles(p, *profilePath, *against, *topOut, *fullOut, *output, c.resultsRoot(*resultsDir))); code >= 0 {
			return code
		}
		tmp, err := os.MkdirTemp("", "plexbench-floor-")
		if err != nil {
			return c.fail(err)
		}
		defer os.RemoveAll(tmp)
		stem := strings.TrimSuffix(filepath.Base(p.Model), filepath.Ext(p.Model))
		if p.Model == "" {
			stem = "demo"
		}
		k := p.KLDTopK
		if k == 0 {
			k = scoring.DefaultTopK
		}
		full, top := *fullOut, *topOut
		if full == "" {
			full = filepath.Join(tmp, stem+".full.kld")
		}
		if top == "" {
			top = filepath.Join(tmp, fmt.Sprintf("%s.top%d.kld", stem, k))
		}

		ctx, stop := workbench.SignalContext()
		defer stop()
		job := workbench.FloorJob{Profile: p, TopBase: top, FullBase: full, Against: *against, TopBaseTemporary: *topOut == "",
			Keep: workbench.Keep{Root: c.resultsRoot(*resultsDir)}}
		if !*quiet {
			job.Pass = c.passProgress("floor")
		}
		out, err := workbench.Floor(ctx, job)
		if err != nil {
			if errors.Is(err, scoring.ErrStopped) {
				fmt.Fprintf(c.stderr, "plexbench: floor: %v: nothing kept\n", err)
				return 130
			}
			return c.fail(err)
		}
		rep := &out.Report
		if out.Record != "" && !*quiet {
			fmt.Fprintf(c.stderr, "plexbench: record %s\n", out.Record)
		}
		if !*quiet {
			printFloor(c.stderr, rep)
		}
		if err := c.writeReport(*output, rep); err != nil {
			return c.fail(err)
		}
		return 0
	})
}

// passProgress tells a multi-pass measurement's passes on stderr, each
// with its own progress line.
func (c *cli) passProgress(name string) func(pass, passes int, what string) func(scoring.Event) {
	return func(pass, passes int, what string) func(scoring.Event) {
		fmt.Fprintf(c.stderr, "plexbench: %s pass %d/%d: %s\n", name, pass, passes, what)
		return newProgressPrinter(c.stderr).event
	}
}

// printFloor says what was measured, for people.
func printFloor(w io.Writer, rep *scoring.Report) {
	fl := rep.Floor
	fmt.Fprintf(w, "plexbench floor (top-%d, %d tokens):\n", fl.TopK, fl.SelfFull.Tokens)
	fmt.Fprintf(w, "  self against its top-%d base:        mean KLD %.3g (max %.3g, same top %s) — 0 for a deterministic engine\n",
		fl.TopK, fl.SelfTopKMeanKLD, fl.SelfTopKMaxKLD, scoring.Percent(fl.SelfTopKSameTop, 2))
	s := fl.SelfFull
	fmt.Fprintf(w, "  self against its full 16-bit base:   full-vocabulary KLD %s, top-%d KLD %s (the 16-bit rows' floor)\n",
		scoring.PM(s.MeanFullKLD, s.MeanFullKLDUncertainty), fl.TopK, scoring.PM(s.MeanTopKKLD, s.MeanTopKKLDUncertainty))
	if a := fl.Against; a != nil {
		fmt.Fprintf(w, "  %s against the full base: full-vocabulary KLD %s, top-%d KLD %s: the top-%d base sees %s of it (misses %s)\n",
			fl.AgainstModel, scoring.PM(a.MeanFullKLD, a.MeanFullKLDUncertainty), fl.TopK, scoring.PM(a.MeanTopKKLD, a.MeanTopKKLDUncertainty),
			fl.TopK, scoring.Percent(a.SeenFraction, 1), scoring.PM(a.MeanMissedKLD, a.MeanMissedKLDUncertainty))
	}
	fmt.Fprintf(w, "  floor of comparisons against the top-%d base: %.3g (compare marks results within 2× of it)\n", fl.TopK, fl.Floor)
	printCoarsening(w, fl)
}

// printCoarsening is the floor's coarsening by k: what a top-k base of
// each size costs and sees, to choose k from.
func printCoarsening(w io.Writer, fl *scoring.FloorReport) {
	if len(fl.Coarsening) == 0 {
		return
	}
	fmt.Fprintln(w, "  top-k bases by k (bytes per scored token; top-k KLD of the full-vocabulary KLD on the same tokens):")
	for _, c := range fl.Coarsening {
		line := fmt.Sprintf("    k %4d (%5d B): self %.3g of %.3g", c.TopK, scoring.BaseRecordBytes(c.TopK),
			c.SelfFull.MeanTopKKLD, c.SelfFull.MeanFullKLD)
		if a := c.Against; a != nil {
			line += fmt.Sprintf("; %s %s of %s (sees %s)", fl.AgainstModel, scoring.PM(a.MeanTopKKLD, a.MeanTopKKLDUncertainty),
				scoring.PM(a.MeanFullKLD, a.MeanFullKLDUncertainty), scoring.Percent(a.SeenFraction, 1))
		}
		fmt.Fprintln(w, line)
	}
}
