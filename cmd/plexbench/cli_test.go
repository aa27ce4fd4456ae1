package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"plexbench/internal/shareddata"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/tui"
	"plexbench/workbench"
)

// TestMain lets a test re-run this binary as plexbench itself: with
// PLEXBENCH_TEST_ARGS (a JSON array) set, the process is the command
// (resume_test.go's startChild).
func TestMain(m *testing.M) {
	if a := os.Getenv("PLEXBENCH_TEST_ARGS"); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			os.Exit(3)
		}
		os.Exit(runChild(args))
	}
	os.Exit(m.Run())
}

// runChild runs plexbench as a test's child process: the process's output
// and environment. A parent that gave no results root (startChild gives
// one) still keeps records out of the source tree: they go to a folder
// made only when one is written, removed when the command returns.
func runChild(args []string) int {
	root := os.Getenv(results.EnvRoot)
	if root == "" {
		root = filepath.Join(os.TempDir(), fmt.Sprintf("plexbench-results-test-%d", os.Getpid()))
		defer os.RemoveAll(root)
	}
	c := &cli{stdout: os.Stdout, stderr: os.Stderr, getenv: func(k string) string {
		if k == results.EnvRoot {
			return root
		}
		return os.Getenv(k)
	}}
	return c.run(args)
}

// testCLI is plexbench in process for a test, with its own stdout and
// stderr and an environment of env's variables over the process's (the
// device tests set the emulated runtime's with t.Setenv). Its results
// root ($PLEXBENCH_RESULTS) is env's when env names one, else a fresh
// t.TempDir(), so that tests run side by side never share one.
func testCLI(t *testing.T, env map[string]string) (c *cli, stdout, stderr *bytes.Buffer) {
	t.Helper()
	root, ok := env[results.EnvRoot]
	if !ok {
		root = t.TempDir()
	}
	stdout, stderr = new(bytes.Buffer), new(bytes.Buffer)
	return &cli{stdout: stdout, stderr: stderr, getenv: func(k string) string {
		if k == results.EnvRoot {
			return root
		}
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	}}, stdout, stderr
}

// runCLI runs the command in process (testCLI, a fresh results root) and
// returns its exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runCLIEnv(t, nil, args...)
}

// runCLIEnv is runCLI in the environment env: a results root several
// commands share is given as env[results.EnvRoot].
func runCLIEnv(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	c, stdout, stderr := testCLI(t, env)
	code := c.run(args)
	return code, stdout.String(), stderr.String()
}

// TestBadInput: each bad input ends with a non-zero exit code and one
// clear line on stderr naming the problem, and nothing on stdout.
func TestBadInput(t *testing.T) {
	t.Parallel()
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
	llamaBase := shareddata.Path(t, "llamacpp", "stories260K-f32-tinystories16k-ctx64.kld")
	lb, err := os.ReadFile(llamaBase)
	if err != nil {
		t.Fatal(err)
	}
	vocab100 := filepath.Join(dir, "vocab100.kld")
	if w, err := scoring.CreateLlamaBase(vocab100, 8, 100, 1, make([]int32, 8)); err != nil {
		t.Fatal(err)
	} else {
		for range 3 {
			w.Append(make([]float32, 100), 0, 100)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		args []string
		want string // substring of the error line
	}{
		{"truncated llama.cpp base", []string{"score", "--perplexity-kld", write("cut.kld", string(lb[:len(lb)-1000]))}, "cut.kld: llama.cpp base: 3901028 bytes, the header (ctx 64, vocabulary 512, 121 chunks) promises 3902028: truncated"},
		{"llama.cpp base of another vocab", []string{"score", "--perplexity-kld", vocab100}, "vocab100.kld: the llama.cpp base has a vocabulary of 100 entries, this model 512"},
		{"llama.cpp base of other tokens", []string{"score", "--perplexity-kld", llamaBase, "--perplexity", write("other.txt", "Once upon a time there was a fox.")}, "stories260K-f32-tinystories16k-ctx64.kld: token ids differ: this run ("},
		{"llama.cpp base of sliding", []string{"score", "--perplexity-method", "sliding", "--perplexity-kld-base-out", filepath.Join(dir, "s.kld"), "--kld-format", "llama"}, "chunks only"},
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
		{"unknown prefill attention", []string{"score", "--prefill-attention", "sparse"}, "sparse"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// TestAB runs `ab` on two profiles and on the two runs' saved reports: the
// paired figures and KLD agree, the verdict names the KLD band, and
// --fail-if turns a threshold into exit code 3.
func TestAB(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	model := shareddata.Path(t, "models", "stories260K-q8_0.gguf")
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	prof := func(name, kv string) string { return newProfile(t, dir, name, model, text, 20, kv) }
	a, b := prof("f32kv", "f32"), prof("bf16kv", "bf16")
	code, stdout, stderr := runCLI(t, "ab", "--profile", a, "--profile", b, "--json", "--quiet")
	if code != 0 || stderr != "" {
		t.Fatalf("ab: exit %d, stderr %q", code, stderr)
	}
	var fromProfiles results.ABSummary
	if err := json.Unmarshal([]byte(stdout), &fromProfiles); err != nil {
		t.Fatalf("ab --json: %v\n%s", err, stdout)
	}
	c := fromProfiles.Comparison
	if fromProfiles.Object != results.ABObject || c.Windows != 20 || c.KLD == nil || c.KLD.MeanKLD <= 1e-4 ||
		!strings.HasPrefix(fromProfiles.Verdict, "B is close to A: mean KLD") ||
		!strings.Contains(fromProfiles.Verdict, "("+fromProfiles.KLDBand+")") {
		t.Fatalf("ab result %+v", fromProfiles)
	}

	// ab's stop flags set B's rule: a paired ΔPPL decided at 5 windows,
	// the comparison over those.
	code, stdout, stderr = runCLI(t, "ab", "--profile", a, "--profile", b, "--json", "--quiet",
		"--stop-when-decided", "delta_ppl_percent<50", "--stop-min-windows", "5")
	var stopped results.ABSummary
	if err := json.Unmarshal([]byte(stdout), &stopped); code != 0 || err != nil {
		t.Fatalf("ab with B's stop rule: exit %d, %v, stderr %q", code, err, stderr)
	}
	if recB, err := readReport(stopped.B.Report); err != nil || recB.StoppedEarly == nil ||
		recB.StoppedEarly.Statistic != scoring.StatDeltaNLL || stopped.Comparison.Windows != 5 {
		t.Fatalf("B's record %s: %v, stopped_early %+v; %d windows paired", stopped.B.Report, err, recB.StoppedEarly, stopped.Comparison.Windows)
	} else if !reflect.DeepEqual(stopped.StoppedEarly, recB.StoppedEarly) {
		t.Fatalf("the summary's stopped_early %+v, B's record's %+v", stopped.StoppedEarly, recB.StoppedEarly)
	}
	code, stdout, stderr = runCLI(t, "ab", "--profile", a, "--profile", b, "--quiet",
		"--stop-when-decided", "delta_ppl_percent<-50", "--stop-min-windows", "5")
	if code != exitThreshold || !strings.Contains(stdout, "stopped    B at window 5, decided: delta_ppl_percent<-50 does not hold (") ||
		!strings.Contains(stderr, "plexbench: ab: B's --stop-when-decided delta_ppl_percent<-50 does not hold: exit 3") {
		t.Fatalf("ab with B's failing rule: exit %d\n%s\nstderr %q", code, stdout, stderr)
	}

	// The same two runs through score, then ab on the reports.
	repA, repB, base := filepath.Join(dir, "A.json"), filepath.Join(dir, "B.json"), filepath.Join(dir, "A.kld")
	if code, _, stderr := runCLI(t, "score", "--profile", a, "--quiet", "--perplexity-kld-base-out", base, "--perplexity-output", repA); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := runCLI(t, "score", "--profile", b, "--quiet", "--perplexity-kld", base, "--perplexity-output", repB); code != 0 {
		t.Fatal(stderr)
	}
	code, stdout, stderr = runCLI(t, "ab", repA, repB, "--json", "--fail-if", "mean_kld>0.0001", "--fail-if", "abs_delta_ppl_percent>50")
	if code != exitThreshold || !strings.Contains(stderr, "--fail-if holds: mean_kld>0.0001\n") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("ab with a failing threshold: exit %d, stderr %q", code, stderr)
	}
	var fromReports results.ABSummary
	if err := json.Unmarshal([]byte(stdout), &fromReports); err != nil {
		t.Fatal(err)
	}
	r := fromReports.Comparison
	if r.Windows != c.Windows || r.DeltaMeanNLL != c.DeltaMeanNLL || r.DeltaMeanNLLUncertainty != c.DeltaMeanNLLUncertainty ||
		*r.KLD != *c.KLD || fromReports.KLDBand != fromProfiles.KLDBand || len(fromReports.Failed) != 1 {
		t.Fatalf("from reports %+v\nfrom profiles %+v", fromReports, fromProfiles)
	}
	if code, stdout, _ := runCLI(t, "ab", repA, repB, "--fail-if", "mean_kld>0.01"); code != 0 || !strings.Contains(stdout, "verdict    B is close to A") {
		t.Fatalf("ab text: exit %d\n%s", code, stdout)
	}
	for _, bad := range [][]string{
		{"ab", repA, repB, "--fail-if", "mean_kld=>1"},
		{"ab", repA, repB, "--fail-if", "nosuch>1"},
		{"ab", repA, filepath.Join(dir, "f32kv.toml")},
		{"ab", "--profile", a},
	} {
		code, stdout, stderr := runCLI(t, bad...)
		if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", bad, code, stdout, stderr)
		}
	}
}

// TestCompareRecords: three quantizations scored against the f32 base and
// the base run itself make one table sorted by mean KLD; a run at another
// ctx is a second group, named in the legend; a rerun replaces its own
// record; a report without a schema_version is refused in one line.
// recordsFixture scores stories260K f32 (ctx 128, chunks windows, f32 KV)
// into a fresh results root, recording a base, then each of quants against
// it; score runs more there, and env is that root's environment for
// runCLIEnv.
type recordsFixture struct {
	root, text, base string
	env              map[string]string
	score            func(args ...string)
}

func newRecordsFixture(t *testing.T, chunks string, quants ...string) recordsFixture {
	t.Helper()
	f := recordsFixture{root: t.TempDir(), text: shareddata.Path(t, "tinystories", "tinystories-16k.txt")}
	f.env = map[string]string{results.EnvRoot: f.root}
	dir := t.TempDir()
	f.base = filepath.Join(dir, "f32.kld")
	f.score = func(args ...string) {
		t.Helper()
		if code, _, stderr := runCLIEnv(t, f.env, append([]string{"score", "--quiet", "--perplexity-output", filepath.Join(dir, "out.json")}, args...)...); code != 0 {
			t.Fatalf("score %q: %s", args, stderr)
		}
	}
	f.score("--model", stories(t, "f32"), "--perplexity", f.text, "--perplexity-ctx", "128", "--perplexity-chunks", chunks,
		"--kv-cache-dtype", "f32", "--perplexity-kld-base-out", f.base)
	for _, q := range quants {
		f.score("--model", stories(t, q), "--kv-cache-dtype", "f32", "--perplexity-kld", f.base)
	}
	return f
}

// stories is the stories260K GGUF of quantization q.
// compareJSON is `compare --format json` with args in the environment
// env (runCLIEnv), parsed.
func compareJSON(t *testing.T, env map[string]string, args ...string) results.CompareOutput {
	t.Helper()
	code, stdout, stderr := runCLIEnv(t, env, append([]string{"compare", "--format", "json"}, args...)...)
	var out results.CompareOutput
	if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil {
		t.Fatalf("compare %v: exit %d, %s", args, code, stderr)
	}
	return out
}

func stories(t *testing.T, q string) string {
	return shareddata.Path(t, "models", "stories260K-"+q+".gguf")
}

func TestCompareRecords(t *testing.T) {
	t.Parallel()
	f := newRecordsFixture(t, "12", "q4_0", "q8_0", "q5_0")
	root, text, base, score, dir := f.root, f.text, f.base, f.score, t.TempDir()
	model := func(q string) string { return stories(t, q) }
	score("--model", model("q8_0"), "--perplexity", text, "--perplexity-ctx", "64", "--perplexity-chunks", "12")
	score("--model", model("q8_0"), "--perplexity", text, "--perplexity-ctx", "64", "--perplexity-chunks", "12") // a rerun
	recs, _ := filepath.Glob(filepath.Join(root, "*.json"))
	traces, _ := filepath.Glob(filepath.Join(root, "*.trace"))
	if ents, _ := os.ReadDir(root); len(recs) != 5 || len(traces) != 5 || len(ents) != 10 {
		t.Fatalf("%d records, %d traces after 6 runs (one a rerun), want 5 of each", len(recs), len(traces))
	}
	out := compareJSON(t, f.env)
	if len(out.Groups) != 2 || strings.Join(out.Differ, ",") != "ctx,stride,base,top-k" {
		t.Fatalf("%d groups differing in %v", len(out.Groups), out.Differ)
	}
	g := out.Groups[1]
	var order []string
	for _, r := range g.Rows {
		order = append(order, strings.TrimSuffix(strings.TrimPrefix(r.Model, "stories260K-"), ".gguf"))
	}
	if g.Protocol.Ctx != 128 || strings.Join(order, " ") != "f32 q8_0 q5_0 q4_0" || !g.Rows[0].Reference ||
		*g.Rows[1].MeanKLD >= *g.Rows[2].MeanKLD || g.Rows[3].EffectiveBPW >= g.Rows[1].EffectiveBPW {
		t.Fatalf("group %q: rows %v", g.Title, order)
	}
	checkBitsPerByteRows(t, g)
	if len(out.Groups[0].Rows) != 1 || out.Groups[0].Protocol.Ctx != 64 {
		t.Fatalf("first group %+v", out.Groups[0])
	}
	code, stdout, _ := runCLIEnv(t, f.env, "compare", "--pattern", "stories260K-q*", "--format", "md")
	if code != 0 || strings.Count(stdout, "### Group") != 2 || !strings.Contains(stdout, "legend: the 2 groups differ in") ||
		!strings.Contains(stdout, "| PPL ± | bits/byte ± |") {
		t.Fatalf("compare --format md: exit %d\n%s", code, stdout)
	}
	// A card of the q4_0 record, and one written by score itself: headline
	// figures, protocol, the command, and no local paths.
	cardPath := filepath.Join(dir, "card.md")
	q4 := filepath.Join(root, g.Rows[3].Record+".json")
	score("--model", model("q4_0"), "--kv-cache-dtype", "f32", "--perplexity-kld", base, "--card", cardPath)
	fromScore, _ := os.ReadFile(cardPath)
	code, card, stderr := runCLIEnv(t, f.env, "card", q4)
	if code != 0 || card != string(fromScore) {
		t.Fatalf("card: exit %d %s\n%s\nscore --card wrote:\n%s", code, stderr, card, fromScore)
	}
	for _, want := range []string{"## stories260K-q4_0.gguf", "| mean KLD vs base |", "| bits per byte | ", "(beyond a typical 4-bit quantization", "| effective bits per weight | 7.176 (tensors: F16 ×5, F32 ×11, Q4_0 ×31, Q8_0 ×1)",
		"**Comparable only within this protocol:** chunks, ctx 128, first 12 windows",
		"plexbench score --model stories260K-q4_0.gguf --perplexity-kld f32.kld --kv-cache-dtype f32"} {
		if !strings.Contains(card, want) {
			t.Errorf("card lacks %q:\n%s", want, card)
		}
	}
	if strings.Contains(card, dir) || strings.Contains(card, root) || strings.Contains(card, filepath.Dir(model("f32"))) {
		t.Errorf("card shows a local path:\n%s", card)
	}
	// A report without schema_version under the root is skipped, said once
	// on stderr: the records around it are still compared.
	os.WriteFile(filepath.Join(root, "old.json"), []byte(`{"object":"lse.perplexity","perplexity":3}`), 0o644)
	code, stdout, stderr = runCLIEnv(t, f.env, "compare")
	if code != 0 || strings.Count(stdout, "group ") != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "old.json: ") {
		t.Fatalf("a record without schema_version: exit %d, stderr %q\n%s", code, stderr, stdout)
	}
}

// checkBitsPerByteRows: on one text and protocol, bits per byte is ln PPL
// times the same tokens-per-byte factor on every row.
func checkBitsPerByteRows(t *testing.T, g results.CompareGroup) {
	t.Helper()
	for _, r := range g.Rows {
		if r.BitsPerByte == nil || *r.BitsPerByte <= 0 ||
			math.Abs(*r.BitsPerByte/math.Log(r.PPL)-*g.Rows[0].BitsPerByte/math.Log(g.Rows[0].PPL)) > 1e-9 {
			t.Fatalf("row %s: bits per byte %v, perplexity %v", r.Model, r.BitsPerByte, r.PPL)
		}
	}
}

// TestProgressJSONL: --progress jsonl writes one JSON event per line,
// started, one per window, finished, and nothing else on stderr.
func TestProgressJSONL(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "progress.jsonl")
	for _, args := range [][]string{
		{"score", "--perplexity-chunks", "3", "--perplexity-ctx", "128", "--progress", "jsonl"},
		{"score", "--perplexity-chunks", "3", "--perplexity-ctx", "128", "--progress", "jsonl", "--progress-out", out},
	} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 || !strings.Contains(stdout, `"object": "lse.perplexity"`) {
			t.Fatalf("%q: exit %d, stderr %q", args, code, stderr)
		}
		lines := stderr
		if len(args) > 7 {
			if stderr != "" {
				t.Fatalf("stderr %q with --progress-out", stderr)
			}
			b, _ := os.ReadFile(out)
			lines = string(b)
		}
		var kinds []string
		for _, l := range strings.Split(strings.TrimSpace(lines), "\n") {
			var e struct {
				Event         string                `json:"event"`
				Window        *scoring.WindowReport `json:"window"`
				Perplexity    float64               `json:"perplexity"`
				WindowsTotal  int                   `json:"windows_total"`
				Elapsed       *float64              `json:"elapsed_seconds"`
				AttentionKept float64               `json:"attention_kept"`
			}
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			kinds = append(kinds, e.Event)
			if e.Elapsed == nil {
				t.Fatalf("line %q has no elapsed_seconds", l)
			}
			if e.Event == "window_done" && (e.Window == nil || e.Perplexity <= 0 || e.WindowsTotal != 3 || e.AttentionKept != 1) {
				t.Fatalf("window event %+v", e)
			}
		}
		if strings.Join(kinds, " ") != "started window_done window_done window_done finished" {
			t.Fatalf("events %v", kinds)
		}
	}
	if code, _, stderr := runCLI(t, "score", "--progress", "xml"); code == 0 || !strings.Contains(stderr, `--progress "xml"`) {
		t.Fatalf("bad --progress: exit %d %q", code, stderr)
	}
}

// TestShardsAndMerge: three shard records of a comparison merge into the
// unsharded run's record (same name; figures to rounding); a shard spec of
// 3/2 and an incomplete set are refused in one line, nothing written.
func TestShardsAndMerge(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	env := map[string]string{results.EnvRoot: root}
	dir := t.TempDir()
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	base := filepath.Join(dir, "f32.kld")
	common := []string{"--quiet", "--perplexity-ctx", "128", "--perplexity-chunks", "14", "--perplexity", text}
	scoreTo := func(out string, args ...string) {
		t.Helper()
		if code, _, stderr := runCLIEnv(t, env, append(append([]string{"score", "--perplexity-output", out}, common...), args...)...); code != 0 {
			t.Fatalf("score %q: %s", args, stderr)
		}
	}
	scoreTo(filepath.Join(dir, "base.json"), "--kv-cache-dtype", "f32", "--perplexity-kld-base-out", base)
	scoreTo(filepath.Join(dir, "full.json"), "--perplexity-kld", base)
	var shardFiles []string
	for i := range 3 {
		out := filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		scoreTo(out, "--perplexity-kld", base, "--perplexity-shard", fmt.Sprintf("%d/3", i))
		shardFiles = append(shardFiles, out)
	}
	// The shards' records are in the root; merge those.
	var recs []string
	for _, f := range shardFiles {
		r, _ := readReport(f)
		recs = append(recs, filepath.Join(root, r.Record.Name+".json"))
	}
	full, _ := readReport(filepath.Join(dir, "full.json"))
	fullTrace, err := os.ReadFile(results.TracePath(filepath.Join(root, full.Record.Name+".json")))
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLIEnv(t, env, append([]string{"merge"}, recs...)...)
	if code != 0 {
		t.Fatalf("merge: %s", stderr)
	}
	// The merged record replaces the unsharded run's, and its token trace
	// is byte for byte the unsharded run's.
	if merged, _ := os.ReadFile(results.TracePath(filepath.Join(root, full.Record.Name+".json"))); string(merged) != string(fullTrace) {
		t.Errorf("merged token trace (%d bytes) differs from the unsharded run's (%d)", len(merged), len(fullTrace))
	}
	var merged scoring.Report
	if err := json.Unmarshal([]byte(stdout), &merged); err != nil {
		t.Fatal(err)
	}
	if merged.Record.Name != full.Record.Name || merged.WindowsScored != 14 || merged.Shards != 0 ||
		math.Abs(merged.Perplexity-full.Perplexity) > 1e-12*full.Perplexity ||
		math.Abs(merged.KLD.MeanKLD-full.KLD.MeanKLD) > 1e-12*full.KLD.MeanKLD ||
		merged.KLD.KLDPercentiles != full.KLD.KLDPercentiles {
		t.Fatalf("merged %s PPL %v KLD %v, unsharded %s PPL %v KLD %v", merged.Record.Name, merged.Perplexity,
			merged.KLD.MeanKLD, full.Record.Name, full.Perplexity, full.KLD.MeanKLD)
	}
	before, _ := os.ReadDir(root)
	for _, c := range []struct {
		args []string
		want string
	}{
		{append([]string{"score", "--perplexity-kld", base, "--perplexity-shard", "3/2"}, common...), "--perplexity-shard: shard \"3/2\""},
		{[]string{"merge", recs[0], recs[2]}, "shard 1/3 is missing"},
		{[]string{"merge", recs[0], filepath.Join(dir, "full.json")}, "not a shard record"},
	} {
		code, stdout, stderr := runCLIEnv(t, env, c.args...)
		if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want one line with %q", c.args, code, stderr, c.want)
		}
	}
	if after, _ := os.ReadDir(root); len(after) != len(before) {
		t.Errorf("refused commands wrote records: %d files, then %d", len(before), len(after))
	}
}

// parseScore is score's job from args, as the command builds it.
func (c *cli) parseScore(args []string) (workbench.Job, scoreFlags, int) {
	fs := pflag.NewFlagSet("score", pflag.ContinueOnError)
	a := bindScore(fs)
	if err := fs.Parse(args); err != nil {
		return workbench.Job{}, scoreFlags{}, c.fail(err)
	}
	return c.scoreJob(fs, a, fs.Args())
}

// parseTUI is the app's configuration from tui's args, as the command
// builds it.
func (c *cli) parseTUI(args []string) (tui.Config, int) {
	fs := pflag.NewFlagSet("tui", pflag.ContinueOnError)
	a := bindTUI(fs)
	if err := fs.Parse(args); err != nil {
		return tui.Config{}, c.fail(err)
	}
	return c.tuiConfig(fs, a, fs.Args())
}

// newProfile writes dir/name.toml with `profile new`: model on text at
// ctx 128, chunks windows, a kv KV cache.
func newProfile(t *testing.T, dir, name, model, text string, chunks int, kv string) string {
	t.Helper()
	p := filepath.Join(dir, name+".toml")
	if code, _, stderr := runCLI(t, "profile", "new", name, "--model", model, "--perplexity", text,
		"--perplexity-ctx", "128", "--perplexity-chunks", fmt.Sprint(chunks), "--kv-cache-dtype", kv, "-o", p); code != 0 {
		t.Fatalf("profile new: %s", stderr)
	}
	return p
}
