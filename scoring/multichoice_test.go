package scoring

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// mcTestTask is a task as the file holds it: both answer sets, labels.
type mcTestTask struct {
	question   string
	mc1, mc2   []string
	mc1Labels  []int32
	mc2Labels  []int32
	wantOffset bool // write a wrong offset for it
}

// mcBytes writes tasks in llama.cpp's binary multiple-choice format.
func mcBytes(tasks []mcTestTask) []byte {
	var body bytes.Buffer
	le := func(w *bytes.Buffer, v any) { binary.Write(w, binary.LittleEndian, v) }
	str := func(s string) { le(&body, uint32(len(s))); body.WriteString(s) }
	head := 4 + 4*len(tasks)
	offsets := make([]uint32, len(tasks))
	for i, t := range tasks {
		offsets[i] = uint32(head + body.Len())
		if t.wantOffset {
			offsets[i]++
		}
		str(t.question)
		for _, set := range []struct {
			answers []string
			labels  []int32
		}{{t.mc1, t.mc1Labels}, {t.mc2, t.mc2Labels}} {
			le(&body, uint32(len(set.answers)))
			for _, a := range set.answers {
				str(a)
			}
			le(&body, set.labels)
		}
	}
	var out bytes.Buffer
	le(&out, uint32(len(tasks)))
	le(&out, offsets)
	out.Write(body.Bytes())
	return out.Bytes()
}

// mcTasks makes n tasks of 2..6 answers from seeded random words, one
// labelled correct, with an mc2 set beside.
func mcTasks(n int, seed uint64) ([]mcTestTask, []MultipleChoiceTask) {
	r := rand.New(rand.NewPCG(seed, 11))
	words := strings.Fields("the cat sat on a mat and then it ran far away to see big red dog who was happy")
	phrase := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	raw, want := make([]mcTestTask, n), make([]MultipleChoiceTask, n)
	for i := range raw {
		k := 2 + r.IntN(5)
		t := mcTestTask{question: phrase(3 + r.IntN(5)), mc1Labels: make([]int32, k), mc2: []string{phrase(2)}, mc2Labels: []int32{1}}
		gold := r.IntN(k)
		for range k {
			t.mc1 = append(t.mc1, phrase(1+r.IntN(4)))
		}
		t.mc1Labels[gold] = 1
		raw[i], want[i] = t, MultipleChoiceTask{Question: t.question, Answers: t.mc1, Gold: gold}
	}
	return raw, want
}

func TestParseMultipleChoice(t *testing.T) {
	raw, want := mcTasks(5, 1)
	data := mcBytes(raw)
	got, err := ParseMultipleChoice(append(data, 0, 0, 0)) // bytes after the last task are ignored
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("parsed %v, %v; want %v", got, err, want)
	}
	// Every cut of the file is refused, naming the task it cuts.
	for n := range len(data) {
		_, err := ParseMultipleChoice(data[:n])
		if !errors.Is(err, ErrBadTaskFile) || (n > 4 && !strings.Contains(err.Error(), "truncated")) {
			t.Fatalf("the first %d of %d bytes: %v", n, len(data), err)
		}
	}
	if _, err := ParseMultipleChoice(data[:len(data)-3]); !strings.Contains(err.Error(), "task 4: truncated: mc2 label 0 at byte") {
		t.Errorf("cut in the last label: %v", err)
	}
	bad := func(edit func(t *mcTestTask)) []byte {
		r, _ := mcTasks(3, 1)
		edit(&r[2])
		return mcBytes(r)
	}
	huge := append(binary.LittleEndian.AppendUint32(nil, 1<<30), make([]byte, 16)...)
	for in, msg := range map[string]string{
		"":                 "truncated: the task count at byte 0",
		"\x00\x00\x00\x00": "no tasks",
		string(huge):       "truncated: 1073741824 tasks cannot fit in 20 bytes",
		string(bad(func(t *mcTestTask) { t.wantOffset = true })):                     "task 2 starts at byte",
		string(bad(func(t *mcTestTask) { t.question = "" })):                         "task 2: empty question",
		string(bad(func(t *mcTestTask) { t.mc1[1] = "" })):                           "task 2: mc1 answer 1 is empty",
		string(bad(func(t *mcTestTask) { t.mc1, t.mc1Labels = nil, nil })):           "task 2: no mc1 answers",
		string(bad(func(t *mcTestTask) { t.mc1Labels = make([]int32, len(t.mc1)) })): "task 2: no mc1 answer is labelled correct",
		string(bad(func(t *mcTestTask) {
			t.mc1Labels = make([]int32, len(t.mc1))
			t.mc1Labels[0], t.mc1Labels[1] = 1, 1
		})): "task 2: mc1 answers 0 and 1 are both labelled correct",
		string(bad(func(t *mcTestTask) {
			t.mc2, t.mc2Labels = make([]string, 101), make([]int32, 101)
		})): "task 2: mc2 has 101 answers (llama.cpp reads at most 100)",
	} {
		_, err := ParseMultipleChoice([]byte(in))
		if !errors.Is(err, ErrBadTaskFile) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%.24q: error %v, want one saying %q", in, err, msg)
		}
	}
}

// FuzzParseMultipleChoice: the parser never panics nor allocates past
// what the file could hold; what it accepts has one gold answer among
// non-empty ones and reads back the same from the tasks written out again.
func FuzzParseMultipleChoice(f *testing.F) {
	raw, _ := mcTasks(3, 2)
	f.Add(mcBytes(raw))
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 8, 0, 0, 0, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, in []byte) {
		tasks, err := ParseMultipleChoice(in)
		if err != nil {
			return
		}
		var back []mcTestTask
		for _, tk := range tasks {
			if tk.Gold < 0 || tk.Gold >= len(tk.Answers) || tk.Question == "" {
				t.Fatalf("accepted %+v", tk)
			}
			labels := make([]int32, len(tk.Answers))
			labels[tk.Gold] = 1
			back = append(back, mcTestTask{question: tk.Question, mc1: tk.Answers, mc1Labels: labels})
		}
		again, err := ParseMultipleChoice(mcBytes(back))
		if err != nil || fmt.Sprint(again) != fmt.Sprint(tasks) {
			t.Fatalf("written back: %v, %v; want %v", again, err, tasks)
		}
	})
}

// bruteMultipleChoice scores a task as multiple_choice_score's text does,
// each row recomputed whole from the fake: the common prefix over the
// shortest sequence, the first answer token through softmax (float
// probabilities over a double sum, then a float log), the others through
// compute_logprobs, summed in float; the first largest mean wins.
func bruteMultipleChoice(f *fakeEngine, t MultipleChoiceTask) ([]float32, int) {
	seqs := make([][]int32, len(t.Answers))
	minLen := math.MaxInt
	for a, s := range t.Answers {
		seqs[a], _ = f.Tokenize(t.Question + " " + s)
		minLen = min(minLen, len(seqs[a]))
	}
	cp := 0
	for ; cp < minLen; cp++ {
		same := true
		for _, s := range seqs[1:] {
			same = same && s[cp] == seqs[0][cp]
		}
		if !same {
			break
		}
	}
	first := f.fullLogits(seqs[0], cp-1)
	mx := first[0]
	for _, l := range first {
		mx = max(mx, l)
	}
	sum := 0.0
	for _, l := range first {
		sum += float64(expf(l - mx))
	}
	scores, best := make([]float32, len(seqs)), 0
	for a, s := range seqs {
		p := float32(float64(expf(first[s[cp]]-mx)) / sum)
		lp, count := float32(math.Log(float64(p))), 1
		for j := cp; j < len(s)-1; j++ {
			lp += logSoftmaxF(f.fullLogits(s, j), s[j+1])
			count++
		}
		scores[a] = lp / float32(count)
		if scores[a] > scores[best] {
			best = a
		}
	}
	return scores, best
}

// TestRunMultipleChoiceMatchesBrute: the tasks scored are llama.cpp's
// draw (and all of them, in order, without a count), and every answer's
// score, the choice and the final result agree with a recomputation that
// follows multiple_choice_score's text over whole logit rows.
func TestRunMultipleChoiceMatchesBrute(t *testing.T) {
	raw, _ := mcTasks(30, 4)
	tasks, err := ParseMultipleChoice(mcBytes(raw))
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(97, 16, 17, 0)
	f.addBOS, f.ubatch = true, 4
	for _, count := range []int{12, 0} {
		rep, err := RunMultipleChoice(context.Background(), f, MultipleChoiceRequest{Tasks: tasks, ChoiceOptions: ChoiceOptions{Count: count, Ctx: 600}})
		if err != nil {
			t.Fatal(err)
		}
		order, _ := ChoiceOrder(30, count)
		m := rep.MultipleChoice
		if rep.Method != MethodMultipleChoice || m.Tasks != len(order) || m.TasksInFile != 30 {
			t.Fatalf("count %d: method %q, %d of %d tasks", count, rep.Method, m.Tasks, m.TasksInFile)
		}
		correct := 0
		for i, res := range m.Results {
			tk := tasks[order[i]]
			if res.Task != order[i] || res.Gold != tk.Gold || len(res.Scores) != len(tk.Answers) {
				t.Fatalf("result %d: %+v, want task %d", i, res, order[i])
			}
			want, best := bruteMultipleChoice(f, tk)
			for a := range want {
				if d := math.Abs(res.Scores[a] - float64(want[a])); d > 1e-5*math.Max(1, math.Abs(float64(want[a]))) {
					t.Errorf("task %d answer %d: score %v, brute %v", res.Task, a, res.Scores[a], want[a])
				}
			}
			if res.Chosen != best && math.Abs(float64(want[best]-want[res.Chosen])) > 1e-5*math.Abs(float64(want[best])) {
				t.Errorf("task %d: chose %d, brute %d (%v)", res.Task, res.Chosen, best, want)
			}
			if best == res.Gold {
				correct++
			}
		}
		if acc, unc := MultipleChoiceFinal(correct, len(order)); m.Accuracy != acc || m.Uncertainty != unc {
			t.Errorf("count %d: result %v ± %v, brute %v ± %v", count, m.Accuracy, m.Uncertainty, acc, unc)
		}
	}
}
