package main

// noise.go owns `plexbench noise`'s flags and output: the measurement (the
// model under changes that must not change quality, each against the
// default run's base) is workbench.Noise. The largest change's run is kept
// as a record carrying the noise object, in the compare group of every
// run against the same base (keep it with --perplexity-kld-base-out);
// compare marks results within 2× of its floor and `ab` says when B is
// within it.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"plexbench/profiles"
	"plexbench/scoring"
	"plexbench/workbench"
)

func (c *cli) noiseCmd() *cobra.Command {
	cmd, fs := c.command("noise", "[--model M.gguf] [--profile P.toml] [flags]", "the engine's noise floor: threads, pass plans, kernel families against the default run")
	p := profiles.Default()
	p.BindFlags(fs)
	profilePath := fs.String("profile", "", "a TOML profile; flags given beside it override its settings")
	baseOut := fs.String("perplexity-kld-base-out", "", "keep the default run's base here (default: a temporary file); runs compared with it share the noise record's compare group")
	asJSON := fs.Bool("json", false, "print the noise object as JSON on stdout instead of the table")
	resultsDir := fs.String("results", "", resultsUsage("the noise record is written under"))
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	return c.action(cmd, func(_ []string) int {
		if fs.NArg() > 0 {
			return c.fail(fmt.Errorf("noise: unexpected argument %q", fs.Arg(0)))
		}
		p, err := withProfile(fs, p, *profilePath)
		if err != nil {
			return c.fail(err)
		}
		if code := c.checkFiles(noiseFiles(p, *profilePath, *baseOut, c.resultsRoot(*resultsDir))); code >= 0 {
			return code
		}
		if p.StopAtPrecision > 0 || p.StopWhenDecided != "" {
			fmt.Fprintln(c.stderr, "plexbench: noise: the stopping rule is off: every change scores every window")
		}
		base := *baseOut
		if base == "" {
			tmp, err := os.MkdirTemp("", "plexbench-noise-")
			if err != nil {
				return c.fail(err)
			}
			defer os.RemoveAll(tmp)
			base = filepath.Join(tmp, "default.kld")
		}
		ctx, stop := workbench.SignalContext()
		defer stop()
		job := workbench.NoiseJob{Profile: p, Base: base, BaseTemporary: *baseOut == "",
			Keep: workbench.Keep{Root: c.resultsRoot(*resultsDir)}}
		if !*quiet {
			job.Pass = c.passProgress("noise")
		}
		out, err := workbench.Noise(ctx, job)
		if err != nil {
			if errors.Is(err, scoring.ErrStopped) {
				fmt.Fprintf(c.stderr, "plexbench: noise: %v: nothing kept\n", err)
				return 130
			}
			return c.fail(err)
		}
		if out.Record != "" && !*quiet {
			fmt.Fprintf(c.stderr, "plexbench: record %s\n", out.Record)
		}
		if err := c.noiseOutputs(&out.Report, *asJSON); err != nil {
			return c.fail(err)
		}
		return 0
	})
}

// noiseOutputs prints the noise object as JSON or the table.
func (c *cli) noiseOutputs(rep *scoring.Report, asJSON bool) error {
	if !asJSON {
		return writeNoiseTable(c.stdout, rep)
	}
	data, err := json.MarshalIndent(rep.Noise, "", "  ")
	if err != nil {
		return err
	}
	return writeJSON(c.stdout, data)
}

// writeNoiseTable prints the changes and the floor, for people.
func writeNoiseTable(w io.Writer, rep *scoring.Report) error {
	n := rep.Noise
	fmt.Fprintf(w, "plexbench noise: %s, %s ctx %d, %d windows (%d tokens), each change against the default run's base\n",
		filepath.Base(rep.Config.Model.Path), rep.Method, rep.Ctx, rep.WindowsScored, rep.KLD.Tokens)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "change\tmean KLD\tmax KLD\tsame top\tsettings")
	for _, c := range n.Changes {
		fmt.Fprintf(tw, "%s\t%.4g\t%.4g\t%s\t%s\n", c.Change, c.MeanKLD, c.MaxKLD, scoring.Percent(c.SameTop, 2), c.Settings)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range n.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", s)
	}
	_, err := fmt.Fprintf(w, "floor: %.4g (the largest mean KLD; compare marks results within 2× of it, ab says when B is within it)\n", n.Floor)
	return err
}
