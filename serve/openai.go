package serve

// openai.go owns POST /v1/completions: OpenAI's legacy completions with
// echo + logprobs (the shape lm-evaluation-harness's local-completions
// sends: the prompt echoed with token_logprobs, first null, top_logprobs
// and text_offset, and one greedy token after it) and vLLM's
// prompt_logprobs (per prompt position, first null, a map from token id
// to its logprob, rank and decoded_token: the top k plus the prompt
// token). At most one token is generated, greedily.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// completionRequest is the body of POST /v1/completions. Fields other
// APIs send (seed, top_p, user, ...) are read and ignored.
type completionRequest struct {
	Model       string          `json:"model"`
	Prompt      json.RawMessage `json:"prompt"`
	MaxTokens   *int            `json:"max_tokens"`
	Temperature *float64        `json:"temperature"`
	Logprobs    *int            `json:"logprobs"`
	Echo        bool            `json:"echo"`
	N           *int            `json:"n"`
	BestOf      *int            `json:"best_of"`
	Stream      bool            `json:"stream"`
	// vLLM's extensions.
	PromptLogprobs   *int  `json:"prompt_logprobs"`
	AddSpecialTokens *bool `json:"add_special_tokens"`
}

// completionResponse is OpenAI's text_completion object.
type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   usage              `json:"usage"`
}

type completionChoice struct {
	Index          int                 `json:"index"`
	Text           string              `json:"text"`
	Logprobs       *completionLogprobs `json:"logprobs"`
	FinishReason   string              `json:"finish_reason"`
	StopReason     *string             `json:"stop_reason"`
	PromptLogprobs []orderedMap        `json:"prompt_logprobs,omitempty"`
}

// completionLogprobs is the legacy logprobs object: one entry per token
// (the echoed prompt's, then the generated one's).
type completionLogprobs struct {
	TextOffset    []int        `json:"text_offset"`
	TokenLogprobs []*float64   `json:"token_logprobs"`
	Tokens        []string     `json:"tokens"`
	TopLogprobs   []orderedMap `json:"top_logprobs"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// promptLogprob is one entry of vLLM's prompt_logprobs maps.
type promptLogprob struct {
	Logprob      float64 `json:"logprob"`
	Rank         int     `json:"rank"`
	DecodedToken string  `json:"decoded_token"`
}

// greedyParams checks the sampling a request asks for: greedy, at most
// one token (max; nil: 1), one choice, no streaming.
func greedyParams(maxName string, max *int, temp *float64, n *int, stream bool) (int, *apiError) {
	gen := 1
	if max != nil {
		gen = *max
	}
	switch {
	case gen < 0 || gen > 1:
		return 0, badRequest(maxName, "%s %d: this server scores prompts and generates at most 1 token (0 or 1)", maxName, gen)
	case temp != nil && *temp != 0:
		return 0, badRequest("temperature", "temperature %g: this server is greedy only (temperature 0)", *temp)
	case n != nil && *n != 1:
		return 0, badRequest("n", "n %d: one choice per prompt only", *n)
	case stream:
		return 0, badRequest("stream", "streaming is not supported: the whole response comes at once")
	}
	return gen, nil
}

// topK checks a requested top-k (nil: none; -1: the whole vocabulary).
func (s *Server) topK(param string, k *int) (int, *apiError) {
	if k == nil {
		return 0, nil
	}
	v := *k
	if v == -1 {
		v = s.vocab
	}
	if v < 0 || v > s.cfg.MaxLogprobs || v > s.vocab {
		return 0, badRequest(param, "%s %d: want 0..%d (serve --max-logprobs)", param, *k, min(s.cfg.MaxLogprobs, s.vocab))
	}
	return v, nil
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) *apiError {
	release, e := s.admitScoring()
	if e != nil {
		return e
	}
	defer release()
	var req completionRequest
	if e := s.decode(w, r, &req); e != nil {
		return e
	}
	if e := s.checkModel(req.Model); e != nil {
		return e
	}
	gen, e := greedyParams("max_tokens", req.MaxTokens, req.Temperature, req.N, req.Stream)
	if e == nil && req.BestOf != nil && *req.BestOf != 1 {
		e = badRequest("best_of", "best_of %d: one choice per prompt only", *req.BestOf)
	}
	if e != nil {
		return e
	}
	k, e := s.topK("logprobs", req.Logprobs)
	if e != nil {
		return e
	}
	pk, e := s.topK("prompt_logprobs", req.PromptLogprobs)
	if e != nil {
		return e
	}
	addSpecial := req.AddSpecialTokens == nil || *req.AddSpecialTokens
	prompts, e := s.prompts(req.Prompt, "prompt", addSpecial)
	if e != nil {
		return e
	}
	echoLP := req.Echo && req.Logprobs != nil
	jobs := make([]*scoreJob, len(prompts))
	values := 0
	for i, p := range prompts {
		jobs[i] = &scoreJob{tokens: p, from: len(p), topK: max(k, pk), ranks: req.PromptLogprobs != nil, next: gen == 1}
		if echoLP || req.PromptLogprobs != nil {
			jobs[i].from = 0
			values += len(p) * (2 + max(k, pk))
		}
	}
	if e := checkValues(values); e != nil {
		return e
	}
	results, e := s.scoreAll(r.Context(), jobs)
	if e != nil {
		return e
	}
	release() // the queue's place: what is left is writing
	resp := completionResponse{ID: "cmpl-" + strconv.FormatInt(s.seq.Add(1), 10), Object: "text_completion",
		Created: time.Now().Unix(), Model: s.cfg.ModelName}
	for i, p := range prompts {
		resp.Choices = append(resp.Choices, s.choice(i, p, results[i], &req, k, pk))
		resp.Usage.PromptTokens += len(p)
		resp.Usage.CompletionTokens += gen
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// choice renders one prompt's results.
func (s *Server) choice(i int, p []int32, sc *scored, req *completionRequest, k, pk int) completionChoice {
	c := completionChoice{Index: i, FinishReason: "length"}
	if req.Echo {
		c.Text = s.tok.Decode(p)
	}
	if sc.next != nil {
		c.Text += s.tok.Piece(sc.next.id)
	}
	if req.Logprobs != nil {
		lps := &completionLogprobs{TextOffset: []int{}, TokenLogprobs: []*float64{}, Tokens: []string{}, TopLogprobs: []orderedMap{}}
		add := func(id int32, lp *float64, top orderedMap) {
			off := 0
			if n := len(lps.Tokens); n > 0 {
				off = lps.TextOffset[n-1] + runeLen(lps.Tokens[n-1])
			}
			lps.Tokens = append(lps.Tokens, s.tokenText(id))
			lps.TextOffset = append(lps.TextOffset, off)
			lps.TokenLogprobs = append(lps.TokenLogprobs, lp)
			lps.TopLogprobs = append(lps.TopLogprobs, top)
		}
		if req.Echo {
			add(p[0], nil, nil)
			for q := 1; q < len(p); q++ {
				o := &sc.pos[q-sc.first]
				add(o.id, ptr(finite(o.lp)), s.textTop(o, k))
			}
		}
		if sc.next != nil {
			add(sc.next.id, ptr(finite(sc.next.lp)), s.textTop(sc.next, k))
		}
		c.Logprobs = lps
	}
	if req.PromptLogprobs != nil {
		c.PromptLogprobs = make([]orderedMap, len(p))
		c.PromptLogprobs[0] = nil
		for q := 1; q < len(p); q++ {
			c.PromptLogprobs[q] = s.idTop(&sc.pos[q-sc.first], pk)
		}
	}
	return c
}

func ptr(v float64) *float64 { return &v }

// textTop is a position's top_logprobs map: the token itself, then the top
// k, keyed by text (a text met again keeps its first, larger entry).
func (s *Server) textTop(o *rowResult, k int) orderedMap {
	m := orderedMap{{s.tokenText(o.id), finite(o.lp)}}
	for _, t := range o.top[:k] {
		m = append(m, kv{s.tokenText(t.id), finite(t.lp)})
	}
	return m
}

// idTop is a position's prompt_logprobs map: the top k by rank, then the
// prompt token when it is not among them, keyed by id.
func (s *Server) idTop(o *rowResult, k int) orderedMap {
	m := make(orderedMap, 0, k+1)
	in := false
	for r, t := range o.top[:k] {
		rank := r + 1
		if t.id == o.id {
			in, rank = true, o.rank
		}
		m = append(m, kv{strconv.Itoa(int(t.id)), promptLogprob{finite(t.lp), rank, s.tokenText(t.id)}})
	}
	if !in {
		m = append(m, kv{strconv.Itoa(int(o.id)), promptLogprob{finite(o.lp), o.rank, s.tokenText(o.id)}})
	}
	return m
}

// orderedMap is a JSON object written in its order, a key met again
// dropped; nil is null.
type orderedMap []kv

type kv struct {
	key string
	val any
}

func (m orderedMap) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	seen := make(map[string]bool, len(m))
	for _, e := range m {
		if seen[e.key] {
			continue
		}
		seen[e.key] = true
		if len(seen) > 1 {
			b.WriteByte(',')
		}
		key, err := json.Marshal(e.key)
		if err != nil {
			return nil, err
		}
		val, err := json.Marshal(e.val)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.key, err)
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
