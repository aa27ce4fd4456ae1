package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/engine/gguf"
	"plexbench/internal/shareddata"
	"plexbench/results"
)

// nanModel writes stories260K-f32 with its output norm NaN into dir: a
// model whose logits are all NaN.
func nanModel(t *testing.T, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(stories(t, "f32"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(bytes.NewReader(raw), int64(len(raw)), "stories260K-f32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	w, ok := f.Tensor("output_norm.weight")
	if !ok {
		t.Fatal("no output_norm.weight")
	}
	data := raw[f.DataOffset+w.Offset:][:w.Size]
	for i := 0; i < len(data); i += 4 {
		binary.LittleEndian.PutUint32(data[i:], math.Float32bits(float32(math.NaN())))
	}
	p := filepath.Join(dir, "nan.gguf")
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestScoreRefusesNaNLogits: a model whose logits are NaN fails in its
// first window, scoring, comparing against a base or recording one: one
// line naming the window and the row, never a JSON encoding error at the
// end, and no report, base or record written.
func TestScoreRefusesNaNLogits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	geom := []string{"--perplexity", shareddata.Path(t, "tinystories", "tinystories-16k.txt"),
		"--perplexity-ctx", "64", "--perplexity-chunks", "4", "--quiet"}
	good := filepath.Join(dir, "good.kld")
	if code, _, stderr := runCLI(t, append([]string{"score", "--model", stories(t, "f32"), "--perplexity-kld-base-out", good,
		"--perplexity-output", filepath.Join(dir, "good.json")}, geom...)...); code != 0 {
		t.Fatalf("recording the base: %s", stderr)
	}
	model := nanModel(t, dir)
	base := filepath.Join(dir, "out.kld")
	for _, more := range [][]string{nil, {"--perplexity-kld", good}, {"--perplexity-kld-base-out", base}, {"--perplexity-kld-base-out", base, "--kld-format", "llama"}} {
		root, out := t.TempDir(), filepath.Join(t.TempDir(), "out.json")
		args := append(append([]string{"score", "--model", model, "--perplexity-output", out}, geom...), more...)
		code, stdout, stderr := runCLIEnv(t, map[string]string{results.EnvRoot: root}, args...)
		if code == 0 || stdout != "" || strings.Count(stderr, "\n") != 1 ||
			!strings.Contains(stderr, "window 0 (tokens 0..64): row 32 (target token ") ||
			!strings.Contains(stderr, "the model's logits are not finite: NLL NaN") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", more, code, stdout, stderr)
		}
		for _, p := range []string{out, base} {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("%q: %s written", more, filepath.Base(p))
			}
		}
		if ents, _ := os.ReadDir(root); len(ents) != 0 {
			t.Errorf("%q: the results root holds %s", more, ents[0].Name())
		}
	}
}
