package main

// tui.go owns `plexbench tui` (and bare `plexbench`): flags, profiles, the
// runner the TUI drives (workbench.Run, the path `score` takes), and the
// terminal check.

import (
	"errors"
	"fmt"
	"os"
	"strings"

	tea "charm.land/bubbletea/v2"

	"plexbench/profiles"
	"plexbench/scoring/outfile"
	"plexbench/scoring/results"
	"plexbench/scoring/workbench"
	"plexbench/tui"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runTUI(args []string) int {
	fs := newFlags("tui", "[--profile P.toml [--profile B.toml]] [--base FILE] [flags]")
	var paths stringList
	fs.Var(&paths, "profile", "TOML profile to run; give two for an A/B (A first)")
	base := fs.String("base", "", "compare every run against this saved KLD base")
	resultsDir := fs.String("results", "", resultsUsage("where runs are saved as records and listed"))
	compare := fs.String("compare", "engine", "what an A/B compares: engine (same model file) or models (same text only)")
	// Setting flags override every profile's fields; bound to the defaults
	// so -h shows them.
	scratch := profiles.Default()
	scratch.BindFlags(fs)
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("tui: unexpected argument %q", fs.Arg(0)))
	}
	if !isTerminal(os.Stdout) {
		fmt.Fprintln(os.Stderr, "plexbench tui: standard output is not a terminal, so there is nothing to draw on.\n"+
			"For a headless run use `plexbench score --profile P.toml` (same runs, same JSON report);\n"+
			"for an A/B use `plexbench ab --profile A.toml --profile B.toml` (the same figures and verdict).")
		return 2
	}
	cfg := tui.Config{Base: *base, ResultsDir: results.Root(*resultsDir), NoColor: os.Getenv("NO_COLOR") != "",
		Runner: tui.RunnerFunc(workbench.Run)}
	var err error
	if cfg.Compare, err = profiles.ParseComparison(*compare); err != nil {
		return fail(fmt.Errorf("tui: %w", err))
	}
	if len(paths) > 2 {
		return fail(fmt.Errorf("tui: %d profiles; give one, or two for an A/B", len(paths)))
	}
	loaded := []profiles.Profile{profiles.Default()}
	if len(paths) > 0 {
		loaded = loaded[:0]
		for _, path := range paths {
			p, err := profiles.Load(path)
			if err != nil {
				return fail(err)
			}
			loaded = append(loaded, p)
		}
	}
	for _, p := range loaded {
		p, err := p.Override(fs)
		if err != nil {
			return fail(err)
		}
		cfg.Profiles = append(cfg.Profiles, p)
	}
	m, err := tui.New(cfg)
	if err != nil {
		if errors.Is(err, profiles.ErrNotComparable) {
			return fail(fmt.Errorf("%w\n(an engine A/B must score the same model on the same text; --compare models allows two models)", err))
		}
		return fail(err)
	}
	// Runs still writing when the program ends (a signal, a quit) leave no
	// temporary files behind.
	defer outfile.RemoveTemps()
	defer m.Close()
	final, err := tea.NewProgram(m).Run()
	if err != nil {
		return fail(err)
	}
	if fm, ok := final.(tui.Model); ok {
		for _, path := range fm.SavedReports() {
			fmt.Printf("plexbench: report saved to %s\n", path)
		}
	}
	return 0
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
