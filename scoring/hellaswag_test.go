package scoring

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

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
	rep, err := RunHellaSwag(context.Background(), f, HellaSwagRequest{Tasks: tasks, ChoiceOptions: ChoiceOptions{Count: 12, Ctx: 400,
		Progress: func(e Event) { events = append(events, e) }}})
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
		seq := make([][]int32, 4)
		for s, e := range tk.Endings {
			seq[s], _ = f.Tokenize(tk.Context + " " + e)
		}
		best := 0
		for s := range 4 {
			want := bruteEndingScore(f, seq[s], CommonPrefix(seq))
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
	acc, lo, hi := HellaSwagRunning(correct, 12)
	if h.Accuracy != acc || h.CI95Low != lo || h.CI95High != hi || !(lo <= acc && acc <= hi) {
		t.Errorf("accuracy %v [%v, %v], want %v [%v, %v]", h.Accuracy, h.CI95Low, h.CI95High, acc, lo, hi)
	}
	if len(events) != 14 || events[13].Kind != EventFinished || events[12].Choice.Accuracy != acc {
		t.Errorf("%d events, the last task's accuracy %+v", len(events), events[len(events)-2].Choice)
	}
}

// TestWilson95: llama-perplexity's printed interval for 3 of 4 and the
// textbook Wilson bounds for 0 and all.
func TestWilson95(t *testing.T) {
	acc, lo, hi := HellaSwagRunning(3, 4)
	if got := fmt.Sprintf("%3.8f%%\t[%3.4f%%, %3.4f%%]", acc, lo, hi); got != "75.00000000%\t[30.0642%, 95.4413%]" {
		t.Errorf("3 of 4: %s", got)
	}
	// The textbook form: (p + z²/2n ± z·sqrt(p(1−p)/n + z²/4n²)) / (1 + z²/n).
	for _, c := range [][2]int{{3, 4}, {1, 7}, {250, 400}} {
		p, n, z := float64(c[0])/float64(c[1]), float64(c[1]), 1.95996398454
		mid, half := p+z*z/(2*n), z*math.Sqrt(p*(1-p)/n+z*z/(4*n*n))
		_, lo, hi := HellaSwagRunning(c[0], c[1])
		if math.Abs(lo-100*(mid-half)/(1+z*z/n)) > 1e-9 || math.Abs(hi-100*(mid+half)/(1+z*z/n)) > 1e-9 {
			t.Errorf("%d of %d: [%v, %v]", c[0], c[1], lo, hi)
		}
	}
	if _, lo, _ := HellaSwagRunning(0, 10); lo != 0 {
		t.Errorf("0 of 10: low %v", lo)
	}
	if _, _, hi := HellaSwagRunning(10, 10); math.Abs(hi-100) > 1e-12 {
		t.Errorf("10 of 10: high %v", hi)
	}
}

func TestRunHellaSwagErrors(t *testing.T) {
	text, _ := hellaswagText(4, 5)
	tasks, _ := ParseHellaSwag(text)
	f := newFake(97, 8, 1, 0)
	f.addBOS = true
	// At ctx 20 llama-perplexity's context holds 256 tokens (4 sequences,
	// padded): a context of 300 bytes does not fit.
	long := slices.Clone(tasks)
	long[2].Context = strings.Repeat("the cat ", 38)
	_, err := RunHellaSwag(context.Background(), f, HellaSwagRequest{Tasks: long, ChoiceOptions: ChoiceOptions{Ctx: 20, Path: "hs.txt"}})
	if err == nil || !strings.Contains(err.Error(), "hs.txt: task 2 does not fit in the context window (requires ") ||
		!strings.Contains(err.Error(), "at ctx 20 holds 256: 4 sequences") {
		t.Errorf("small ctx: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := RunHellaSwag(ctx, f, HellaSwagRequest{Tasks: tasks})
	if !errors.Is(err, ErrStopped) || !rep.Partial || rep.HellaSwag.Tasks != 0 {
		t.Errorf("cancelled: %v, partial %v", err, rep.Partial)
	}
}
