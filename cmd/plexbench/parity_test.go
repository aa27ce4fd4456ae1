package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"plexbench/engine"
	"plexbench/engine/gguf"
	"plexbench/engine/synth"
	"plexbench/internal/shareddata"
	"plexbench/kernels"
	"plexbench/results"
	"plexbench/workbench"
)

// synthModels writes two one-layer random models with stories260K's
// vocabulary and with a variant of it (one frequent piece renamed, so
// texts tokenize differently from its first use on).
func synthModels(t *testing.T, dir string) (same, other string) {
	t.Helper()
	v, err := synth.LoadVocab(stories(t, "f32"))
	if err != nil {
		t.Fatal(err)
	}
	variant := synth.Vocab{Size: v.Size}
	for _, kv := range v.KVs {
		if kv.Key == "tokenizer.ggml.tokens" {
			toks, _ := kv.Value.AsStrings()
			toks = slices.Clone(toks)
			i := slices.Index(toks, "▁the")
			if i < 0 {
				t.Fatal("stories260K's vocabulary has no ▁the")
			}
			toks[i] = "▁the\u00a7"
			val, err := gguf.ValueOf(toks)
			if err != nil {
				t.Fatal(err)
			}
			kv.Value = val
		}
		variant.KVs = append(variant.KVs, kv)
	}
	same, other = filepath.Join(dir, "synth-same.gguf"), filepath.Join(dir, "synth-other.gguf")
	for p, voc := range map[string]synth.Vocab{same: v, other: variant} {
		if err := synth.Write(p, synth.Config{Layers: 1, Types: synth.AllOf(kernels.Q8_0), Vocab: voc}); err != nil {
			t.Fatal(err)
		}
	}
	return same, other
}

// firstDiff tokenizes text with both models' tokenizers (as a run does)
// and returns the first index where they differ and the two hashes.
func firstDiff(t *testing.T, a, b, text string) (int, string, string) {
	t.Helper()
	var ids [2][]int32
	var hashes [2]string
	for i, m := range []string{a, b} {
		tok, err := engine.LoadTokenizer(m)
		if err != nil {
			t.Fatal(err)
		}
		body, err := workbench.ReadText(text)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = tok.Encode(body, true, false)
		hashes[i] = tok.Hash()
	}
	for i := range min(len(ids[0]), len(ids[1])) {
		if ids[0][i] != ids[1][i] {
			return i, hashes[0], hashes[1]
		}
	}
	t.Fatal("the variant vocabulary tokenizes the text alike")
	return 0, "", ""
}

// TestTokenizerParity: a run against a base of another tokenizer, and an
// A/B of two models whose tokenizers differ, are refused before scoring
// with the first differing position, both tokenizations decoded and both
// hashes; --allow-tokenizer-mismatch compares them by bits per byte only.
// Models sharing stories260K's tokenizer pass.
func TestTokenizerParity(t *testing.T) {
	t.Parallel()
	root, dir := t.TempDir(), t.TempDir()
	env := map[string]string{results.EnvRoot: root}
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	same, other := synthModels(t, dir)
	pos, hStories, hOther := firstDiff(t, stories(t, "f32"), other, text)
	base, out := filepath.Join(dir, "f32.kld"), filepath.Join(dir, "out.json")
	score := func(args ...string) (int, string) {
		t.Helper()
		code, _, stderr := runCLIEnv(t, env, append([]string{"score", "--quiet", "--perplexity-output", out}, args...)...)
		return code, stderr
	}
	if code, stderr := score("--model", stories(t, "f32"), "--perplexity", text, "--perplexity-ctx", "64",
		"--perplexity-chunks", "4", "--perplexity-kld-base-out", base); code != 0 {
		t.Fatal(stderr)
	}
	f32 := loadReportFile(t, out)
	if f32.Record == nil || f32.Record.Model.TokenizerSHA256 != hStories || f32.Config.Model.TokenizerSHA256 != hStories {
		t.Fatalf("the record pins tokenizer %q, the model's is %s", f32.Record.Model.TokenizerSHA256, hStories)
	}
	// The same tokenizer (another model, and another quantization) is allowed.
	for _, m := range []string{same, stories(t, "q8_0")} {
		if code, stderr := score("--model", m, "--perplexity-kld", base, "--perplexity", text); code != 0 {
			t.Fatalf("%s against the stories260K base: %s", filepath.Base(m), stderr)
		}
		if r := loadReportFile(t, out); r.KLD == nil || r.Config.Model.TokenizerSHA256 != hStories {
			t.Fatalf("%s: no KLD, or tokenizer %s", filepath.Base(m), r.Config.Model.TokenizerSHA256)
		}
	}
	os.Remove(out)
	code, stderr := score("--model", other, "--perplexity-kld", base, "--perplexity", text)
	for _, want := range []string{"f32.kld: tokenizers differ: this run (synth-other.gguf, tokenizer " + hOther[:12],
		"the base f32.kld (stories260K-f32.gguf, tokenizer " + hStories[:12], fmt.Sprintf("first different at token %d ", pos),
		"saw|[ t]|he|", "saw|[ the]|", "--allow-tokenizer-mismatch"} {
		if code != 1 || !strings.Contains(stderr, want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("another tokenizer against the base: exit %d, stderr lacks %q:\n%s", code, want, stderr)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run wrote its report")
	}
	if code, stderr := score("--model", other, "--perplexity-kld", base); code != 1 || !strings.Contains(stderr, "tokens agree, but another text") {
		t.Errorf("another tokenizer on the base's tokens: exit %d, %s", code, stderr)
	}
	if code, stderr := score("--model", other, "--perplexity-kld", base, "--perplexity", text, "--allow-tokenizer-mismatch"); code != 0 {
		t.Fatal(stderr)
	}
	if r := loadReportFile(t, out); r.KLD != nil || !strings.Contains(r.TokenizerMismatch, "tokenizers differ") ||
		r.Ctx != 64 || r.WindowsScored != 4 || r.BitsPerByte <= 0 {
		t.Errorf("allowed mismatch: kld %v, mismatch %q, ctx %d, %d windows, %g bits/byte", r.KLD, r.TokenizerMismatch,
			r.Ctx, r.WindowsScored, r.BitsPerByte)
	}
	checkABParity(t, env, dir, text, other, pos)
}

// checkABParity: `ab` of the synthetic pair is refused before either side
// scores; allowed, it compares bits per byte only.
func checkABParity(t *testing.T, env map[string]string, dir, text, other string, pos int) {
	t.Helper()
	prof := func(name, model string) string {
		p := filepath.Join(dir, name+".toml")
		if code, _, stderr := runCLIEnv(t, env, "profile", "new", name, "--model", model, "--perplexity", text,
			"--perplexity-ctx", "64", "--perplexity-chunks", "4", "-o", p); code != 0 {
			t.Fatalf("profile new: %s", stderr)
		}
		return p
	}
	a, b := prof("A", stories(t, "f32")), prof("B", other)
	records := func() int {
		m, _ := filepath.Glob(filepath.Join(env[results.EnvRoot], "*.json"))
		return len(m)
	}
	before := records()
	code, stdout, stderr := runCLIEnv(t, env, "ab", "--profile", a, "--profile", b, "--compare", "models", "--quiet")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "tokenizers differ: A (stories260K-f32.gguf, tokenizer") ||
		!strings.Contains(stderr, fmt.Sprintf("first different at token %d ", pos)) || records() != before {
		t.Fatalf("ab of two tokenizers: exit %d, %d records written, stderr %s", code, records()-before, stderr)
	}
	code, stdout, stderr = runCLIEnv(t, env, "ab", "--profile", a, "--profile", b, "--compare", "models", "--quiet", "--json", "--allow-tokenizer-mismatch")
	if code != 0 {
		t.Fatal(stderr)
	}
	var s results.ABSummary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	ra, rb := loadReportFile(t, s.A.Report), loadReportFile(t, s.B.Report)
	if s.DeltaBitsPerByte == nil || *s.DeltaBitsPerByte != rb.BitsPerByte-ra.BitsPerByte || s.Comparison.KLD != nil ||
		s.Comparison.Windows != 0 || ra.KLD != nil || rb.KLD != nil || s.TokenizerMismatch == "" ||
		!strings.Contains(s.Verdict, "by bits per byte only") {
		t.Fatalf("ab by bits per byte: %+v", s)
	}
	// stories260K's own quantizations share its tokenizer: an A/B of them runs.
	if code, _, stderr := runCLIEnv(t, env, "ab", "--profile", a, "--profile", prof("Q8", stories(t, "q8_0")), "--compare", "models", "--quiet"); code != 0 {
		t.Fatalf("ab of one tokenizer: %s", stderr)
	}
}

// TestOldRecordsWithoutTokenizerHash: records written before the
// tokenizer hash load, compare, and pair in `ab` as before.
func TestOldRecordsWithoutTokenizerHash(t *testing.T) {
	t.Parallel()
	f := newRecordsFixture(t, "4", "q8_0")
	m, _ := filepath.Glob(filepath.Join(f.root, "*.json"))
	if len(m) != 2 {
		t.Fatalf("%d records", len(m))
	}
	for _, p := range m {
		var rep map[string]any
		data, _ := os.ReadFile(p)
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatal(err)
		}
		delete(rep["config"].(map[string]any)["model"].(map[string]any), "tokenizer_sha256")
		delete(rep["record"].(map[string]any)["model"].(map[string]any), "tokenizer_sha256")
		data, _ = json.Marshal(rep)
		if strings.Contains(string(data), "tokenizer_sha256") {
			t.Fatal("the hash is still there")
		}
		os.WriteFile(p, data, 0o644)
	}
	if code, _, stderr := runCLIEnv(t, f.env, "compare"); code != 0 {
		t.Fatalf("compare of old records: %s", stderr)
	}
	slices.Sort(m) // f32 first
	if code, stdout, stderr := runCLIEnv(t, f.env, "ab", m[0], m[1]); code != 0 || !strings.Contains(stdout, "KLD B‖base") {
		t.Fatalf("ab of old records: exit %d %s\n%s", code, stderr, stdout)
	}
}
