package serve

import (
	"context"
	"math"
	"slices"
	"testing"
	"unicode/utf8"

	"plexbench/internal/choicetest"
	"plexbench/scoring"
)

// TestHellaSwagThroughServer scores HellaSwag through the server as
// lm-evaluation-harness's local-completions does — each ending a request
// of context + " " + ending tokenized by the server's /tokenize (BOS
// added, as lm-eval's add_bos_token=True), the continuation the tokens of
// the whole after the context's, its log-likelihood the sum of
// token_logprobs[ctxlen:-1], acc by that sum, acc_norm by it over the
// ending's length in characters, acc_bytes over its bytes — and checks it
// task for task against the in-process HellaSwag (llama-perplexity's
// scoring): the same token sequences, each ending's mean log-probability
// after the four sequences' common prefix equal to the in-process score
// (which llama.cpp keeps in float: 1e-5), and the same chosen ending.
func TestHellaSwagThroughServer(t *testing.T) {
	t.Parallel()
	m := loadModel(t, "stories260K-f32.gguf")
	srv, url := start(t, m, Config{})
	tasks := choicetest.HellaSwagTasks(t, 40)
	rep, err := scoring.RunHellaSwag(context.Background(), m, scoring.HellaSwagRequest{Tasks: tasks,
		ChoiceOptions: scoring.ChoiceOptions{Count: 24}})
	if err != nil {
		t.Fatal(err)
	}
	tokenize := func(text string) []int32 {
		var r struct {
			Tokens []int32 `json:"tokens"`
		}
		postOK(t, url+"/tokenize", map[string]any{"model": srv.ModelName(), "prompt": text, "add_special_tokens": true}, &r)
		return r.Tokens
	}
	var acc, accNorm, accBytes, llamaCorrect, same int
	worst := 0.0
	for _, res := range rep.HellaSwag.Results {
		task := tasks[res.Task]
		ctxEnc := tokenize(task.Context)
		var prompts, wholes [][]int32
		var ctxlens []int
		for _, e := range task.Endings {
			whole := tokenize(task.Context + " " + e)
			in, _ := m.Tokenize(task.Context + " " + e)
			if !slices.Equal(whole, in) {
				t.Fatalf("task %d: /tokenize gives %v, the in-process task %v", res.Task, whole, in)
			}
			prompts = append(prompts, append(slices.Clone(ctxEnc), whole[min(len(ctxEnc), len(whole)):]...))
			wholes = append(wholes, whole)
			ctxlens = append(ctxlens, len(ctxEnc))
		}
		body := map[string]any{"model": srv.ModelName(), "prompt": append(slices.Clone(prompts), wholes...),
			"temperature": 0, "max_tokens": 1, "logprobs": 1, "seed": 1234, "echo": true}
		var c completion
		postOK(t, url+"/v1/completions", body, &c)
		if len(c.Choices) != 8 {
			t.Fatalf("task %d: %d choices for 8 prompts", res.Task, len(c.Choices))
		}
		// lm-eval's figures, from the lm-eval prompts.
		var lls, norm, byByte [4]float64
		for s := range 4 {
			lp := c.Choices[s].Logprobs.TokenLogprobs
			lls[s] = sum(lp[ctxlens[s] : len(lp)-1])
			e := task.Endings[s]
			norm[s] = lls[s] / float64(utf8.RuneCountInString(e))
			byByte[s] = lls[s] / float64(len(e))
		}
		for _, x := range []struct {
			v [4]float64
			n *int
		}{{lls, &acc}, {norm, &accNorm}, {byByte, &accBytes}} {
			if argmax(x.v[:]) == task.Gold {
				*x.n++
			}
		}
		// llama-perplexity's scores, from the whole sequences.
		prefix := scoring.CommonPrefix(wholes)
		var means [4]float64
		for s := range 4 {
			lp := c.Choices[4+s].Logprobs.TokenLogprobs
			means[s] = sum(lp[prefix:len(wholes[s])]) / float64(len(wholes[s])-prefix)
			d := math.Abs(means[s] - res.Scores[s])
			worst = max(worst, d)
			if d > 1e-5 {
				t.Errorf("task %d ending %d: mean log-probability %.9f through the server, %.9f in process", res.Task, s, means[s], res.Scores[s])
			}
		}
		chosen := argmax(means[:])
		if chosen == res.Chosen {
			same++
		} else if math.Abs(means[chosen]-means[res.Chosen]) > 1e-5 {
			t.Errorf("task %d: the server's scores %v choose %d, the in-process task %d", res.Task, means, chosen, res.Chosen)
		}
		if chosen == task.Gold {
			llamaCorrect++
		}
	}
	n := len(rep.HellaSwag.Results)
	if same == n {
		if want := 100 * float64(llamaCorrect) / float64(n); want != rep.HellaSwag.Accuracy {
			t.Errorf("acc_norm (llama-perplexity's) %v through the server, %v in process", want, rep.HellaSwag.Accuracy)
		}
	}
	t.Logf("%d tasks: %d chose as in process (largest score difference %.2g); llama-perplexity acc_norm %.2f%% in process; "+
		"lm-eval through the server: acc %.2f%%, acc_norm %.2f%%, acc_bytes %.2f%%", n, same, worst, rep.HellaSwag.Accuracy,
		100*float64(acc)/float64(n), 100*float64(accNorm)/float64(n), 100*float64(accBytes)/float64(n))
}

// argmax is the index of the first largest value, as numpy's.
func argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
