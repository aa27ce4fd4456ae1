package tui

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/workbench"
)

// -update (defined by charm's golden package, which teatest brings in)
// rewrites testdata/*.golden; -record re-records the progress events.
var record = flag.Bool("record", false, "re-record testdata/*.events.json from the fake engine")

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// recording is one run's progress events and final report, as the views
// received them.
type recording struct {
	Profile profiles.Profile `json:"profile"`
	Events  []scoring.Event  `json:"events"`
	Report  scoring.Report   `json:"report"`
}

func abProfiles() (a, b profiles.Profile) {
	a = profiles.Default()
	a.Name, a.Description = "f32kv", "dense attention, f32 KV"
	a.Model, a.Text = "../models/fake.gguf", "../texts/fake.txt"
	a.Ctx, a.KVCacheDType, a.KVLen, a.Threads = 64, "f32", 256, 2
	b = a
	b.Name, b.Description, b.KVCacheDType = "f16kv", "dense attention, f16 KV", "f16"
	return a, b
}

// recordRun runs p through scoring on the fake engine and returns its
// events and report with wall-clock numbers replaced by fixed ones, so the
// views are reproducible. secs gives window i's seconds.
func recordRun(t *testing.T, j workbench.Job, secs func(i int) float64) recording {
	t.Helper()
	rec := recording{Profile: j.Profile}
	j.Progress = func(e scoring.Event) { rec.Events = append(rec.Events, e) }
	out, err := fakeRunner{text: fakeText(64 * 24)}.Run(context.Background(), j)
	rep := out.Report
	if err != nil {
		t.Fatal(err)
	}
	const load = 0.5
	elapsed, prefill := load, 0
	for i := range rec.Events {
		e := &rec.Events[i]
		if e.Kind == scoring.EventWindowDone {
			s := secs(e.Window.Index)
			w := *e.Window
			w.Seconds = s
			e.Window = &w
			elapsed += s
			prefill = e.PrefillDone
			e.TokensPerSecond = float64(w.End-w.Begin) / s
		}
		e.Elapsed = time.Duration(elapsed * float64(time.Second))
		if prefill > 0 {
			e.MeanTokensPerSecond = float64(prefill) / (elapsed - load)
			e.ETA = time.Duration(float64(e.PrefillTotal-prefill) / e.MeanTokensPerSecond * float64(time.Second))
		}
	}
	for i := range rep.Windows {
		rep.Windows[i].Seconds = secs(rep.Windows[i].Index)
	}
	rep.ElapsedSeconds = elapsed
	rep.PrefillTokensPerSecond = float64(rep.PrefillTokens) / elapsed
	rec.Report = rep
	return rec
}

// recordings returns A's and B's recordings, re-recording them with -record.
func recordings(t *testing.T) (a, b recording) {
	t.Helper()
	path := filepath.Join("testdata", "ab.events.json")
	if *record {
		pa, pb := abProfiles()
		dir := t.TempDir()
		baseA := filepath.Join(dir, "a.kld")
		a = recordRun(t, workbench.Job{Profile: pa, BaseOut: baseA}, func(i int) float64 { return 0.30 + 0.02*float64(i*7%5) })
		b = recordRun(t, workbench.Job{Profile: pb, Compare: baseA}, func(i int) float64 { return 0.17 + 0.01*float64(i*3%4) })
		// Paths as the app writes them, not this run's temp folder.
		a.Report.KLDBaseOut = "plexbench-results/f32kv_fake_a.kld"
		b.Report.KLD.Base = a.Report.KLDBaseOut
		data, err := json.MarshalIndent([]recording{a, b}, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -record to make it)", err)
	}
	var recs []recording
	if err := json.Unmarshal(data, &recs); err != nil || len(recs) != 2 {
		t.Fatalf("%s: %v", path, err)
	}
	return recs[0], recs[1]
}

// golden compares got with testdata/name.golden, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if updating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to make it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// noRunner fails if a view test ever reaches it: views are fed messages,
// and the commands that would run anything are dropped.
var noRunner = RunnerFunc(func(context.Context, workbench.Job) (workbench.Outcome, error) {
	panic("view tests run nothing")
})

func newTestModel(t *testing.T, w, h int, cfg Config) Model {
	t.Helper()
	cfg.Runner = noRunner
	cfg.ResultsDir = "plexbench-results"
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m = step(m, tea.WindowSizeMsg{Width: w, Height: h})
	return step(m, startMsg{})
}

// step applies msg and drops the returned command.
func step(m Model, msg tea.Msg) Model {
	next, _ := m.Update(msg)
	return next.(Model)
}

// feed sends run id's events for windows [from, to) — to < 0: through
// the end, the Finished event included. The Started event goes with from 0.
func feed(m Model, id int, rec recording, from, to int) Model {
	for _, e := range rec.Events {
		switch e.Kind {
		case scoring.EventStarted:
			if from > 0 {
				continue
			}
		case scoring.EventWindowDone:
			if e.Window.Index < from || (to >= 0 && e.Window.Index >= to) {
				continue
			}
		case scoring.EventFinished:
			if to >= 0 {
				continue
			}
		}
		m = step(m, eventMsg{id: id, ev: e})
	}
	return m
}

func finish(m Model, id int, rec recording, stem string) Model {
	return step(m, doneMsg{id: id, rep: rec.Report, saved: true,
		files: results.Run{Report: "plexbench-results/" + stem + ".json", Base: rec.Report.KLDBaseOut}})
}

// screen is the view's text without styling.
func screen(m Model) string { return stripANSI(m.View().Content) }

// sizes are the terminal sizes every view has a golden file at.
var sizes = []struct{ w, h int }{{80, 24}, {140, 45}}

func TestRunViewGolden(t *testing.T) {
	a, b := recordings(t)
	for _, sz := range sizes {
		suffix := fmt.Sprintf("%dx%d", sz.w, sz.h)
		t.Run("mid "+suffix, func(t *testing.T) {
			m := newTestModel(t, sz.w, sz.h, Config{Profiles: []profiles.Profile{a.Profile}})
			m = feed(m, 1, a, 0, 14)
			golden(t, "run_mid_"+suffix, screen(m))
		})
		t.Run("paused "+suffix, func(t *testing.T) {
			m := newTestModel(t, sz.w, sz.h, Config{Profiles: []profiles.Profile{a.Profile}})
			m = feed(m, 1, a, 0, 5)
			m = step(m, tea.KeyPressMsg{Code: ' ', Text: " "})
			golden(t, "run_paused_"+suffix, screen(m))
		})
		t.Run("kld "+suffix, func(t *testing.T) {
			m := newTestModel(t, sz.w, sz.h, Config{Profiles: []profiles.Profile{b.Profile}, Base: b.Report.KLD.Base})
			m = feed(m, 1, b, 0, 14)
			golden(t, "run_kld_"+suffix, screen(m))
		})
		t.Run("done "+suffix, func(t *testing.T) {
			m := newTestModel(t, sz.w, sz.h, Config{Profiles: []profiles.Profile{a.Profile}})
			m = feed(m, 1, a, 0, -1)
			m = finish(m, 1, a, "f32kv_fake_a")
			golden(t, "run_done_"+suffix, screen(m))
		})
	}
}

func TestABViewGolden(t *testing.T) {
	a, b := recordings(t)
	for _, sz := range sizes {
		suffix := fmt.Sprintf("%dx%d", sz.w, sz.h)
		m := newTestModel(t, sz.w, sz.h, Config{Profiles: []profiles.Profile{a.Profile, b.Profile}})
		m = feed(m, 1, a, 0, 9)
		golden(t, "ab_a_running_"+suffix, screen(m))
		m = feed(m, 1, a, 9, -1)
		m = finish(m, 1, a, "f32kv_fake_a")
		m = feed(m, 2, b, 0, 10)
		golden(t, "ab_b_running_"+suffix, screen(m))
		m = feed(m, 2, b, 10, -1)
		m = finish(m, 2, b, "f16kv_fake_b")
		m = step(m, pairSavedMsg{path: "plexbench-results/f16kv_fake_b.ab.json"})
		golden(t, "ab_done_"+suffix, screen(m))
	}
}

func TestHistoryAndHelpGolden(t *testing.T) {
	a, b := recordings(t)
	when := time.Date(2025, 3, 4, 10, 20, 0, 0, time.UTC)
	long := b.Report // a model whose name is wider than its column
	long.Config.Model.Path = "../models/Qwen3-30B-A3B-Instruct-2507-UD-Q4_K_XL.gguf"
	entries := []results.Entry{
		{Report: "plexbench-results/q4kxl_fake_b.json", Profile: b.Profile, HasProfile: true, Run: long, Time: when.Add(2 * time.Minute)},
		{Report: "plexbench-results/f16kv_fake_b.json", Profile: b.Profile, HasProfile: true, Run: b.Report, Time: when.Add(time.Minute)},
		{Report: "plexbench-results/f32kv_fake_a.json", Base: "plexbench-results/f32kv_fake_a.kld", Profile: a.Profile, HasProfile: true, Run: a.Report, Time: when},
	}
	for _, sz := range sizes {
		suffix := fmt.Sprintf("%dx%d", sz.w, sz.h)
		m := newTestModel(t, sz.w, sz.h, Config{Profiles: []profiles.Profile{a.Profile}})
		m = feed(m, 1, a, 0, -1)
		m = finish(m, 1, a, "f32kv_fake_a")
		m = step(m, tea.KeyPressMsg{Code: 'h', Text: "h"})
		m = step(m, historyMsg{entries: entries})
		m = step(m, tea.KeyPressMsg{Code: tea.KeyDown})
		m = step(m, tea.KeyPressMsg{Code: tea.KeyDown})
		golden(t, "history_"+suffix, screen(m))
		m = step(m, tea.KeyPressMsg{Code: '?', Text: "?"})
		golden(t, "help_"+suffix, screen(m))
	}
}

// Every view fits the terminal exactly at every size, including tiny ones
// and after resizes.
func TestViewsFitAndResize(t *testing.T) {
	a, b := recordings(t)
	m := newTestModel(t, 80, 24, Config{Profiles: []profiles.Profile{a.Profile, b.Profile}})
	m = feed(m, 1, a, 0, -1)
	m = finish(m, 1, a, "f32kv_fake_a")
	m = feed(m, 2, b, 0, 7)
	single := newTestModel(t, 80, 24, Config{Profiles: []profiles.Profile{b.Profile}, Base: "x.kld"})
	single = feed(single, 1, b, 0, 7)
	for _, sz := range []struct{ w, h int }{{80, 24}, {120, 40}, {60, 16}, {40, 10}, {200, 60}, {100, 30}} {
		for name, mm := range map[string]Model{"ab": m, "run": single} {
			mm = step(mm, tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
			lines := strings.Split(screen(mm), "\n")
			if len(lines) != sz.h {
				t.Errorf("%s %dx%d: %d lines", name, sz.w, sz.h, len(lines))
			}
			for i, l := range lines {
				if w := lipgloss.Width(l); w > sz.w {
					t.Errorf("%s %dx%d: line %d is %d wide: %q", name, sz.w, sz.h, i, w, l)
				}
			}
		}
	}
}

// With NO_COLOR the styles carry no color at all, and the views still say
// everything: the chart's characters and the badges are words and glyphs.
func TestNoColor(t *testing.T) {
	a, _ := recordings(t)
	m := newTestModel(t, 80, 24, Config{Profiles: []profiles.Profile{a.Profile}, NoColor: true})
	m = feed(m, 1, a, 0, 10)
	raw := m.View().Content
	color := regexp.MustCompile(`\x1b\[[0-9;]*(3[0-9]|4[0-9]|9[0-7]|10[0-7])(;[0-9;]*)?m`)
	if loc := color.FindStringIndex(raw); loc != nil {
		t.Errorf("NO_COLOR view has a color sequence %q", raw[loc[0]:loc[1]])
	}
	plain := stripANSI(raw)
	for _, want := range []string{"·", "─", "░", "RUNNING", "PPL"} {
		if !strings.Contains(plain, want) {
			t.Errorf("NO_COLOR view lacks %q", want)
		}
	}
	// And the colored styles do use color, so the test above means something.
	c := newTestModel(t, 80, 24, Config{Profiles: []profiles.Profile{a.Profile}})
	c = feed(c, 1, a, 0, 10)
	if !color.MatchString(c.View().Content) {
		t.Error("colored view has no color sequences")
	}
}

// Messages of a run the view no longer shows are dropped.
func TestStaleMessagesDropped(t *testing.T) {
	a, _ := recordings(t)
	m := newTestModel(t, 80, 24, Config{Profiles: []profiles.Profile{a.Profile}})
	m = feed(m, 1, a, 0, 3)
	before := screen(m)
	m = feed(m, 99, a, 0, -1)
	if screen(m) != before {
		t.Error("events of an unknown run changed the view")
	}
}

// escapes matches terminal control sequences: CSI (styles, cursor) and OSC
// (titles, links).
var escapes = regexp.MustCompile(`\x1b\[[0-9;:?<=>]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)`)

// stripANSI removes styling, leaving what a reader sees.
func stripANSI(s string) string { return escapes.ReplaceAllString(s, "") }

func TestRunViewFailedGolden(t *testing.T) {
	a, _ := recordings(t)
	m := newTestModel(t, 80, 24, Config{Profiles: []profiles.Profile{a.Profile}, Base: "plexbench-results/old.kld"})
	m = step(m, doneMsg{id: 1, err: errors.New("KLD base does not match this run: plexbench-results/old.kld: chunk limit is 300 in the base, 40 in this run")})
	golden(t, "run_failed_80x24", screen(m))
}

// runCmds executes cmd and any batch it returns, collecting the messages.
// Only for commands that return at once (saves, not runs).
func runCmds(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		var out []tea.Msg
		for _, c := range b {
			out = append(out, runCmds(c)...)
		}
		return out
	}
	return []tea.Msg{msg}
}

func TestCtrlCStopsSavesThenQuits(t *testing.T) {
	a, _ := recordings(t)
	m := newTestModel(t, 80, 24, Config{Profiles: []profiles.Profile{a.Profile}})
	m = feed(m, 1, a, 0, 4)
	next, cmd := m.Update(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
	m = next.(Model)
	if cmd != nil || !m.quitWhenDone || m.run.status != runStopping {
		t.Fatalf("ctrl+c: cmd %v, quitWhenDone %v, status %v", cmd, m.quitWhenDone, m.run.status)
	}
	rep := a.Report
	rep.Partial, rep.Windows, rep.WindowsScored = true, rep.Windows[:4], 4
	next, cmd = m.Update(doneMsg{id: 1, rep: rep, err: scoring.ErrStopped, saved: true, files: results.Run{Report: "r.json"}})
	m = next.(Model)
	if cmd == nil {
		t.Fatal("no quit after the stopped run was saved")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("the command after the save is not quit")
	}
	if got := m.SavedReports(); len(got) != 1 || got[0] != "r.json" {
		t.Errorf("SavedReports = %v", got)
	}
}

func TestSaveProfileKey(t *testing.T) {
	a, _ := recordings(t)
	dir := t.TempDir()
	p := a.Profile
	p.Source = filepath.Join(dir, "a.toml")
	if err := profiles.Save(p.Source, p); err != nil {
		t.Fatal(err)
	}
	m := newTestModel(t, 80, 24, Config{Profiles: []profiles.Profile{p}})
	_, cmd := m.Update(tea.KeyPressMsg{Code: 's', Text: "s"})
	msgs := runCmds(cmd)
	if len(msgs) != 1 {
		t.Fatalf("save produced %v", msgs)
	}
	if sm := msgs[0].(profileSavedMsg); sm.err != nil || !sm.same || sm.path != p.Source {
		t.Errorf("saving an unchanged profile: %+v", sm)
	}
	// Changed settings (a flag override, say) are written back.
	p.KVCacheDType = "q8_0"
	m = newTestModel(t, 80, 24, Config{Profiles: []profiles.Profile{p}})
	_, cmd = m.Update(tea.KeyPressMsg{Code: 's', Text: "s"})
	msgs = runCmds(cmd)
	m = step(m, msgs[0])
	if !strings.Contains(screen(m), "profile saved to "+p.Source) {
		t.Errorf("no save message on screen:\n%s", screen(m))
	}
	q, err := profiles.Load(p.Source)
	if err != nil || q.KVCacheDType != "q8_0" || q.Resolve().Model != p.Resolve().Model {
		t.Errorf("saved profile: %+v, %v", q, err)
	}
}

// The clock moves elapsed and ETA between events and stops while paused.
func TestClockTicks(t *testing.T) {
	a, _ := recordings(t)
	m := newTestModel(t, 80, 24, Config{Profiles: []profiles.Profile{a.Profile}})
	if !m.ticking {
		t.Fatal("no clock scheduled for a running run")
	}
	m = feed(m, 1, a, 0, 3)
	e := m.run.last
	for range 2 {
		m = step(m, tickMsg{})
	}
	want := fmt.Sprintf("· %s · ETA %s", clock(e.Elapsed+2*time.Second), clock(e.ETA-2*time.Second))
	if !strings.Contains(screen(m), want) {
		t.Errorf("after two ticks the screen lacks %q:\n%s", want, screen(m))
	}
	m = step(m, tea.KeyPressMsg{Code: ' ', Text: " "})
	m = step(m, tickMsg{})
	if !strings.Contains(screen(m), want) {
		t.Error("the clock moved while paused")
	}
	m = feed(m, 1, a, 3, 4) // an event resets it
	if m.run.idle != 0 {
		t.Errorf("idle %d after an event", m.run.idle)
	}
}

// From history: enter re-opens a past run; b starts a new run against its
// base; both are refused while a run is in flight.
func TestHistoryOpenAndBase(t *testing.T) {
	a, b := recordings(t)
	entries := []results.Entry{
		{Report: "plexbench-results/f16kv_fake_b.json", Profile: b.Profile, HasProfile: true, Run: b.Report},
		{Report: "plexbench-results/f32kv_fake_a.json", Base: "plexbench-results/f32kv_fake_a.kld", Profile: a.Profile, HasProfile: true, Run: a.Report},
	}
	m := newTestModel(t, 100, 30, Config{Profiles: []profiles.Profile{b.Profile}})
	m = step(m, tea.KeyPressMsg{Code: 'h', Text: "h"})
	m = step(m, historyMsg{entries: entries})
	m = step(m, tea.KeyPressMsg{Code: tea.KeyEnter})
	if m.view != viewHistory || !strings.Contains(screen(m), "a run is in flight") {
		t.Fatalf("opened a past run over a live one:\n%s", screen(m))
	}
	m = step(m, doneMsg{id: 1, rep: b.Report, saved: true, files: results.Run{Report: "x.json"}})
	m = step(m, tea.KeyPressMsg{Code: tea.KeyEnter})
	s := screen(m)
	if m.view != viewRun || !strings.Contains(s, "opened plexbench-results/f16kv_fake_b.json") ||
		!strings.Contains(s, pm(b.Report.Perplexity, b.Report.PerplexityUncertainty)) || !strings.Contains(s, "24/24 windows") {
		t.Errorf("re-opened run:\n%s", s)
	}
	m = step(m, tea.KeyPressMsg{Code: 'h', Text: "h"})
	m = step(m, historyMsg{entries: entries})
	m = step(m, tea.KeyPressMsg{Code: tea.KeyDown})
	m = step(m, tea.KeyPressMsg{Code: 'b', Text: "b"})
	if m.view != viewRun || m.run.base != entries[1].Base || m.run.status != runLoading || !m.run.owns(2) {
		t.Errorf("b: view %v base %q status %v", m.view, m.run.base, m.run.status)
	}
	if !strings.Contains(screen(m), "KLD vs f32kv_fake_a.kld") {
		t.Errorf("new run against the base:\n%s", screen(m))
	}
}

// TestRunViewShowsKept checks that the run view shows FlashPrefill's kept
// fraction of attention blocks, and nothing for dense prefill attention.
func TestRunViewShowsKept(t *testing.T) {
	s := DefaultStyles(true)
	p := profiles.Default()
	dense := runModel{profile: p, last: scoring.Event{AttentionKept: 1}}
	if v := dense.statsView(s); strings.Contains(v, "attn kept") {
		t.Errorf("dense run view shows a kept fraction: %q", v)
	}
	p.PrefillAttention = profiles.FlashPrefillV2
	fp := runModel{profile: p, last: scoring.Event{AttentionKept: 0.4213}}
	if v := stripANSI(fp.statsView(s)); !strings.Contains(v, "attn kept 42.1%") {
		t.Errorf("FlashPrefill run view %q lacks the kept fraction", v)
	}
	if v := stripANSI((runModel{profile: p}).statsView(s)); !strings.Contains(v, "attn kept –") {
		t.Errorf("FlashPrefill run view before a window: %q", v)
	}
}
