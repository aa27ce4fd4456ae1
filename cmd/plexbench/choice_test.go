package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"plexbench/engine"
	"plexbench/internal/choicetest"
	"plexbench/internal/shareddata"
	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/workbench"
)

// scoreChoice runs score with args and returns its report.
func scoreChoice(t *testing.T, args ...string) scoring.Report {
	t.Helper()
	return scoreChoiceEnv(t, nil, args...)
}

// scoreChoiceEnv is scoreChoice in the environment env (runCLIEnv).
func scoreChoiceEnv(t *testing.T, env map[string]string, args ...string) scoring.Report {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.json")
	code, stdout, stderr := runCLIEnv(t, env, append([]string{"score", "--perplexity-output", out, "--progress", "none"}, args...)...)
	if code != 0 || stdout != "" {
		t.Fatalf("score %q: exit %d: %s", args, code, stderr)
	}
	var rep scoring.Report
	data, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(data, &rep)
	}
	if err != nil || rep.Choice() == nil {
		t.Fatalf("report: %v", err)
	}
	return rep
}

// loadModel loads path with the default profile's engine settings.
func loadModel(t *testing.T, path string) *engine.Model {
	t.Helper()
	p := profiles.Default()
	p.Model = path
	opts, err := workbench.Options(p)
	if err != nil {
		t.Fatal(err)
	}
	m, err := engine.Load(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// bruteWinogrande scores a task as winogrande_score's text does, over
// whole logit rows in float64: the batch's rows laid out as it lays them
// out, its eval pairs, its divisors. skipped says whether the choices'
// own tokens were left out.
func bruteWinogrande(t *testing.T, m *engine.Model, tk scoring.WinograndeTask) (score [2]float64, skipped bool) {
	tok := func(s string) []int32 {
		ids, err := m.Tokenize(s)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	seq := [2][]int32{tok(tk.First + tk.Choices[0] + tk.Second), tok(tk.First + tk.Choices[1] + tk.Second)}
	base := [2]int{len(tok(tk.First + tk.Choices[0])), len(tok(tk.First + tk.Choices[1]))}
	cp := 0
	for cp < len(seq[0]) && cp < len(seq[1]) && seq[0][cp] == seq[1][cp] {
		cp++
	}
	rows := [2][][]float32{logitRows(t, m, seq[0]), logitRows(t, m, seq[1])}
	batch := [][]float32{rows[0][cp-1]}
	batch = append(append(batch, rows[0][cp:]...), rows[1][cp:]...)
	skipped = len(seq[0])-cp > 3 && len(seq[1])-cp > 3
	for s := range 2 {
		nb := cp
		if skipped {
			nb = base[s]
		}
		last, li := 0, nb-cp
		if len(seq[s])-nb > 1 {
			last = 1
		}
		if s == 1 {
			li += len(seq[0]) - cp
		}
		for j := nb - 1; j < len(seq[s])-1-last; j, li = j+1, li+1 {
			score[s] += logProb(batch[li], seq[s][j+1])
		}
		score[s] /= float64(len(seq[s]) - nb - last)
	}
	return score, skipped
}

// TestScoreWinogrande: on stories260K-f32, score --winogrande scores the
// tasks llama.cpp draws, in its order; each choice's score agrees with a
// float64 recomputation that follows winogrande_score over whole logit
// rows, the choice is the larger score's (the second on ties), and the
// final figures are llama.cpp's of the brute count.
func TestScoreWinogrande(t *testing.T) {
	t.Parallel()
	model := shareddata.Path(t, "models", "stories260K-f32.gguf")
	file := choicetest.WinograndeFile(t, 160)
	rep := scoreChoice(t, "--model", model, "--winogrande", file, "--winogrande-tasks", "120")
	w := rep.Winogrande
	data, _ := os.ReadFile(file)
	tasks, _, err := scoring.ParseWinogrande(workbench.PerplexityText(data))
	if err != nil {
		t.Fatal(err)
	}
	order, _ := scoring.ChoiceOrder(len(tasks), 120)
	if rep.Method != scoring.MethodWinogrande || w.Tasks != 120 || w.TasksInFile != 160 || len(w.TaskFileSHA256) != 64 {
		t.Fatalf("method %q, %d of %d tasks, file sha256 %q", rep.Method, w.Tasks, w.TasksInFile, w.TaskFileSHA256)
	}
	m := loadModel(t, model)
	correct, kinds, maxDiff := 0, map[bool]int{}, 0.0
	for i, res := range w.Results {
		if res.Task != order[i] || res.Gold != tasks[order[i]].Gold {
			t.Fatalf("result %d: task %d gold %d, want task %d", i, res.Task, res.Gold, order[i])
		}
		brute, skipped := bruteWinogrande(t, m, tasks[res.Task])
		kinds[skipped]++
		for c := range 2 {
			maxDiff = math.Max(maxDiff, math.Abs(res.Scores[c]-brute[c]))
			if math.Abs(res.Scores[c]-brute[c]) > 1e-5*math.Max(1, math.Abs(brute[c])) {
				t.Errorf("task %d choice %d: score %.7f, brute %.7f", res.Task, c, res.Scores[c], brute[c])
			}
		}
		best := 1
		if brute[0] > brute[1] {
			best = 0
		}
		if best != res.Chosen && math.Abs(brute[0]-brute[1]) > 1e-5*math.Abs(brute[0]) {
			t.Errorf("task %d: chose %d, brute %d (%v)", res.Task, res.Chosen, best, brute)
		}
		if best == res.Gold {
			correct++
		}
	}
	if kinds[true] == 0 || kinds[false] == 0 {
		t.Errorf("scorings exercised: %v", kinds)
	}
	if acc, unc := scoring.WinograndeFinal(correct, 120); w.Accuracy != acc || w.Uncertainty != unc {
		t.Errorf("final %v ± %v, brute %v ± %v", w.Accuracy, w.Uncertainty, acc, unc)
	}
	t.Logf("Winogrande %.4f ± %.4f over %d tasks (%d with the choice skipped, %d whole-tail); largest score difference from the float64 recomputation %.2g",
		w.Accuracy, w.Uncertainty, w.Tasks, kinds[true], kinds[false], maxDiff)
}

// TestScoreMultipleChoice: on stories260K-f32, score --multiple-choice
// scores every task in file order (no count) or llama.cpp's draw; each
// answer's score agrees with a float64 mean log-probability after the
// answers' common prefix from whole logit rows, the choice is the first
// best, and the final result is llama.cpp's of the brute count.
func TestScoreMultipleChoice(t *testing.T) {
	t.Parallel()
	model := shareddata.Path(t, "models", "stories260K-f32.gguf")
	file := choicetest.MultipleChoiceFile(t, 40)
	data, _ := os.ReadFile(file)
	tasks, err := scoring.ParseMultipleChoice(data)
	if err != nil {
		t.Fatal(err)
	}
	m := loadModel(t, model)
	for _, count := range []int{0, 25} {
		mc := scoreChoice(t, "--model", model, "--multiple-choice", file, "--multiple-choice-tasks", fmt.Sprint(count)).MultipleChoice
		order, _ := scoring.ChoiceOrder(40, count)
		if mc.Tasks != len(order) || mc.TasksInFile != 40 {
			t.Fatalf("count %d: %d of %d tasks", count, mc.Tasks, mc.TasksInFile)
		}
		correct := 0
		for i, res := range mc.Results {
			tk := tasks[order[i]]
			if res.Task != order[i] || res.Gold != tk.Gold || len(res.Scores) != len(tk.Answers) {
				t.Fatalf("result %d: %+v, want task %d", i, res, order[i])
			}
			brute := bruteAnswers(t, m, tk)
			best := 0
			for a := range brute {
				if math.Abs(res.Scores[a]-brute[a]) > 1e-5*math.Max(1, math.Abs(brute[a])) {
					t.Errorf("task %d answer %d: score %.7f, brute %.7f", res.Task, a, res.Scores[a], brute[a])
				}
				if brute[a] > brute[best] {
					best = a
				}
			}
			if best != res.Chosen && math.Abs(brute[best]-brute[res.Chosen]) > 1e-5*math.Abs(brute[best]) {
				t.Errorf("task %d: chose %d, brute %d (%v)", res.Task, res.Chosen, best, brute)
			}
			if best == res.Gold {
				correct++
			}
		}
		if acc, unc := scoring.MultipleChoiceFinal(correct, len(order)); mc.Accuracy != acc || mc.Uncertainty != unc {
			t.Errorf("count %d: final %v ± %v, brute %v ± %v", count, mc.Accuracy, mc.Uncertainty, acc, unc)
		}
		answers := 0
		for _, i := range order {
			answers += len(tasks[i].Answers)
		}
		if p, unc := scoring.MultipleChoiceChance(len(order), answers); mc.RandomChance != p || mc.RandomChanceUncertainty != unc {
			t.Errorf("count %d: random chance %v ± %v, want %v ± %v", count, mc.RandomChance, mc.RandomChanceUncertainty, p, unc)
		}
	}
}

// bruteAnswers is each answer's mean log-probability after the answers'
// common prefix, from whole logit rows, in float64.
func bruteAnswers(t *testing.T, m *engine.Model, tk scoring.MultipleChoiceTask) []float64 {
	seqs := make([][]int32, len(tk.Answers))
	for a, s := range tk.Answers {
		var err error
		if seqs[a], err = m.Tokenize(tk.Question + " " + s); err != nil {
			t.Fatal(err)
		}
	}
	cp := 0 // leaving each answer a token of its own
	for shared := true; ; cp++ {
		for _, s := range seqs {
			shared = shared && cp < len(s)-1 && s[cp] == seqs[0][cp]
		}
		if !shared {
			break
		}
	}
	out := make([]float64, len(seqs))
	for a, s := range seqs {
		lp := rowLogProbs(t, m, s)[cp-1:]
		for _, v := range lp {
			out[a] += v
		}
		out[a] /= float64(len(lp))
	}
	return out
}

// TestScoreChoiceBadFiles: a bad Winogrande line, a truncated or
// inconsistent binary file end with one line naming the file and the
// line or task, and nothing written; options a task file cannot take are
// refused in one line.
func TestScoreChoiceBadFiles(t *testing.T) {
	t.Parallel()
	model := shareddata.Path(t, "models", "stories260K-f32.gguf")
	mc, _ := os.ReadFile(choicetest.MultipleChoiceFile(t, 3))
	cut := append([]byte(nil), mc[:len(mc)-6]...)
	moved := append([]byte(nil), mc...)
	moved[8]++ // task 1's offset
	dir := t.TempDir()
	for _, c := range []struct {
		flag, name, text, want string
	}{
		{"--winogrande", "wg.csv", "0,a _ b,x,y,1\n1,a _ b,x,y,7\n\n", `line 2: answer "7" is not 1 or 2`},
		{"--winogrande", "commas.csv", "0,a _ b,x,y,1\n1,a _ b;x;y;1\n\n", "line 2: 1 of the 4 commas"},
		{"--multiple-choice", "cut.bin", string(cut), "task 2: truncated: mc1 label"},
		{"--multiple-choice", "moved.bin", string(moved), "task 1 starts at byte"},
	} {
		file, out := filepath.Join(dir, c.name), filepath.Join(dir, c.name+".json")
		if err := os.WriteFile(file, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCLI(t, "score", "--model", model, c.flag, file, "--perplexity-output", out)
		if _, err := os.Stat(out); code == 0 || stdout != "" || err == nil {
			t.Errorf("%s: exit %d, stdout %q, report written: %v", c.name, code, stdout, err == nil)
		}
		if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, file) || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: stderr %q, want one line naming the file and %q", c.name, stderr, c.want)
		}
	}
	wg := choicetest.WinograndeFile(t, 3)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--winogrande-tasks", "3"}, "--winogrande-tasks needs --winogrande FILE"},
		{[]string{"--multiple-choice", wg, "--multiple-choice-tasks", "-1"}, "--multiple-choice-tasks -1: want 0 (all) or more"},
		{[]string{"--winogrande", wg, "--hellaswag", wg}, "--hellaswag and --winogrande: score one task file at a time"},
		{[]string{"--winogrande", wg, "--perplexity-kld-base-out", filepath.Join(dir, "x.kld")}, "--winogrande scores a task file; it takes no KLD base"},
		{[]string{"--multiple-choice", wg, "--perplexity-output", filepath.Join(dir, "r.json"), "--resume"}, "a --multiple-choice run keeps no journal"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"score", "--model", model}, c.args...)...)
		if code == 0 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one line saying %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

// TestChoiceRecordsCompareAB: Winogrande runs of two models are records of
// one group (task file and count), best accuracy first, with their own
// table; a third run of another count is another group; ab of the two
// records gives the paired difference and McNemar's exact test from the
// tasks only one got right, and refuses runs of other tasks. The progress
// line carries the running accuracy ±.
func TestChoiceRecordsCompareAB(t *testing.T) {
	t.Parallel()
	root, file, dir := t.TempDir(), choicetest.WinograndeFile(t, 60), t.TempDir()
	env := map[string]string{results.EnvRoot: root}
	progress := filepath.Join(dir, "progress.txt")
	var reps []scoring.Report
	for _, q := range []string{"f32", "q4_0"} {
		reps = append(reps, scoreChoiceEnv(t, env, "--model", stories(t, q), "--winogrande", file, "--winogrande-tasks", "40",
			"--progress", "text", "--progress-out", progress))
	}
	scoreChoiceEnv(t, env, "--model", stories(t, "f32"), "--winogrande", file, "--winogrande-tasks", "30")
	line, _ := os.ReadFile(progress)
	if !strings.Contains(string(line), "task 40/40  accuracy ") || !strings.Contains(string(line), "% over 40 tasks") {
		t.Errorf("progress:\n%s", line)
	}
	out := compareJSON(t, env)
	if len(out.Groups) != 2 || strings.Join(out.Differ, ",") != "tasks" {
		t.Fatalf("%d groups differing in %v", len(out.Groups), out.Differ)
	}
	var g results.CompareGroup
	for _, x := range out.Groups {
		if x.Protocol.Tasks == 40 {
			g = x
		}
	}
	if len(g.Rows) != 2 || *g.Rows[0].Accuracy < *g.Rows[1].Accuracy || g.Rows[0].Tasks != 40 ||
		!strings.Contains(g.Title, "winogrande, 40 tasks of winogrande.csv") {
		t.Fatalf("group %q: %+v", g.Title, g.Rows)
	}
	if code, stdout, _ := runCLIEnv(t, env, "compare", "--format", "md"); code != 0 || !strings.Contains(stdout, "| # | model | kv | bpw | accuracy | tasks |") {
		t.Errorf("compare --format md:\n%s", stdout)
	}
	if code, stdout, _ := runCLIEnv(t, env, "compare", "--format", "csv"); code != 0 || !strings.Contains(stdout, ",accuracy,tasks,record\n") ||
		!strings.Contains(stdout, fmt.Sprintf(",%s,40,%s\n", g.Rows[0].Figure, g.Rows[0].Record)) {
		t.Errorf("compare --format csv:\n%s", stdout)
	}
	recs := func(n int) []string {
		var paths []string
		for _, r := range g.Rows[:n] {
			paths = append(paths, filepath.Join(root, r.Record+".json"))
		}
		return paths
	}(2)
	code, stdout, stderr := runCLIEnv(t, env, "ab", recs[0], recs[1], "--json")
	if code != 0 {
		t.Fatalf("ab: exit %d %s", code, stderr)
	}
	var ab struct {
		Choice scoring.ChoiceComparison `json:"choice"`
	}
	json.Unmarshal([]byte(stdout), &ab)
	byName := map[string]*scoring.ChoiceReport{reps[0].Record.Name: reps[0].Winogrande, reps[1].Record.Name: reps[1].Winogrande}
	a, b := byName[g.Rows[0].Record], byName[g.Rows[1].Record]
	onlyA, onlyB := 0, 0
	for i := range a.Results {
		okA, okB := a.Results[i].Chosen == a.Results[i].Gold, b.Results[i].Chosen == b.Results[i].Gold
		if okA && !okB {
			onlyA++
		} else if okB && !okA {
			onlyB++
		}
	}
	c := ab.Choice
	if c.Tasks != 40 || c.OnlyA != onlyA || c.OnlyB != onlyB || c.McNemarP != scoring.McNemarExact(onlyA, onlyB) ||
		math.Abs(c.DeltaAccuracy-100*float64(onlyB-onlyA)/40) > 1e-9 {
		t.Errorf("ab: %+v; want only A %d, only B %d", c, onlyA, onlyB)
	}
	if code, stdout, _ = runCLIEnv(t, env, "ab", recs[0], recs[1]); code != 0 || !strings.Contains(stdout, "McNemar exact p = ") {
		t.Errorf("ab text: exit %d\n%s", code, stdout)
	}
	other, _ := filepath.Glob(filepath.Join(root, "*.json"))
	for _, o := range other {
		if o != recs[0] && o != recs[1] {
			code, stdout, stderr = runCLIEnv(t, env, "ab", recs[0], o)
			if code == 0 || stdout != "" || !strings.Contains(stderr, "different tasks: 40 tasks against 30") {
				t.Errorf("ab of other tasks: exit %d, stderr %q", code, stderr)
			}
		}
	}
}

// TestScoreChoiceLongerThanCtx: as in llama-perplexity, a task may hold
// more tokens than -c as long as it fits in the context the mode
// allocates (max(4, --parallel)·ctx, padded to 256): at ctx 32 the tasks
// are scored, with the same results as at the default ctx, and the KV
// cache is sized to that context. --parallel needs a task file.
func TestScoreChoiceLongerThanCtx(t *testing.T) {
	t.Parallel()
	model := shareddata.Path(t, "models", "stories260K-f32.gguf")
	file := choicetest.HellaSwagFile(t, 40)
	args := []string{"--model", model, "--hellaswag", file, "--hellaswag-tasks", "12"}
	wide := scoreChoice(t, args...)
	short := scoreChoice(t, append(args, "--perplexity-ctx", "32", "--parallel", "1")...)
	if short.Ctx != 32 || short.Config.KVCapacity != 256 || wide.Config.KVCapacity != 2048 {
		t.Errorf("ctx %d: KV capacity %d; default ctx: %d", short.Ctx, short.Config.KVCapacity, wide.Config.KVCapacity)
	}
	if !reflect.DeepEqual(short.HellaSwag.Results, wide.HellaSwag.Results) {
		t.Errorf("ctx 32: %+v\nctx 512: %+v", short.HellaSwag.Results, wide.HellaSwag.Results)
	}
	longest := 0
	m := loadModel(t, model)
	text, _ := workbench.ReadText(file)
	tasks, _ := scoring.ParseHellaSwag(text)
	for _, r := range short.HellaSwag.Results {
		ids, err := m.Tokenize(tasks[r.Task].Context + " " + tasks[r.Task].Endings[0])
		if err != nil {
			t.Fatal(err)
		}
		longest = max(longest, len(ids))
	}
	if longest <= 32 {
		t.Errorf("the longest sequence scored has %d tokens: the test needs tasks longer than ctx 32", longest)
	}
	for _, bad := range [][]string{{"--parallel", "4"}, {"--hellaswag", file, "--parallel", "-1"}} {
		code, _, stderr := runCLI(t, append([]string{"score", "--model", model}, bad...)...)
		if code == 0 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--parallel") {
			t.Errorf("%q: exit %d, %q", bad, code, stderr)
		}
	}
}

// TestChoiceCard: a multiple-choice record's card shows the mode's figure
// as the report has it and the tasks it is over, names no local path, and
// its reproduce command, run with the files under those names, scores
// the same tasks to the same results.
func TestChoiceCard(t *testing.T) {
	t.Parallel()
	model := shareddata.Path(t, "models", "stories260K-q8_0.gguf")
	dir := t.TempDir()
	files := map[string]string{"--hellaswag": choicetest.HellaSwagFile(t, 30), "--winogrande": choicetest.WinograndeFile(t, 30), "--multiple-choice": choicetest.MultipleChoiceFile(t, 30)}
	for flag, file := range files {
		for _, count := range []string{"7", "0"} {
			if flag == "--hellaswag" && count == "0" {
				continue // HellaSwag always draws
			}
			cardPath := filepath.Join(dir, "card.md")
			rep := scoreChoice(t, "--model", model, flag, file, flag+"-tasks", count, "--perplexity-ctx", "256", "--card", cardPath)
			data, err := os.ReadFile(cardPath)
			if err != nil {
				t.Fatal(err)
			}
			card, c := string(data), rep.Choice()
			if !strings.Contains(card, "| "+c.Figure()+" (") || !strings.Contains(card, fmt.Sprintf("of %d (30 in the file)", c.Tasks)) ||
				strings.Contains(card, dir) || strings.Contains(card, filepath.Dir(file)) || strings.Contains(card, "perplexity |") {
				t.Errorf("%s %s: card\n%s", flag, count, card)
			}
			_, cmd, ok := strings.Cut(card, "```sh\nplexbench score ")
			cmd, _, _ = strings.Cut(cmd, "\n")
			if !ok {
				t.Fatalf("%s: no reproduce command in\n%s", flag, card)
			}
			args := strings.Fields(cmd)
			for i, a := range args {
				switch a {
				case filepath.Base(model):
					args[i] = model
				case filepath.Base(file):
					args[i] = file
				}
			}
			again := scoreChoice(t, args...)
			if !reflect.DeepEqual(again.Choice().Results, c.Results) || again.Ctx != rep.Ctx {
				t.Errorf("%s %s: the card's command %q scores other results", flag, count, cmd)
			}
		}
	}
}
