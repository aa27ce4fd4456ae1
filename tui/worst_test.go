package tui

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/workbench"
)

// worstFixture runs A (recording a base) and B against it on the fake
// engine and keeps B in a results folder, its token trace beside it.
func worstFixture(t *testing.T) (b profiles.Profile, base string, rep scoring.Report, path string) {
	t.Helper()
	pa, pb := abProfiles()
	dir := t.TempDir()
	base = filepath.Join(dir, "a.kld")
	run := fakeRunner{text: fakeText(64 * 24)}
	if _, err := run.Run(context.Background(), workbench.Job{Profile: pa, BaseOut: base}); err != nil {
		t.Fatal(err)
	}
	out, err := run.Run(context.Background(), workbench.Job{Profile: pb, Compare: base,
		Keep: workbench.Keep{Root: filepath.Join(dir, "results"), Unrecorded: true, Profile: true}})
	if err != nil || out.Report.Trace == nil || out.Record == "" {
		t.Fatalf("B: %v, trace %v, kept %q", err, out.Report.Trace != nil, out.Record)
	}
	return pb, base, out.Report, out.Record
}

// cliLines is what `plexbench worst` prints for the report kept at path
// (cmd/plexbench/worst.go): its kept trace, listed by default.
func cliLines(t *testing.T, path string, rep scoring.Report, windows bool) []string {
	t.Helper()
	tr, err := results.ReadTrace(path, &rep)
	if err != nil {
		t.Fatal(err)
	}
	l, err := scoring.Worst(tr, scoring.DefaultWorstBy(tr), scoring.WorstN)
	if err != nil {
		t.Fatal(err)
	}
	lines := scoring.WorstLines(l, windows)
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ") // a screen shows no trailing spaces
	}
	return lines
}

// bodyLines is the worst view's entries on a screen wide and tall enough
// for all of them: the lines after the title and the blank line.
func bodyLines(m Model, n int) []string {
	lines := strings.Split(screen(m), "\n")
	out := lines[2 : 2+n]
	for i := range out {
		out[i] = strings.TrimRight(out[i], " ")
	}
	return out
}

// TestWorstViewIsTheCLIList: w on a finished run, and on the same run
// re-opened from history (its trace read from the results folder), lists
// exactly the lines `plexbench worst` prints for the kept record; t
// switches to the windows; esc goes back.
func TestWorstViewIsTheCLIList(t *testing.T) {
	pb, base, rep, path := worstFixture(t)
	tokens, windows := cliLines(t, path, rep, false), cliLines(t, path, rep, true)
	if len(tokens) != 2*scoring.WorstN || len(windows) != 2*scoring.WorstN {
		t.Fatalf("%d token lines, %d window lines", len(tokens), len(windows))
	}
	m := newTestModel(t, 260, 2*scoring.WorstN+8, Config{Profiles: []profiles.Profile{pb}, Base: base})
	m = step(m, tea.KeyPressMsg{Code: 'w', Text: "w"})
	if m.view == viewWorst || !strings.Contains(screen(m), "once the run has finished") {
		t.Fatalf("w during a run:\n%s", screen(m))
	}
	m = step(m, doneMsg{id: 1, rep: rep, saved: true, files: results.Run{Report: path}})
	m = step(m, tea.KeyPressMsg{Code: 'w', Text: "w"})
	if got := bodyLines(m, len(tokens)); m.view != viewWorst || strings.Join(got, "\n") != strings.Join(tokens, "\n") {
		t.Fatalf("the TUI's list:\n%s\nthe CLI's:\n%s", strings.Join(got, "\n"), strings.Join(tokens, "\n"))
	}
	if !strings.Contains(screen(m), "f16kv vs a.kld · by kld · 1–20 of 20") {
		t.Errorf("title:\n%s", screen(m))
	}
	m = step(m, tea.KeyPressMsg{Code: 't', Text: "t"})
	if got := bodyLines(m, len(windows)); strings.Join(got, "\n") != strings.Join(windows, "\n") {
		t.Errorf("the TUI's windows:\n%s\nthe CLI's:\n%s", strings.Join(got, "\n"), strings.Join(windows, "\n"))
	}
	m = step(m, tea.KeyPressMsg{Code: tea.KeyEscape})
	if m.view != viewRun {
		t.Fatalf("esc: view %v", m.view)
	}

	// Re-opened from history the report has no trace in memory: w reads it.
	stored := rep
	stored.Trace = nil
	m = step(m, tea.KeyPressMsg{Code: 'h', Text: "h"})
	m = step(m, historyMsg{entries: []results.Entry{{Report: path, Profile: pb, HasProfile: true, Run: stored}}})
	m = step(m, tea.KeyPressMsg{Code: tea.KeyEnter})
	next, cmd := m.Update(tea.KeyPressMsg{Code: 'w', Text: "w"})
	if cmd == nil {
		t.Fatal("w on a re-opened run reads nothing")
	}
	m = step(next.(Model), cmd())
	if got := bodyLines(m, len(tokens)); m.view != viewWorst || strings.Join(got, "\n") != strings.Join(tokens, "\n") {
		t.Fatalf("the re-opened run's list:\n%s", screen(m))
	}
}

// TestWorstViewScrolls: at 80×24 the list shows what fits, its figures
// wrapped between fields and its excerpts shortened around the token, and
// ↓ moves it on by one entry; at 140×45 the lines stand whole.
func TestWorstViewScrolls(t *testing.T) {
	pb, base, rep, path := worstFixture(t)
	m := newTestModel(t, 140, 45, Config{Profiles: []profiles.Profile{pb}, Base: base})
	m = step(m, doneMsg{id: 1, rep: rep, saved: true, files: results.Run{Report: path}})
	m = step(m, tea.KeyPressMsg{Code: 'w', Text: "w"})
	golden(t, "worst_140x45", screen(m))
	m = step(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	golden(t, "worst_80x24", screen(m))
	m = step(m, tea.KeyPressMsg{Code: tea.KeyDown})
	if s := screen(m); !strings.Contains(s, "2–20 of 20") || !strings.HasPrefix(strings.Split(s, "\n")[2], "  2. ") {
		t.Errorf("after ↓:\n%s", s)
	}
	for range 30 {
		m = step(m, tea.KeyPressMsg{Code: tea.KeyDown})
	}
	if s := screen(m); !strings.Contains(s, "20–20 of 20") || !strings.Contains(s, " 20. ") {
		t.Errorf("at the end:\n%s", s)
	}
	for _, l := range strings.Split(screen(m), "\n") {
		if w := len([]rune(l)); w > 80 {
			t.Errorf("line of %d cells: %q", w, l)
		}
	}
}

// TestWorstViewWithoutTrace: a finished run whose report carries no
// trace says so and stays in the run view.
func TestWorstViewWithoutTrace(t *testing.T) {
	pb, base, rep, _ := worstFixture(t)
	rep.Trace = nil
	m := newTestModel(t, 80, 24, Config{Profiles: []profiles.Profile{pb}, Base: base})
	m = step(m, doneMsg{id: 1, rep: rep})
	m = step(m, tea.KeyPressMsg{Code: 'w', Text: "w"})
	if m.view != viewRun || !strings.Contains(screen(m), "kept no token trace") {
		t.Errorf("w without a trace:\n%s", screen(m))
	}
}

// TestWorstViewAB: in the A/B view, w lists B's tokens against A's base.
func TestWorstViewAB(t *testing.T) {
	pb, base, rep, path := worstFixture(t)
	pa, _ := abProfiles()
	m := newTestModel(t, 260, 2*scoring.WorstN+8, Config{Profiles: []profiles.Profile{pa, pb}})
	m = step(m, doneMsg{id: 1, rep: scoring.Report{Object: scoring.ReportObject, KLDBaseOut: base}, saved: true})
	m = step(m, doneMsg{id: 2, rep: rep, saved: true, files: results.Run{Report: path}})
	m = step(m, tea.KeyPressMsg{Code: 'w', Text: "w"})
	tokens := cliLines(t, path, rep, false)
	if got := bodyLines(m, len(tokens)); m.view != viewWorst || strings.Join(got, "\n") != strings.Join(tokens, "\n") {
		t.Fatalf("A/B: w shows\n%s", screen(m))
	}
	m = step(m, tea.KeyPressMsg{Code: tea.KeyEscape})
	if m.view != viewAB {
		t.Errorf("esc: view %v", m.view)
	}
}
