package main

import (
	"path/filepath"
	"strings"
	"testing"

	"plexbench/engine/synth"
	"plexbench/internal/shareddata"
	"plexbench/kernels"
)

// TestCompareBitsPerByte: tiny models with Qwen3's and Llama 3's
// vocabularies, scored on one cut of wikitext-2, fall in two protocol
// groups (their tokens differ) but in one `compare --bits-per-byte`
// table: both rows, best bits per byte first, each the figure of its own
// report; a record scored from token ids is left out and said so.
func TestCompareBitsPerByte(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	wiki := cutText(t, dir, "wiki.txt", 6000, "wikitext-2-raw", "wiki.test.raw")
	model := func(vocab string) string {
		v, err := synth.LoadVocab(shareddata.Path(t, "vocab", vocab+"-vocab.gguf"))
		if err != nil {
			t.Fatal(err)
		}
		h, err := synth.HybridPreset("qwen35-tiny")
		if err != nil {
			t.Fatal(err)
		}
		h.Vocab, h.Seed, h.Types, h.Layers, h.Interval = v, 3, synth.AllOf(kernels.F32), 2, 2
		path := filepath.Join(dir, "tiny-"+vocab+".gguf")
		if err := synth.WriteHybrid(path, h); err != nil {
			t.Fatal(err)
		}
		return path
	}
	score := func(args ...string) {
		t.Helper()
		if code, _, stderr := runCLI(t, append([]string{"score", "--quiet", "--results", root, "--perplexity-ctx", "64", "--threads", "1"}, args...)...); code != 0 {
			t.Fatalf("score %v: %s", args, stderr)
		}
	}
	qwen, llama := model("qwen3"), model("llama3")
	score("--model", qwen, "--perplexity", wiki)
	score("--model", llama, "--perplexity", wiki)
	tokens := tokenFile(t, dir, 400, 1000, 7, 3)
	score("--model", qwen, "--perplexity-tokens", tokens)

	if out := compareJSON(t, nil, "--results", root); len(out.Groups) != 3 {
		t.Fatalf("plain compare: %d groups, want one per token stream", len(out.Groups))
	}
	out := compareJSON(t, nil, "--results", root, "--bits-per-byte")
	if len(out.Groups) != 1 || !out.Groups[0].BytesOnly || len(out.Groups[0].Rows) != 2 {
		t.Fatalf("--bits-per-byte: %+v", out)
	}
	g := out.Groups[0]
	recs := rootRecords(t, root)
	for i, row := range g.Rows {
		r := recs[row.Record]
		if *row.BitsPerByte != r.BitsPerByte || row.TextBytes != r.TextBytes || row.Tokenizer != r.Record.Model.TokenizerSHA256 || row.Tokens != r.ScoredTokens {
			t.Errorf("row %d %+v is not its record's (%g bits/byte, %d bytes)", i, row, r.BitsPerByte, r.TextBytes)
		}
	}
	if a, b := g.Rows[0], g.Rows[1]; *a.BitsPerByte > *b.BitsPerByte || a.Tokenizer == b.Tokenizer || a.Tokens == b.Tokens {
		t.Errorf("rows %+v, %+v: want best first, two tokenizers, their own token counts", a, b)
	}
	code, stdout, stderr := runCLI(t, "compare", "--results", root, "--bits-per-byte")
	if code != 0 || !strings.Contains(stdout, "bits per byte only, across tokenizers") || !strings.Contains(stdout, "tiny-llama3.gguf") ||
		!strings.Contains(stderr, "1 of 3 records left out") {
		t.Errorf("compare --bits-per-byte: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
