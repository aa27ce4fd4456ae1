package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/internal/shareddata"
	"plexbench/results"
)

// tinyGeometry is the fewest windows worth a record: ctx 64 over the
// shared TinyStories text.
func tinyGeometry(t *testing.T, chunks string) []string {
	return []string{"--perplexity-ctx", "64", "--perplexity-chunks", chunks, "--threads", "1"}
}

// scoreIn runs score in the results root env names, wanting exit 0.
func scoreIn(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.json")
	code, _, stderr := runCLIEnv(t, env, append([]string{"score", "--progress", "none", "--perplexity-output", out}, args...)...)
	if code != 0 {
		t.Fatalf("score %v: exit %d: %s", args, code, stderr)
	}
	return loadReportFile(t, out).Record.Name
}

// recordFiles are the record files under root, by name.
func recordFiles(t *testing.T, root string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(root, "*.json"))
	for i := range m {
		m[i] = strings.TrimSuffix(filepath.Base(m[i]), ".json")
	}
	return m
}

// TestCompareFullAndStopped is the acceptance: after a full run,
// a run of the same settings a stopping rule ends early, and a repeat of
// each, the root holds two records and compare shows exactly one full
// row and one stopped row, marked, with the mark's legend.
func TestCompareFullAndStopped(t *testing.T) {
	t.Parallel()
	env := map[string]string{results.EnvRoot: t.TempDir()}
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	full := append([]string{"--model", stories(t, "q8_0"), "--perplexity", text}, tinyGeometry(t, "4")...)
	stopped := append(full, "--stop-when-decided", "ppl<1000", "--stop-min-windows", "2")
	a := scoreIn(t, env, full...)
	b := scoreIn(t, env, stopped...)
	if a2, b2 := scoreIn(t, env, full...), scoreIn(t, env, stopped...); a2 != a || b2 != b || a == b {
		t.Fatalf("record names: full %s then %s, stopped %s then %s", a, a2, b, b2)
	}
	if !strings.HasSuffix(b, "_early-2") || strings.Contains(a, "early") {
		t.Errorf("the stopped record %s says not where it stopped, or the full one %s does", b, a)
	}
	if files := recordFiles(t, env[results.EnvRoot]); len(files) != 2 {
		t.Fatalf("records %v, want the full run's and the stopped run's", files)
	}
	out := compareJSON(t, env)
	if len(out.Groups) != 1 || len(out.Groups[0].Rows) != 2 {
		t.Fatalf("compare: %+v, want one group of two rows", out.Groups)
	}
	var fulls, stops int
	for _, r := range out.Groups[0].Rows {
		switch {
		case r.Stopped == "" && r.Record == a:
			fulls++
		case r.Stopped == "2/4" && r.Record == b:
			stops++
		}
	}
	if fulls != 1 || stops != 1 {
		t.Fatalf("rows %+v: want one full row and one stopped 2/4", out.Groups[0].Rows)
	}
	code, stdout, stderr := runCLIEnv(t, env, "compare")
	if code != 0 || strings.Count(stdout, "(stopped 2/4)") != 1 || !strings.Contains(stdout, "stopped N/M: a stopping rule") {
		t.Fatalf("compare: exit %d %s\n%s", code, stderr, stdout)
	}
}

// TestOneRecordWithOrWithoutText: a run against a base scores the base's
// tokens whether the text is given again or not: the two make one record
// (the second replaces the first), and compare lists one row for it.
func TestOneRecordWithOrWithoutText(t *testing.T) {
	t.Parallel()
	env := map[string]string{results.EnvRoot: t.TempDir()}
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	base := filepath.Join(t.TempDir(), "f32.kld")
	geo := tinyGeometry(t, "2")
	scoreIn(t, env, append([]string{"--model", stories(t, "f32"), "--perplexity", text, "--perplexity-kld-base-out", base}, geo...)...)
	withText := scoreIn(t, env, "--model", stories(t, "q8_0"), "--perplexity", text, "--perplexity-kld", base, "--threads", "1")
	without := scoreIn(t, env, "--model", stories(t, "q8_0"), "--perplexity-kld", base, "--threads", "1")
	if withText != without || !strings.HasPrefix(without, "stories260K-q8-0_vs-f32_") {
		t.Fatalf("with the text %s, without %s: want one record named vs the base", withText, without)
	}
	if files := recordFiles(t, env[results.EnvRoot]); len(files) != 2 {
		t.Fatalf("records %v, want the base's and q8_0's", files)
	}
	if out := compareJSON(t, env); len(out.Groups) != 1 || len(out.Groups[0].Rows) != 2 {
		t.Fatalf("compare: %+v, want one group: the base's row and q8_0's", out.Groups)
	}
}

// TestCompareSkipsStrayFiles: JSON under the root that is no record (not
// JSON at all, a report without record information) is left out and said
// once on stderr; the records are compared.
func TestCompareSkipsStrayFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	env := map[string]string{results.EnvRoot: root}
	scoreIn(t, env, append([]string{"--model", stories(t, "q8_0"), "--perplexity", shareddata.Path(t, "tinystories", "tinystories-16k.txt")},
		tinyGeometry(t, "2")...)...)
	os.WriteFile(filepath.Join(root, "notes.json"), []byte("{ not json"), 0o644)
	os.WriteFile(filepath.Join(root, "report.json"), []byte(`{"object":"lse.perplexity","perplexity":3}`), 0o644)
	code, stdout, stderr := runCLIEnv(t, env, "compare")
	if code != 0 || strings.Count(stdout, "stories260K-q8_0.gguf") != 1 {
		t.Fatalf("compare beside stray files: exit %d, %s\n%s", code, stderr, stdout)
	}
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || !strings.Contains(stderr, "skipped 2 files that are not records") {
		t.Errorf("stderr %q: want one line saying two files were skipped", stderr)
	}
	os.Remove(filepath.Join(root, "report.json"))
	if _, _, stderr := runCLIEnv(t, env, "compare"); !strings.Contains(stderr, "notes.json") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("one stray file: stderr %q, want one line naming it", stderr)
	}
}

// TestSweepResumeOtherChunks: a sweep resumed with another
// --perplexity-chunks skips nothing (its records are of other settings):
// it records a base of its own beside the first (the default name follows
// the settings), scores every model again and prints the new records. A
// sweep that would write over a base records point to is refused in one
// line: the same sweep again without --resume, or another sweep given
// that base's file.
func TestSweepResumeOtherChunks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	env := map[string]string{results.EnvRoot: root}
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	sweep := func(chunks string, more ...string) (int, string, string) {
		args := append([]string{"sweep", "--base", stories(t, "f32"), stories(t, "q8_0"), "--perplexity", text}, tinyGeometry(t, chunks)...)
		return runCLIEnv(t, env, append(args, more...)...)
	}
	if code, _, stderr := sweep("2"); code != 0 {
		t.Fatalf("sweep: exit %d: %s", code, stderr)
	}
	first, _ := filepath.Glob(filepath.Join(root, "*.sweep-base.kld"))
	if len(first) != 1 {
		t.Fatalf("bases %v, want one", first)
	}
	before, err := os.ReadFile(first[0])
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := sweep("3", "--resume")
	if code != 0 || strings.Contains(stderr, "already recorded") {
		t.Fatalf("resumed with other chunks: exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "first 3 windows") || strings.Contains(stdout, "first 2 windows") {
		t.Errorf("the table is not the new sweep's:\n%s", stdout)
	}
	bases, _ := filepath.Glob(filepath.Join(root, "*.sweep-base.kld"))
	if after, err := os.ReadFile(first[0]); len(bases) != 2 || err != nil || string(after) != string(before) {
		t.Errorf("bases %v (%v): want the first kept as it was and another", bases, err)
	}
	if files := recordFiles(t, root); len(files) != 4 {
		t.Errorf("records %v, want each sweep's two", files)
	}
	// Resumed with its own settings, the second sweep is all done.
	if code, _, stderr := sweep("3", "--resume"); code != 0 || strings.Count(stderr, "already recorded") != 2 {
		t.Errorf("resumed as it was: exit %d, stderr:\n%s", code, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"2"}, "--resume continues the sweep that recorded it"},
		{[]string{"4", "--perplexity-kld-base-out", first[0]}, "is already the base of 2 records"},
		{[]string{"4", "--resume", "--perplexity-kld-base-out", first[0]}, "made with other settings"},
	} {
		code, stdout, stderr := sweep(c.args[0], c.args[1:]...)
		if lines := strings.Split(strings.TrimSpace(stderr), "\n"); code == 0 || stdout != "" || len(lines) != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("sweep %v: exit %d, stderr %q: want one line with %q", c.args, code, stderr, c.want)
		}
	}
	if after, _ := os.ReadFile(first[0]); string(after) != string(before) {
		t.Error("a refused sweep wrote over the first base")
	}
}
