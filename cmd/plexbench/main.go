// Command plexbench is a workbench for proving that an inference-engine
// change did not move output quality: perplexity exactly as llama.cpp's
// llama-perplexity computes it, KL divergence against a compact recorded
// base, a live TUI, and TOML profiles for repeatable A/B runs.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"

	"charm.land/fang/v2"
	mango "github.com/muesli/mango-cobra"
	"github.com/muesli/roff"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"plexbench/internal/outfile"
	"plexbench/kernels"
	"plexbench/profiles"
	"plexbench/results"
)

// version is the release this binary was built as, set at link time
// (go build -ldflags "-X main.version=v1.2.0"); empty, --version says the
// module's version or the VCS revision the build recorded.
var version string

const about = `plexbench — perplexity and KL divergence for LLM inference engines

Scores GGUF models exactly as llama.cpp's llama-perplexity does (PPL, KLD
against a compact top-k base), headless or in a live TUI. With no command it
opens the TUI; with no --model and no --perplexity, score uses the embedded
demo (stories260K on a TinyStories excerpt).`

func main() {
	c := &cli{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(c.run(os.Args[1:]))
}

// cli is one invocation of plexbench: where its output goes and the
// environment it reads. Every command is a method on it, and its cobra
// commands are built per invocation, so that one process can run several
// side by side (the tests do), each with its own.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

// exitCode is the error a command's action returns to end the invocation
// with that code; what the command had to say it has said.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// usageError is a command line cobra could not parse: the command it was
// for, so that the message can point at that command's help.
type usageError struct {
	cmd *cobra.Command
	err error
}

func (e usageError) Error() string { return e.err.Error() }

// run runs the command args name and returns its exit code.
func (c *cli) run(args []string) int {
	if len(args) == 0 {
		args = []string{"tui"}
	}
	root := c.rootCmd()
	root.SetArgs(longFlags(root, args))
	err := fang.Execute(context.Background(), root, fang.WithVersion(versionString()), fang.WithoutManpage(),
		fang.WithErrorHandler(func(io.Writer, fang.Styles, error) {}))
	var code exitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	}
	c.usageError(root, err)
	return 2
}

// rootCmd is plexbench's command tree, new for each invocation.
func (c *cli) rootCmd() *cobra.Command {
	root := &cobra.Command{Use: "plexbench", Short: "perplexity and KL divergence for LLM inference engines", Long: about,
		SuggestionsMinimumDistance: 2}
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{cmd, err} })
	root.AddGroup(&cobra.Group{ID: "run", Title: "runs"}, &cobra.Group{ID: "read", Title: "records and bases"},
		&cobra.Group{ID: "tools", Title: "models and machine"})
	for _, g := range []struct {
		id   string
		cmds []*cobra.Command
	}{
		{"run", []*cobra.Command{c.scoreCmd(), c.tuiCmd(), c.abCmd(), c.sweepCmd(), c.floorCmd(), c.noiseCmd(), c.serveCmd()}},
		{"read", []*cobra.Command{c.compareCmd(), c.plotCmd(), c.cardCmd(), c.mergeCmd(), c.worstCmd(), c.basesCmd(), c.profileCmd()}},
		{"tools", []*cobra.Command{c.inspectCmd(), c.tokenizeCmd(), c.generateCmd(), c.kernelsCmd(), c.devicesCmd()}},
	} {
		for _, cmd := range g.cmds {
			cmd.GroupID = g.id
			root.AddCommand(cmd)
		}
	}
	root.AddCommand(&cobra.Command{Use: "man", Short: "print plexbench's man page (roff) on stdout", Hidden: true, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			escapePercents(cmd.Root())
			page, err := mango.NewManPage(1, cmd.Root())
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), page.Build(roff.NewDocument()))
			return err
		}})
	return root
}

// escapePercents doubles the percent signs of every flag's usage under
// cmd, which mango passes through a printf format. The tree is this
// invocation's own.
func escapePercents(cmd *cobra.Command) {
	cmd.Flags().VisitAll(func(f *pflag.Flag) { f.Usage = strings.ReplaceAll(f.Usage, "%", "%%") })
	for _, sub := range cmd.Commands() {
		escapePercents(sub)
	}
}

// command is a new command named by use's first word; synopsis is what
// follows the name in its usage line, short the line the command list
// shows. Its flags are POSIX long flags, listed in the order defined.
func (c *cli) command(use, synopsis, short string) (*cobra.Command, *pflag.FlagSet) {
	cmd := &cobra.Command{Use: strings.TrimSpace(use + " " + synopsis), Short: short, SuggestionsMinimumDistance: 2,
		DisableFlagsInUseLine: strings.Contains(synopsis, "flags]")}
	cmd.Flags().SortFlags = false
	aliases(cmd.Flags(), nil)
	return cmd, cmd.Flags()
}

// action makes f cmd's work: it gets the positional arguments (flags may
// come before, between or after them) and returns the exit code.
func (c *cli) action(cmd *cobra.Command, f func(pos []string) int) *cobra.Command {
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		if err := kernels.CPUError(); err != nil {
			return exitCode(c.fail(err))
		}
		if code := f(pos); code != 0 {
			return exitCode(code)
		}
		return nil
	}
	return cmd
}

// aliases makes each old flag name of fs read as its new one, the setting
// flags' (profiles.OldFlags) and the command's own (oldNew): the old names
// keep working, hidden from help.
func aliases(fs *pflag.FlagSet, oldNew map[string]string) {
	oldNew = maps.Clone(oldNew)
	if oldNew == nil {
		oldNew = map[string]string{}
	}
	maps.Copy(oldNew, profiles.OldFlags())
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if n, ok := oldNew[name]; ok {
			return pflag.NormalizedName(n)
		}
		return pflag.NormalizedName(name)
	})
}

// longFlags rewrites the single-dash long flags Go's flag package took
// (-model M, -perplexity-ctx=64) as POSIX ones (--model M) and a
// double-dash one-letter flag (--o) as its shorthand, for the command args
// name, so that scripts written for either keep working.
func longFlags(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil {
		return args
	}
	out := slices.Clone(args)
	for i, a := range out {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(a, "=")
		switch {
		case len(name) > 2 && name[0] == '-' && name[1] != '-' && cmd.Flags().Lookup(name[1:]) != nil:
			out[i] = "-" + a
		case len(name) == 3 && strings.HasPrefix(name, "--") && cmd.Flags().Lookup(name[2:]) == nil &&
			cmd.Flags().ShorthandLookup(name[2:]) != nil:
			out[i] = a[1:]
		}
	}
	return out
}

// versionString is what --version says: the version set at link time,
// else the module's version and the VCS revision the build recorded, else
// "devel"; with the Go release that built it.
func versionString() string {
	v := version
	info, ok := debug.ReadBuildInfo()
	if v == "" && ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	if v == "" {
		v = "devel"
	}
	if ok {
		var rev, dirty string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" && !strings.Contains(v, rev) {
			v += " (" + rev + dirty + ")"
		}
		v += ", " + info.GoVersion
	}
	return v
}

var unknownCommand = regexp.MustCompile(`^unknown command "([^"]*)"`)

// usageError says why the command line was refused: the error first, then
// what was probably meant, then where the command's help is; a few lines,
// never the whole usage.
func (c *cli) usageError(root *cobra.Command, err error) {
	cmd, msg := root, strings.SplitN(err.Error(), "\n", 2)[0]
	var hint []string
	var ue usageError
	if errors.As(err, &ue) {
		cmd = ue.cmd
		hint = flagSuggestions(cmd.Flags(), msg)
	} else if m := unknownCommand.FindStringSubmatch(msg); m != nil {
		c.unknownCommand(root, m[1])
		return
	}
	fmt.Fprintf(c.stderr, "%s: %s\n", cmd.CommandPath(), msg)
	if len(hint) > 0 {
		fmt.Fprintf(c.stderr, "did you mean %s?\n", strings.Join(hint, " or "))
	}
	fmt.Fprintf(c.stderr, "see '%s --help'\n", cmd.CommandPath())
}

// unknownCommand says that parent has no command name, as usageError
// does, and returns the exit code for it.
func (c *cli) unknownCommand(parent *cobra.Command, name string) int {
	fmt.Fprintf(c.stderr, "%s: unknown command %q\n", parent.CommandPath(), name)
	if hint := parent.SuggestionsFor(name); len(hint) > 0 {
		fmt.Fprintf(c.stderr, "did you mean %s?\n", strings.Join(hint, " or "))
	}
	fmt.Fprintf(c.stderr, "see '%s --help'\n", parent.CommandPath())
	return 2
}

var unknownFlag = regexp.MustCompile(`^unknown flag: --([^ =]+)`)

// flagSuggestions is the flags of fs closest to the unknown one msg names
// (cobra suggests commands, not flags): the visible names within an edit
// distance of 2, or that start with it, best first, at most three.
func flagSuggestions(fs *pflag.FlagSet, msg string) []string {
	m := unknownFlag.FindStringSubmatch(msg)
	if m == nil {
		return nil
	}
	typed := strings.ToLower(m[1])
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := editDistance(typed, strings.ToLower(f.Name))
		if d <= 2 || (len(typed) >= 3 && strings.HasPrefix(f.Name, typed)) {
			cs = append(cs, cand{"--" + f.Name, d})
		}
	})
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	var out []string
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// fail prints one error line and returns the exit code for it: 2 for
// files refused before any work (outfile.ErrRefused), else 1.
func (c *cli) fail(err error) int {
	fmt.Fprintf(c.stderr, "plexbench: %v\n", err)
	if errors.Is(err, outfile.ErrRefused) {
		return 2
	}
	return 1
}

// resultsRoot is the results root: flagValue (a --results flag's) when
// given, else $PLEXBENCH_RESULTS, else the default (results.Root).
func (c *cli) resultsRoot(flagValue string) string {
	return results.Root(flagValue, c.getenv(results.EnvRoot))
}

// givenFlag reports whether the flag was set on the command line.
func givenFlag(fs *pflag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Changed
}

// writeJSON writes data and a newline to w.
func writeJSON(w io.Writer, data []byte) error {
	_, err := w.Write(append(data, '\n'))
	return err
}
