package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"plexbench/internal/shareddata"
	"plexbench/profiles"
)

// TestVersion: --version prints one line naming the program and a version.
func TestVersion(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, "--version")
	if code != 0 || !strings.HasPrefix(stdout, "plexbench version ") || strings.Count(stdout, "\n") != 1 || stderr != "" {
		t.Fatalf("--version: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestCompletion: each shell's completion script is printed and is that
// shell's: bash's registers a completion function, zsh's starts with its
// #compdef line, fish's calls complete for plexbench.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for shell, want := range map[string]string{
		"bash": "complete -o default -F __start_plexbench plexbench",
		"zsh":  "#compdef plexbench",
		"fish": "complete -c plexbench",
	} {
		code, stdout, stderr := runCLI(t, "completion", shell)
		if code != 0 || !strings.Contains(stdout, want) || stderr != "" {
			t.Errorf("completion %s: exit %d, %d bytes, want %q in it; stderr %q", shell, code, len(stdout), want, stderr)
		}
	}
	// The scripts ask the program itself; it answers with score's flags.
	code, stdout, _ := runCLI(t, "__complete", "score", "--perplexity-k")
	if code != 0 || !strings.Contains(stdout, "--perplexity-kld\t") || !strings.Contains(stdout, "--perplexity-kld-base-out\t") {
		t.Errorf("__complete score --perplexity-k: exit %d:\n%s", code, stdout)
	}
}

// TestManPage: man prints a roff page covering the commands and flags.
func TestManPage(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runCLI(t, "man")
	if code != 0 || !strings.Contains(stdout, ".TH") || !strings.Contains(stdout, `\fB--perplexity-kld\fP`) || strings.Contains(stdout, "%!") {
		t.Fatalf("man: exit %d, %d bytes:\n%.400s", code, len(stdout), stdout)
	}
}

// TestUsageErrors: a mistyped command or flag is refused with exit 2 in a
// few lines: the error first, what was probably meant, where help is.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args  []string
		lines []string
	}{
		{[]string{"scroe"}, []string{`plexbench: unknown command "scroe"`, "did you mean score or serve?", "see 'plexbench --help'"}},
		{[]string{"score", "--modle", "m.gguf"}, []string{"plexbench score: unknown flag: --modle", "did you mean --model?", "see 'plexbench score --help'"}},
		{[]string{"ab", "--fail-iff", "x"}, []string{"plexbench ab: unknown flag: --fail-iff", "did you mean --fail-if?", "see 'plexbench ab --help'"}},
		{[]string{"profile", "nwe"}, []string{`plexbench profile: unknown command "nwe"`, "did you mean new?", "see 'plexbench profile --help'"}},
		{[]string{"score", "--perplexity-ctx"}, []string{"plexbench score: flag needs an argument: --perplexity-ctx", "see 'plexbench score --help'"}},
	} {
		code, stdout, stderr := runCLI(t, c.args...)
		got := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != 2 || stdout != "" || strings.Join(got, "\n") != strings.Join(c.lines, "\n") {
			t.Errorf("%v: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and:\n%s", c.args, code, stdout, stderr, strings.Join(c.lines, "\n"))
		}
	}
}

// TestHelpCommand: `help CMD` and `CMD --help` print that command's help,
// with its POSIX flags; `help` alone lists the commands.
func TestHelpCommand(t *testing.T) {
	t.Parallel()
	_, general, _ := runCLI(t, "help")
	for _, cmd := range []string{"score", "tui", "ab", "sweep", "compare", "bases", "profile"} {
		if !strings.Contains(general, cmd) {
			t.Errorf("help does not list %s:\n%s", cmd, general)
		}
	}
	code, help, _ := runCLI(t, "help", "score")
	_, dashHelp, _ := runCLI(t, "score", "--help")
	if code != 0 || help != dashHelp || help == general {
		t.Fatalf("help score: exit %d; same as score --help: %v; same as help: %v", code, help == dashHelp, help == general)
	}
	for _, want := range []string{"plexbench score", "--perplexity-kld ", "--strict-device-kernels", "--model"} {
		if !strings.Contains(help, want) {
			t.Errorf("help score lacks %q:\n%s", want, help)
		}
	}
	for _, hidden := range []string{"--no-cpu-fallback", "-FlashPrefillV2", " -model"} {
		if strings.Contains(help, hidden) {
			t.Errorf("help score shows %q:\n%s", hidden, help)
		}
	}
}

// TestOldFlagForms: the forms Go's flag package took and the names flags
// had before keep working: -perplexity-ctx (one dash), --no-cpu-fallback
// (now --strict-device-kernels), as profile new shows.
func TestOldFlagForms(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, "profile", "new", "old", "-perplexity-ctx", "64", "-kv-cache-dtype=f32", "--backend", "cuda", "--no-cpu-fallback")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"ctx = 64", `kv_cache_dtype = "f32"`, "strict_device_kernels = true"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("profile new with old flag forms lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = runCLI(t, "profile", "new", "new", "--pool", "hip:0", "--strict-device-kernels")
	if code != 0 || !strings.Contains(stdout, "strict_device_kernels = true") {
		t.Errorf("--strict-device-kernels: exit %d, %s%s", code, stdout, stderr)
	}
}

// TestBaseGeometry: wherever a base is given (tui's and ab's
// --perplexity-kld, old name --base), the runs take its geometry (here
// ctx 64) unless the command line or the profile file sets it.
func TestBaseGeometry(t *testing.T) {
	t.Parallel()
	base := shareddata.Path(t, "llamacpp", "stories260K-f32-tinystories16k-ctx64.kld")
	for _, c := range []struct {
		args []string
		ctx  int
	}{
		{[]string{"--perplexity-kld", base}, 64},
		{[]string{"--base", base}, 64},
		{[]string{"--base", base, "--perplexity-ctx", "128"}, 128},
		{nil, profiles.Default().Ctx},
	} {
		cl, _, stderr := testCLI(t, nil)
		cfg, code := cl.parseTUI(c.args)
		if code >= 0 || len(cfg.Profiles) != 1 || cfg.Profiles[0].Ctx != c.ctx {
			t.Errorf("tui %v: exit %d, profiles %+v, want ctx %d; %s", c.args, code, cfg.Profiles, c.ctx, stderr)
		}
	}
	dir := t.TempDir()
	plain, fixed := filepath.Join(dir, "plain.toml"), filepath.Join(dir, "fixed.toml")
	os.WriteFile(plain, []byte("name = \"plain\"\n"), 0o644)
	os.WriteFile(fixed, []byte("name = \"fixed\"\nctx = 128\n"), 0o644)
	x := abRun{cli: &cli{}, base: base, kind: "models", stop: pflag.NewFlagSet("ab", pflag.ContinueOnError)}
	a, b, err := x.profiles(plain, fixed)
	if err != nil && !errors.Is(err, profiles.ErrNotComparable) {
		t.Fatal(err)
	}
	if a.Ctx != 64 || b.Ctx != 128 {
		t.Errorf("ab --perplexity-kld (ctx 64): A without ctx has ctx %d, want 64; B with ctx = 128 has %d", a.Ctx, b.Ctx)
	}
}
