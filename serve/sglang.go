package serve

// sglang.go owns POST /generate in SGLang's native shape: input_ids or
// text (one prompt or a batch), sampling_params with max_new_tokens 0 or
// 1 at temperature 0, and with return_logprob the meta_info lists
// input_token_logprobs ([logprob, id, text] per position from
// logprob_start_len, the first logprob null at position 0),
// input_top_logprobs (top_logprobs_num such triples per position) and
// input_token_ids_logprobs (the ids of token_ids_logprob at every
// position), with their output_* twins for the generated token. Texts in
// the triples are null unless return_text_in_logprobs.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// generateRequest is the body of POST /generate. A per-request field may
// be one value for every prompt or a list with one per prompt.
type generateRequest struct {
	Text                 json.RawMessage `json:"text"`
	InputIDs             json.RawMessage `json:"input_ids"`
	SamplingParams       json.RawMessage `json:"sampling_params"`
	ReturnLogprob        json.RawMessage `json:"return_logprob"`
	LogprobStartLen      json.RawMessage `json:"logprob_start_len"`
	TopLogprobsNum       json.RawMessage `json:"top_logprobs_num"`
	TokenIDsLogprob      json.RawMessage `json:"token_ids_logprob"`
	ReturnTextInLogprobs bool            `json:"return_text_in_logprobs"`
	Stream               bool            `json:"stream"`
}

type samplingParams struct {
	MaxNewTokens *int     `json:"max_new_tokens"`
	Temperature  *float64 `json:"temperature"`
	N            *int     `json:"n"`
}

// generateJob is one prompt of a /generate request.
type generateJob struct {
	gen       int
	logprob   bool
	startLen  int
	topK      int
	ids       []int32
	idsGiven  bool
	batchItem bool
}

type generateResponse struct {
	Text      string         `json:"text"`
	OutputIDs []int32        `json:"output_ids"`
	MetaInfo  map[string]any `json:"meta_info"`
}

// triple is SGLang's [logprob, token id, text] (logprob and text may be
// null).
type triple struct {
	lp   *float64
	id   int32
	text *string
}

func (t triple) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{t.lp, t.id, t.text})
}

func (s *Server) generate(w http.ResponseWriter, r *http.Request) *apiError {
	release, e := s.admitScoring()
	if e != nil {
		return e
	}
	defer release()
	var req generateRequest
	if e := s.decode(w, r, &req); e != nil {
		return e
	}
	if req.Stream {
		return badRequest("stream", "streaming is not supported: the whole response comes at once")
	}
	hasText, hasIDs := given(req.Text), given(req.InputIDs)
	var prompts [][]int32
	switch {
	case hasText == hasIDs:
		return badRequest("input_ids", "give either text or input_ids")
	case hasText:
		prompts, e = s.prompts(req.Text, "text", true)
	default:
		prompts, e = s.prompts(req.InputIDs, "input_ids", false)
	}
	if e != nil {
		return e
	}
	batch := bytes.HasPrefix(bytes.TrimSpace(req.Text), []byte("[")) ||
		bytes.HasPrefix(bytes.TrimSpace(req.InputIDs), []byte("[[")) ||
		(hasIDs && len(prompts) > 1)
	jobs := make([]generateJob, len(prompts))
	values := 0
	for i, p := range prompts {
		g := &jobs[i]
		if e := s.generateJob(&req, i, len(prompts), batch, g, len(p)); e != nil {
			return e
		}
		values += (len(p) - g.startLen) * (1 + g.topK + len(g.ids))
	}
	if e := checkValues(values); e != nil {
		return e
	}
	sjobs := make([]*scoreJob, len(prompts))
	for i, p := range prompts {
		g := &jobs[i]
		sjobs[i] = &scoreJob{tokens: p, from: len(p), topK: g.topK, ids: g.ids, next: g.gen == 1}
		if g.logprob {
			sjobs[i].from = g.startLen
		}
	}
	results, e := s.scoreAll(r.Context(), sjobs)
	if e != nil {
		return e
	}
	release() // the queue's place: what is left is writing
	out := make([]generateResponse, len(prompts))
	for i, p := range prompts {
		out[i] = s.generateResponse(p, results[i], &jobs[i], req.ReturnTextInLogprobs)
	}
	if batch {
		writeJSON(w, http.StatusOK, out)
	} else {
		writeJSON(w, http.StatusOK, out[0])
	}
	return nil
}

// generateJob reads prompt i's parameters (of n) into g.
func (s *Server) generateJob(req *generateRequest, i, n int, batch bool, g *generateJob, length int) *apiError {
	var sp samplingParams
	if e := item(req.SamplingParams, "sampling_params", i, n, batch, &sp); e != nil {
		return e
	}
	gen, e := greedyParams("sampling_params.max_new_tokens", sp.MaxNewTokens, sp.Temperature, sp.N, false)
	if e != nil {
		return e
	}
	g.gen, g.startLen = gen, -1
	if e := item(req.ReturnLogprob, "return_logprob", i, n, batch, &g.logprob); e != nil {
		return e
	}
	if e := item(req.LogprobStartLen, "logprob_start_len", i, n, batch, &g.startLen); e != nil {
		return e
	}
	var k *int
	if e := item(req.TopLogprobsNum, "top_logprobs_num", i, n, batch, &k); e != nil {
		return e
	}
	if g.topK, e = s.topK("top_logprobs_num", k); e != nil {
		return e
	}
	if given(req.TokenIDsLogprob) {
		var raw json.RawMessage
		perPrompt := bytes.HasPrefix(bytes.TrimSpace(req.TokenIDsLogprob), []byte("[["))
		if e := item(req.TokenIDsLogprob, "token_ids_logprob", i, n, perPrompt, &raw); e != nil {
			return e
		}
		ids, e := s.idsOf(raw, "token_ids_logprob", maxNamedIDs)
		if e != nil {
			return e
		}
		g.idsGiven, g.ids = true, ids
	}
	switch {
	case !g.logprob:
		g.startLen = length
	case g.startLen == -1:
		g.startLen = length // SGLang's default: the generated token's log-probabilities only
	case g.startLen < 0 || g.startLen >= length:
		return badRequest("logprob_start_len", "logprob_start_len %d: want -1 or 0..%d (the prompt has %d tokens)", g.startLen, length-1, length)
	}
	return nil
}

// given reports whether a raw field is present and not null.
func given(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// item reads prompt i's value of a field into v: the field itself, or,
// when the request is a batch and the field a list of n, its i-th element.
func item(raw json.RawMessage, name string, i, n int, batch bool, v any) *apiError {
	if !given(raw) {
		return nil
	}
	if batch && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return badRequest(name, "%s: %v", name, err)
		}
		if len(list) != n {
			return badRequest(name, "%s has %d entries for %d prompts", name, len(list), n)
		}
		raw = list[i]
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return badRequest(name, "%s: %v", name, err)
	}
	return nil
}

// generateResponse renders one prompt's results.
func (s *Server) generateResponse(p []int32, sc *scored, g *generateJob, withText bool) generateResponse {
	text := func(id int32) *string {
		if !withText {
			return nil
		}
		t := s.tokenText(id)
		return &t
	}
	tri := func(lp float64, id int32) triple { v := finite(lp); return triple{&v, id, text(id)} }
	out := generateResponse{OutputIDs: []int32{}}
	meta := map[string]any{
		"id":                strconv.FormatInt(s.seq.Add(1), 10),
		"finish_reason":     map[string]any{"type": "length", "length": g.gen},
		"prompt_tokens":     len(p),
		"completion_tokens": g.gen,
		"cached_tokens":     0,
	}
	if sc.next != nil {
		out.Text = s.tok.Piece(sc.next.id)
		out.OutputIDs = append(out.OutputIDs, sc.next.id)
	}
	if g.logprob {
		var in, inTop, inIDs []any
		for q := g.startLen; q < len(p); q++ {
			if q == 0 {
				in = append(in, triple{nil, p[0], text(p[0])})
				inTop, inIDs = append(inTop, nil), append(inIDs, nil)
				continue
			}
			o := &sc.pos[q-sc.first]
			in = append(in, tri(o.lp, o.id))
			inTop = append(inTop, s.triples(o.top, nil, tri))
			inIDs = append(inIDs, s.triples(nil, o.named, tri, g.ids...))
		}
		out0, outTop, outIDs := []any{}, []any{}, []any{}
		if n := sc.next; n != nil {
			out0 = append(out0, tri(n.lp, n.id))
			outTop = append(outTop, s.triples(n.top, nil, tri))
			outIDs = append(outIDs, s.triples(nil, n.named, tri, g.ids...))
		}
		meta["input_token_logprobs"], meta["output_token_logprobs"] = orEmpty(in), out0
		if g.topK > 0 {
			meta["input_top_logprobs"], meta["output_top_logprobs"] = orEmpty(inTop), outTop
		}
		if g.idsGiven {
			meta["input_token_ids_logprobs"], meta["output_token_ids_logprobs"] = orEmpty(inIDs), outIDs
		}
	}
	out.MetaInfo = meta
	return out
}

// triples is a position's list of triples: its top entries, or the named
// ids with their log-probabilities.
func (s *Server) triples(top []idLogprob, named []float64, tri func(float64, int32) triple, ids ...int32) []triple {
	out := make([]triple, 0, len(top)+len(ids))
	for _, t := range top {
		out = append(out, tri(t.lp, t.id))
	}
	for k, id := range ids {
		out = append(out, tri(named[k], id))
	}
	return out
}

// orEmpty is v, or an empty list for JSON rather than null.
func orEmpty(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}
