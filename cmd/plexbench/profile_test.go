package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/profiles"
	"plexbench/workbench/demo"
)

// TestProfileRoundTrip: new → show → validate → score --profile gives the
// same report as the equivalent flags (same token hash, same numbers).
func TestProfileRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	text := filepath.Join(dir, "texts", "demo.txt")
	os.MkdirAll(filepath.Dir(text), 0o755)
	if err := os.WriteFile(text, demo.Text(), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "profiles", "small.toml")
	os.MkdirAll(filepath.Dir(path), 0o755)
	settings := []string{"--perplexity", text, "--perplexity-ctx", "64", "--perplexity-chunks", "3",
		"--kv-cache-dtype", "f32", "--ubatch-size", "16", "--threads", "1"}
	c, out, _ := testCLI(t, nil)
	if code := c.run(append(append([]string{"profile", "new", "small"}, settings...), "--description", "a quick check", "-o", path)); code != 0 {
		t.Fatalf("profile new: exit %d", code)
	}
	// The saved paths are relative to the profile's folder.
	p, err := profiles.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Text != "../texts/demo.txt" || p.Ctx != 64 || p.Description != "a quick check" {
		t.Errorf("saved profile: %+v", p)
	}
	// -o - is the command's own stdout.
	if code, stdout, stderr := runCLI(t, "profile", "new", "small", "--perplexity-ctx", "64", "-o", "-"); code != 0 ||
		!strings.Contains(stdout, "name = \"small\"\n") || !strings.Contains(stdout, "ctx = 64\n") || stderr != "plexbench: profile small written to -\n" {
		t.Errorf("profile new -o -: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	out.Reset()
	if code := c.profileShow([]string{path}); code != 0 || !strings.Contains(out.String(), "kv_cache_dtype = \"f32\"") ||
		!strings.Contains(out.String(), "# text resolves to "+text) {
		t.Errorf("profile show: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := c.profileValidate([]string{path}); code != 0 || !strings.Contains(out.String(), "ok") {
		t.Errorf("profile validate: exit %d: %s", code, out.String())
	}

	withProfile := filepath.Join(dir, "profile.json")
	withFlags := filepath.Join(dir, "flags.json")
	if code := c.run([]string{"score", "--quiet", "--profile", path, "--perplexity-output", withProfile}); code != 0 {
		t.Fatalf("score --profile: exit %d", code)
	}
	if code := c.run(append([]string{"score", "--quiet", "--perplexity-output", withFlags}, settings...)); code != 0 {
		t.Fatalf("score with flags: exit %d", code)
	}
	a, b := readJSON(t, withProfile), readJSON(t, withFlags)
	for _, k := range []string{"token_ids_sha256", "tokens", "windows_scored", "scored_tokens", "mean_nll",
		"perplexity", "perplexity_uncertainty", "prefill_tokens"} {
		if a[k] != b[k] || a[k] == nil {
			t.Errorf("%s: profile %v, flags %v", k, a[k], b[k])
		}
	}
	ca, _ := json.Marshal(a["config"])
	cb, _ := json.Marshal(b["config"])
	if !bytes.Equal(ca, cb) {
		t.Errorf("config differs:\n%s\n%s", ca, cb)
	}
	wa, _ := json.Marshal(nllSums(a))
	wb, _ := json.Marshal(nllSums(b))
	if !bytes.Equal(wa, wb) {
		t.Errorf("per-window NLL sums differ:\n%s\n%s", wa, wb)
	}

	// A flag beside --profile overrides the profile's field.
	over := filepath.Join(dir, "over.json")
	if code := c.run([]string{"score", "--quiet", "--profile", path, "--kv-cache-dtype", "f16", "--perplexity-output", over}); code != 0 {
		t.Fatalf("score --profile with an override: exit %d", code)
	}
	if cfg := readJSON(t, over)["config"].(map[string]any); cfg["kv_cache_dtype"] != "f16" {
		t.Errorf("override ignored: kv_cache_dtype %v", cfg["kv_cache_dtype"])
	}
}

func TestProfileCommandErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("name = \"x\"\nkv_dtype = \"f16\"\n"), 0o644)
	c, out, _ := testCLI(t, nil)
	if code := c.profileValidate([]string{bad}); code != 1 {
		t.Errorf("validate of an unknown key: exit %d", code)
	}
	missing := filepath.Join(dir, "missing.toml")
	os.WriteFile(missing, []byte("name = \"x\"\nmodel = \"nowhere.gguf\"\n"), 0o644)
	if err := validateProfileFile(missing); err == nil || !strings.Contains(err.Error(), "nowhere.gguf") {
		t.Errorf("validate of a missing model: %v", err)
	}
	if code := c.run([]string{"profile", "new"}); code == 0 {
		t.Error("profile new without a name succeeded")
	}
	if code := c.run([]string{"profile", "new", "x", "--perplexity-ctx", "5000", "--kv-len", "512"}); code == 0 {
		t.Error("profile new with ctx > kv_len succeeded")
	}
	a, b := filepath.Join(dir, "a.toml"), filepath.Join(dir, "b.toml")
	c.run([]string{"profile", "new", "a", "-o", a})
	c.run([]string{"profile", "new", "b", "--kv-cache-dtype", "q8_0", "-o", b})
	out.Reset()
	if code := c.profileDiff([]string{a, b}); code != 0 || !strings.Contains(out.String(), "kv_cache_dtype") ||
		strings.Count(out.String(), "\n") != 2 {
		t.Errorf("profile diff: exit %d\n%s", code, out.String())
	}
}

// TestTUIRefusesNonTerminal: with stdout not a terminal (a pipe), tui
// says so and points at score.
func TestTUIRefusesNonTerminal(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c, _, _ := testCLI(t, nil)
	c.stdout = w
	code := c.run([]string{"tui"})
	w.Close()
	r.Close()
	if code != 2 {
		t.Errorf("tui on a pipe: exit %d, want 2", code)
	}
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func nllSums(rep map[string]any) []any {
	var out []any
	ws, _ := rep["windows"].([]any)
	for _, w := range ws {
		out = append(out, w.(map[string]any)["nll_sum"])
	}
	return out
}
