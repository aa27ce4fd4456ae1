package served_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plexbench/engine"
	"plexbench/internal/shareddata"
	"plexbench/kernels"
	"plexbench/scoring"
	"plexbench/served"
	"plexbench/served/servedtest"
)

// stories loads stories260K in quant q (the engine the fake serves and
// the in-process run) and the text scored.
func stories(t *testing.T, q string) (*engine.Model, string, string) {
	t.Helper()
	path := shareddata.Path(t, "models", "stories260K-"+q+".gguf")
	m, err := engine.Load(path, engine.Options{KVLen: 256, KVType: kernels.F16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	b, err := os.ReadFile(shareddata.Path(t, "tinystories", "tinystories-16k.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return m, path, strings.TrimSuffix(string(b), "\n")
}

func open(t *testing.T, cfg served.Config) *served.Engine {
	t.Helper()
	e, err := served.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func req(text string) scoring.Request {
	no := false
	return scoring.Request{Text: text, Ctx: 128, Chunks: 6, IncludeWindows: &no}
}

func relEq(t *testing.T, what string, got, want float64) {
	t.Helper()
	if d := math.Abs(got-want) / math.Abs(want); !(d <= 1e-9) {
		t.Errorf("%s: served %.17g, in-process %.17g (relative %.3g)", what, got, want, d)
	}
}

// TestServedPerplexityEqualsInProcess: each API form scores the same
// windows of the same token ids to the same PPL and ± as the in-process
// run, the token hash equal, tokenized by the server and checked against
// --tokenizer.
func TestServedPerplexityEqualsInProcess(t *testing.T) {
	m, path, text := stories(t, "q8_0")
	want, err := scoring.Run(context.Background(), m, req(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, api := range []string{"vllm", "sglang", "openai"} {
		t.Run(api, func(t *testing.T) {
			srv := servedtest.New(m, api)
			defer srv.Close()
			cfg := served.Config{URL: srv.URL, Tokenizer: path, Parallel: 3}
			if api == "openai" {
				cfg.API = api // it says nothing of itself
			}
			e := open(t, cfg)
			if e.API() != api {
				t.Fatalf("detected API %q, want %q", e.API(), api)
			}
			got, err := scoring.Run(context.Background(), e, req(text))
			if err != nil {
				t.Fatal(err)
			}
			if got.TokenIDsSHA256 != want.TokenIDsSHA256 || got.ScoredTokens != want.ScoredTokens || got.WindowsScored != 6 {
				t.Fatalf("served tokens %s (%d scored, %d windows), in-process %s (%d)", got.TokenIDsSHA256, got.ScoredTokens,
					got.WindowsScored, want.TokenIDsSHA256, want.ScoredTokens)
			}
			relEq(t, "PPL", got.Perplexity, want.Perplexity)
			relEq(t, "PPL ±", got.PerplexityUncertainty, want.PerplexityUncertainty)
			relEq(t, "bits per byte", got.BitsPerByte, want.BitsPerByte)
		})
	}
}

// TestServedKLDAgainstInProcessBase: a base recorded in-process (f32)
// compared with the served q8_0: SGLang's named ids give the in-process
// KLD; vLLM's top-k only gives a lower bound, reported as such with its
// overlap. A base recorded from the server equals the in-process one's
// comparison.
func TestServedKLDAgainstInProcessBase(t *testing.T) {
	f32, _, text := stories(t, "f32")
	q8, path, _ := stories(t, "q8_0")
	dir := t.TempDir()
	base := filepath.Join(dir, "f32.kld")
	r := req(text)
	r.KLDBaseOut, r.KLDTopK = base, 16
	if _, err := scoring.Run(context.Background(), f32, r); err != nil {
		t.Fatal(err)
	}
	cmp := req(text)
	cmp.KLDBase = base
	want, err := scoring.Run(context.Background(), q8, cmp)
	if err != nil {
		t.Fatal(err)
	}
	exact := want.KLD.MeanKLD
	for _, api := range []string{"sglang", "vllm"} {
		t.Run(api, func(t *testing.T) {
			srv := servedtest.New(q8, api)
			defer srv.Close()
			e := open(t, served.Config{URL: srv.URL, Tokenizer: path})
			got, err := scoring.Run(context.Background(), e, cmp)
			if err != nil {
				t.Fatal(err)
			}
			k := got.KLD
			if k.TopKOverlap == nil {
				t.Fatal("no kld.top_k_overlap")
			}
			relEq(t, "PPL", got.Perplexity, want.Perplexity)
			relEq(t, "base PPL", k.BasePerplexity, want.KLD.BasePerplexity)
			relEq(t, "same top", k.SameTop, want.KLD.SameTop)
			relEq(t, "mean Δp", k.MeanDeltaP, want.KLD.MeanDeltaP)
			if api == "sglang" {
				if k.Method != scoring.KLDNamedIDs || *k.TopKOverlap != 1 {
					t.Errorf("method %q overlap %v, want named-ids and 1", k.Method, *k.TopKOverlap)
				}
				relEq(t, "mean KLD", k.MeanKLD, exact)
				relEq(t, "KLD p99", k.KLDP99, want.KLD.KLDP99)
				return
			}
			if k.Method != scoring.KLDTopKOverlap || !(*k.TopKOverlap > 0.5 && *k.TopKOverlap < 1) {
				t.Errorf("method %q overlap %v, want top-k-overlap in (0.5, 1)", k.Method, *k.TopKOverlap)
			}
			if !(k.MeanKLD <= exact*(1+1e-12)) || !(k.MeanKLD > 0) {
				t.Errorf("top-k-overlap KLD %.9g, want in (0, exact %.9g]", k.MeanKLD, exact)
			}
			t.Logf("vLLM form: KLD %.6g ≤ exact %.6g, overlap %.4f", k.MeanKLD, exact, *k.TopKOverlap)
		})
	}
	// A base recorded from the server: the same comparison as one
	// recorded in-process (both keep the f32 top 16).
	srv := servedtest.New(f32, "vllm")
	defer srv.Close()
	e := open(t, served.Config{URL: srv.URL, Tokenizer: path})
	sbase := filepath.Join(dir, "served-f32.kld")
	r.KLDBaseOut = sbase
	if _, err := scoring.Run(context.Background(), e, r); err != nil {
		t.Fatal(err)
	}
	cmp.KLDBase = sbase
	got, err := scoring.Run(context.Background(), q8, cmp)
	if err != nil {
		t.Fatal(err)
	}
	relEq(t, "KLD against the served base", got.KLD.MeanKLD, exact)
}

// TestServedFaults: a server that fails (500, truncated JSON, fewer
// log-probabilities than asked, a wrong length, slow answers) stops the
// run with one line naming it, the windows before kept as a partial
// report and its journal; --resume continues to the complete run's
// result. 503s and dropped connections are retried.
func TestServedFaults(t *testing.T) {
	m, path, text := stories(t, "q8_0")
	want, err := scoring.Run(context.Background(), m, req(text))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		api, name string
		fault     servedtest.Fault
		line      string
	}{
		{"vllm", "500", servedtest.Status500, "500 Internal Server Error: {\"error\""},
		{"sglang", "truncated", servedtest.Truncated, "the answer is not the JSON expected"},
		{"vllm", "short top", servedtest.ShortTop, "log-probabilities, 16 asked"},
		{"sglang", "short top", servedtest.ShortTop, "top log-probabilities, 16 asked"},
		{"vllm", "wrong length", servedtest.WrongLength, "prompt_logprobs holds 127 positions for a prompt of 128 tokens"},
		{"sglang", "wrong length", servedtest.WrongLength, "/generate returned 63 token"},
		{"vllm", "slow", servedtest.Slow, "no answer within 2s (--server-timeout)"},
	}
	for _, c := range cases {
		t.Run(c.api+" "+c.name, func(t *testing.T) {
			srv := servedtest.New(m, c.api)
			defer srv.Close()
			// Every request from the third on fails: windows 1 and 2 are
			// scored (one request in flight at a time).
			srv.SetFault(func(n int) servedtest.Fault {
				if n >= 3 {
					return c.fault
				}
				return servedtest.None
			})
			cfg := served.Config{URL: srv.URL, Tokenizer: path, Parallel: 1, Retries: 1, Backoff: time.Millisecond}
			if c.fault == servedtest.Slow {
				cfg.Timeout = 2 * time.Second
			}
			e := open(t, cfg)
			r := req(text)
			r.Journal = filepath.Join(t.TempDir(), "run.journal")
			r.KLDTopK = 16
			r.KLDBaseOut = filepath.Join(t.TempDir(), "b.kld")
			got, err := scoring.Run(context.Background(), e, r)
			if err == nil || !errors.Is(err, served.ErrServer) {
				t.Fatalf("err %v, want a server error", err)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, c.line) {
				t.Errorf("error %q: want one line with %q", msg, c.line)
			}
			if !got.Partial || got.WindowsScored != 2 {
				t.Fatalf("partial %v with %d windows, want partial with 2", got.Partial, got.WindowsScored)
			}
			srv.SetFault(nil)
			r.Resume = true
			got, err = scoring.Run(context.Background(), e, r)
			if err != nil {
				t.Fatal(err)
			}
			if got.Partial || got.WindowsScored != 6 {
				t.Fatalf("resumed: partial %v, %d windows", got.Partial, got.WindowsScored)
			}
			relEq(t, "resumed PPL", got.Perplexity, want.Perplexity)
		})
	}
	t.Run("retried", func(t *testing.T) {
		srv := servedtest.New(m, "vllm")
		defer srv.Close()
		srv.SetFault(func(n int) servedtest.Fault {
			switch n % 3 {
			case 1:
				return servedtest.Status503
			case 2:
				return servedtest.ResetConn
			}
			return servedtest.None
		})
		e := open(t, served.Config{URL: srv.URL, Tokenizer: path, Parallel: 1, Backoff: time.Millisecond})
		got, err := scoring.Run(context.Background(), e, req(text))
		if err != nil {
			t.Fatal(err)
		}
		relEq(t, "PPL through 503s and resets", got.Perplexity, want.Perplexity)
	})
}

// TestServedTokenizerMismatch: the server's tokens and --tokenizer's must
// agree; a difference is refused naming the first differing position.
func TestServedTokenizerMismatch(t *testing.T) {
	m, _, text := stories(t, "q8_0")
	srv := servedtest.New(m, "vllm")
	defer srv.Close()
	// Another vocabulary's tokenizer: a synthetic placeholder GGUF would
	// do; the llama.cpp vocab files in the shared data are real ones.
	other := shareddata.Path(t, "vocab", "ggml-vocab-llama-spm.gguf")
	if _, err := os.Stat(other); err != nil {
		t.Skip("no second vocabulary in the shared data:", err)
	}
	e := open(t, served.Config{URL: srv.URL, Tokenizer: other})
	_, err := scoring.Run(context.Background(), e, req(text))
	if !errors.Is(err, served.ErrTokenizerMismatch) || !strings.Contains(err.Error(), "at token 1:") {
		t.Fatalf("err %v, want a tokenizer mismatch at token 1", err)
	}
}
