package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"plexbench/internal/shareddata"
	"plexbench/results"
)

// TestCompareFitsWidth: compare --width 80 (what a terminal 80 wide gets)
// leaves out whole columns, says which, keeps the model, PPL and mean KLD,
// wraps the group's title at spaces, and no line is wider than 80; with
// no width (not a terminal) every column is there.
func TestCompareFitsWidth(t *testing.T) {
	t.Parallel()
	env := map[string]string{results.EnvRoot: t.TempDir()}
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	base := t.TempDir() + "/f32.kld"
	scoreIn(t, env, append([]string{"--model", stories(t, "f32"), "--perplexity", text, "--perplexity-kld-base-out", base}, tinyGeometry(t, "3")...)...)
	scoreIn(t, env, append([]string{"--model", stories(t, "q8_0"), "--perplexity-kld", base}, tinyGeometry(t, "3")...)...)

	code, wide, stderr := runCLIEnv(t, env, "compare")
	if code != 0 || !strings.Contains(wide, "KLD max") || !strings.Contains(wide, "prefill tok/s") || strings.Contains(wide, "left out") {
		t.Fatalf("compare: exit %d %s\n%s", code, stderr, wide)
	}
	code, narrow, stderr := runCLIEnv(t, env, "compare", "--width", "80")
	if code != 0 {
		t.Fatalf("compare --width 80: exit %d %s", code, stderr)
	}
	for _, l := range strings.Split(strings.TrimRight(narrow, "\n"), "\n") {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("a line of %d cells: %q", n, l)
		}
	}
	for _, want := range []string{"stories260K-f32.gguf", "stories260K-q8_0.gguf", "PPL ±", "mean KLD ± (CR1)", "(left out at 80 columns: KLD max, Δp"} {
		if !strings.Contains(narrow, want) {
			t.Errorf("compare --width 80 lacks %q:\n%s", want, narrow)
		}
	}
	if strings.Contains(narrow, "KLD max  ") || strings.Contains(narrow, "prefill tok/s  ") {
		t.Errorf("a dropped column's header is still there:\n%s", narrow)
	}
}
