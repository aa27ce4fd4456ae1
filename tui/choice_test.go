package tui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"plexbench/internal/choicetest"
	"plexbench/internal/shareddata"
	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/workbench"
)

// choiceProfile is the default profile on stories260K-f32, on one thread.
func choiceProfile(t *testing.T) profiles.Profile {
	p := profiles.Default()
	p.Name, p.Threads = "tasks", 1
	p.Model = shareddata.Path(t, "models", "stories260K-f32.gguf")
	return p
}

// correctOf counts the results whose chosen answer is the gold one.
func correctOf(rs []scoring.ChoiceResult) int {
	n := 0
	for _, r := range rs {
		if r.Chosen == r.Gold {
			n++
		}
	}
	return n
}

// onlyRun is the one run in the results folder dir.
func onlyRun(t *testing.T, dir string) results.Entry {
	t.Helper()
	h, err := results.History(dir)
	if err != nil || len(h) != 1 || h[0].Err != nil {
		t.Fatalf("history of %s: %+v, %v", dir, h, err)
	}
	return h[0]
}

// TestChoiceEndToEnd runs a small task file of each multiple-choice format
// on stories260K in the real app: the run view shows the mode and file,
// the tasks done, the accuracy and a chart of it, and nothing of a
// perplexity run; at the end its accuracy line is the saved report's
// figure, and the report is kept as a record, as score keeps it.
func TestChoiceEndToEnd(t *testing.T) {
	for _, c := range []struct {
		method string
		choice func(t *testing.T) workbench.Choice
	}{
		{scoring.MethodHellaSwag, func(t *testing.T) workbench.Choice {
			return workbench.Choice{HellaSwag: choicetest.HellaSwagFile(t, 8), HellaSwagTasks: 8}
		}},
		{scoring.MethodWinogrande, func(t *testing.T) workbench.Choice {
			return workbench.Choice{Winogrande: choicetest.WinograndeFile(t, 8)}
		}},
		{scoring.MethodMultipleChoice, func(t *testing.T) workbench.Choice {
			return workbench.Choice{MultipleChoice: choicetest.MultipleChoiceFile(t, 8)}
		}},
	} {
		t.Run(c.method, func(t *testing.T) {
			dir, choice := t.TempDir(), c.choice(t)
			mode, _ := choice.Mode()
			app, err := New(Config{Profiles: []profiles.Profile{choiceProfile(t)}, ResultsDir: dir, Choice: choice,
				Runner: RunnerFunc(workbench.Run), NoColor: true})
			if err != nil {
				t.Fatal(err)
			}
			defer app.Close()
			obs := &observer{notify: make(chan struct{}, 1)}
			tm := teatest.NewTestModel(t, observed{m: app, obs: obs}, teatest.WithInitialTermSize(120, 40))
			obs.waitScreen(t, "the run's end", func(s string) bool { return strings.Contains(s, "report saved to") })
			s := obs.screen
			tm.Send(press('q'))
			tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))

			e := onlyRun(t, dir)
			rep := e.Run
			sum := rep.Choice()
			if sum == nil || sum.Method != c.method || rep.Partial || rep.Record == nil || sum.Tasks != 8 || len(sum.Results) != 8 {
				t.Fatalf("report: %+v, partial %v, record %v", sum, rep.Partial, rep.Record)
			}
			if want := filepath.Join(dir, rep.Record.Name+".json"); e.Report != want || !e.HasProfile {
				t.Errorf("kept as %s (profile %v), want the record %s", e.Report, e.HasProfile, want)
			}
			metric := scoring.ChoiceMetric(c.method)
			want := fmt.Sprintf("%s %s   %d right of 8", metric, sum.Figure(), correctOf(sum.Results))
			if l := line(s, metric+" "); strings.TrimRight(l, " ") != want {
				t.Errorf("accuracy line %q, the report says %q", l, want)
			}
			for _, w := range []string{c.method + " " + filepath.Base(mode.Path), "8/8 tasks", "8 tasks drawn",
				"running " + metric, "prefill tok/s", "DONE", "report saved to " + e.Report} {
				if !strings.Contains(s, w) {
					t.Errorf("the screen lacks %q:\n%s", w, s)
				}
			}
			for _, w := range []string{"PPL", "KLD", "window"} {
				if strings.Contains(s, w) {
					t.Errorf("a task file's screen shows %q:\n%s", w, s)
				}
			}
		})
	}
}

// heldRunner runs workbench.Run, holding the run after task at until
// released, so a test acts while a task file's run is mid-way.
type heldRunner struct {
	at            int
	held, release chan struct{}
}

func (h heldRunner) Run(ctx context.Context, j workbench.Job) (workbench.Outcome, error) {
	show := j.Progress
	j.Progress = func(e scoring.Event) {
		show(e)
		if e.Kind == scoring.EventWindowDone && e.Choice.TasksDone == h.at {
			h.held <- struct{}{}
			select {
			case <-h.release:
			case <-time.After(30 * time.Second):
			}
		}
	}
	return workbench.Run(ctx, j)
}

// TestChoiceEndToEndStop: space pauses a task file's run between tasks
// and resumes it; q (or ctrl+c, which then quits) stops it after the task
// in flight, and the partial report is saved: fewer tasks than drawn,
// marked partial, its accuracy that of its results, the figure the screen
// shows.
func TestChoiceEndToEndStop(t *testing.T) {
	for _, stop := range []string{"q", "ctrl+c"} {
		t.Run(stop, func(t *testing.T) {
			dir := t.TempDir()
			h := heldRunner{at: 3, held: make(chan struct{}), release: make(chan struct{})}
			file := choicetest.HellaSwagFile(t, 20)
			app, err := New(Config{Profiles: []profiles.Profile{choiceProfile(t)}, ResultsDir: dir,
				Choice: workbench.Choice{HellaSwag: file, HellaSwagTasks: 20}, Runner: h, NoColor: true})
			if err != nil {
				t.Fatal(err)
			}
			defer app.Close()
			obs := &observer{notify: make(chan struct{}, 1)}
			tm := teatest.NewTestModel(t, observed{m: app, obs: obs}, teatest.WithInitialTermSize(120, 40))
			select {
			case <-h.held:
			case <-time.After(60 * time.Second):
				t.Fatal("the run never reached its third task")
			}
			obs.waitScreen(t, "3 tasks done", func(s string) bool { return strings.Contains(s, "3/20 tasks") })
			if stop == "q" {
				tm.Send(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
				obs.waitScreen(t, "paused", func(s string) bool {
					return strings.Contains(s, "PAUSED") && strings.Contains(s, "paused between tasks")
				})
				tm.Send(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
				obs.waitScreen(t, "resumed", func(s string) bool { return strings.Contains(s, "RUNNING") })
				tm.Send(press('q'))
			} else {
				tm.Send(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
			}
			obs.waitScreen(t, "stopping", func(s string) bool {
				return strings.Contains(s, "STOPPING") && strings.Contains(s, "after the task in flight")
			})
			close(h.release)
			var s string
			if stop == "q" {
				obs.waitScreen(t, "the partial report saved", func(s string) bool { return strings.Contains(s, "partial report saved to") })
				s = obs.screen
				tm.Send(press('q'))
			}
			tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
			if stop != "q" {
				s = stripANSI(tm.FinalModel(t).View().Content)
			}

			e := onlyRun(t, dir)
			rep, sum := e.Run, e.Run.Choice()
			if sum == nil || !rep.Partial || rep.Record != nil || sum.Tasks != 3 || len(sum.Results) != 3 || sum.Tasks >= 20 {
				t.Fatalf("partial report: %+v, partial %v (%s), record %v", sum, rep.Partial, rep.PartialReason, rep.Record)
			}
			correct := correctOf(sum.Results)
			if acc, lo, hi := scoring.HellaSwagRunning(correct, 3); sum.Accuracy != acc || sum.CI95Low != lo || sum.CI95High != hi {
				t.Errorf("accuracy %v [%v, %v], %d of its 3 results right: want %v [%v, %v]", sum.Accuracy, sum.CI95Low, sum.CI95High, correct, acc, lo, hi)
			}
			if !strings.Contains(e.Report, "_stopped-") || !e.HasProfile {
				t.Errorf("kept as %s (profile %v), want a stopped run's name", e.Report, e.HasProfile)
			}
			want := fmt.Sprintf("acc_norm %s   %d right of 3", sum.Figure(), correct)
			if l := line(s, "acc_norm "); strings.TrimRight(l, " ") != want {
				t.Errorf("accuracy line %q, the report says %q", l, want)
			}
			if !strings.Contains(s, "STOPPED") || !strings.Contains(s, "3/20 tasks") {
				t.Errorf("stopped screen:\n%s", s)
			}
			if fm := tm.FinalModel(t).(observed).m.(Model); len(fm.SavedReports()) != 1 || fm.SavedReports()[0] != e.Report {
				t.Errorf("saved %v, want %s", fm.SavedReports(), e.Report)
			}
		})
	}
}

// TestChoiceConfigRefused: the app refuses a task file beside an A/B, a
// sweep or a base, and one that does not read, before anything runs.
func TestChoiceConfigRefused(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "hs.txt")
	os.WriteFile(file, []byte("a context\n0\none\ntwo\nthree\nfour\n"), 0o644)
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("a context\n7\none\ntwo\nthree\nfour\n"), 0o644)
	a, b := abProfiles()
	p := a
	p.Text = "" // a task file takes no text
	one := []profiles.Profile{p}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Profiles: []profiles.Profile{a, b}, Choice: workbench.Choice{HellaSwag: file}}, "an A/B pairs perplexity runs"},
		{Config{Sweep: &workbench.SweepJob{Job: workbench.Job{Profile: a}}, Sweeper: SweeperFunc(workbench.Sweep), Choice: workbench.Choice{Winogrande: file}},
			"--winogrande: a sweep scores a text"},
		{Config{Profiles: one, Base: "x.kld", Choice: workbench.Choice{HellaSwag: file}}, "--hellaswag scores a task file; it takes no KLD base"},
		{Config{Profiles: one, Choice: workbench.Choice{HellaSwag: file, MultipleChoice: file}}, "score one task file at a time"},
		{Config{Profiles: one, Choice: workbench.Choice{HellaSwag: bad}}, bad},
	} {
		c.cfg.Runner = noRunner
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg.Choice, err, c.want)
		}
	}
	if _, err := New(Config{Profiles: one, Choice: workbench.Choice{HellaSwag: file}, Runner: noRunner}); err != nil {
		t.Errorf("a good task file refused: %v", err)
	}
}

// choiceFixture is a HellaSwag run of 20 of a file's 30 tasks as the view
// receives it, made up so the figures are exact and the clocks fixed:
// every task prefills 150 tokens in half a second, every third from the second
// chooses wrong. The task file is written, so New accepts it.
func choiceFixture(t *testing.T) (workbench.Choice, []scoring.Event, scoring.Report) {
	t.Helper()
	const total, tokens = 20, 150
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "context %d\n%d\none\ntwo\nthree\nfour\n", i, i%4)
	}
	file := filepath.Join(t.TempDir(), "hellaswag.txt")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	at := func(i int) scoring.Event {
		return scoring.Event{Method: scoring.MethodHellaSwag, Ctx: 512, WindowsTotal: total, WindowsDone: i,
			PrefillTotal: total * tokens, PrefillDone: i * tokens, Elapsed: 500*time.Millisecond + time.Duration(i)*500*time.Millisecond,
			TokensPerSecond: 300, MeanTokensPerSecond: 300, ETA: time.Duration(total-i) * 500 * time.Millisecond}
	}
	start := at(0)
	start.Kind, start.Choice = scoring.EventStarted, &scoring.ChoiceProgress{TasksTotal: total}
	events := []scoring.Event{start}
	var res []scoring.ChoiceResult
	for i := 1; i <= total; i++ {
		r := scoring.ChoiceResult{Task: i + 3, Gold: i % 4, Chosen: i % 4, Scores: []float64{-1, -2, -3, -4}}
		if i%3 == 2 {
			r.Chosen = (r.Gold + 1) % 4
		}
		res = append(res, r)
		c := correctOf(res)
		acc, lo, hi := scoring.HellaSwagRunning(c, i)
		e := at(i)
		e.Kind, e.Choice = scoring.EventWindowDone, &scoring.ChoiceProgress{TasksDone: i, TasksTotal: total, Correct: c,
			Accuracy: acc, CI95Low: lo, CI95High: hi}
		events = append(events, e)
	}
	end := events[len(events)-1]
	end.Kind, end.TokensPerSecond, end.ETA = scoring.EventFinished, 0, 0
	events = append(events, end)
	rep := scoring.Report{Object: scoring.ReportObject, Method: scoring.MethodHellaSwag, Ctx: 512, Text: file,
		Config:        scoring.EngineConfig{Model: scoring.ModelInfo{Path: "../models/fake.gguf", Architecture: "fake"}},
		PrefillTokens: total * tokens, ElapsedSeconds: end.Elapsed.Seconds(), PrefillTokensPerSecond: 300,
		HellaSwag: &scoring.HellaSwagReport{TasksInFile: 30, Tasks: total, Accuracy: end.Choice.Accuracy,
			CI95Low: end.Choice.CI95Low, CI95High: end.Choice.CI95High, Results: res}}
	return workbench.Choice{HellaSwag: file, HellaSwagTasks: total}, events, rep
}

// choiceModel is the run view of choiceFixture's run at w × h after its
// first n events.
func choiceModel(t *testing.T, w, h, n int) (Model, []scoring.Event, scoring.Report) {
	choice, events, rep := choiceFixture(t)
	a, _ := abProfiles()
	a.Text = ""
	m := newTestModel(t, w, h, Config{Profiles: []profiles.Profile{a}, Choice: choice})
	for _, e := range events[:n] {
		m = step(m, eventMsg{id: 1, ev: e})
	}
	return m, events, rep
}

func TestChoiceViewGolden(t *testing.T) {
	for _, sz := range sizes {
		suffix := fmt.Sprintf("%dx%d", sz.w, sz.h)
		t.Run("mid "+suffix, func(t *testing.T) {
			m, _, _ := choiceModel(t, sz.w, sz.h, 1+12)
			golden(t, "choice_mid_"+suffix, screen(m))
		})
		t.Run("done "+suffix, func(t *testing.T) {
			m, events, rep := choiceModel(t, sz.w, sz.h, 0)
			for _, e := range events {
				m = step(m, eventMsg{id: 1, ev: e})
			}
			m = step(m, doneMsg{id: 1, rep: rep, saved: true, files: results.Run{Report: "plexbench-results/fake_hellaswag_0123abcd.json"}})
			golden(t, "choice_done_"+suffix, screen(m))
			m = step(m, tea.KeyPressMsg{Code: '?', Text: "?"})
			golden(t, "choice_help_"+suffix, screen(m))
		})
	}
}

// The choice view fits the terminal at every size, and a saved run
// re-opened from history draws as it did when it finished.
func TestChoiceViewFitsAndReopens(t *testing.T) {
	m, events, rep := choiceModel(t, 80, 24, 0)
	for _, e := range events {
		m = step(m, eventMsg{id: 1, ev: e})
	}
	m = step(m, doneMsg{id: 1, rep: rep, saved: true, files: results.Run{Report: "plexbench-results/r.json"}})
	for _, sz := range []struct{ w, h int }{{80, 24}, {120, 40}, {60, 16}, {40, 10}, {200, 60}} {
		mm := step(m, tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
		checkFits(t, "choice", screen(mm), sz.w, sz.h)
	}
	a, _ := abProfiles()
	a.Text = ""
	opened := openedRun(results.Entry{Report: "plexbench-results/r.json", Profile: a, HasProfile: true, Run: rep})
	// Its speed now and where it went are the run's, not the report's.
	drop := func(v string) string {
		lines := strings.Split(stripANSI(v), "\n")
		return strings.Join(slices.DeleteFunc(lines[:len(lines)-1], func(l string) bool { return strings.HasPrefix(l, "prefill tok/s") }), "\n")
	}
	s := DefaultStyles(true)
	if got, want := drop(opened.view(s, 80, 20)), drop(m.run.view(s, 80, 20)); got != want || !strings.Contains(got, "acc_norm 65.0000% [") {
		t.Errorf("re-opened:\n%s\nas it finished:\n%s", got, want)
	}
	// History lists it by its accuracy and tasks, not a perplexity.
	h := historyModel{dir: "plexbench-results"}.loaded(historyMsg{entries: []results.Entry{
		{Report: "plexbench-results/r.json", Profile: a, HasProfile: true, Run: rep, Time: time.Date(2025, 3, 4, 10, 20, 0, 0, time.UTC)}}})
	if l := line(stripANSI(h.view(s, 120, 10)), "> 2025-03-04 10:20"); !strings.Contains(l, "hellaswag 512") ||
		!strings.Contains(l, "65.00% acc_norm") || !strings.Contains(l, " 20 ") {
		t.Errorf("history line %q", l)
	}
}
