package scoring

// hellaswagrun.go owns RunHellaSwag: the tasks drawn and tokenized as
// llama-perplexity's hellaswag_score does (context + " " + ending, the
// four sequences' common prefix), scored by the shared multiple-choice
// run (choice.go) in double precision, and the report's hellaswag object.

import "context"

// HellaSwagRequest is what RunHellaSwag scores: the whole file's tasks;
// Count 0 draws DefaultHellaSwagTasks.
type HellaSwagRequest struct {
	Tasks []HellaSwagTask
	ChoiceOptions
}

var hellaswagMode = choiceMode{method: MethodHellaSwag, running: func(correct, n int) ChoiceProgress {
	acc, lo, hi := HellaSwagRunning(correct, n)
	return ChoiceProgress{Accuracy: acc, CI95Low: lo, CI95High: hi}
}}

// RunHellaSwag scores req on eng as llama-perplexity --hellaswag does.
// The context is checked between tasks: a cancelled run returns the
// partial report with an error wrapping ErrStopped; an engine failure
// returns the partial report with that error.
func RunHellaSwag(ctx context.Context, eng Engine, req HellaSwagRequest) (Report, error) {
	count := req.Count
	if count == 0 {
		count = DefaultHellaSwagTasks
	}
	order, err := HellaSwagOrder(len(req.Tasks), count)
	if err != nil {
		return Report{}, err
	}
	rep, results, err := runChoice(ctx, eng, hellaswagMode, req.ChoiceOptions, 4, order,
		func(r *choiceRunner, idx int) (choiceTask, error) { return r.hellaswagTask(idx, &req.Tasks[idx]) })
	if rep.Object != "" {
		rep.HellaSwag = hellaswagReport(len(req.Tasks), results)
		rep.HellaSwag.TaskFileSHA256 = req.FileSHA256
	}
	return rep, err
}

// hellaswagTask tokenizes task idx: context + " " + each ending, and its
// common prefix.
func (r *choiceRunner) hellaswagTask(idx int, t *HellaSwagTask) (choiceTask, error) {
	texts := make([]string, len(t.Endings))
	for s, e := range t.Endings {
		texts[s] = t.Context + " " + e
	}
	seqs, err := r.tokenizeAll(idx, texts)
	if err != nil {
		return choiceTask{}, err
	}
	prefix := CommonPrefix(seqs)
	if prefix == 0 {
		return choiceTask{}, fmtBadTask(idx, "its four sequences share no first token")
	}
	if err := r.fits(idx, seqs, prefix); err != nil {
		return choiceTask{}, err
	}
	return endingReads(idx, t.Gold, seqs, prefix), nil
}
