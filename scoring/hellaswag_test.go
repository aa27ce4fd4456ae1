package scoring

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// hellaswagText writes n tasks in llama.cpp's six-line format from seeded
// random words.
func hellaswagText(n int, seed uint64) (string, []HellaSwagTask) {
	r := rand.New(rand.NewPCG(seed, 3))
	words := strings.Fields("the cat sat on a mat and then it ran far away to see big red dog who was happy")
	phrase := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	var b strings.Builder
	tasks := make([]HellaSwagTask, n)
	for i := range tasks {
		t := HellaSwagTask{Context: phrase(3 + r.IntN(6)), Gold: r.IntN(4)}
		fmt.Fprintf(&b, "%s\n%d\n", t.Context, t.Gold)
		for e := range t.Endings {
			t.Endings[e] = phrase(1 + r.IntN(5))
			fmt.Fprintf(&b, "%s\n", t.Endings[e])
		}
		tasks[i] = t
	}
	return b.String(), tasks
}

func TestParseHellaSwag(t *testing.T) {
	text, want := hellaswagText(5, 1)
	for _, in := range []string{text, strings.TrimSuffix(text, "\n")} {
		got, err := ParseHellaSwag(in)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("parsed %v, want %v", got, want)
		}
	}
	got, err := ParseHellaSwag("ctx\r\n 2\r\na\nb\nc\nd")
	if err != nil || got[0].Gold != 2 || got[0].Context != "ctx\r" {
		t.Fatalf("stoi-style gold and kept CR: %+v, %v", got, err)
	}
	for in, msg := range map[string]string{
		"":                         "no tasks",
		"a\n1\nb\nc\nd":            "5 lines, not a multiple of 6: task 0 (lines 1..) is incomplete",
		text + "x\n":               "31 lines, not a multiple of 6: task 5 (lines 31..) is incomplete",
		"a\n4\nb\nc\nd\ne":         `task 0 (line 2): gold ending "4" is not 0..3`,
		"a\nx\nb\nc\nd\ne":         `task 0 (line 2): gold ending "x" is not 0..3`,
		text + "a\n-1\nb\nc\nd\ne": `task 5 (line 32): gold ending "-1" is not 0..3`,
	} {
		_, err := ParseHellaSwag(in)
		if !errors.Is(err, ErrBadTaskFile) || !strings.HasSuffix(err.Error(), msg) {
			t.Errorf("%.20q: error %v, want one ending %q", in, err, msg)
		}
	}
}

// FuzzParseHellaSwag: the parser never panics; what it accepts has six
// lines a task and gold endings 0..3, and reads back the same from the
// tasks written out again.
func FuzzParseHellaSwag(f *testing.F) {
	text, _ := hellaswagText(3, 2)
	for _, s := range []string{text, "", "\n", "a\n0\nb\nc\nd\ne\n", "a\n+3x\n\n\n\n\n", "a\n99999999999\nb\nc\nd\ne"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tasks, err := ParseHellaSwag(in)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, tk := range tasks {
			if tk.Gold < 0 || tk.Gold > 3 {
				t.Fatalf("gold %d accepted", tk.Gold)
			}
			fmt.Fprintf(&b, "%s\n%d\n%s\n%s\n%s\n%s\n", tk.Context, tk.Gold, tk.Endings[0], tk.Endings[1], tk.Endings[2], tk.Endings[3])
		}
		again, err := ParseHellaSwag(b.String())
		if err != nil || fmt.Sprint(again) != fmt.Sprint(tasks) {
			t.Fatalf("written back: %v, %v; want %v", again, err, tasks)
		}
	})
}

// bruteEndingScore is an ending's mean log-probability from the fake's
// whole logit rows, in float64.
func bruteEndingScore(f *fakeEngine, seq []int32, prefix int) float64 {
	sum := 0.0
	for pos := prefix - 1; pos < len(seq)-1; pos++ {
		row := f.fullLogits(seq, pos)
		mx := math.Inf(-1)
		for _, l := range row {
			mx = math.Max(mx, float64(l))
		}
		s := 0.0
		for _, l := range row {
			s += math.Exp(float64(l) - mx)
		}
		sum += float64(row[seq[pos+1]]) - mx - math.Log(s)
	}
	return sum / float64(len(seq)-prefix)
}

// TestRunHellaSwagMatchesBrute: the tasks scored are llama.cpp's draw, and
// every ending's score, choice and the accuracy with its interval agree
// with a float64 recomputation over whole logit rows.
func TestRunHellaSwagMatchesBrute(t *testing.T) {
	text, _ := hellaswagText(30, 4)
	tasks, err := ParseHellaSwag(text)
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(97, 16, 11, 0)
	f.addBOS, f.ubatch = true, 3
	var events []Event
	rep, err := RunHellaSwag(context.Background(), f, HellaSwagRequest{Tasks: tasks, Count: 12, Ctx: 400,
		Progress: func(e Event) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	order, _ := HellaSwagOrder(30, 12)
	h := rep.HellaSwag
	if rep.Method != MethodHellaSwag || h.Tasks != 12 || h.TasksInFile != 30 || len(h.Results) != 12 {
		t.Fatalf("report: method %q, %d of %d tasks, %d results", rep.Method, h.Tasks, h.TasksInFile, len(h.Results))
	}
	correct := 0
	for i, res := range h.Results {
		tk := tasks[order[i]]
		if res.Task != order[i] || res.Gold != tk.Gold {
			t.Fatalf("result %d: task %d gold %d, want task %d gold %d", i, res.Task, res.Gold, order[i], tk.Gold)
		}
		var seq [4][]int32
		for s, e := range tk.Endings {
			seq[s], _ = f.Tokenize(tk.Context + " " + e)
		}
		best := 0
		for s := range 4 {
			want := bruteEndingScore(f, seq[s], commonPrefix(seq))
			if math.Abs(res.Scores[s]-want) > 1e-5*math.Max(1, math.Abs(want)) {
				t.Errorf("task %d ending %d: score %v, brute %v", res.Task, s, res.Scores[s], want)
			}
			if res.Scores[s] > res.Scores[best] {
				best = s
			}
		}
		if res.Chosen != best {
			t.Errorf("task %d: chose %d, best score is %d", res.Task, res.Chosen, best)
		}
		if res.Chosen == res.Gold {
			correct++
		}
	}
	acc, lo, hi := wilson95(correct, 12)
	if h.Accuracy != acc || h.CI95Low != lo || h.CI95High != hi || !(lo <= acc && acc <= hi) {
		t.Errorf("accuracy %v [%v, %v], want %v [%v, %v]", h.Accuracy, h.CI95Low, h.CI95High, acc, lo, hi)
	}
	if len(events) != 14 || events[13].Kind != EventFinished || events[12].HellaSwag.Accuracy != acc {
		t.Errorf("%d events, the last task's accuracy %+v", len(events), events[len(events)-2].HellaSwag)
	}
}

// TestWilson95: llama-perplexity's printed interval for 3 of 4 and the
// textbook Wilson bounds for 0 and all.
func TestWilson95(t *testing.T) {
	acc, lo, hi := wilson95(3, 4)
	if got := fmt.Sprintf("%3.8f%%\t[%3.4f%%, %3.4f%%]", acc, lo, hi); got != "75.00000000%\t[30.0642%, 95.4413%]" {
		t.Errorf("3 of 4: %s", got)
	}
	// The textbook form: (p + z²/2n ± z·sqrt(p(1−p)/n + z²/4n²)) / (1 + z²/n).
	for _, c := range [][2]int{{3, 4}, {1, 7}, {250, 400}} {
		p, n, z := float64(c[0])/float64(c[1]), float64(c[1]), 1.95996398454
		mid, half := p+z*z/(2*n), z*math.Sqrt(p*(1-p)/n+z*z/(4*n*n))
		_, lo, hi := wilson95(c[0], c[1])
		if math.Abs(lo-100*(mid-half)/(1+z*z/n)) > 1e-9 || math.Abs(hi-100*(mid+half)/(1+z*z/n)) > 1e-9 {
			t.Errorf("%d of %d: [%v, %v]", c[0], c[1], lo, hi)
		}
	}
	if _, lo, _ := wilson95(0, 10); lo != 0 {
		t.Errorf("0 of 10: low %v", lo)
	}
	if _, _, hi := wilson95(10, 10); math.Abs(hi-100) > 1e-12 {
		t.Errorf("10 of 10: high %v", hi)
	}
}

func TestRunHellaSwagErrors(t *testing.T) {
	text, _ := hellaswagText(4, 5)
	tasks, _ := ParseHellaSwag(text)
	f := newFake(97, 8, 1, 0)
	f.addBOS = true
	_, err := RunHellaSwag(context.Background(), f, HellaSwagRequest{Tasks: tasks, Ctx: 20, Path: "hs.txt"})
	if err == nil || !strings.Contains(err.Error(), "hs.txt: task") || !strings.Contains(err.Error(), "does not fit in the context window") {
		t.Errorf("small ctx: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := RunHellaSwag(ctx, f, HellaSwagRequest{Tasks: tasks})
	if !errors.Is(err, ErrStopped) || !rep.Partial || rep.HellaSwag.Tasks != 0 {
		t.Errorf("cancelled: %v, partial %v", err, rep.Partial)
	}
}
