package main

// tui.go owns `plexbench tui` (and bare `plexbench`): flags (the
// multiple-choice ones bound as score binds them, choice.go), profiles,
// the runner the TUI drives (workbench.Run, the path `score` takes), and
// the terminal check.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"plexbench/internal/outfile"
	"plexbench/profiles"
	"plexbench/tui"
	"plexbench/workbench"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
func (s *stringList) Type() string       { return "string" }

func (c *cli) tuiCmd() *cobra.Command {
	cmd, fs := c.command("tui", "[--profile P.toml [--profile B.toml]] [--perplexity-kld FILE] [flags]",
		"live run view; two profiles give an A/B view")
	cmd.Long = "The live run view; two profiles give an A/B view.\n\n" +
		"  plexbench tui --hellaswag|--winogrande|--multiple-choice FILE [--profile P.toml] [flags]\n" +
		"  plexbench tui --sweep BASE.gguf [--profile P.toml] [flags] MODEL.gguf|GLOB...\n" +
		"  plexbench tui --profile SWEEP.toml (its [sweep] table names the base and models)"
	a := bindTUI(fs)
	return c.action(cmd, func(pos []string) int {
		cfg, code := c.tuiConfig(fs, a, pos)
		if code >= 0 {
			return code
		}
		return c.tui(cfg)
	})
}

// tui checks the configuration's runs and opens the app on it.
func (c *cli) tui(cfg tui.Config) int {
	if code := c.checkFiles(outputFiles("--perplexity-kld", []string{cfg.Base}, "", "", cfg.ResultsDir)); code >= 0 {
		return code
	}
	// New refuses what the flags cannot run (two profiles that are not
	// comparable, a task file beside an A/B) before the terminal check.
	m, err := tui.New(cfg)
	if err != nil {
		if errors.Is(err, profiles.ErrNotComparable) {
			return c.fail(fmt.Errorf("%w\n(an engine A/B must score the same model on the same text; --compare models allows two models)", err))
		}
		return c.fail(err)
	}
	if !isTerminal(c.stdout) {
		m.Close()
		fmt.Fprintln(c.stderr, "plexbench tui: standard output is not a terminal, so there is nothing to draw on.\n"+
			"For a headless run use `plexbench score --profile P.toml` (same runs, same JSON report);\n"+
			"for an A/B use `plexbench ab --profile A.toml --profile B.toml` (the same figures and verdict);\n"+
			"for a task file use `plexbench score --hellaswag FILE` (or --winogrande, --multiple-choice: the same accuracy);\n"+
			"for a sweep use `plexbench sweep` (the same records and table).")
		return 2
	}
	// Runs still writing when the program ends (a signal, a quit) leave no
	// temporary files behind. RemoveTemps takes the whole process's, so it
	// waits for the program: a refusal above has started no run and must
	// not take another command's (tests run commands side by side).
	defer outfile.RemoveTemps()
	defer m.Close()
	final, err := tea.NewProgram(m).Run()
	if err != nil {
		return c.fail(err)
	}
	if fm, ok := final.(tui.Model); ok {
		for _, path := range fm.SavedReports() {
			fmt.Fprintf(c.stdout, "plexbench: report saved to %s\n", path)
		}
	}
	return 0
}

// tuiArgs are the values tui's flags are bound to.
type tuiArgs struct {
	cfg                                  tui.Config
	paths                                stringList
	base, resultsDir, compare, sweepBase string
	keepBase, allow, resume              bool
	scratch                              profiles.Profile // the setting flags, over the defaults
}

// bindTUI defines tui's flags on fs.
func bindTUI(fs *pflag.FlagSet) *tuiArgs {
	a := &tuiArgs{scratch: profiles.Default()}
	fs.Var(&a.paths, "profile", "a TOML profile to run; give two for an A/B (A first)")
	fs.StringVar(&a.base, "perplexity-kld", "", "compare every run against this saved KLD base (its geometry: method, ctx, stride, chunks)")
	fs.StringVar(&a.resultsDir, "results", "", resultsUsage("where runs are saved as records and listed"))
	fs.BoolVar(&a.keepBase, "keep-base", false, "every run records its KLD base and keeps it beside its record (NAME.kld, tens of MB each),\n"+
		"for the history's b key; without it a run keeps none (an A/B's A records one for B in a temporary folder)")
	fs.StringVar(&a.compare, "compare", "engine", "what an A/B compares: engine (same model file) or models (same text only)")
	fs.BoolVar(&a.allow, "allow-tokenizer-mismatch", false, "an A/B of models whose tokenizers or token streams differ: compare them by bits per byte only\n"+
		"(no KLD, no paired statistics) instead of refusing, as ab does")
	fs.StringVar(&a.sweepBase, "sweep", "", "show a sweep: this base model records the base, the models given as arguments\n"+
		"(files or globs) are scored against it, as `plexbench sweep` does")
	fs.BoolVar(&a.resume, "resume", false, "a sweep: continue a stopped or killed one (same flags): recorded models are skipped,\n"+
		"the interrupted one resumes from its journal")
	bindChoiceFlags(fs, &a.cfg.Choice)
	// Setting flags override every profile's fields; bound to the defaults
	// so -h shows them.
	a.scratch.BindFlags(fs)
	aliases(fs, map[string]string{"base": "perplexity-kld"})
	return a
}

// tuiConfig is the app's configuration from tui's parsed flags; code >= 0
// ends the command there (a bad flag, said on stderr).
func (c *cli) tuiConfig(fs *pflag.FlagSet, a *tuiArgs, pos []string) (cfg tui.Config, code int) {
	cfg, paths, base, resultsDir, scratch := a.cfg, a.paths, &a.base, &a.resultsDir, a.scratch
	sweepBase, resume, keepBase, allow, compare := &a.sweepBase, &a.resume, &a.keepBase, &a.allow, &a.compare
	if err := checkChoiceFlags(fs, "tui", cfg.Choice); err != nil {
		return cfg, c.fail(err)
	}
	sweep, err := c.tuiSweep(fs, scratch, paths, pos, *sweepBase, *resultsDir, *base, *resume)
	if err != nil {
		return cfg, c.fail(err)
	}
	cfg.Base, cfg.ResultsDir, cfg.NoColor, cfg.AllowTokenizerMismatch = *base, c.resultsRoot(*resultsDir), c.getenv("NO_COLOR") != "", *allow
	cfg.KeepBases = *keepBase
	cfg.Runner, cfg.Check = tui.RunnerFunc(workbench.Run), workbench.Check
	if sweep != nil {
		cfg.Sweep, cfg.Sweeper = sweep, tui.SweeperFunc(workbench.Sweep)
	}
	if cfg.Compare, err = profiles.ParseComparison(*compare); err != nil {
		return cfg, c.fail(fmt.Errorf("tui: %w", err))
	}
	if len(paths) > 2 {
		return cfg, c.fail(fmt.Errorf("tui: %d profiles; give one, or two for an A/B", len(paths)))
	}
	loaded := []profiles.Profile{profiles.Default()}
	if len(paths) > 0 && sweep == nil {
		loaded = loaded[:0]
		for _, path := range paths {
			p, err := profiles.Load(path)
			if err != nil {
				return cfg, c.fail(err)
			}
			loaded = append(loaded, p)
		}
	}
	for i, p := range loaded {
		p, err := p.Override(fs)
		if err != nil {
			return cfg, c.fail(err)
		}
		if _, choice := cfg.Choice.Mode(); cfg.Base != "" && !choice {
			// A base fixes the geometry, as score --perplexity-kld takes it.
			path := ""
			if len(paths) > 0 {
				path = paths[i]
			}
			given, err := geometryGiven(fs, path)
			if err == nil {
				p, err = baseGeometry(p, cfg.Base, given)
			}
			if err != nil {
				return cfg, c.fail(err)
			}
		}
		cfg.Profiles = append(cfg.Profiles, p)
	}
	return cfg, -1
}

// tuiSweep is the sweep the TUI's flags ask for (nil: none): --sweep with
// the models as arguments, or one profile with a [sweep] table; built as
// `plexbench sweep` builds it.
func (c *cli) tuiSweep(fs *pflag.FlagSet, p profiles.Profile, paths, pos []string, base, resultsDir, kldBase string, resume bool) (*workbench.SweepJob, error) {
	isSweep := base != ""
	for _, path := range paths {
		loaded, err := profiles.Load(path)
		if err != nil {
			return nil, err
		}
		isSweep = isSweep || loaded.Sweep != nil
	}
	switch {
	case !isSweep && len(pos) > 0:
		return nil, fmt.Errorf("tui: unexpected argument %q (models to sweep go with --sweep BASE.gguf)", pos[0])
	case !isSweep && resume:
		return nil, errors.New("tui: --resume continues a sweep; a run or A/B keeps no journal here")
	case !isSweep:
		return nil, nil
	case len(paths) > 1:
		return nil, fmt.Errorf("tui: a sweep takes one profile, not %d", len(paths))
	case kldBase != "":
		return nil, errors.New("tui: --perplexity-kld compares a run with a saved base; a sweep records its own")
	}
	x := sweepFlags{base: base, results: resultsDir, resume: resume, quiet: true, format: "table"}
	if len(paths) == 1 {
		x.profile = paths[0]
	}
	sj, err := c.sweepJob(fs, p, x, workbench.Job{}, pos)
	if err != nil {
		return nil, err
	}
	sj.Progress = nil // the TUI's
	return &sj, nil
}

// isTerminal reports whether w is a terminal: a file that is a character
// device. Any other writer (a buffer) is not.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
