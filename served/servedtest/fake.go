// Package servedtest is a faithful fake of the servers package served
// scores, for tests: an httptest server answering vLLM's
// prompt_logprobs, SGLang's /generate and the OpenAI echo form with the
// log-probabilities of an in-process engine.Model, so that a served run
// can be compared with the in-process one number for number. Faults
// (statuses, truncated or short answers, slow answers) are injected by
// request number.
package servedtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"plexbench/engine"
	"plexbench/kernels"
	"plexbench/scoring"
)

// Fault is what a scoring request (the n-th, from 1) gets instead of a
// good answer.
type Fault int

// Faults.
const (
	None        Fault = iota
	Status500         // 500 with a JSON error body
	Status503         // 503 (retried by the client)
	Truncated         // the JSON answer cut in half
	ShortTop          // one top log-probability fewer than asked at a position
	WrongLength       // prompt_logprobs (or input_*) one position short
	Slow              // an answer after Server.SlowFor
	ResetConn         // the connection closed with no answer
)

// Server is the fake.
type Server struct {
	*httptest.Server
	API     string // "vllm", "sglang" or "openai": what /v1/models says it is
	Name    string
	SlowFor time.Duration
	// fault, when set (SetFault), picks the fault of the n-th scoring
	// request; a test may change it while a slow answer is still running.
	faultFn atomic.Pointer[func(n int) Fault]
	// NoTokenize: the server has no /tokenize.
	NoTokenize bool

	m        *engine.Model
	owned    bool       // loaded by Load: closed with the server
	mu       sync.Mutex // the model runs one request at a time
	requests atomic.Int64
	// Requests counts the scoring requests answered (good or not).
}

// SetFault sets what picks the n-th scoring request's fault (nil: none).
func (s *Server) SetFault(pick func(n int) Fault) {
	if pick == nil {
		s.faultFn.Store(nil)
		return
	}
	s.faultFn.Store(&pick)
}

// New starts a fake of api serving m (closed by the caller's Close).
func New(m *engine.Model, api string) *Server {
	s := &Server{API: api, Name: "fake-" + api, SlowFor: time.Minute, m: m}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.models)
	mux.HandleFunc("POST /tokenize", s.tokenize)
	mux.HandleFunc("POST /v1/completions", s.completions)
	mux.HandleFunc("POST /generate", s.generate)
	s.Server = httptest.NewServer(mux)
	return s
}

// Load serves the GGUF model at path (f16 KV cache of kvLen positions)
// through a fake of api; Close closes the model too.
func Load(path string, kvLen int, api string) (*Server, error) {
	m, err := engine.Load(path, engine.Options{KVLen: kvLen, KVType: kernels.F16})
	if err != nil {
		return nil, err
	}
	s := New(m, api)
	s.owned = true
	return s, nil
}

// Close stops the server (and closes the model Load loaded).
func (s *Server) Close() {
	s.Server.Close()
	if s.owned {
		s.m.Close()
	}
}

// Requests is how many scoring requests came.
func (s *Server) Requests() int { return int(s.requests.Load()) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "code": status}})
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	owner := s.API
	if owner == "openai" {
		owner = "system"
	}
	writeJSON(w, 200, map[string]any{"object": "list", "data": []any{map[string]any{"id": s.Name, "object": "model", "owned_by": owner, "root": s.m.Info().Path}}})
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	if s.NoTokenize {
		fail(w, 404, "not found")
		return
	}
	var req struct {
		Prompt           string `json:"prompt"`
		AddSpecialTokens *bool  `json:"add_special_tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail(w, 400, err.Error())
		return
	}
	special := req.AddSpecialTokens == nil || *req.AddSpecialTokens
	ids := s.m.Tokenizer().Encode(req.Prompt, special, false)
	writeJSON(w, 200, map[string]any{"tokens": ids, "count": len(ids)})
}

// fault answers the request's fault, if any, and says whether it did;
// for the faults that damage a good answer it returns them to apply.
func (s *Server) fault(w http.ResponseWriter, r *http.Request) (Fault, bool) {
	n := int(s.requests.Add(1))
	f := None
	if pick := s.faultFn.Load(); pick != nil {
		f = (*pick)(n)
	}
	switch f {
	case Status500:
		fail(w, 500, "internal error: CUDA out of memory (fake)")
		return f, true
	case Status503:
		fail(w, 503, "overloaded (fake)")
		return f, true
	case Slow:
		select { // until the client gives up, or SlowFor
		case <-r.Context().Done():
			return f, true
		case <-time.After(s.SlowFor):
		}
	case ResetConn:
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return f, true
			}
		}
	}
	return f, false
}

// send writes v, damaged by f.
func send(w http.ResponseWriter, v any, f Fault) {
	b, _ := json.Marshal(v)
	if f == Truncated {
		b = b[:len(b)/2]
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// posRow is one position's log-probabilities.
type posRow struct {
	target float64 // of the prompt's token, f64 (−NLL)
	topIDs []int32
	topLP  []float32
	named  []float32
}

// rows computes positions from..len(tokens)−1 (the row before each),
// with k top ids and the named ids' log-probabilities, as scoring's
// in-process run computes them.
func (s *Server) rows(tokens []int32, from, k int, named []int32) ([]posRow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if from < 1 {
		from = 1
	}
	out := make([]posRow, 0, len(tokens)-from)
	reqs, res := make([]scoring.RowRequest, scoring.HeadRows), make([]scoring.RowResult, scoring.HeadRows)
	for i := range reqs {
		reqs[i] = scoring.RowRequest{IDs: make([]int32, 1+len(named)), TopK: k}
		copy(reqs[i].IDs[1:], named)
		res[i] = scoring.RowResult{Picked: make([]float32, 1+len(named)), TopIDs: make([]int32, k), TopLogits: make([]float32, k)}
	}
	h := s.m.Info().HiddenSize
	err := s.m.Prefill(context.Background(), tokens, from-1, func(pos int, hidden []float32, n int) error {
		for a := 0; a < n; a += scoring.HeadRows {
			// The last position predicts nothing in the prompt.
			b := min(n, a+scoring.HeadRows, len(tokens)-1-pos)
			if b <= a {
				continue
			}
			for i := a; i < b; i++ {
				reqs[i-a].IDs[0] = tokens[pos+i+1]
			}
			if err := s.m.HeadReduce(hidden[a*h:b*h], b-a, reqs[:b-a], res[:b-a]); err != nil {
				return err
			}
			for i := range b - a {
				r := &res[i]
				ln := math.Log(r.SumExp)
				p := posRow{target: -scoring.NLL(r.Picked[0], r.Max, r.SumExp)}
				for j := range k {
					p.topIDs = append(p.topIDs, r.TopIDs[j])
					p.topLP = append(p.topLP, scoring.LogProb(r.TopLogits[j], r.Max, ln))
				}
				for j := range named {
					p.named = append(p.named, scoring.LogProb(r.Picked[1+j], r.Max, ln))
				}
				out = append(out, p)
			}
		}
		return nil
	})
	return out, err
}

type completionsReq struct {
	Prompt         []int32 `json:"prompt"`
	MaxTokens      int     `json:"max_tokens"`
	PromptLogprobs *int    `json:"prompt_logprobs"`
	Echo           bool    `json:"echo"`
	Logprobs       *int    `json:"logprobs"`
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req completionsReq
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail(w, 400, err.Error())
		return
	}
	if len(req.Prompt) < 2 {
		fail(w, 400, "prompt too short")
		return
	}
	k := 1
	switch {
	case req.PromptLogprobs != nil && s.API == "vllm":
		k = *req.PromptLogprobs
		if k > 20 {
			fail(w, 400, fmt.Sprintf("Requested prompt logprobs of %d, which is greater than max allowed: 20", k))
			return
		}
	case req.Echo && req.Logprobs != nil && s.API != "vllm" || s.API == "openai":
		k = max(1, *req.Logprobs)
	default:
		fail(w, 400, "want prompt_logprobs (vllm) or echo with logprobs")
		return
	}
	// A request refused above (vLLM's --max-logprobs probe) is no
	// scoring request: faults count from the first one answered.
	f, done := s.fault(w, r)
	if done {
		return
	}
	rows, err := s.rows(req.Prompt, 1, k, nil)
	if err != nil {
		fail(w, 500, err.Error())
		return
	}
	if s.API == "vllm" {
		pl := []any{nil}
		for i, p := range rows {
			m := map[string]any{}
			for j, id := range p.topIDs {
				if j == k-2 && f == ShortTop && i == len(rows)-1 {
					break // with the prompt's token, at most k−1 entries
				}
				m[strconv.Itoa(int(id))] = map[string]any{"logprob": p.topLP[j], "rank": j + 1}
			}
			m[strconv.Itoa(int(req.Prompt[i+1]))] = map[string]any{"logprob": p.target, "rank": 1}
			pl = append(pl, m)
		}
		if f == WrongLength {
			pl = pl[:len(pl)-1]
		}
		send(w, map[string]any{"choices": []any{map[string]any{"text": "", "prompt_logprobs": pl}}}, f)
		return
	}
	tl, top := []any{nil}, []any{nil}
	for _, p := range rows {
		tl = append(tl, p.target)
		top = append(top, map[string]float32{s.m.Tokenizer().Piece(p.topIDs[0]): p.topLP[0]})
	}
	if f == WrongLength {
		tl = tl[:len(tl)-1]
	}
	send(w, map[string]any{"choices": []any{map[string]any{"text": "", "logprobs": map[string]any{"token_logprobs": tl, "top_logprobs": top}}}}, f)
}

type generateReq struct {
	InputIDs        []int32 `json:"input_ids"`
	LogprobStartLen int     `json:"logprob_start_len"`
	TopLogprobsNum  int     `json:"top_logprobs_num"`
	TokenIDsLogprob []int32 `json:"token_ids_logprob"`
}

func (s *Server) generate(w http.ResponseWriter, r *http.Request) {
	var req generateReq
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail(w, 400, err.Error())
		return
	}
	f, done := s.fault(w, r)
	if done {
		return
	}
	st := req.LogprobStartLen
	if st < 0 || st >= len(req.InputIDs) {
		fail(w, 400, "logprob_start_len out of range")
		return
	}
	rows, err := s.rows(req.InputIDs, max(1, st), max(1, req.TopLogprobsNum), req.TokenIDsLogprob)
	if err != nil {
		fail(w, 500, err.Error())
		return
	}
	tok, top, named := []any{}, []any{}, []any{}
	if st == 0 {
		tok, top, named = append(tok, []any{nil, req.InputIDs[0], nil}), append(top, nil), append(named, nil)
	}
	for i, p := range rows {
		pos := max(1, st) + i
		tok = append(tok, []any{p.target, req.InputIDs[pos], nil})
		var t []any
		for j, id := range p.topIDs {
			if j == len(p.topIDs)-1 && f == ShortTop && i == len(rows)-1 {
				break
			}
			t = append(t, []any{p.topLP[j], id, nil})
		}
		top = append(top, t)
		var nm []any
		for j, id := range req.TokenIDsLogprob {
			nm = append(nm, []any{p.named[j], id, nil})
		}
		named = append(named, nm)
	}
	if f == WrongLength {
		tok = tok[:len(tok)-1]
	}
	send(w, map[string]any{"text": "", "meta_info": map[string]any{"input_token_logprobs": tok, "input_top_logprobs": top, "input_token_ids_logprobs": named}}, f)
}
