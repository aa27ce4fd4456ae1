package main

// sweep.go owns `plexbench sweep`'s flags and output: the sweep itself
// (the base model records its base once, every other model is scored
// against it, one model in memory at a time, each a record, resumable) is
// workbench.Sweep. At the end it prints the compare table of the sweep's
// records (with the group's floor and noise records, for the ~ marks) and,
// when asked, the KLD-vs-bpw chart and a card per model.

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"plexbench/profiles"
	"plexbench/results"
	"plexbench/results/plot"
	"plexbench/scoring"
	"plexbench/workbench"
)

// sweepFlags are sweep's flags beside the profile's settings.
type sweepFlags struct {
	base, profile, baseOut, results, plot, cards, format string
	resume, quiet                                        bool
}

func (c *cli) sweepCmd() *cobra.Command {
	cmd, fs := c.command("sweep", "--base-model BASE.gguf [--profile P.toml] [score flags] MODEL.gguf|GLOB...\n       plexbench sweep --profile SWEEP.toml (its [sweep] table names the base and models)", "one base model, many models against it, one record each, one compare table")
	p := profiles.Default()
	p.BindFlags(fs)
	var j workbench.Job
	var x sweepFlags
	fs.StringVar(&x.base, "base-model", "", "the base model: it records the base every other model is compared with")
	fs.StringVar(&x.profile, "profile", "", "a TOML profile; flags given beside it override its settings")
	fs.StringVar(&x.baseOut, "perplexity-kld-base-out", "", "keep the base here (default: MODEL_TEXT_SETTINGS.sweep-base.kld in the results root,\n"+
		"SETTINGS a digest of the base model's settings); the journals go beside it")
	fs.BoolVar(&j.TokenIDs, "perplexity-token-ids", false, "include the token ids in the records")
	fs.BoolVar(&x.resume, "resume", false, "continue a stopped or killed sweep (same flags): models whose records of these settings are there\n"+
		"are skipped, the interrupted one resumes from its journal")
	fs.StringVar(&x.results, "results", "", resultsUsage("the sweep's records are written under"))
	fs.StringVar(&x.plot, "plot", "", "also write the KLD-vs-bits-per-weight chart here (.svg or .png)")
	fs.StringVar(&x.cards, "cards", "", "also write a Markdown card per model into this folder (RECORD.md)")
	fs.StringVar(&x.format, "format", "table", "the compare table at the end: table, md, csv or json")
	fs.BoolVar(&x.quiet, "quiet", false, "no progress on stderr")
	aliases(fs, map[string]string{"base": "base-model"})
	return c.action(cmd, func(pos []string) int {
		sj, err := c.sweepJob(fs, p, x, j, pos)
		if err != nil {
			return c.fail(err)
		}
		ctx, stop := workbench.SignalContext()
		defer stop()
		out, err := workbench.Sweep(ctx, sj)
		if errors.Is(err, scoring.ErrStopped) {
			fmt.Fprintf(c.stderr, "plexbench: %v: the finished models' records are kept; --resume continues the sweep\n", err)
			return 130
		}
		if err != nil {
			return c.fail(err)
		}
		if err := c.sweepOutputs(x, out); err != nil {
			return c.fail(err)
		}
		return c.sweepExit(out)
	})
}

// sweepJob checks the flags and builds the sweep, before any model loads.
// The base and models come from the flags and arguments, else from the
// profile's [sweep] table.
func (c *cli) sweepJob(fs *pflag.FlagSet, p profiles.Profile, x sweepFlags, j workbench.Job, pos []string) (workbench.SweepJob, error) {
	var sj workbench.SweepJob
	if x.plot != "" {
		if _, err := plotFormat("", x.plot); err != nil {
			return sj, fmt.Errorf("sweep: --plot: %w", err)
		}
	}
	if err := checkCompareFormat("sweep", x.format); err != nil {
		return sj, err
	}
	var err error
	if j.Profile, err = withProfile(fs, p, x.profile); err != nil {
		return sj, err
	}
	if sw := j.Profile.Resolve().Sweep; sw != nil {
		x.base = cmp.Or(x.base, sw.Base)
		if len(pos) == 0 {
			pos = sw.Models
		}
	}
	j.Profile.Sweep = nil
	if x.base == "" {
		return sj, errors.New("sweep: --base-model MODEL.gguf is required (or a profile's [sweep] base): the model whose base the others are compared with")
	}
	models, err := c.sweepModels(x.base, pos, x.quiet)
	if err != nil {
		return sj, err
	}
	if err := inheritGeometry(fs, &j, x.profile); err != nil { // as `score --perplexity-kld` does
		return sj, err
	}
	root := c.resultsRoot(x.results)
	base := x.baseOut
	if base == "" {
		base = results.SweepBase(root, x.base, cmp.Or(j.Profile.Text, j.Profile.Tokens), workbench.SweepBaseSettings(j.Profile, x.base))
	}
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return sj, fmt.Errorf("sweep: %w", err)
	}
	sj = workbench.SweepJob{Job: j, BaseModel: x.base, Models: models, Base: base, Root: root,
		Resume: x.resume, Progress: c.sweepProgress(x.quiet)}
	return sj, sweepFiles(sj, x).Check()
}

// sweepModels are the models the arguments name, globs expanded, in
// order, without repeats and without the base model (said on stderr).
func (c *cli) sweepModels(base string, args []string, quiet bool) ([]string, error) {
	var models []string
	for _, a := range args {
		m := []string{a}
		if strings.ContainsAny(a, "*?[") {
			var err error
			if m, err = filepath.Glob(a); err != nil || len(m) == 0 {
				return nil, fmt.Errorf("sweep: %q matches no file", a)
			}
		}
		for _, f := range m {
			if sameFile(f, base) {
				if !quiet {
					fmt.Fprintf(c.stderr, "plexbench: sweep: %s is the base model: left out of the models\n", f)
				}
				continue
			}
			if !slices.ContainsFunc(models, func(o string) bool { return sameFile(o, f) }) {
				models = append(models, f)
			}
		}
	}
	if len(models) == 0 {
		return nil, errors.New("sweep: give the models to compare with the base (files or globs)")
	}
	return models, nil
}

// sameFile reports whether a and b are one file (by path when either is
// missing: the sweep names the missing one).
func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA != nil || errB != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return os.SameFile(fa, fb)
}

// sweepProgress says on stderr what the sweep does: a line per model, its
// run's progress, its record.
func (c *cli) sweepProgress(quiet bool) func(workbench.SweepEvent) {
	if quiet {
		return nil
	}
	var pp *progressPrinter
	return func(e workbench.SweepEvent) {
		head := fmt.Sprintf("plexbench: sweep %d/%d: %s", e.Index+1, e.Models, filepath.Base(e.Model))
		switch e.Kind {
		case workbench.SweepModelStarted:
			what := "compare with the base"
			if e.Index == 0 {
				what = "record the base"
			}
			fmt.Fprintf(c.stderr, "%s: %s\n", head, what)
			pp = newProgressPrinter(c.stderr)
		case workbench.SweepModelRun:
			pp.event(*e.Run)
		case workbench.SweepModelDone:
			if _, line := stopStatus(e.Report); line != "" {
				fmt.Fprintf(c.stderr, "%s: %s\n", head, line)
			}
			fmt.Fprintf(c.stderr, "plexbench: record %s\n", e.Record)
		case workbench.SweepModelSkipped:
			fmt.Fprintf(c.stderr, "%s: already recorded (%s): skipped\n", head, e.Record)
		}
	}
}

// sweepOutputs prints the compare table of the sweep's records and
// writes the cards and the chart asked for.
func (c *cli) sweepOutputs(x sweepFlags, out workbench.SweepOutcome) error {
	if x.cards != "" {
		if err := os.MkdirAll(x.cards, 0o755); err != nil {
			return fmt.Errorf("--cards: %w", err)
		}
		for i := range out.Reports {
			r := &out.Reports[i]
			if err := c.writeCard(filepath.Join(x.cards, r.Record.Name+".md"), r); err != nil {
				return err
			}
		}
	}
	recs := append(slices.Clone(out.Reports), results.Measurements(c.resultsRoot(x.results), out.Reports[1:])...)
	groups := scoring.GroupRecords(recs)
	if x.plot != "" {
		ft, _ := plotFormat("", x.plot) // checked before the sweep
		chart, err := plotChart("kld-bpw", groups, plot.Options{})
		if err == nil {
			err = c.writeChart(x.plot, ft, chart, 960, 600)
		}
		if err != nil {
			return fmt.Errorf("--plot %s: %w", x.plot, err)
		}
	}
	return writeCompare(c.stdout, results.CompareTables(groups), x.format)
}

// sweepExit is exitThreshold when a model's --stop-when-decided condition
// fails (each named on stderr), else 0.
func (c *cli) sweepExit(out workbench.SweepOutcome) int {
	code := 0
	for i := range out.Reports[1:] {
		r := &out.Reports[1+i]
		if s, _ := stopStatus(r); stopFails(s) {
			fmt.Fprintf(c.stderr, "plexbench: sweep: %s: --stop-when-decided %s fails\n", r.Record.Model.File, s.Rule)
			code = exitThreshold
		}
	}
	return code
}
