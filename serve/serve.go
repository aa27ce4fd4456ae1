// Package serve puts a loaded engine behind an HTTP API for scoring, not
// chat: the log-probabilities of prompts that other harnesses read —
// OpenAI's legacy completions with echo + logprobs (what
// lm-evaluation-harness's local-completions sends for every log-likelihood
// task), vLLM's prompt_logprobs, SGLang's /generate with
// token_ids_logprob — with the tokenizer endpoints those clients use.
// Every log-probability is the scoring path's (scoring.NLL on the head's
// reductions), in float64, from prompts prefilled from an empty KV cache.
//
// The engine holds one model and runs one request at a time; requests
// beyond it wait in a bounded queue and are refused with 429 when it is
// full. Bodies, prompts per request, prompt length and top-k are bounded;
// every refusal is a JSON error ({"error": {...}}) with a 4xx status.
//
// serve.go owns the server: its configuration, routes, the API key, the
// queue, errors and shutdown. logprobs.go computes a prompt's
// log-probabilities; openai.go, sglang.go and tokens.go are the endpoints.
package serve

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"plexbench/engine"
	"plexbench/engine/tokenizer"
	"plexbench/scoring"
)

// Engine is what the server needs of a loaded model: the scoring engine
// and its tokenizer. engine.Model implements it.
type Engine interface {
	scoring.Engine
	Tokenizer() *tokenizer.Tokenizer
}

// maxNamedIDs bounds token_ids_logprob's ids; maxValues the
// log-probabilities one request returns (Σ positions × entries), which
// bounds its response's size.
const (
	maxNamedIDs = 1 << 16
	maxValues   = 1 << 22
	// lightRequests bounds the tokenizer requests in flight (their bodies
	// read at once); more get 429.
	lightRequests = 16
)

// Defaults of the limits (Config's zero values).
const (
	DefaultMaxBody     = 32 << 20 // bytes of a request body
	DefaultMaxPrompts  = 256      // prompts in one request
	DefaultMaxLogprobs = 20       // top-k per position (vLLM's --max-logprobs default)
	DefaultQueue       = 64       // requests waiting for the engine
	// ServerName is what the server says it is: /v1/models' owned_by and
	// /version's server, for clients that detect the API they talk to.
	ServerName = "plexbench"
)

// Config is the server's configuration; its zero value serves with the
// defaults above, the model named after its file, and no API key.
type Config struct {
	// ModelName is the model's id in /v1/models and responses, and the
	// name requests' "model" must give when they give one (the model
	// file's path and base name are accepted too). Empty: the file's base
	// name without .gguf.
	ModelName string
	// APIKey, when set, is required as "Authorization: Bearer KEY" on
	// every route but /health.
	APIKey string
	// MaxBody bounds a request body in bytes; MaxPrompts the prompts of
	// one request; MaxLogprobs the top-k a position may ask for.
	MaxBody     int64
	MaxPrompts  int
	MaxLogprobs int
	// MaxTokens bounds a prompt's length; 0 or more than the engine's KV
	// cache: the KV cache's positions.
	MaxTokens int
	// Queue is how many requests may wait while one runs; beyond that a
	// request is refused with 429.
	Queue int
	// TokenizeBOS makes /tokenize add BOS (when the vocabulary asks for
	// it) even to a request that says add_special_tokens false, as
	// lm-evaluation-harness's remote tokenizer always does: its
	// log-likelihood requests then start with BOS, as score's windows do.
	TokenizeBOS bool
	// Version is the build's version, for /version.
	Version string
	// Log, when set, receives one line per refused or failed request and
	// per server event.
	Log func(format string, args ...any)
}

// Server serves one engine.
type Server struct {
	eng     Engine
	tok     *tokenizer.Tokenizer
	cfg     Config
	info    scoring.ModelInfo
	ctx     int // prompt length bound
	vocab   int
	created int64
	// The head's requests and results, reused by the request holding the
	// engine: idBuf[i] backs reqs[i].IDs unless a row asks for allIDs,
	// 0..vocab-1, made on first use.
	reqs   []engine.RowRequest
	res    []engine.RowResult
	idBuf  [][]int32
	allIDs []int32

	seq   atomic.Int64  // numbers the responses' ids
	queue chan struct{} // one per scoring request admitted: running or queued
	light chan struct{} // one per tokenizer request in flight
	run   chan struct{} // the engine, held by the request running
	mux   map[string]route
}

// route is one endpoint: the methods it takes and its handler.
type route struct {
	methods []string
	handle  func(w http.ResponseWriter, r *http.Request) *apiError
}

// New makes a server for eng.
func New(eng Engine, cfg Config) (*Server, error) {
	info := eng.Info()
	if info.VocabSize <= 0 || info.HiddenSize <= 0 {
		return nil, fmt.Errorf("serve: engine reports vocabulary %d, hidden size %d", info.VocabSize, info.HiddenSize)
	}
	if cfg.ModelName == "" {
		cfg.ModelName = strings.TrimSuffix(filepath.Base(info.Path), ".gguf")
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxPrompts <= 0 {
		cfg.MaxPrompts = DefaultMaxPrompts
	}
	if cfg.MaxLogprobs <= 0 {
		cfg.MaxLogprobs = DefaultMaxLogprobs
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	s := &Server{eng: eng, tok: eng.Tokenizer(), cfg: cfg, info: info, vocab: info.VocabSize,
		created: time.Now().Unix(), queue: make(chan struct{}, cfg.Queue+1), light: make(chan struct{}, lightRequests), run: make(chan struct{}, 1),
		reqs: make([]engine.RowRequest, engine.HeadRows), res: make([]engine.RowResult, engine.HeadRows),
		idBuf: make([][]int32, engine.HeadRows)}
	if s.tok == nil {
		return nil, errors.New("serve: the engine has no tokenizer")
	}
	s.ctx = eng.Config().KVCapacity
	if cfg.MaxTokens > 0 && (s.ctx <= 0 || cfg.MaxTokens < s.ctx) {
		s.ctx = cfg.MaxTokens
	}
	if s.ctx <= 0 {
		return nil, errors.New("serve: the engine reports no KV cache capacity; give a prompt length bound")
	}
	s.mux = map[string]route{
		"/v1/completions": {[]string{http.MethodPost}, s.completions},
		"/generate":       {[]string{http.MethodPost}, s.generate},
		"/tokenize":       {[]string{http.MethodPost}, s.tokenize},
		"/detokenize":     {[]string{http.MethodPost}, s.detokenize},
		"/tokenizer_info": {[]string{http.MethodGet}, s.tokenizerInfo},
		"/v1/models":      {[]string{http.MethodGet}, s.models},
		"/get_model_info": {[]string{http.MethodGet}, s.modelInfo},
		"/version":        {[]string{http.MethodGet}, s.version},
		"/health":         {[]string{http.MethodGet, http.MethodHead}, s.health},
	}
	return s, nil
}

// Context is the longest prompt the server scores, in tokens.
func (s *Server) Context() int { return s.ctx }

// ModelName is the model's id in the API.
func (s *Server) ModelName() string { return s.cfg.ModelName }

// ServeHTTP routes a request; every answer, refusals included, is JSON.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		// A bug in a handler answers 500 and leaves the server up; the
		// panic of a client gone (http.ErrAbortHandler) ends the request.
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.fail(w, r, &apiError{status: http.StatusInternalServerError, kind: "InternalServerError",
				msg: fmt.Sprintf("internal error: %v", v)})
		}
	}()
	rt, ok := s.mux[strings.TrimSuffix(r.URL.Path, "/")]
	if !ok {
		s.fail(w, r, errorf(http.StatusNotFound, "NotFoundError", "no route %s %s (this server answers %s)",
			r.Method, r.URL.Path, strings.Join(s.routes(), ", ")))
		return
	}
	allowed := false
	for _, m := range rt.methods {
		allowed = allowed || r.Method == m
	}
	if !allowed {
		w.Header().Set("Allow", strings.Join(rt.methods, ", "))
		s.fail(w, r, errorf(http.StatusMethodNotAllowed, "MethodNotAllowed", "%s takes %s, not %s",
			r.URL.Path, strings.Join(rt.methods, " or "), r.Method))
		return
	}
	if r.URL.Path != "/health" && !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", "Bearer")
		s.fail(w, r, errorf(http.StatusUnauthorized, "AuthenticationError", "missing or wrong API key (Authorization: Bearer KEY)"))
		return
	}
	if err := rt.handle(w, r); err != nil {
		s.fail(w, r, err)
	}
}

// routes lists the server's paths, for a 404's message.
func (s *Server) routes() []string {
	return []string{"/v1/completions", "/generate", "/tokenize", "/detokenize", "/tokenizer_info",
		"/v1/models", "/get_model_info", "/version", "/health"}
}

// authorized reports whether r carries the API key, when one is set.
func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.APIKey == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.cfg.APIKey)) == 1
}

// apiError is a refusal or failure, answered as JSON with its status.
type apiError struct {
	status int
	kind   string // the error's type, as OpenAI and vLLM name them
	msg    string
	param  string
}

func errorf(status int, kind, format string, args ...any) *apiError {
	return &apiError{status: status, kind: kind, msg: fmt.Sprintf(format, args...)}
}

// badRequest is a 400 about the request's parameter param ("" for none).
func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, kind: "BadRequestError", msg: fmt.Sprintf(format, args...), param: param}
}

// errorBody is the JSON of an error, as OpenAI's API answers one.
type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	} `json:"error"`
}

// fail answers e and logs it.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, e *apiError) {
	var b errorBody
	b.Error.Message, b.Error.Type, b.Error.Code = e.msg, e.kind, e.status
	if e.param != "" {
		b.Error.Param = &e.param
	}
	s.logf("%s %s: %d %s", r.Method, r.URL.Path, e.status, e.msg)
	writeJSON(w, e.status, b)
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		s.cfg.Log(format, args...)
	}
}

// writeTimeout bounds the writing of one response (a client that stops
// reading loses it) and the reading of one request body.
const writeTimeout = 2 * time.Minute

// writeJSON answers v with status. A client gone mid-answer loses it;
// nothing else is affected.
func writeJSON(w http.ResponseWriter, status int, v any) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data = []byte(`{"error":{"message":"encoding the response failed","type":"InternalServerError","param":null,"code":500}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(data)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}

// decode reads r's body, at most MaxBody bytes, as one JSON value into v.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) *apiError {
	// The body has writeTimeout to arrive; no deadline is left on the
	// connection after, which would cancel a long request's context.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(writeTimeout))
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	dec := json.NewDecoder(body)
	dec.UseNumber()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err == nil {
		if _, rerr := io.Copy(io.Discard, body); rerr != nil {
			err = rerr
		}
	}
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tooBig):
		return errorf(http.StatusRequestEntityTooLarge, "BadRequestError", "request body over %d bytes (serve --max-body)", tooBig.Limit)
	case errors.Is(err, io.EOF):
		return badRequest("", "empty request body: want a JSON object")
	}
	return badRequest("", "malformed JSON: %v", err)
}

// admit takes a place in the queue, before the request's body is read
// (so that the bodies read at once are bounded too): release frees it
// (once, however often called: a handler frees it when its work is done,
// before it writes, and again on its way out); a full queue is a 429.
func (s *Server) admit(sem chan struct{}, what string) (release func(), _ *apiError) {
	select {
	case sem <- struct{}{}:
		held := true
		return func() {
			if held {
				held = false
				<-sem
			}
		}, nil
	default:
		return nil, errorf(http.StatusTooManyRequests, "TooManyRequests", "the server is busy: %s; retry later", what)
	}
}

// admitScoring admits a request that will need the engine.
func (s *Server) admitScoring() (func(), *apiError) {
	return s.admit(s.queue, fmt.Sprintf("1 request running and %d waiting (serve --queue)", s.cfg.Queue))
}

// admitLight admits a request that needs no engine (tokenizing).
func (s *Server) admitLight() (func(), *apiError) {
	return s.admit(s.light, fmt.Sprintf("%d tokenizer requests at once", cap(s.light)))
}

// engine waits for the engine; release frees it. A client gone before
// its turn leaves the queue.
func (s *Server) engine(ctx context.Context) (release func(), _ *apiError) {
	select {
	case s.run <- struct{}{}:
		return func() { <-s.run }, nil
	case <-ctx.Done():
		return nil, errorf(499, "ClientClosedRequest", "client closed the request while queued")
	}
}

// checkValues refuses a request whose response would carry more than
// maxValues log-probabilities.
func checkValues(n int) *apiError {
	if n > maxValues {
		return badRequest("", "the request asks for %d log-probabilities (positions × entries); at most %d per request: split it", n, maxValues)
	}
	return nil
}

// checkModel refuses a request naming a model this server does not serve.
func (s *Server) checkModel(name string) *apiError {
	switch name {
	case "", s.cfg.ModelName, s.info.Path, filepath.Base(s.info.Path):
		return nil
	}
	return errorf(http.StatusNotFound, "NotFoundError", "the model %q does not exist here: this server serves %q", name, s.cfg.ModelName)
}

// ListenAndServe serves on addr until ctx ends, then shuts down: it stops
// accepting, lets the requests in flight finish (for at most grace), and
// returns. ready, when set, gets the address listened on.
func (s *Server) ListenAndServe(ctx context.Context, addr string, grace time.Duration, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return s.Serve(ctx, ln, grace, ready)
}

// Serve is ListenAndServe on ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration, ready func(net.Addr)) error {
	work, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 1 << 16, BaseContext: func(net.Listener) context.Context { return work }}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.logf("shutting down: waiting up to %v for the requests in flight", grace)
	sctx, stop := context.WithTimeout(context.Background(), grace)
	defer stop()
	err := hs.Shutdown(sctx)
	if err != nil {
		cancel() // the requests still running stop between passes
		hs.Close()
	}
	<-errc
	if err != nil {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	return nil
}
