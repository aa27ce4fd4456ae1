package scoring

// winogrande.go owns llama-perplexity's --winogrande: its CSV (index,
// sentence with a '_', choice 1, choice 2, answer 1 or 2), the tasks it
// draws (ChoiceOrder), the partial evaluation of the tokens after the
// choice (the choice's own tokens skipped when both sentences leave more
// than three tokens after their common prefix, the last token left out),
// the choice of the larger score, the final score and its ±, and the
// report's winogrande object.

import (
	"context"
	"fmt"
	"math"
	"strings"
)

// MethodWinogrande is the method of a Winogrande run's report.
const MethodWinogrande = "winogrande"

// WinograndeTask is one task of a Winogrande file: the sentence split at
// its first '_', which either choice fills.
type WinograndeTask struct {
	First, Second string
	Choices       [2]string
	Gold          int // the right choice, 0 or 1 (the file's answer − 1)
}

// ChoiceReport is the report's winogrande or multiple_choice object.
// Accuracy and Uncertainty are llama-perplexity's final figures, in
// percent, computed in its float arithmetic (WinograndeFinal,
// MultipleChoiceFinal).
type ChoiceReport struct {
	TasksInFile    int     `json:"tasks_in_file"`
	TaskFileSHA256 string  `json:"task_file_sha256,omitempty"`
	Tasks          int     `json:"tasks"` // tasks scored
	Accuracy       float64 `json:"accuracy"`
	Uncertainty    float64 `json:"uncertainty"`
	// RandomChance and its ± are a multiple-choice run's chance accuracy
	// (MultipleChoiceChance), llama-perplexity's last line; Winogrande has
	// none.
	RandomChance            float64 `json:"random_chance,omitempty"`
	RandomChanceUncertainty float64 `json:"random_chance_uncertainty,omitempty"`
	// Results are the tasks in the order scored.
	Results []ChoiceResult `json:"results"`
}

// WinograndeRequest is what RunWinogrande scores: the whole file's tasks;
// Count 0 scores them all, in file order.
type WinograndeRequest struct {
	Tasks []WinograndeTask
	ChoiceOptions
}

// ParseWinogrande reads a Winogrande file's text (as scored: one trailing
// newline dropped) as llama-perplexity's loader does. Its reader stops at
// the end of the text before a line that lacks a newline, so the file's
// last line is never read unless the file ends with an empty line;
// unread is that line's number (from 1), 0 when nothing was left unread.
// Fields are split at the first four commas outside double quotes; a
// sentence in quotes loses them, choices and the answer keep what they
// hold (the answer is read as an int, what follows ignored). Empty lines
// and a first line that is not a task (a header) are skipped, as llama.cpp
// skips them; any other line that is not a task is an error naming it.
func ParseWinogrande(text string) (tasks []WinograndeTask, unread int, err error) {
	lines := strings.Split(text, "\n")
	if last := lines[len(lines)-1]; last != "" {
		unread = len(lines)
	}
	lines = lines[:len(lines)-1]
	for i, line := range lines {
		t, err := parseWinograndeLine(line)
		if err != nil && (i == 0 || line == "") {
			continue
		}
		if err != nil {
			return nil, unread, fmt.Errorf("%w: line %d: %v", ErrBadTaskFile, i+1, err)
		}
		tasks = append(tasks, t)
	}
	if len(tasks) == 0 {
		note := ""
		if unread > 0 {
			note = fmt.Sprintf("; line %d, the last, has no newline after it and is not read", unread)
		}
		return nil, unread, fmt.Errorf("%w: no tasks (%d lines read%s)", ErrBadTaskFile, len(lines), note)
	}
	return tasks, unread, nil
}

// parseWinograndeLine reads one CSV line as load_winogrande_from_csv does.
func parseWinograndeLine(line string) (WinograndeTask, error) {
	var comma [4]int
	n, quoted := 0, false
	for i := 0; i < len(line) && n < 4; i++ {
		switch {
		case line[i] == '"':
			quoted = !quoted
		case line[i] == ',' && !quoted:
			comma[n] = i
			n++
		}
	}
	if n != 4 {
		return WinograndeTask{}, fmt.Errorf("%d of the 4 commas (outside quotes) that separate the fields", n)
	}
	sentence := line[comma[0]+1 : comma[1]]
	if line[comma[0]+1] == '"' {
		sentence = line[comma[0]+2 : comma[1]-1]
	}
	where := strings.IndexByte(sentence, '_')
	if where < 0 {
		return WinograndeTask{}, fmt.Errorf("no _ in the sentence %q", sentence)
	}
	answer := line[comma[3]+1:]
	a, ok := stoi(answer)
	if !ok || a < 1 || a > 2 {
		return WinograndeTask{}, fmt.Errorf("answer %q is not 1 or 2", answer)
	}
	return WinograndeTask{First: sentence[:where], Second: sentence[where+1:],
		Choices: [2]string{line[comma[1]+1 : comma[2]], line[comma[2]+1 : comma[3]]}, Gold: a - 1}, nil
}

var winograndeMode = choiceMode{method: MethodWinogrande, float: true, lastOnTies: true, running: func(correct, n int) ChoiceProgress {
	acc, unc := WinograndeFinal(correct, n)
	return ChoiceProgress{Accuracy: acc, Uncertainty: unc}
}}

// WinograndeFinal is llama-perplexity's final Winogrande score and its ±,
// in percent, after n tasks, correct of them right, in its arithmetic:
// p = (float)correct/n, 100·p in float, and 100·sqrt(p(1−p)/(n−1)) with
// the float quotient's square root in double, stored as a float. Below
// two tasks the ± is 0 (llama.cpp divides by 0); llama.cpp prints no
// final line below 100 tasks.
func WinograndeFinal(correct, n int) (acc, unc float64) {
	p := float32(correct) / float32(n)
	if n > 1 {
		unc = float64(float32(100 * math.Sqrt(float64(p*(1-p)/float32(n-1)))))
	}
	return float64(100 * p), unc
}

// RunWinogrande scores req on eng as llama-perplexity --winogrande does
// (stopping and failures as RunHellaSwag).
func RunWinogrande(ctx context.Context, eng Engine, req WinograndeRequest) (Report, error) {
	order, err := ChoiceOrder(len(req.Tasks), req.Count)
	if err != nil {
		return Report{}, err
	}
	rep, results, err := runChoice(ctx, eng, winograndeMode, req.ChoiceOptions, 2, order,
		func(r *choiceRunner, idx int) (choiceTask, error) { return r.winograndeTask(idx, &req.Tasks[idx]) })
	if rep.Object != "" {
		rep.Winogrande = choiceReport(len(req.Tasks), req.FileSHA256, results, WinograndeFinal)
	}
	return rep, err
}

// choiceReport is the winogrande or multiple_choice object of the
// results, with the mode's final figures.
func choiceReport(inFile int, sha string, results []ChoiceResult, final func(correct, n int) (float64, float64)) *ChoiceReport {
	c := &ChoiceReport{TasksInFile: inFile, TaskFileSHA256: sha, Tasks: len(results), Results: results}
	if len(results) > 0 {
		c.Accuracy, c.Uncertainty = final(correctCount(results), len(results))
	}
	return c
}

// winograndeTask tokenizes task idx as winogrande_score does and lays out
// its reads.
func (r *choiceRunner) winograndeTask(idx int, t *WinograndeTask) (choiceTask, error) {
	texts := []string{t.First + t.Choices[0] + t.Second, t.First + t.Choices[1] + t.Second,
		t.First + t.Choices[0], t.First + t.Choices[1]}
	all, err := r.tokenizeAll(idx, texts)
	if err != nil {
		return choiceTask{}, err
	}
	seqs, base := all[:2], [2]int{len(all[2]), len(all[3])}
	prefix := 0
	for prefix < min(len(seqs[0]), len(seqs[1])) && seqs[0][prefix] == seqs[1][prefix] {
		prefix++
	}
	switch {
	case prefix == 0:
		return choiceTask{}, fmtBadTask(idx, "its two sentences share no first token")
	case prefix == len(seqs[0]) || prefix == len(seqs[1]):
		return choiceTask{}, fmtBadTask(idx, "one sentence's tokens begin the other's (llama.cpp reads past its end)")
	}
	if err := r.fits(idx, seqs, prefix); err != nil {
		return choiceTask{}, err
	}
	return winograndeReads(idx, t.Gold, seqs, base, prefix)
}

// winograndeReads lays out a task's reads in llama.cpp's logit indices:
// the prefix's last row is index 0, then sentence 1's rows after the
// prefix, then sentence 2's. Each choice reads from its base (the tokens
// of the sentence up to and with the choice, when both sentences leave
// more than three tokens after the prefix; else the prefix) to its end,
// the last token left out when more than one follows the base. Choice
// 2's reads start one index early when its base is the prefix (so its
// first token is predicted from sentence 1's last row: llama.cpp's
// FIXME), and are laid out as llama.cpp indexes them wherever they land.
func winograndeReads(idx, gold int, seqs [][]int32, base [2]int, prefix int) (choiceTask, error) {
	n0, n1 := len(seqs[0]), len(seqs[1])
	skip := n0-prefix > 3 && n1-prefix > 3
	t := choiceTask{index: idx, gold: gold, seqs: seqs}
	for c, seq := range seqs {
		nb := prefix
		if skip {
			nb = base[c]
		}
		if nb < 1 || len(seq)-nb < 1 {
			return t, fmtBadTask(idx, "choice %d leaves no token to score (%d tokens, %d before the scored ones)", c+1, len(seq), nb)
		}
		last := 0
		if len(seq)-nb > 1 {
			last = 1
		}
		li := nb - prefix // sentence 1's first read
		if c == 1 {
			li += n0 - prefix
		}
		if li < 0 {
			return t, fmtBadTask(idx, "choice %d's tokens before the sentence's rest end inside the common prefix (llama.cpp reads outside the task)", c+1)
		}
		for j := nb - 1; j < len(seq)-1-last; j, li = j+1, li+1 {
			s, pos := 0, prefix-1+li // index 0 and sentence 1's rows
			if li > n0-prefix {
				s, pos = 1, prefix-1+li-(n0-prefix)
			}
			t.reads = append(t.reads, logitRead{seq: s, pos: pos, target: seq[j+1]})
		}
		t.ends = append(t.ends, len(t.reads))
	}
	return t, nil
}
