package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/engine"
	"plexbench/internal/choicetest"
	"plexbench/internal/shareddata"
	"plexbench/profiles"
	"plexbench/scoring"
	"plexbench/workbench"
)

// scoreHellaSwag runs score --hellaswag and returns its report.
func scoreHellaSwag(t *testing.T, model, file string, tasks int) scoring.Report {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.json")
	code, _, stderr := runCLI(t, "score", "--model", model, "--hellaswag", file,
		"--hellaswag-tasks", fmt.Sprint(tasks), "--perplexity-output", out, "--progress", "none")
	if code != 0 {
		t.Fatalf("score --hellaswag: exit %d: %s", code, stderr)
	}
	var rep scoring.Report
	data, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(data, &rep)
	}
	if err != nil || rep.HellaSwag == nil {
		t.Fatalf("report: %v (hellaswag %v)", err, rep.HellaSwag)
	}
	return rep
}

// bruteScores is each ending's mean log-probability after the four
// sequences' common prefix, from whole logit rows of a plain prefill of
// the sequence from position 0, in float64.
func bruteScores(t *testing.T, m *engine.Model, task scoring.HellaSwagTask) [4]float64 {
	var seq [4][]int32
	for s, e := range task.Endings {
		var err error
		if seq[s], err = m.Tokenize(task.Context + " " + e); err != nil {
			t.Fatal(err)
		}
	}
	prefix := 0
	for prefix < len(seq[0])-1 && seq[1][prefix] == seq[0][prefix] && seq[2][prefix] == seq[0][prefix] && seq[3][prefix] == seq[0][prefix] {
		prefix++
	}
	var out [4]float64
	for s := range seq {
		lp := rowLogProbs(t, m, seq[s])
		for _, v := range lp[prefix-1:] {
			out[s] += v
		}
		out[s] /= float64(len(seq[s]) - prefix)
	}
	return out
}

// rowLogProbs is, for each position but the last, the float64
// log-probability of the next token from the position's whole logit row.
func rowLogProbs(t *testing.T, m *engine.Model, seq []int32) []float64 {
	rows := logitRows(t, m, seq)
	lp := make([]float64, len(seq)-1)
	for pos := range lp {
		lp[pos] = logProb(rows[pos], seq[pos+1])
	}
	return lp
}

// logitRows is every position's whole logit row from a plain prefill of
// seq from position 0.
func logitRows(t *testing.T, m *engine.Model, seq []int32) [][]float32 {
	v, h := m.Info().VocabSize, m.Info().HiddenSize
	all := make([]int32, v)
	for i := range all {
		all[i] = int32(i)
	}
	var rows [][]float32
	err := m.Prefill(context.Background(), seq, 0, func(pos int, hidden []float32, n int) error {
		for i := range n {
			res := []engine.RowResult{{Picked: make([]float32, v)}}
			if err := m.HeadReduce(hidden[i*h:(i+1)*h], 1, []engine.RowRequest{{IDs: all}}, res); err != nil {
				return err
			}
			rows = append(rows, res[0].Picked)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// logProb is tok's float64 log-probability under a whole logit row.
func logProb(row []float32, tok int32) float64 {
	mx, sum := math.Inf(-1), 0.0
	for _, l := range row {
		mx = math.Max(mx, float64(l))
	}
	for _, l := range row {
		sum += math.Exp(float64(l) - mx)
	}
	return float64(row[tok]) - mx - math.Log(sum)
}

// TestScoreHellaSwag: on stories260K-f32, score --hellaswag scores the
// tasks llama.cpp draws, in its order; each ending's score agrees with a
// float64 recomputation from whole logit rows, each chosen ending is the
// best score, and the accuracy is the brute count of right choices.
func TestScoreHellaSwag(t *testing.T) {
	t.Parallel()
	model := shareddata.Path(t, "models", "stories260K-f32.gguf")
	file := choicetest.HellaSwagFile(t, 40)
	rep := scoreHellaSwag(t, model, file, 25)
	h := rep.HellaSwag
	text, _ := workbench.ReadText(file)
	tasks, err := scoring.ParseHellaSwag(text)
	if err != nil {
		t.Fatal(err)
	}
	order, _ := scoring.HellaSwagOrder(len(tasks), 25)
	if h.Tasks != 25 || h.TasksInFile != 40 || len(h.Results) != 25 || rep.Method != scoring.MethodHellaSwag {
		t.Fatalf("%d of %d tasks, %d results, method %q", h.Tasks, h.TasksInFile, len(h.Results), rep.Method)
	}
	p := profiles.Default()
	p.Model = model
	opts, err := workbench.Options(p)
	if err != nil {
		t.Fatal(err)
	}
	m, err := engine.Load(model, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	correct, maxDiff := 0, 0.0
	for i, res := range h.Results {
		if res.Task != order[i] || res.Gold != tasks[order[i]].Gold {
			t.Fatalf("result %d: task %d gold %d, want task %d gold %d", i, res.Task, res.Gold, order[i], tasks[order[i]].Gold)
		}
		brute := bruteScores(t, m, tasks[res.Task])
		best := 0
		for s := range 4 {
			if math.Abs(res.Scores[s]-brute[s]) > 1e-5 {
				t.Errorf("task %d ending %d: score %.7f, brute %.7f", res.Task, s, res.Scores[s], brute[s])
			}
			if brute[s] > brute[best] {
				best = s
			}
			if res.Scores[s] > res.Scores[res.Chosen] {
				t.Errorf("task %d: chose %d (%v) below ending %d (%v)", res.Task, res.Chosen, res.Scores[res.Chosen], s, res.Scores[s])
			}
		}
		for s := range 4 {
			maxDiff = math.Max(maxDiff, math.Abs(res.Scores[s]-brute[s]))
		}
		if best != res.Chosen && math.Abs(brute[best]-brute[res.Chosen]) > 1e-5*math.Abs(brute[best]) {
			t.Errorf("task %d: chose %d, brute best %d (%v)", res.Task, res.Chosen, best, brute)
		}
		if best == res.Gold {
			correct++
		}
	}
	if want := 100 * float64(correct) / 25; h.Accuracy != want || !(h.CI95Low < want && want < h.CI95High) {
		t.Errorf("accuracy %v [%v, %v], brute %v", h.Accuracy, h.CI95Low, h.CI95High, want)
	}
	t.Logf("acc_norm %.2f%% [%.4f%%, %.4f%%] over %d tasks; largest score difference from the float64 recomputation %.2g", h.Accuracy, h.CI95Low, h.CI95High, h.Tasks, maxDiff)
}

// TestScoreHellaSwagBadFile: a task file of the wrong line count or with
// a bad gold index ends with one line naming the file and the task, and
// nothing written.
func TestScoreHellaSwagBadFile(t *testing.T) {
	t.Parallel()
	model := shareddata.Path(t, "models", "stories260K-f32.gguf")
	dir := t.TempDir()
	for name, c := range map[string]struct{ text, want string }{
		"short.txt": {"a\n1\nb\nc\nd\ne\nf\n", "task 1 (lines 7..) is incomplete"},
		"gold.txt":  {"a\n1\nb\nc\nd\ne\nf\n7\ng\nh\ni\nj\n", `task 1 (line 8): gold ending "7" is not 0..3`},
	} {
		file, out := filepath.Join(dir, name), filepath.Join(dir, name+".json")
		if err := os.WriteFile(file, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCLI(t, "score", "--model", model, "--hellaswag", file, "--perplexity-output", out)
		if _, err := os.Stat(out); code == 0 || stdout != "" || err == nil {
			t.Errorf("%s: exit %d, stdout %q, report written: %v", name, code, stdout, err == nil)
		}
		if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, file) || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: stderr %q, want one line naming the file and %q", name, stderr, c.want)
		}
	}
	file := choicetest.HellaSwagFile(t, 2)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--hellaswag-tasks", "3"}, "--hellaswag-tasks needs --hellaswag FILE"},
		{[]string{"--hellaswag", file, "--hellaswag-tasks", "0"}, "--hellaswag-tasks 0: want at least 1"},
		{[]string{"--hellaswag", file, "--perplexity", file}, "it takes no perplexity text"},
		{[]string{"--hellaswag", file, "--perplexity-kld-base-out", filepath.Join(dir, "x.kld")}, "it takes no KLD base"},
		{[]string{"--hellaswag", file, "--perplexity-output", filepath.Join(dir, "r.json"), "--resume"}, "a --hellaswag run keeps no journal"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"score", "--model", model}, c.args...)...)
		if code == 0 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one line saying %q", c.args, code, stdout, stderr, c.want)
		}
	}
}
