package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"plexbench/internal/shareddata"
	"plexbench/results"
)

// TestBasesGC: real stories260K runs leave bases in the results root and
// another folder, some referred to (by records, by a stopped run's
// report) and some not (their records deleted); `bases gc --dry-run`
// lists exactly those, `bases` says who refers to each, gc removes them
// and only them, and a truncated base is listed, left alone and refused
// by `bases verify` in one line.
func TestBasesGC(t *testing.T) {
	t.Parallel()
	root, other := t.TempDir(), t.TempDir()
	env := map[string]string{results.EnvRoot: root}
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	out := filepath.Join(t.TempDir(), "out.json")
	// score runs one and returns the path of the record it kept.
	score := func(args ...string) string {
		t.Helper()
		args = append([]string{"score", "--quiet", "--perplexity-output", out}, args...)
		if code, _, stderr := runCLIEnv(t, env, args...); code != 0 {
			t.Fatalf("score %q: %s", args, stderr)
		}
		return filepath.Join(root, loadReportFile(t, out).Record.Name+".json")
	}
	geom := []string{"--perplexity", text, "--perplexity-ctx", "64", "--perplexity-chunks", "4"}
	rec := func(q, base string, more ...string) string {
		return score(append(append([]string{"--model", stories(t, q), "--perplexity-kld-base-out", base}, geom...), more...)...)
	}
	f32 := filepath.Join(root, "f32.kld")
	rec("f32", f32)
	score("--model", stories(t, "q8_0"), "--perplexity-kld", f32)
	q4 := filepath.Join(other, "q4.kld")
	rec("q4_0", q4) // its record stays in the root
	q8, llama := filepath.Join(root, "q8.kld"), filepath.Join(root, "llama.kld")
	os.Remove(rec("q8_0", q8))
	os.Remove(rec("f32", llama, "--kld-format", "llama"))
	stopped := filepath.Join(root, "stopped.kld")
	asStoppedRun(t, rec("q5_0", stopped))
	data, _ := os.ReadFile(f32)
	junk := filepath.Join(root, "junk.kld")
	os.WriteFile(junk, data[:len(data)/2], 0o644)
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("not a base"), 0o644)

	code, stdout, stderr := runCLIEnv(t, env, "bases", "gc", "--dry-run", other)
	if want := []string{llama, q8}; code != 0 || !slices.Equal(strings.Fields(stdout), want) ||
		!strings.Contains(stderr, "would remove 2 of 6 bases") || !strings.Contains(stderr, "1 unreadable left alone") {
		t.Fatalf("gc --dry-run: exit %d, stdout %q (want %q), stderr %q", code, stdout, want, stderr)
	}
	refs := basesRefs(t, env, other)
	for base, want := range map[string]string{f32: "compared recorded", q4: "recorded", stopped: "recorded(partial)",
		q8: "", llama: "", junk: "error"} {
		if refs[base] != want {
			t.Errorf("%s: referenced by %q, want %q", filepath.Base(base), refs[base], want)
		}
	}
	if code, stdout, _ := runCLIEnv(t, env, "bases", other); code != 0 || !strings.Contains(stdout, "4 (complete)") ||
		!strings.Contains(stdout, "stories260K-q4_0.gguf") || !strings.Contains(stdout, fmt.Sprintf("unreadable: %d bytes, the header promises %d", len(data)/2, len(data))) {
		t.Errorf("bases table: exit %d\n%s", code, stdout)
	}
	if code, stdout, _ := runCLIEnv(t, env, "bases", "gc", other); code != 0 || strings.Count(stdout, "\n") != 2 {
		t.Fatalf("gc: exit %d, %q", code, stdout)
	}
	for _, p := range []string{f32, q4, stopped, junk} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("gc removed a base it should keep: %v", err)
		}
	}
	for _, p := range []string{q8, llama} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("gc kept %s", p)
		}
	}
	if code, stdout, _ := runCLIEnv(t, env, "bases", "gc", "--dry-run", other); code != 0 || stdout != "" {
		t.Errorf("gc --dry-run after gc: exit %d, %q", code, stdout)
	}
	code, stdout, stderr = runCLIEnv(t, env, "bases", "verify", junk)
	if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "junk.kld: ") ||
		!strings.Contains(stderr, "truncated") {
		t.Errorf("verify a truncated base: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLIEnv(t, env, "bases", "verify", f32); code != 0 || !strings.Contains(stdout, "f32.kld: ok") ||
		!strings.Contains(stdout, "4 windows (complete), 124 scored tokens, top-k 32") {
		t.Errorf("verify: exit %d %s\n%s", code, stderr, stdout)
	}
}

// asStoppedRun rewrites a record as the report of a stopped run the TUI
// keeps: partial, with no record object, naming its base by path only.
func asStoppedRun(t *testing.T, path string) {
	t.Helper()
	var rep map[string]any
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	delete(rep, "record")
	rep["partial"] = true
	data, _ = json.Marshal(rep)
	os.Remove(path)
	os.WriteFile(filepath.Join(filepath.Dir(path), "stopped-run.json"), data, 0o644)
}

// basesRefs is, per base `bases --json` lists (in env's results root and
// dirs), the roles of what refers to it ("error" for an unreadable one).
func basesRefs(t *testing.T, env map[string]string, dirs ...string) map[string]string {
	t.Helper()
	code, stdout, stderr := runCLIEnv(t, env, append([]string{"bases", "--json"}, dirs...)...)
	if code != 0 {
		t.Fatalf("bases --json: %s", stderr)
	}
	var out struct {
		Bases []baseRow `json:"bases"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, b := range out.Bases {
		var roles []string
		for _, r := range b.Refs {
			if r.Partial {
				r.Role += "(partial)"
			}
			roles = append(roles, r.Role)
		}
		if b.Error != "" {
			roles = []string{"error"}
		}
		slices.Sort(roles)
		m[b.Path] = strings.Join(roles, " ")
	}
	return m
}
