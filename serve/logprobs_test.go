package serve

import (
	"context"
	"math"
	"sort"
	"strconv"
	"testing"

	"plexbench/engine"
	"plexbench/scoring"
)

// inProcess is the scoring path's log-likelihoods of ids, from scoring.Run
// on this engine: of every token but the first (a sliding window of
// len(ids) tokens), and of the second half (llama-perplexity's chunk of
// len(ids) tokens scores targets len/2+1..len-1). The text run is ids
// twice, as both methods need two windows' tokens; only the first window
// is scored.
func inProcess(t *testing.T, m *engine.Model, ids []int32) (all, half float64) {
	t.Helper()
	tokens := append(append([]int32{}, ids...), ids...)
	for i, method := range []string{scoring.MethodSliding, scoring.MethodChunks} {
		rep, err := scoring.Run(context.Background(), m, scoring.Request{Tokens: tokens, Method: method,
			Ctx: len(ids), Chunks: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Windows) != 1 {
			t.Fatalf("%s: %d windows", method, len(rep.Windows))
		}
		if i == 0 {
			all = -rep.Windows[0].NLLSum
		} else {
			half = -rep.Windows[0].NLLSum
		}
	}
	return all, half
}

func sum(v []*float64) float64 {
	s := 0.0
	for _, x := range v {
		s += *x
	}
	return s
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

// TestLocalCompletionsLogLikelihood: requests in lm-evaluation-harness's
// local-completions shape (prompt as a text, as token ids, and as a batch
// of id lists; echo, logprobs 1, max_tokens 0 and 1, temperature 0) return
// token_logprobs, first null, whose sum over a continuation equals the
// scoring path's log-likelihood of it to 1e-9: lm-eval's sum
// token_logprobs[ctxlen:-1] against llama-perplexity's chunk (the second
// half of the prompt), and the whole echo against a sliding window.
func TestLocalCompletionsLogLikelihood(t *testing.T) {
	t.Parallel()
	m := loadModel(t, "stories260K-f32.gguf")
	srv, url := start(t, m, Config{})
	url += "/v1/completions"
	text := tinyStories(t, 2000)
	ids, err := m.Tokenize(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) < 2*testKV {
		t.Fatalf("%d tokens", len(ids))
	}
	sentence := "Once upon a time, there was a little girl named Lily. She loved to play outside in the park."
	sentIDs, _ := m.Tokenize(sentence)
	worst := 0.0
	type form struct {
		name   string
		prompt any
		ids    []int32
	}
	forms := []form{
		{"text", sentence, sentIDs},
		{"ids 128", ids[:128], ids[:128]},
		{"ids 37", ids[:37], ids[:37]},
	}
	for _, f := range forms {
		all, half := inProcess(t, m, f.ids)
		var lp [2][]*float64
		for gen := range 2 {
			var c completion
			postOK(t, url, map[string]any{"model": srv.ModelName(), "prompt": f.prompt, "max_tokens": gen,
				"temperature": 0, "logprobs": 1, "seed": 1234, "echo": true}, &c)
			if len(c.Choices) != 1 || c.Choices[0].Logprobs == nil {
				t.Fatalf("%s: %d choices", f.name, len(c.Choices))
			}
			l := c.Choices[0].Logprobs
			n := len(f.ids)
			if len(l.TokenLogprobs) != n+gen || len(l.Tokens) != n+gen || len(l.TopLogprobs) != n+gen || len(l.TextOffset) != n+gen {
				t.Fatalf("%s max_tokens %d: %d token_logprobs, %d tokens for a prompt of %d", f.name, gen, len(l.TokenLogprobs), len(l.Tokens), n)
			}
			if l.TokenLogprobs[0] != nil || l.TopLogprobs[0] != nil {
				t.Errorf("%s: the first token's log-probability is %v, want null", f.name, *l.TokenLogprobs[0])
			}
			if c.Usage.PromptTokens != n || c.Usage.CompletionTokens != gen {
				t.Errorf("%s: usage %+v", f.name, c.Usage)
			}
			lp[gen] = l.TokenLogprobs
			// lm-eval: ctxlen tokens of context, the rest the continuation.
			ctxlen := n/2 + 1
			cont := l.TokenLogprobs[ctxlen:n]
			if gen == 1 {
				cont = l.TokenLogprobs[ctxlen : len(l.TokenLogprobs)-1]
				g := l.TokenLogprobs[n]
				best := math.Inf(-1)
				for _, v := range l.TopLogprobs[n] {
					best = max(best, v)
				}
				if *g != best {
					t.Errorf("%s: the generated token's log-probability %v is not the top one %v", f.name, *g, best)
				}
			}
			if got := sum(cont); !near(got, half) {
				t.Errorf("%s max_tokens %d: continuation log-likelihood %.17g, in-process %.17g", f.name, gen, got, half)
			}
			if got := sum(l.TokenLogprobs[1:n]); !near(got, all) {
				t.Errorf("%s max_tokens %d: echo log-likelihood %.17g, in-process %.17g", f.name, gen, got, all)
			}
			worst = max(worst, math.Abs(sum(cont)-half), math.Abs(sum(l.TokenLogprobs[1:n])-all))
		}
		for i := 1; i < len(f.ids); i++ {
			if *lp[0][i] != *lp[1][i] {
				t.Errorf("%s: position %d: %v with max_tokens 0, %v with 1", f.name, i, *lp[0][i], *lp[1][i])
			}
		}
	}
	// A batch of id lists (lm-eval with batch_size > 1): one choice per
	// prompt, each as the prompt alone.
	var c completion
	postOK(t, url, map[string]any{"prompt": [][]int32{ids[:128], ids[:37]}, "max_tokens": 1, "temperature": 0,
		"logprobs": 1, "echo": true}, &c)
	if len(c.Choices) != 2 {
		t.Fatalf("batch: %d choices", len(c.Choices))
	}
	for i, p := range [][]int32{ids[:128], ids[:37]} {
		all, _ := inProcess(t, m, p)
		ch := c.Choices[i]
		if ch.Index != i || !near(sum(ch.Logprobs.TokenLogprobs[1:len(p)]), all) {
			t.Errorf("batch choice %d (index %d): %v, in-process %v", i, ch.Index, sum(ch.Logprobs.TokenLogprobs[1:len(p)]), all)
		}
	}
	t.Logf("largest difference from the in-process log-likelihoods: %.3g", worst)
}

// TestPromptLogprobs: vLLM's prompt_logprobs over the whole vocabulary
// (-1) is each position's full distribution: its probabilities sum to 1,
// the prompt token's entry equals the echo's token_logprobs, and each
// rank is the count of ids at least as likely; with k = 3 each map holds
// the top 3 of that distribution plus the prompt token when it is not
// among them.
func TestPromptLogprobs(t *testing.T) {
	t.Parallel()
	m := loadModel(t, "stories260K-q8_0.gguf")
	_, url := start(t, m, Config{MaxLogprobs: 512})
	url += "/v1/completions"
	ids, _ := m.Tokenize(tinyStories(t, 300))
	ids = ids[:40]
	var full, top completion
	postOK(t, url, map[string]any{"prompt": ids, "max_tokens": 0, "prompt_logprobs": -1, "logprobs": 0, "echo": true}, &full)
	postOK(t, url, map[string]any{"prompt": ids, "max_tokens": 0, "prompt_logprobs": 3}, &top)
	fp, tp := full.Choices[0].PromptLogprobs, top.Choices[0].PromptLogprobs
	if len(fp) != len(ids) || len(tp) != len(ids) || fp[0] != nil || tp[0] != nil {
		t.Fatalf("prompt_logprobs of %d and %d entries for %d tokens (first %v, %v)", len(fp), len(tp), len(ids), fp[0], tp[0])
	}
	echo := full.Choices[0].Logprobs.TokenLogprobs
	for p := 1; p < len(ids); p++ {
		if len(fp[p]) != 512 {
			t.Fatalf("position %d: %d entries, want the vocabulary's 512", p, len(fp[p]))
		}
		type e struct {
			id int
			lp float64
		}
		var all []e
		s := 0.0
		for k, v := range fp[p] {
			id, _ := strconv.Atoi(k)
			all = append(all, e{id, v.Logprob})
			s += math.Exp(v.Logprob)
		}
		if math.Abs(s-1) > 1e-6 {
			t.Errorf("position %d: probabilities sum to %v", p, s)
		}
		tok := fp[p][strconv.Itoa(int(ids[p]))]
		if tok.Logprob != *echo[p] {
			t.Errorf("position %d: prompt token %v, echo %v", p, tok.Logprob, *echo[p])
		}
		rank := 0
		for _, x := range all {
			if x.lp >= tok.Logprob {
				rank++
			}
		}
		if tok.Rank != rank {
			t.Errorf("position %d: rank %d, counted %d", p, tok.Rank, rank)
		}
		sort.Slice(all, func(i, j int) bool { return all[i].lp > all[j].lp || (all[i].lp == all[j].lp && all[i].id < all[j].id) })
		want := map[int]bool{all[0].id: true, all[1].id: true, all[2].id: true, int(ids[p]): true}
		if len(tp[p]) != len(want) {
			t.Errorf("position %d: %d entries with k 3, want %d", p, len(tp[p]), len(want))
		}
		for k, v := range tp[p] {
			id, _ := strconv.Atoi(k)
			if !want[id] || v.Logprob != fp[p][k].Logprob || v.DecodedToken != m.Piece(int32(id)) && id != 1 {
				t.Errorf("position %d: entry %s %+v not in the top 3 %v of the full row", p, k, v, all[:3])
			}
		}
	}
}

// TestGenerate: SGLang's /generate on token ids returns, from
// logprob_start_len, input_token_logprobs equal to the echo's (first null
// at position 0), input_top_logprobs equal to prompt_logprobs' top k, and
// input_token_ids_logprobs equal to the full row's values of the named
// ids; a batch answers a list; its sum equals the in-process
// log-likelihood.
func TestGenerate(t *testing.T) {
	t.Parallel()
	m := loadModel(t, "stories260K-f32.gguf")
	_, url := start(t, m, Config{MaxLogprobs: 512})
	ids, _ := m.Tokenize(tinyStories(t, 400))
	ids = ids[:50]
	named := []int32{5, 300, ids[7], 0}
	var full completion
	postOK(t, url+"/v1/completions", map[string]any{"prompt": ids, "max_tokens": 1, "prompt_logprobs": -1, "logprobs": 2, "echo": true}, &full)
	type meta struct {
		Text      string  `json:"text"`
		OutputIDs []int32 `json:"output_ids"`
		MetaInfo  struct {
			PromptTokens int            `json:"prompt_tokens"`
			Input        [][3]any       `json:"input_token_logprobs"`
			InputTop     [][][3]any     `json:"input_top_logprobs"`
			InputIDs     [][][3]any     `json:"input_token_ids_logprobs"`
			Output       [][3]any       `json:"output_token_logprobs"`
			OutputIDs    [][][3]any     `json:"output_token_ids_logprobs"`
			FinishReason map[string]any `json:"finish_reason"`
		} `json:"meta_info"`
	}
	body := map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 1, "temperature": 0},
		"return_logprob": true, "logprob_start_len": 0, "top_logprobs_num": 2, "token_ids_logprob": named}
	var g meta
	postOK(t, url+"/generate", body, &g)
	fp, echo := full.Choices[0].PromptLogprobs, full.Choices[0].Logprobs
	mi := g.MetaInfo
	if len(mi.Input) != len(ids) || len(mi.InputTop) != len(ids) || len(mi.InputIDs) != len(ids) || mi.PromptTokens != len(ids) {
		t.Fatalf("%d input log-probabilities, %d top, %d named for %d tokens", len(mi.Input), len(mi.InputTop), len(mi.InputIDs), len(ids))
	}
	if mi.Input[0][0] != nil || mi.InputTop[0] != nil || mi.InputIDs[0] != nil {
		t.Errorf("position 0: %v %v %v, want null log-probabilities", mi.Input[0], mi.InputTop[0], mi.InputIDs[0])
	}
	s := 0.0
	for p := 1; p < len(ids); p++ {
		lp, id := mi.Input[p][0].(float64), int32(mi.Input[p][1].(float64))
		s += lp
		if id != ids[p] || lp != *echo.TokenLogprobs[p] {
			t.Errorf("position %d: [%v %v], echo %v of %d", p, lp, id, *echo.TokenLogprobs[p], ids[p])
		}
		for k, e := range mi.InputTop[p] {
			if len(mi.InputTop[p]) != 2 || fp[p][strconv.Itoa(int(e[1].(float64)))].Logprob != e[0].(float64) {
				t.Errorf("position %d: top %d %v", p, k, e)
			}
		}
		for k, e := range mi.InputIDs[p] {
			if int32(e[1].(float64)) != named[k] || fp[p][strconv.Itoa(int(named[k]))].Logprob != e[0].(float64) {
				t.Errorf("position %d: named id %d: %v, full row %v", p, named[k], e, fp[p][strconv.Itoa(int(named[k]))])
			}
		}
	}
	all, _ := inProcess(t, m, ids)
	if !near(s, all) {
		t.Errorf("input log-likelihood %.17g, in-process %.17g", s, all)
	}
	n := len(ids)
	if len(g.OutputIDs) != 1 || len(mi.Output) != 1 || echo.Tokens[n] != m.Piece(g.OutputIDs[0]) ||
		mi.Output[0][0].(float64) != *echo.TokenLogprobs[n] || len(mi.OutputIDs) != 1 || len(mi.OutputIDs[0]) != len(named) {
		t.Errorf("output %v %v, echo's generated %q %v", g.OutputIDs, mi.Output, echo.Tokens[n], *echo.TokenLogprobs[n])
	}
	// logprob_start_len 30: positions 30.. only; a batch answers a list.
	body["input_ids"], body["logprob_start_len"] = [][]int32{ids, ids[:40]}, 30
	var batch []meta
	postOK(t, url+"/generate", body, &batch)
	if len(batch) != 2 || len(batch[0].MetaInfo.Input) != n-30 || len(batch[1].MetaInfo.Input) != 10 {
		t.Fatalf("batch: %d answers", len(batch))
	}
	for p := 30; p < n; p++ {
		if batch[0].MetaInfo.Input[p-30][0].(float64) != *echo.TokenLogprobs[p] {
			t.Errorf("start 30: position %d: %v, echo %v", p, batch[0].MetaInfo.Input[p-30], *echo.TokenLogprobs[p])
		}
	}
}
