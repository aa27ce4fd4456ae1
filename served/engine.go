// Package served scores a model behind an HTTP server: vLLM's
// prompt_logprobs, SGLang's /generate (log-probabilities of ids named per
// position) and the OpenAI legacy completions echo form. Its Engine is a
// scoring.RowsEngine: the windows, statistics and report are scoring's,
// the token ids it sends are the ones the in-process engine would
// prefill (never re-tokenized by the server), and the tokens come from
// the server's /tokenize, a local tokenizer (--tokenizer), or both
// checked against each other.
package served

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"plexbench/engine"
	"plexbench/engine/tokenizer"
	"plexbench/scoring"
)

// APIs.
const (
	APIVLLM   = "vllm"   // /v1/completions with prompt_logprobs
	APISGLang = "sglang" // /generate with token_ids_logprob
	APIOpenAI = "openai" // /v1/completions with echo + logprobs (PPL only)
)

// Defaults.
const (
	DefaultParallel = 4
	DefaultTimeout  = 10 * time.Minute
	DefaultRetries  = 4
	// VLLMMaxTopK is vLLM's default --max-logprobs: what prompt_logprobs
	// may ask for.
	VLLMMaxTopK = 20
)

// Config is how to reach a server. Zero values mean defaults.
type Config struct {
	URL       string
	API       string        // "" or "auto": detected
	Model     string        // the served model's name; "" asks /v1/models
	Tokenizer string        // a GGUF whose tokenizer tokenizes (and checks the server's)
	Parallel  int           // requests in flight (default 4)
	Timeout   time.Duration // per request try (default 10 min)
	Retries   int           // tries after the first on 429/503/dropped connections; <0: none (default 4)
	Backoff   time.Duration // before the first retry (default 500 ms)
	APIKey    string
	// MaxTopK overrides what a row may return (vLLM: its --max-logprobs).
	MaxTopK int
}

// Engine is a served model as scoring runs it.
type Engine struct {
	c        client
	api      string
	model    string
	parallel int
	maxTopK  int
	tok      *tokenizer.Tokenizer // nil when the server tokenizes alone
	tokenize bool                 // the server has /tokenize
	addBOS   bool
	bos      int32
	vocabBOS *bosRule // the BOS rule the server states (plexbench serve's /version)
	info     scoring.ModelInfo
}

// bosRule is a vocabulary's BOS rule.
type bosRule struct {
	add bool
	id  int32
}

var _ scoring.RowsEngine = (*Engine)(nil)

// Open reaches the server, finds its API and model, and loads the local
// tokenizer when one is given.
func Open(ctx context.Context, cfg Config) (*Engine, error) {
	u := strings.TrimRight(cfg.URL, "/")
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return nil, fmt.Errorf("--server %q: want an http:// or https:// URL", cfg.URL)
	}
	e := &Engine{model: cfg.Model, parallel: cfg.Parallel, maxTopK: cfg.MaxTopK}
	if e.parallel <= 0 {
		e.parallel = DefaultParallel
	}
	e.c = client{base: u, apiKey: cfg.APIKey, timeout: cfg.Timeout, retries: cfg.Retries, backoff: cfg.Backoff,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: e.parallel, Proxy: http.ProxyFromEnvironment}}}
	if e.c.timeout == 0 {
		e.c.timeout = DefaultTimeout
	}
	switch {
	case e.c.retries == 0:
		e.c.retries = DefaultRetries
	case e.c.retries < 0:
		e.c.retries = 0
	}
	if e.c.backoff == 0 {
		e.c.backoff = 500 * time.Millisecond
	}
	if err := e.detect(ctx, cfg.API); err != nil {
		return nil, err
	}
	if cfg.Tokenizer != "" {
		tok, err := engine.LoadTokenizer(cfg.Tokenizer)
		if err != nil {
			return nil, fmt.Errorf("--tokenizer: %w", err)
		}
		e.tok, e.addBOS, e.bos = tok, tok.AddBOS(), tok.BOS()
	}
	if err := e.probeTokenizer(ctx); err != nil {
		return nil, err
	}
	e.info = scoring.ModelInfo{Path: u + "#" + e.model, Architecture: "served " + e.api, AddBOS: e.addBOS, BOS: e.bos}
	if e.tok != nil {
		e.info.VocabSize, e.info.TokenizerSHA256 = e.tok.VocabSize(), e.tok.Hash()
	}
	return e, nil
}

// API is the server's API, as given or detected.
func (e *Engine) API() string { return e.api }

// Model is the served model's name.
func (e *Engine) Model() string { return e.model }

// Close releases idle connections.
func (e *Engine) Close() error {
	e.c.http.CloseIdleConnections()
	return nil
}

// modelList is /v1/models's answer.
type modelList struct {
	Data []struct {
		ID      string `json:"id"`
		OwnedBy string `json:"owned_by"`
		Root    string `json:"root"`
	} `json:"data"`
}

// detect settles the API (api when given) and the model's name from what
// the server says of itself: SGLang's /get_model_info, vLLM's /version
// or /v1/models owned_by.
func (e *Engine) detect(ctx context.Context, api string) error {
	switch api {
	case "", "auto":
	case APIVLLM, APISGLang, APIOpenAI:
		e.api = api
	default:
		return fmt.Errorf("--api %q: want vllm, sglang, openai or auto", api)
	}
	var ml modelList
	mlErr := e.c.do(ctx, "/v1/models", nil, &ml)
	if mlErr == nil && len(ml.Data) > 0 && e.model == "" {
		e.model = ml.Data[0].ID
	}
	if e.api == "" && mlErr == nil && len(ml.Data) > 0 {
		switch strings.ToLower(ml.Data[0].OwnedBy) {
		case "vllm":
			e.api = APIVLLM
		case "sglang", "plexbench":
			// plexbench serve answers SGLang's /generate, ids named.
			e.api = APISGLang
		}
	}
	if e.api == "" || (e.model == "" && e.api == APISGLang) {
		var info struct {
			ModelPath string `json:"model_path"`
		}
		if err := e.c.do(ctx, "/get_model_info", nil, &info); err == nil && info.ModelPath != "" {
			if e.api == "" {
				e.api = APISGLang
			}
			if e.model == "" {
				e.model = info.ModelPath
			}
		}
	}
	// vLLM's /version says its version; plexbench serve's also what a
	// position may ask for.
	var v struct {
		Version     string `json:"version"`
		Server      string `json:"server"`
		MaxLogprobs int    `json:"max_logprobs"`
		AddBOS      *bool  `json:"add_bos"`
		BOS         int32  `json:"bos"`
	}
	if err := e.c.do(ctx, "/version", nil, &v); err == nil {
		if v.Server == "plexbench" && v.AddBOS != nil {
			// Its vocabulary's BOS rule, which a --tokenize-bos server's
			// /tokenize does not show.
			e.vocabBOS = &bosRule{*v.AddBOS, v.BOS}
		}
		if e.api == "" && v.Version != "" {
			e.api = APIVLLM
			if v.Server == "plexbench" {
				e.api = APISGLang
			}
		}
		if e.maxTopK == 0 {
			e.maxTopK = v.MaxLogprobs
		}
	}
	if e.api == "" {
		if mlErr != nil {
			return fmt.Errorf("--server: %w", mlErr)
		}
		return fmt.Errorf("%w %s: cannot tell its API from /v1/models, /get_model_info or /version: give --api vllm|sglang|openai", ErrServer, e.c.base)
	}
	if e.model == "" && e.api != APISGLang {
		if mlErr != nil {
			return fmt.Errorf("--server: %w", mlErr)
		}
		return fmt.Errorf("%w %s: /v1/models lists no model", ErrServer, e.c.base)
	}
	if e.maxTopK == 0 && e.api == APIVLLM {
		e.maxTopK = e.vllmMaxLogprobs(ctx)
	}
	return nil
}

// maxAllowed reads vLLM's refusal of too many prompt log-probabilities
// ("… which is greater than max allowed: 20").
var maxAllowed = regexp.MustCompile(`max allowed: (\d+)`)

// vllmMaxLogprobs asks vLLM for its --max-logprobs: a two-token prompt
// with scoring.MaxTopK prompt log-probabilities is answered, or refused
// naming the limit; vLLM's default (20) when the answer says neither.
func (e *Engine) vllmMaxLogprobs(ctx context.Context) int {
	k := scoring.MaxTopK
	var resp vllmResp
	err := e.c.do(ctx, "/v1/completions", completionsReq{Model: e.model, Prompt: []int32{0, 1}, MaxTokens: 1, PromptLogprobs: &k}, &resp)
	var se *statusError
	switch {
	case err == nil:
		return k
	case errors.As(err, &se) && se.status == http.StatusBadRequest:
		if m := maxAllowed.FindStringSubmatch(se.body); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
				return min(n, scoring.MaxTopK)
			}
		}
	}
	return VLLMMaxTopK
}

// tokenizeReq is /tokenize's request (vLLM's and SGLang's share it).
type tokenizeReq struct {
	Model            string `json:"model,omitempty"`
	Prompt           string `json:"prompt"`
	AddSpecialTokens bool   `json:"add_special_tokens"`
}

// serverTokenize is the server's tokenization of text; ok false when it
// has no /tokenize.
func (e *Engine) serverTokenize(ctx context.Context, text string, special bool) (ids []int32, ok bool, err error) {
	var out struct {
		Tokens []int32 `json:"tokens"`
	}
	err = e.c.do(ctx, "/tokenize", tokenizeReq{Model: e.model, Prompt: text, AddSpecialTokens: special}, &out)
	switch {
	case notFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return out.Tokens, true, nil
}

// probeTokenizer finds whether the server tokenizes and, without a local
// tokenizer, whether it adds BOS (a text tokenized with and without
// special tokens).
func (e *Engine) probeTokenizer(ctx context.Context) error {
	with, ok, err := e.serverTokenize(ctx, "a", true)
	if err != nil {
		return err
	}
	e.tokenize = ok
	if e.tok != nil {
		return nil
	}
	if !ok {
		return fmt.Errorf("%w %s: it has no /tokenize: give the model's tokenizer with --tokenizer FILE.gguf", ErrServer, e.c.base)
	}
	if e.vocabBOS != nil {
		e.addBOS, e.bos = e.vocabBOS.add, e.vocabBOS.id
		return nil
	}
	without, _, err := e.serverTokenize(ctx, "a", false)
	if err != nil {
		return err
	}
	if len(with) == len(without)+1 {
		e.addBOS, e.bos = true, with[0]
	}
	return nil
}

// Info describes the served model: its URL and name, and what the local
// tokenizer says (vocabulary, BOS) when one is given.
func (e *Engine) Info() scoring.ModelInfo { return e.info }

// Config names where the run computes: the server and its API.
func (e *Engine) Config() scoring.EngineConfig {
	return scoring.EngineConfig{Backend: "server", DeviceArch: e.api + " " + e.c.base, Model: e.info}
}

// Tokenize is the server's tokenization of text (add_special_tokens, as
// llama-perplexity does) and, with a local tokenizer, that one's; the
// two must agree token for token.
func (e *Engine) Tokenize(text string) ([]int32, error) {
	ctx := context.Background()
	var local []int32
	if e.tok != nil {
		var err error
		if local, err = engine.TokenizeText(e.tok, e.info.Path, text); err != nil {
			return nil, err
		}
		if !e.tokenize {
			return local, nil
		}
	}
	remote, _, err := e.serverTokenize(ctx, text, true)
	if err != nil {
		return nil, err
	}
	if local != nil {
		if err := sameTokens(remote, local); err != nil {
			return nil, err
		}
	}
	return remote, nil
}

// ErrTokenizerMismatch marks a server and a local tokenizer that disagree.
var ErrTokenizerMismatch = errors.New("the server's tokenizer and --tokenizer disagree")

// sameTokens refuses two tokenizations that differ, naming the first
// position where they do.
func sameTokens(server, local []int32) error {
	n := min(len(server), len(local))
	for i := range n {
		if server[i] != local[i] {
			return fmt.Errorf("%w at token %d: the server has id %d, --tokenizer id %d", ErrTokenizerMismatch, i, server[i], local[i])
		}
	}
	if len(server) != len(local) {
		return fmt.Errorf("%w at token %d: the server gives %d tokens, --tokenizer %d", ErrTokenizerMismatch, n, len(server), len(local))
	}
	return nil
}

// TokenBytes is the local tokenizer's (bits per byte); without one every
// token counts 0 bytes and the report has no bits per byte.
func (e *Engine) TokenBytes(tokens []int32) []int32 {
	if e.tok == nil {
		return make([]int32, len(tokens))
	}
	return e.tok.PieceBytes(tokens)
}

// Piece is the local tokenizer's; "" without one.
func (e *Engine) Piece(id int32) string {
	if e.tok == nil {
		return ""
	}
	return e.tok.Piece(id)
}

// Decode renders ids with the local tokenizer; "" without one.
func (e *Engine) Decode(ids []int32) string {
	if e.tok == nil {
		return ""
	}
	return e.tok.Decode(ids)
}

// Prefill is never called on a served model: scoring reads its rows
// through Rows.
func (e *Engine) Prefill(context.Context, []int32, int, func(int, []float32, int) error) error {
	return scoring.ErrRowsEngine
}

// HeadReduce: as Prefill.
func (e *Engine) HeadReduce([]float32, int, []scoring.RowRequest, []scoring.RowResult) error {
	return scoring.ErrRowsEngine
}

// PrefillBlocks: a server's attention is its own.
func (e *Engine) PrefillBlocks() scoring.AttentionBlocks { return scoring.AttentionBlocks{} }

// NamesIDs: SGLang's token_ids_logprob names ids; vLLM and the OpenAI
// form return their own top-k only.
func (e *Engine) NamesIDs() bool { return e.api == APISGLang }

// RowsParallel is --server-parallel.
func (e *Engine) RowsParallel() int { return e.parallel }

// MaxTopK is what a row may return: vLLM's --max-logprobs (20 unless
// told), unknown (0) for the others.
func (e *Engine) MaxTopK() int { return e.maxTopK }

// Rows scores one window through the server's API.
func (e *Engine) Rows(ctx context.Context, input []int32, from int, q scoring.RowsQuery, out []scoring.LogProbRow) error {
	if len(out) != len(input)-1-from {
		return fmt.Errorf("rows: %d rows asked of a window of %d tokens from %d", len(out), len(input), from)
	}
	switch e.api {
	case APIVLLM:
		return e.vllmRows(ctx, input, from, q, out)
	case APISGLang:
		return e.sglangRows(ctx, input, from, q, out)
	}
	return e.openaiRows(ctx, input, from, q, out)
}
