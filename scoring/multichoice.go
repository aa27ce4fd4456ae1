package scoring

// multichoice.go owns llama-perplexity's --multiple-choice: its binary
// task file (the format of its MMLU, ARC and TruthfulQA files), the tasks
// it draws (ChoiceOrder), question + " " + answer scored by the mean
// log-probability of the answer's tokens after the answers' common prefix
// (summed in float), the final result and its ±, and the report's
// multiple_choice object.
//
// The file, little-endian throughout: a uint32 task count n, n uint32
// byte offsets of the tasks, then the tasks. A task is its question (a
// string: uint32 length, bytes), then two answer sets, mc1 (one correct
// answer: the only one scored) and mc2 (read and ignored, as llama.cpp
// ignores it); a set is a uint32 answer count (at most 100), the answers
// as strings, and one int32 label per answer (1: correct).

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
)

// MethodMultipleChoice is the method of a multiple-choice run's report.
const MethodMultipleChoice = "multiple_choice"

// maxAnswers is llama.cpp's bound on a set's answers.
const maxAnswers = 100

// MultipleChoiceTask is one task of a multiple-choice file: the question
// and its mc1 answers, of which exactly one, Gold, is labelled correct.
type MultipleChoiceTask struct {
	Question string
	Answers  []string
	Gold     int
}

// MultipleChoiceRequest is what RunMultipleChoice scores: the whole
// file's tasks; Count 0 scores them all, in file order.
type MultipleChoiceRequest struct {
	Tasks []MultipleChoiceTask
	ChoiceOptions
}

// MultipleChoiceAnswers is the largest answer count of tasks.
func MultipleChoiceAnswers(tasks []MultipleChoiceTask) int {
	n := 0
	for _, t := range tasks {
		n = max(n, len(t.Answers))
	}
	return n
}

// mcReader reads a multiple-choice file, checking every size against the
// bytes left before it allocates.
type mcReader struct {
	data []byte
	off  int
}

func (r *mcReader) u32(what string) (uint32, error) {
	if len(r.data)-r.off < 4 {
		return 0, fmt.Errorf("truncated: %s at byte %d runs past the end (%d bytes)", what, r.off, len(r.data))
	}
	v := binary.LittleEndian.Uint32(r.data[r.off:])
	r.off += 4
	return v, nil
}

func (r *mcReader) str(what string) (string, error) {
	n, err := r.u32(what + "'s length")
	if err != nil {
		return "", err
	}
	if uint64(n) > uint64(len(r.data)-r.off) {
		return "", fmt.Errorf("truncated: %s of %d bytes at byte %d runs past the end (%d bytes)", what, n, r.off, len(r.data))
	}
	s := string(r.data[r.off : r.off+int(n)])
	r.off += int(n)
	return s, nil
}

// answers reads one answer set: its answers and labels.
func (r *mcReader) answers(set string) ([]string, []int32, error) {
	n, err := r.u32(set + "'s answer count")
	if err != nil {
		return nil, nil, err
	}
	if n > maxAnswers {
		return nil, nil, fmt.Errorf("%s has %d answers (llama.cpp reads at most %d)", set, n, maxAnswers)
	}
	answers := make([]string, n)
	for a := range answers {
		if answers[a], err = r.str(fmt.Sprintf("%s answer %d", set, a)); err != nil {
			return nil, nil, err
		}
	}
	labels := make([]int32, n)
	for a := range labels {
		v, err := r.u32(fmt.Sprintf("%s label %d", set, a))
		if err != nil {
			return nil, nil, err
		}
		labels[a] = int32(v)
	}
	return answers, labels, nil
}

// ParseMultipleChoice reads a multiple-choice file. Each task must start
// where the offset table says (llama.cpp reads the tasks in order when it
// scores them all and seeks to the offsets when it draws), have a
// question and answers that are not empty (llama.cpp refuses the file
// otherwise) and exactly one mc1 answer labelled 1. Bytes after the last
// task are ignored, as llama.cpp ignores them. Errors name the task (from
// 0) and, for a truncated file, the byte.
func ParseMultipleChoice(data []byte) ([]MultipleChoiceTask, error) {
	r := &mcReader{data: data}
	n, err := r.u32("the task count")
	if err == nil && n == 0 {
		err = fmt.Errorf("no tasks")
	}
	if err == nil && uint64(n) > uint64(len(data)/8) { // a task needs at least its offset and a question length
		err = fmt.Errorf("truncated: %d tasks cannot fit in %d bytes", n, len(data))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadTaskFile, err)
	}
	offsets := make([]uint32, n)
	for i := range offsets {
		if offsets[i], err = r.u32("the offset table"); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadTaskFile, err)
		}
	}
	tasks := make([]MultipleChoiceTask, n)
	for i := range tasks {
		if uint64(offsets[i]) != uint64(r.off) {
			return nil, fmt.Errorf("%w: task %d starts at byte %d, the offset table says %d", ErrBadTaskFile, i, r.off, offsets[i])
		}
		if tasks[i], err = r.task(); err != nil {
			return nil, fmt.Errorf("%w: task %d: %v", ErrBadTaskFile, i, err)
		}
	}
	return tasks, nil
}

// task reads and checks one task.
func (r *mcReader) task() (MultipleChoiceTask, error) {
	q, err := r.str("the question")
	if err != nil {
		return MultipleChoiceTask{}, err
	}
	answers, labels, err := r.answers("mc1")
	if err == nil {
		_, _, err = r.answers("mc2")
	}
	if err != nil {
		return MultipleChoiceTask{}, err
	}
	t := MultipleChoiceTask{Question: q, Answers: answers, Gold: -1}
	switch {
	case q == "":
		return t, fmt.Errorf("empty question")
	case len(answers) == 0:
		return t, fmt.Errorf("no mc1 answers")
	}
	for a, s := range answers {
		if s == "" {
			return t, fmt.Errorf("mc1 answer %d is empty", a)
		}
		if labels[a] == 1 {
			if t.Gold >= 0 {
				return t, fmt.Errorf("mc1 answers %d and %d are both labelled correct (1); want exactly one", t.Gold, a)
			}
			t.Gold = a
		}
	}
	if t.Gold < 0 {
		return t, fmt.Errorf("no mc1 answer is labelled correct (1)")
	}
	return t, nil
}

var multipleChoiceMode = choiceMode{method: MethodMultipleChoice, float: true, running: func(correct, n int) ChoiceProgress {
	acc, unc := MultipleChoiceFinal(correct, n)
	return ChoiceProgress{Accuracy: acc, Uncertainty: unc}
}}

// MultipleChoiceFinal is llama-perplexity's final multiple-choice result
// and its ±, in percent, after n tasks, correct of them right, in its
// float arithmetic: p = (float)correct/n, sqrt(p(1−p)/(n−1)) as a float,
// each times 100 in float. Below two tasks the ± is 0 (llama.cpp divides
// by 0).
func MultipleChoiceFinal(correct, n int) (acc, unc float64) {
	return floatPercentPM(float32(correct)/float32(n), n)
}

// floatPercentPM is p and sqrt(p(1−p)/(n−1)), each times 100, in
// llama-perplexity's float arithmetic; the ± is 0 below two tasks.
func floatPercentPM(p float32, n int) (pct, unc float64) {
	if n > 1 {
		sigma := float32(math.Sqrt(float64(p * (1 - p) / float32(n-1))))
		unc = float64(100 * sigma)
	}
	return float64(100 * p), unc
}

// MultipleChoiceChance is the chance accuracy llama-perplexity prints
// after its final multiple-choice result (its "Random chance"), and its
// ±, in percent, for n tasks of answers answers in all, in its float
// arithmetic: p = (float)n/answers, sqrt(p(1−p)/(n−1)) as a float, each
// times 100 in float. Below two tasks the ± is 0.
func MultipleChoiceChance(n, answers int) (p, unc float64) {
	return floatPercentPM(float32(n)/float32(answers), n)
}

// RunMultipleChoice scores req on eng as llama-perplexity
// --multiple-choice does (stopping and failures as RunHellaSwag).
func RunMultipleChoice(ctx context.Context, eng Engine, req MultipleChoiceRequest) (Report, error) {
	order, err := ChoiceOrder(len(req.Tasks), req.Count)
	if err != nil {
		return Report{}, err
	}
	rep, results, err := runChoice(ctx, eng, multipleChoiceMode, req.ChoiceOptions, MultipleChoiceAnswers(req.Tasks), order,
		func(r *choiceRunner, idx int) (choiceTask, error) { return r.multipleChoiceTask(idx, &req.Tasks[idx]) })
	if rep.Object != "" {
		mc := choiceReport(len(req.Tasks), req.FileSHA256, results, MultipleChoiceFinal)
		answers := 0
		for _, res := range results {
			answers += len(res.Scores)
		}
		if answers > 0 {
			mc.RandomChance, mc.RandomChanceUncertainty = MultipleChoiceChance(len(results), answers)
		}
		rep.MultipleChoice = mc
	}
	return rep, err
}

// multipleChoiceTask tokenizes task idx: question + " " + each answer,
// and their common prefix.
func (r *choiceRunner) multipleChoiceTask(idx int, t *MultipleChoiceTask) (choiceTask, error) {
	texts := make([]string, len(t.Answers))
	for a, s := range t.Answers {
		texts[a] = t.Question + " " + s
	}
	seqs, err := r.tokenizeAll(idx, texts)
	if err != nil {
		return choiceTask{}, err
	}
	prefix := CommonPrefix(seqs)
	if prefix == 0 {
		return choiceTask{}, fmtBadTask(idx, "its answers' sequences share no first token")
	}
	if err := r.fits(idx, seqs, prefix); err != nil {
		return choiceTask{}, err
	}
	return endingReads(idx, t.Gold, seqs, prefix), nil
}
