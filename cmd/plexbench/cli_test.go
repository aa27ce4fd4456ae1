package main

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"plexbench/kernels/shareddata"
)

// runCLI runs the command in process and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outW, errW
	outC, errC := make(chan string), make(chan string)
	go func() { b, _ := io.ReadAll(outR); outC <- string(b) }()
	go func() { b, _ := io.ReadAll(errR); errC <- string(b) }()
	code := run(args)
	os.Stdout, os.Stderr = oldOut, oldErr
	outW.Close()
	errW.Close()
	return code, <-outC, <-errC
}

// TestBadInput: each bad input ends with a non-zero exit code and one
// clear line on stderr naming the problem, and nothing on stdout.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	model := shareddata.Path(t, "models", "stories260K-q8_0.gguf")
	data, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string // substring of the error line
	}{
		{"empty text", []string{"score", "--perplexity", write("empty.txt", "")}, "empty"},
		{"short text", []string{"score", "--perplexity", write("short.txt", "Once upon a time.\n")}, "needs at least 1024"},
		{"token out of vocab", []string{"score", "--perplexity-tokens", write("ids.json", "[1, 2, 99999]")}, "outside the vocabulary"},
		{"not token json", []string{"score", "--perplexity-tokens", write("ids2.json", "{}")}, "not a JSON array"},
		{"ctx over kv-len", []string{"score", "--perplexity-ctx", "1024", "--kv-len", "512"}, "kv_len"},
		{"unknown method", []string{"score", "--perplexity-method", "foo"}, "foo"},
		{"missing model", []string{"score", "--model", filepath.Join(dir, "nope.gguf")}, "nope.gguf"},
		{"truncated model", []string{"score", "--model", write("trunc.gguf", string(data[:1000]))}, "truncated"},
		{"corrupt base", []string{"score", "--perplexity-kld", write("base.kld", "not a base")}, "base.kld"},
		{"bad kv dtype", []string{"score", "--kv-cache-dtype", "q3"}, "q3"},
		{"unknown kernel", []string{"score", "--kernels", "matmul=nosuch"}, "nosuch"},
		{"inspect garbage", []string{"inspect", write("junk.gguf", "GGUF junk")}, "junk.gguf"},
		{"flashprefill block not a power of two", []string{"score", "--FlashPrefillV2=on", "--flashprefill-block-size", "96"}, "block_size"},
		{"flashprefill block over ctx", []string{"score", "--FlashPrefillV2=on", "--perplexity-ctx", "128", "--flashprefill-block-size", "256"}, "exceeds the ctx"},
		{"flashprefill alpha over 1", []string{"score", "--FlashPrefillV2=on", "--flashprefill-alpha", "1.5"}, "alpha"},
		{"flashprefill alpha negative", []string{"score", "--prefill-attention", "flashprefill-v2", "--flashprefill-alpha=-0.1"}, "alpha"},
		{"flashprefill window 0", []string{"score", "--FlashPrefillV2=on", "--flashprefill-window", "0"}, "window"},
		{"flashprefill passes cut blocks", []string{"score", "--FlashPrefillV2=on", "--perplexity-ctx", "512", "--flashprefill-block-size", "64", "--ubatch-size", "96"}, "whole blocks"},
		{"flashprefill on hip", []string{"score", "--FlashPrefillV2=on", "--backend", "hip"}, "cpu backend only"},
		{"unknown prefill attention", []string{"score", "--prefill-attention", "sparse"}, "sparse"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, c.args...)
			if code == 0 {
				t.Fatalf("exit code 0; stderr %q", stderr)
			}
			if stdout != "" {
				t.Errorf("stdout not empty: %q", stdout)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "plexbench: ") || !strings.Contains(lines[0], c.want) {
				t.Errorf("stderr %q: want one line mentioning %q", stderr, c.want)
			}
		})
	}
}

// TestScoreDemoJSON: the embedded default scores and its JSON report on
// stdout carries the fields.
func TestScoreDemoJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, "score", "--perplexity-chunks", "2", "--perplexity-ctx", "128", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v", err)
	}
	for _, k := range []string{"object", "tokens", "token_ids_sha256", "method", "ctx", "stride", "windows_scored",
		"scored_tokens", "mean_nll", "perplexity", "perplexity_uncertainty", "elapsed_seconds", "prefill_tokens",
		"prefill_tokens_per_second", "config", "windows"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("report lacks %q", k)
		}
	}
	if rep["windows_scored"].(float64) != 2 || rep["scored_tokens"].(float64) != 2*63 {
		t.Errorf("windows %v scored %v, want 2 and 126", rep["windows_scored"], rep["scored_tokens"])
	}
}

// TestTokenizeGolden: `tokenize --json` on the stories260K vocab gives
// golden.json's count and hash; vocab-only files work in tokenize and inspect.
func TestTokenizeGolden(t *testing.T) {
	dir := shareddata.Dir(t)
	g := loadGolden(t, dir)
	want := g.Tokenize["stories260K/tinystories/tinystories-16k.txt"]
	code, stdout, stderr := runCLI(t, "tokenize", "--json", "--model", filepath.Join(dir, "models", "stories260K-q4_0.gguf"),
		"--file", filepath.Join(dir, "tinystories", "tinystories-16k.txt"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Tokens int    `json:"tokens"`
		SHA256 string `json:"token_ids_sha256"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.Tokens != want.Tokens || got.SHA256 != want.SHA256 {
		t.Errorf("got %d %s, want %d %s", got.Tokens, got.SHA256, want.Tokens, want.SHA256)
	}
	vocab := filepath.Join(dir, "vocab", "llama3-vocab.gguf")
	if code, _, stderr := runCLI(t, "tokenize", "--model", vocab, "--file", filepath.Join(dir, "tinystories", "tinystories-16k.txt")); code != 0 {
		t.Errorf("tokenize with a vocab-only file: exit %d: %s", code, stderr)
	}
	code, stdout, stderr = runCLI(t, "inspect", "--json", vocab)
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, stderr)
	}
	var s modelSummary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	if s.Tokenizer == nil || s.Tokenizer.Kind != "bpe" || s.Tokenizer.VocabSize < 128000 || s.Tensors != 0 {
		t.Errorf("inspect of the llama3 vocab: %+v", s)
	}
}

// TestScoreFlashPrefill runs `score --FlashPrefillV2=on` on stories260K:
// with the defaults at ctx 256 (two blocks) every block is kept and the
// perplexity is dense's; with small blocks at ctx 512 some blocks drop,
// and the report says what ran: config.prefill_attention, the alpha as
// prefill_attention_scale (llama's default when not given), every
// parameter in config.flashprefill, and the kept fractions per window
// and overall.
func TestScoreFlashPrefill(t *testing.T) {
	model := shareddata.Path(t, "models", "stories260K-f32.gguf")
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	score := func(args ...string) map[string]any {
		t.Helper()
		args = append([]string{"score", "--model", model, "--perplexity", text, "--perplexity-chunks", "3", "--quiet"}, args...)
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var rep map[string]any
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("stdout is not JSON: %v", err)
		}
		return rep
	}
	kept := func(rep map[string]any) (float64, []float64) {
		var ws []float64
		for _, w := range rep["windows"].([]any) {
			ws = append(ws, w.(map[string]any)["attention_kept"].(float64))
		}
		return rep["prefill_attention_kept"].(float64), ws
	}

	dense := score("--perplexity-ctx", "256", "--FlashPrefillV2=off")
	fp := score("--perplexity-ctx", "256", "--FlashPrefillV2=on")
	cfg := fp["config"].(map[string]any)
	if cfg["prefill_attention"] != "flashprefill-v2" || cfg["prefill_attention_scale"] != 0.18 {
		t.Errorf("config: prefill_attention %v, scale %v; want flashprefill-v2 and llama's 0.18", cfg["prefill_attention"], cfg["prefill_attention_scale"])
	}
	want := map[string]any{"block_size": 128.0, "alpha": 0.18, "sink_blocks": 2.0, "window": 4.0, "last_n_full": 2.0, "min_budget": 0.0}
	if got, _ := cfg["flashprefill"].(map[string]any); !reflect.DeepEqual(got, want) {
		t.Errorf("config.flashprefill = %v, want %v", got, want)
	}
	if dc := dense["config"].(map[string]any); dc["prefill_attention"] != "dense" || dc["flashprefill"] != nil {
		t.Errorf("dense config: %v, %v", dc["prefill_attention"], dc["flashprefill"])
	}
	if all, ws := kept(fp); all != 1 || len(ws) != 3 || ws[0] != 1 {
		t.Errorf("ctx 256: kept %v, windows %v: want every block", all, ws)
	}
	if a, b := fp["perplexity"].(float64), dense["perplexity"].(float64); math.Abs(a-b) > 1e-6*b {
		t.Errorf("ctx 256: FlashPrefill PPL %v, dense %v: nothing dropped, so they must agree", a, b)
	}

	sparse := score("--perplexity-ctx", "512", "--prefill-attention", "flashprefill-v2", "--flashprefill-block-size", "16",
		"--flashprefill-alpha", "0.5", "--flashprefill-window", "2", "--flashprefill-sink-blocks", "1", "--flashprefill-last-n-full", "1")
	all, ws := kept(sparse)
	if !(all > 0.05 && all < 0.95) || len(ws) != 3 {
		t.Errorf("ctx 512, blocks of 16: kept %v, windows %v: want some blocks dropped", all, ws)
	}
	mean := (ws[0] + ws[1] + ws[2]) / 3
	if math.Abs(mean-all) > 1e-9 {
		t.Errorf("overall kept %v is not the windows' mean %v (equal windows)", all, mean)
	}
	cfg = sparse["config"].(map[string]any)
	if cfg["prefill_attention_scale"] != 0.5 || cfg["flashprefill"].(map[string]any)["block_size"] != 16.0 {
		t.Errorf("sparse config: scale %v flashprefill %v", cfg["prefill_attention_scale"], cfg["flashprefill"])
	}
}
