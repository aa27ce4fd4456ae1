package served

// apis.go owns each API's request for a window's log-probabilities and
// the checks of its answer: vLLM's prompt_logprobs (its own top-k per
// position), SGLang's /generate (top-k and the log-probabilities of ids
// named for the request), the OpenAI echo form (token log-probs, top-k
// by text). An answer of the wrong length, without the actual token's
// log-probability or with fewer top entries than asked is refused naming
// the position.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"plexbench/scoring"
)

// completionsReq is /v1/completions's request, in the vLLM and the
// OpenAI echo forms.
type completionsReq struct {
	Model          string  `json:"model"`
	Prompt         []int32 `json:"prompt"`
	MaxTokens      int     `json:"max_tokens"`
	Temperature    float64 `json:"temperature"`
	PromptLogprobs *int    `json:"prompt_logprobs,omitempty"`
	Echo           bool    `json:"echo,omitempty"`
	Logprobs       *int    `json:"logprobs,omitempty"`
}

// vllmEntry is one id of a prompt_logprobs position.
type vllmEntry struct {
	Logprob *float64 `json:"logprob"`
	Rank    int      `json:"rank"`
}

type vllmResp struct {
	Choices []struct {
		PromptLogprobs []map[string]vllmEntry `json:"prompt_logprobs"`
	} `json:"choices"`
}

// topWanted is how many top ids to ask for: the query's, or, from an
// API that cannot name ids (overlap), as many as the named ids when that
// is more (a larger overlap), within most.
func topWanted(q scoring.RowsQuery, most int, overlap bool) int {
	k := max(1, q.TopK)
	if overlap && len(q.Named) > 0 {
		k = max(k, len(q.Named[0]))
	}
	if most > 0 {
		k = min(k, most)
	}
	return k
}

// idLP is one id and its log-probability.
type idLP struct {
	id int32
	lp float64
}

// sortTop orders ids most probable first, lower id first among equals
// (the engine's top-k order).
func sortTop(v []idLP) {
	slices.SortFunc(v, func(a, b idLP) int {
		switch {
		case a.lp > b.lp:
			return -1
		case a.lp < b.lp:
			return 1
		}
		return int(a.id) - int(b.id)
	})
}

// fillRow sets a row from the target's log-probability, the position's
// top entries (sorted, at least k) and a lookup for named ids.
func fillRow(row *scoring.LogProbRow, target float64, top []idLP, k int, named []int32, lookup func(int32) (float64, bool)) {
	row.NLL = -target
	row.TopIDs, row.TopLP = row.TopIDs[:0], row.TopLP[:0]
	for _, t := range top[:k] {
		row.TopIDs, row.TopLP = append(row.TopIDs, t.id), append(row.TopLP, float32(t.lp))
	}
	row.Named = row.Named[:0]
	for _, id := range named {
		lp, ok := lookup(id)
		if !ok {
			row.Named = append(row.Named, float32(math.NaN()))
			continue
		}
		row.Named = append(row.Named, float32(lp))
	}
}

func (e *Engine) vllmRows(ctx context.Context, input []int32, from int, q scoring.RowsQuery, out []scoring.LogProbRow) error {
	k := topWanted(q, e.maxTopK, true)
	req := completionsReq{Model: e.model, Prompt: input, MaxTokens: 1, PromptLogprobs: &k}
	var resp vllmResp
	if err := e.c.do(ctx, "/v1/completions", req, &resp); err != nil {
		return err
	}
	if len(resp.Choices) == 0 {
		return fmt.Errorf("%w %s: /v1/completions answered no choices", ErrServer, e.c.base)
	}
	pl := resp.Choices[0].PromptLogprobs
	if len(pl) != len(input) {
		return fmt.Errorf("%w %s: prompt_logprobs holds %d positions for a prompt of %d tokens", ErrServer, e.c.base, len(pl), len(input))
	}
	var top []idLP
	for i := range out {
		p := from + i + 1
		m := pl[p]
		top = top[:0]
		for s, en := range m {
			id, err := strconv.ParseInt(s, 10, 32)
			if err != nil || en.Logprob == nil {
				return fmt.Errorf("%w %s: prompt_logprobs position %d: entry %q is not a token id with a logprob", ErrServer, e.c.base, p, s)
			}
			top = append(top, idLP{int32(id), *en.Logprob})
		}
		tgt, ok := m[strconv.Itoa(int(input[p]))]
		if !ok || tgt.Logprob == nil {
			return fmt.Errorf("%w %s: prompt_logprobs position %d lacks the prompt's token %d", ErrServer, e.c.base, p, input[p])
		}
		if len(top) < k {
			return fmt.Errorf("%w %s: prompt_logprobs position %d holds %d log-probabilities, %d asked", ErrServer, e.c.base, p, len(top), k)
		}
		sortTop(top)
		var named []int32
		if q.Named != nil {
			named = q.Named[i]
		}
		fillRow(&out[i], *tgt.Logprob, top, k, named, func(id int32) (float64, bool) {
			en, ok := m[strconv.Itoa(int(id))]
			if !ok || en.Logprob == nil {
				return 0, false
			}
			return *en.Logprob, true
		})
	}
	return nil
}

// sglangReq is SGLang's /generate request.
type sglangReq struct {
	InputIDs        []int32        `json:"input_ids"`
	SamplingParams  map[string]any `json:"sampling_params"`
	ReturnLogprob   bool           `json:"return_logprob"`
	LogprobStartLen int            `json:"logprob_start_len"`
	TopLogprobsNum  int            `json:"top_logprobs_num"`
	TokenIDsLogprob []int32        `json:"token_ids_logprob,omitempty"`
}

// triple is SGLang's [logprob, id, text] (logprob null at a prompt's
// first position).
type triple struct {
	lp *float64
	id int32
}

func (t *triple) UnmarshalJSON(b []byte) error {
	var v []json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if len(v) < 2 {
		return fmt.Errorf("a log-probability entry of %d fields, want [logprob, id, text]", len(v))
	}
	if err := json.Unmarshal(v[0], &t.lp); err != nil {
		return err
	}
	return json.Unmarshal(v[1], &t.id)
}

type sglangResp struct {
	MetaInfo struct {
		InputTokenLogprobs    []triple   `json:"input_token_logprobs"`
		InputTopLogprobs      [][]triple `json:"input_top_logprobs"`
		InputTokenIDsLogprobs [][]triple `json:"input_token_ids_logprobs"`
	} `json:"meta_info"`
}

// sglangGroupValues bounds a request's named log-probabilities (rows ×
// the union of their named ids): token_ids_logprob is one list for the
// whole request, returned at every position, so a window's rows go in
// groups whose union stays small.
const sglangGroupValues = 1 << 18

// sglangMaxUnion bounds a request's token_ids_logprob (plexbench serve
// takes at most 4096).
const sglangMaxUnion = 4096

// sglangGroups cuts rows into consecutive groups [a, b) whose union of
// named ids times rows stays within sglangGroupValues.
func sglangGroups(named [][]int32, n int) [][2]int {
	if named == nil {
		return [][2]int{{0, n}}
	}
	var groups [][2]int
	a, union := 0, map[int32]bool{}
	for i := range n {
		add := 0
		for _, id := range named[i] {
			if !union[id] {
				add++
			}
		}
		if i > a && ((i-a+1)*(len(union)+add) > sglangGroupValues || len(union)+add > sglangMaxUnion) {
			groups = append(groups, [2]int{a, i})
			a, union = i, map[int32]bool{}
		}
		for _, id := range named[i] {
			union[id] = true
		}
	}
	return append(groups, [2]int{a, n})
}

func (e *Engine) sglangRows(ctx context.Context, input []int32, from int, q scoring.RowsQuery, out []scoring.LogProbRow) error {
	k := topWanted(q, e.maxTopK, false)
	for _, g := range sglangGroups(q.Named, len(out)) {
		if err := e.sglangGroup(ctx, input, from, q, k, g[0], g[1], out); err != nil {
			return err
		}
	}
	return nil
}

// sglangGroup asks for rows [a, b): the prompt ends at the last row's
// target and log-probabilities start at row a's position.
func (e *Engine) sglangGroup(ctx context.Context, input []int32, from int, q scoring.RowsQuery, k, a, b int, out []scoring.LogProbRow) error {
	prompt, start := input[:from+b+1], from+a
	req := sglangReq{InputIDs: prompt, ReturnLogprob: true, LogprobStartLen: start, TopLogprobsNum: k,
		SamplingParams: map[string]any{"max_new_tokens": 0, "temperature": 0}}
	if q.Named != nil {
		seen := map[int32]bool{}
		for _, ids := range q.Named[a:b] {
			for _, id := range ids {
				if !seen[id] {
					seen[id] = true
					req.TokenIDsLogprob = append(req.TokenIDsLogprob, id)
				}
			}
		}
	}
	var resp sglangResp
	if err := e.c.do(ctx, "/generate", req, &resp); err != nil {
		return err
	}
	mi, n := &resp.MetaInfo, len(prompt)-start
	if len(mi.InputTokenLogprobs) != n || len(mi.InputTopLogprobs) != n || (q.Named != nil && len(mi.InputTokenIDsLogprobs) != n) {
		return fmt.Errorf("%w %s: /generate returned %d token, %d top and %d named log-probability positions from %d of a %d-token prompt, want %d",
			ErrServer, e.c.base, len(mi.InputTokenLogprobs), len(mi.InputTopLogprobs), len(mi.InputTokenIDsLogprobs), start, len(prompt), n)
	}
	var top []idLP
	for i := a; i < b; i++ {
		p := from + i + 1 // the target's position
		j := p - start
		t := mi.InputTokenLogprobs[j]
		if t.lp == nil || t.id != input[p] {
			return fmt.Errorf("%w %s: /generate position %d: the log-probability of the prompt's token %d is missing (got id %d)",
				ErrServer, e.c.base, p, input[p], t.id)
		}
		top = top[:0]
		for _, x := range mi.InputTopLogprobs[j] {
			if x.lp != nil {
				top = append(top, idLP{x.id, *x.lp})
			}
		}
		if len(top) < k {
			return fmt.Errorf("%w %s: /generate position %d holds %d top log-probabilities, %d asked", ErrServer, e.c.base, p, len(top), k)
		}
		sortTop(top)
		var named []int32
		var byID map[int32]float64
		if q.Named != nil {
			named, byID = q.Named[i], map[int32]float64{}
			for _, x := range mi.InputTokenIDsLogprobs[j] {
				if x.lp != nil {
					byID[x.id] = *x.lp
				}
			}
		}
		fillRow(&out[i], *t.lp, top, k, named, func(id int32) (float64, bool) {
			lp, ok := byID[id]
			if !ok {
				return 0, false
			}
			return lp, true
		})
		for _, lp := range out[i].Named {
			if math.IsNaN(float64(lp)) {
				return fmt.Errorf("%w %s: /generate position %d lacks the log-probability of a named id", ErrServer, e.c.base, p)
			}
		}
	}
	return nil
}

type openaiResp struct {
	Choices []struct {
		Logprobs struct {
			TokenLogprobs []*float64           `json:"token_logprobs"`
			TopLogprobs   []map[string]float64 `json:"top_logprobs"`
		} `json:"logprobs"`
	} `json:"choices"`
}

// openaiRows reads the echo form: token log-probabilities by position,
// the top by text only, so the argmax id is known only when it is the
// token's own; no named ids.
func (e *Engine) openaiRows(ctx context.Context, input []int32, from int, q scoring.RowsQuery, out []scoring.LogProbRow) error {
	if q.Named != nil || q.TopK > 0 {
		return fmt.Errorf("%w %s: the OpenAI echo form names top tokens by text, not id: it gives perplexity only (for a KLD or a base use --api vllm or sglang)",
			ErrServer, e.c.base)
	}
	one := 1
	req := completionsReq{Model: e.model, Prompt: input, MaxTokens: 0, Echo: true, Logprobs: &one}
	var resp openaiResp
	if err := e.c.do(ctx, "/v1/completions", req, &resp); err != nil {
		return err
	}
	if len(resp.Choices) == 0 {
		return fmt.Errorf("%w %s: /v1/completions answered no choices", ErrServer, e.c.base)
	}
	lps := resp.Choices[0].Logprobs
	if len(lps.TokenLogprobs) < len(input) || len(lps.TopLogprobs) < len(input) {
		return fmt.Errorf("%w %s: the echo holds %d token log-probabilities for a prompt of %d tokens", ErrServer, e.c.base, len(lps.TokenLogprobs), len(input))
	}
	for i := range out {
		p := from + i + 1
		lp := lps.TokenLogprobs[p]
		if lp == nil {
			return fmt.Errorf("%w %s: the echo lacks the log-probability of position %d", ErrServer, e.c.base, p)
		}
		best := math.Inf(-1)
		for _, v := range lps.TopLogprobs[p] {
			best = max(best, v)
		}
		arg := int32(-1)
		if *lp >= best {
			arg, best = input[p], *lp
		}
		out[i].NLL = -*lp
		out[i].TopIDs, out[i].TopLP = append(out[i].TopIDs[:0], arg), append(out[i].TopLP[:0], float32(best))
	}
	return nil
}
