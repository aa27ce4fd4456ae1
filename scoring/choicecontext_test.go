package scoring

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// TestChoiceContext: the context a task must fit in is the one
// llama-perplexity's multiple-choice modes allocate, max(4, -np)·ctx
// positions padded to 256 (main raises -np to 4 and multiplies -c by it;
// llama_context pads n_ctx), and -np is raised to the most answers of a
// task unless given.
func TestChoiceContext(t *testing.T) {
	for _, c := range []struct{ ctx, n, want int }{{128, 4, 512}, {100, 4, 512}, {20, 4, 256}, {512, 4, 2048}, {300, 5, 1536}, {1, 4, 256}} {
		if got := ChoiceContext(c.ctx, c.n); got != c.want {
			t.Errorf("ChoiceContext(%d, %d) = %d, want %d", c.ctx, c.n, got, c.want)
		}
	}
	for _, c := range []struct{ parallel, answers, want int }{{0, 2, 4}, {0, 4, 4}, {0, 5, 5}, {3, 5, 4}, {8, 5, 8}, {1, 0, 4}} {
		if got := ChoiceParallel(c.parallel, c.answers); got != c.want {
			t.Errorf("ChoiceParallel(%d, %d) = %d, want %d", c.parallel, c.answers, got, c.want)
		}
	}
}

// TestChoiceTasksLongerThanCtx: tasks whose tokens exceed -c but fit in
// llama-perplexity's context are scored, each sequence from position 0,
// so the results equal those of a run at a ctx that holds them; a task
// with more answers than -np is refused as llama-perplexity refuses it, a
// sequence longer than the KV cache before anything is scored.
func TestChoiceTasksLongerThanCtx(t *testing.T) {
	text, _ := hellaswagText(8, 21)
	tasks, err := ParseHellaSwag(text)
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(97, 16, 5, 0)
	f.addBOS = true
	need, longest := 0, 0
	for _, tk := range tasks {
		seqs := make([][]int32, 4)
		for s, e := range tk.Endings {
			seqs[s], _ = f.Tokenize(tk.Context + " " + e)
		}
		n := CommonPrefix(seqs)
		for _, s := range seqs {
			n += len(s) - CommonPrefix(seqs)
			longest = max(longest, len(s))
		}
		need = max(need, n)
	}
	ctx := need / 3 // every task needs more than ctx, less than 4·ctx
	run := func(ctx int) Report {
		rep, err := RunHellaSwag(context.Background(), f, HellaSwagRequest{Tasks: tasks, ChoiceOptions: ChoiceOptions{Count: 8, Ctx: ctx}})
		if err != nil {
			t.Fatalf("ctx %d (tasks need up to %d): %v", ctx, need, err)
		}
		return rep
	}
	short, wide := run(ctx), run(4*need)
	if !reflect.DeepEqual(short.HellaSwag.Results, wide.HellaSwag.Results) || short.Ctx != ctx {
		t.Errorf("ctx %d: %+v\nctx %d: %+v", ctx, short.HellaSwag.Results, 4*need, wide.HellaSwag.Results)
	}

	raw, _ := mcTasks(20, 3)
	mc, err := ParseMultipleChoice(mcBytes(raw))
	if err != nil {
		t.Fatal(err)
	}
	most := MultipleChoiceAnswers(mc)
	if most <= 4 {
		t.Fatalf("the generated file's tasks have at most %d answers; the test needs more than 4", most)
	}
	req := MultipleChoiceRequest{Tasks: mc, ChoiceOptions: ChoiceOptions{Ctx: 600, Parallel: 4, Path: "mc.bin"}}
	if _, err := RunMultipleChoice(context.Background(), f, req); err == nil ||
		!strings.Contains(err.Error(), "needs at least -np") || !strings.HasPrefix(err.Error(), "mc.bin: task ") {
		t.Errorf("-np 4 with %d answers: %v", most, err)
	}
	req.Parallel = 0
	if rep, err := RunMultipleChoice(context.Background(), f, req); err != nil || rep.MultipleChoice.Tasks != len(mc) {
		t.Errorf("-np as needed: %v", err)
	}

	f.kv = longest - 1
	if _, err := RunHellaSwag(context.Background(), f, HellaSwagRequest{Tasks: tasks, ChoiceOptions: ChoiceOptions{Count: 8, Ctx: 4 * need}}); err == nil ||
		!strings.Contains(err.Error(), "more than the KV cache's") {
		t.Errorf("kv %d: %v", f.kv, err)
	}
}
