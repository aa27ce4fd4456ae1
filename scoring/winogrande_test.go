package scoring

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// winograndeText writes n tasks in llama.cpp's CSV from seeded random
// words: some sentences quoted, some ending right after the blank (so
// that both the skipped-choice and the whole-tail scoring occur), and a
// final empty line so that the last task is read.
func winograndeText(n int, seed uint64) (string, []WinograndeTask) {
	r := rand.New(rand.NewPCG(seed, 7))
	words := strings.Fields("the cat sat on a mat and then it ran far away to see big red dog who was happy")
	phrase := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	var b strings.Builder
	tasks := make([]WinograndeTask, n)
	for i := range tasks {
		t := WinograndeTask{First: phrase(2+r.IntN(5)) + " ", Second: " " + phrase(1+r.IntN(6)) + ".", Gold: r.IntN(2)}
		if r.IntN(3) == 0 {
			t.Second = "."
		}
		t.Choices = [2]string{phrase(1 + r.IntN(2)), phrase(1 + r.IntN(2))}
		for t.Choices[1] == t.Choices[0] {
			t.Choices[1] = phrase(1 + r.IntN(2))
		}
		sentence := t.First + "_" + t.Second
		if r.IntN(2) == 0 {
			sentence = `"` + sentence + `"`
		}
		fmt.Fprintf(&b, "%d,%s,%s,%s,%d\n", i, sentence, t.Choices[0], t.Choices[1], t.Gold+1)
		tasks[i] = t
	}
	return b.String(), tasks
}

func TestParseWinogrande(t *testing.T) {
	text, want := winograndeText(6, 1)
	got, unread, err := ParseWinogrande(text) // ends with "\n": its last line is empty
	if err != nil || unread != 0 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("parsed %v (unread %d, %v), want %v", got, unread, err, want)
	}
	// As scored, a file's one trailing newline is dropped: the last line
	// then has none and llama.cpp's reader never returns it.
	got, unread, err = ParseWinogrande(strings.TrimSuffix(text, "\n"))
	if err != nil || unread != 6 || fmt.Sprint(got) != fmt.Sprint(want[:5]) {
		t.Fatalf("without the final newline: %d tasks, unread %d, %v", len(got), unread, err)
	}
	got, _, err = ParseWinogrande("index,sentence,option1,option2,answer\n" +
		`0,"Sarah, not _, won",Sarah,Maria, 2` + "\r\n\n1,a _ b,x,y,1,more\n")
	if err != nil || len(got) != 2 || got[0].First != "Sarah, not " || got[0].Second != ", won" ||
		got[0].Choices[1] != "Maria" || got[0].Gold != 1 || got[1].Gold != 0 {
		t.Fatalf("header, quoted commas, answer read as an int: %+v, %v", got, err)
	}
	for in, msg := range map[string]string{
		"":                                "no tasks (0 lines read)",
		"0,a _ b,x,y,1":                   "no tasks (0 lines read; line 1, the last, has no newline after it and is not read)",
		"h\n0,a _ b,x,1\n\n":              "line 2: 3 of the 4 commas (outside quotes) that separate the fields",
		"h\n0,a b,x,y,1\n\n":              `line 2: no _ in the sentence "a b"`,
		"h\n0,a _ b,x,y,3\n\n":            `line 2: answer "3" is not 1 or 2`,
		"h\n0,a _,x,y,1\n1,\"a,_\",x,y\n": "line 3: 3 of the 4 commas",
	} {
		_, _, err := ParseWinogrande(in)
		if !errors.Is(err, ErrBadTaskFile) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want one saying %q", in, err, msg)
		}
	}
}

// FuzzParseWinogrande: the parser never panics; what it accepts has
// answers 1 or 2 and a first part without '_'; and tasks whose fields hold
// no quote or comma read back the same from a line written out again.
func FuzzParseWinogrande(f *testing.F) {
	text, _ := winograndeText(3, 2)
	for _, s := range []string{text, "", "\n", "0,_,a,b,1\n\n", `0,"x,_",a,b,+2x` + "\n\n", "a,b,c,d\n,,,,\n", `",,,,"` + "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tasks, _, err := ParseWinogrande(in)
		if err != nil {
			return
		}
		for _, tk := range tasks {
			if tk.Gold < 0 || tk.Gold > 1 || strings.Contains(tk.First, "_") {
				t.Fatalf("accepted %+v", tk)
			}
			fields := tk.First + tk.Second + tk.Choices[0] + tk.Choices[1]
			if strings.ContainsAny(fields, "\",\n") {
				continue
			}
			line := fmt.Sprintf("0,%s_%s,%s,%s,%d\n\n", tk.First, tk.Second, tk.Choices[0], tk.Choices[1], tk.Gold+1)
			again, _, err := ParseWinogrande("h\n" + line)
			if err != nil || len(again) != 1 || again[0] != tk {
				t.Fatalf("written back %q: %+v, %v; want %+v", line, again, err, tk)
			}
		}
	})
}

// logSoftmaxF is compute_logprobs' value: logit − max − log(Σ expf) with
// the sum in float, over a whole logit row.
func logSoftmaxF(row []float32, tok int32) float32 {
	mx := row[0]
	for _, l := range row {
		mx = max(mx, l)
	}
	var sum float32
	for _, l := range row {
		sum += expf(l - mx)
	}
	return row[tok] - mx - float32(math.Log(float64(sum)))
}

// bruteWinogrande scores a task as winogrande_score's text does: the
// batch's logit rows laid out as it lays them out (the prefix's last row,
// then each sentence's rows after the prefix), its eval pairs and float
// sums, each row recomputed whole from the fake. skipped says whether the
// choice's tokens were left out.
func bruteWinogrande(f *fakeEngine, t WinograndeTask) (score [2]float32, chosen int, skipped bool) {
	tok := func(s string) []int32 { ids, _ := f.Tokenize(s); return ids }
	seq := [2][]int32{tok(t.First + t.Choices[0] + t.Second), tok(t.First + t.Choices[1] + t.Second)}
	base := [2]int{len(tok(t.First + t.Choices[0])), len(tok(t.First + t.Choices[1]))}
	cp := 0
	for cp < len(seq[0]) && cp < len(seq[1]) && seq[0][cp] == seq[1][cp] {
		cp++
	}
	logits := [][]float32{f.fullLogits(seq[0], cp-1)}
	for s := range 2 {
		for i := cp; i < len(seq[s]); i++ {
			logits = append(logits, f.fullLogits(seq[s], i))
		}
	}
	skipped = len(seq[0])-cp > 3 && len(seq[1])-cp > 3
	for s := range 2 {
		nb := cp
		if skipped {
			nb = base[s]
		}
		last := 0
		if len(seq[s])-nb > 1 {
			last = 1
		}
		li := nb - cp
		if s == 1 {
			li = len(seq[0]) - cp + nb - cp
		}
		for j := nb - 1; j < len(seq[s])-1-last; j++ {
			score[s] += logSoftmaxF(logits[li], seq[s][j+1])
			li++
		}
		score[s] /= float32(len(seq[s]) - nb - last)
	}
	if !(score[0] > score[1]) {
		chosen = 1
	}
	return score, chosen, skipped
}

// TestRunWinograndeMatchesBrute: the tasks scored are llama.cpp's draw,
// and each choice's score, the choice made and the final figures agree
// with a recomputation that follows winogrande_score's text over whole
// logit rows; both its scorings (choice skipped, and the whole tail with
// its misplaced first row) occur.
func TestRunWinograndeMatchesBrute(t *testing.T) {
	text, _ := winograndeText(40, 4)
	tasks, _, err := ParseWinogrande(text)
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(97, 16, 13, 0)
	f.addBOS, f.ubatch = true, 5
	var events []Event
	rep, err := RunWinogrande(context.Background(), f, WinograndeRequest{Tasks: tasks, ChoiceOptions: ChoiceOptions{
		Count: 25, Ctx: 400, Progress: func(e Event) { events = append(events, e) }}})
	if err != nil {
		t.Fatal(err)
	}
	order, _ := ChoiceOrder(40, 25)
	w := rep.Winogrande
	if rep.Method != MethodWinogrande || w.Tasks != 25 || w.TasksInFile != 40 || len(w.Results) != 25 {
		t.Fatalf("report: method %q, %d of %d tasks, %d results", rep.Method, w.Tasks, w.TasksInFile, len(w.Results))
	}
	correct, kinds := 0, map[bool]int{}
	for i, res := range w.Results {
		if res.Task != order[i] || res.Gold != tasks[order[i]].Gold || len(res.Scores) != 2 {
			t.Fatalf("result %d: %+v, want task %d gold %d", i, res, order[i], tasks[order[i]].Gold)
		}
		want, chosen, skipped := bruteWinogrande(f, tasks[res.Task])
		kinds[skipped]++
		for c := range 2 {
			if d := math.Abs(res.Scores[c] - float64(want[c])); d > 1e-5*math.Max(1, math.Abs(float64(want[c]))) {
				t.Errorf("task %d choice %d: score %v, brute %v", res.Task, c, res.Scores[c], want[c])
			}
		}
		if res.Chosen != chosen && math.Abs(float64(want[0]-want[1])) > 1e-5*math.Abs(float64(want[0])) {
			t.Errorf("task %d: chose %d, brute %d (%v)", res.Task, res.Chosen, chosen, want)
		}
		if chosen == res.Gold {
			correct++
		}
	}
	if kinds[true] == 0 || kinds[false] == 0 {
		t.Errorf("scorings exercised: %v (want both skipped and whole-tail tasks)", kinds)
	}
	acc, unc := WinograndeFinal(correct, 25)
	if w.Accuracy != acc || w.Uncertainty != unc || math.Abs(acc-100*float64(correct)/25) > 1e-4 {
		t.Errorf("accuracy %v ± %v, brute %v ± %v", w.Accuracy, w.Uncertainty, acc, unc)
	}
	if last := events[len(events)-2].Choice; len(events) != 27 || last.Accuracy != acc || last.Uncertainty != unc || last.Correct != correct {
		t.Errorf("%d events, the last task's figures %+v", len(events), last)
	}
}

func TestRunWinograndeErrors(t *testing.T) {
	f := newFake(97, 8, 1, 0)
	f.addBOS = true
	bad := []WinograndeTask{{First: "a ", Second: " b.", Choices: [2]string{"x", "x"}}}
	_, err := RunWinogrande(context.Background(), f, WinograndeRequest{Tasks: bad, ChoiceOptions: ChoiceOptions{Path: "wg.csv"}})
	if !errors.Is(err, ErrBadTaskFile) || !strings.Contains(err.Error(), "wg.csv: ") || !strings.Contains(err.Error(), "task 0: one sentence's tokens begin the other's") {
		t.Errorf("equal choices: %v", err)
	}
	text, _ := winograndeText(3, 5)
	tasks, _, _ := ParseWinogrande(text)
	long := slices.Clone(tasks)
	long[1].First = strings.Repeat("the cat ", 33) // two sequences of 260 tokens and more: over 256
	if _, err := RunWinogrande(context.Background(), f, WinograndeRequest{Tasks: long, ChoiceOptions: ChoiceOptions{Ctx: 10}}); err == nil ||
		!strings.Contains(err.Error(), "task 1 does not fit in the context window") {
		t.Errorf("small ctx: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := RunWinogrande(ctx, f, WinograndeRequest{Tasks: tasks})
	if !errors.Is(err, ErrStopped) || !rep.Partial || rep.Winogrande.Tasks != 0 {
		t.Errorf("cancelled: %v, partial %v", err, rep.Partial)
	}
}
