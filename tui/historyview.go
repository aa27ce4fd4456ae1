package tui

// historyview.go owns the history view's child model: the runs saved in the
// results folder, newest first, with a cursor to re-open one or to start a
// new run against its base.

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"plexbench/results"
	"plexbench/scoring"
)

type historyModel struct {
	dir     string
	entries []results.Entry
	err     error
	loading bool
	cursor  int
}

// historyMsg carries a listing of the results folder.
type historyMsg struct {
	entries []results.Entry
	err     error
}

func loadHistory(dir string) tea.Cmd {
	return func() tea.Msg {
		e, err := results.History(dir)
		return historyMsg{entries: e, err: err}
	}
}

// historyAction is what a key in the history view asks the root to do.
type historyAction int

const (
	histNone historyAction = iota
	histBack
	histOpen
	histSetBase
)

func (m historyModel) loaded(msg historyMsg) historyModel {
	m.entries, m.err, m.loading = msg.entries, msg.err, false
	m.cursor = max(0, min(m.cursor, len(m.entries)-1))
	return m
}

// key moves the cursor or returns the action the root should take.
func (m historyModel) key(k keyMap, msg tea.KeyPressMsg) (historyModel, historyAction) {
	switch {
	case key.Matches(msg, k.Up):
		m.cursor = max(0, m.cursor-1)
	case key.Matches(msg, k.Down):
		m.cursor = max(0, min(len(m.entries)-1, m.cursor+1))
	case key.Matches(msg, k.Open):
		if m.selected() != nil {
			return m, histOpen
		}
	case key.Matches(msg, k.SetBase):
		if e := m.selected(); e != nil {
			return m, histSetBase
		}
	case key.Matches(msg, k.Back):
		return m, histBack
	}
	return m, histNone
}

func (m historyModel) selected() *results.Entry {
	if m.cursor < 0 || m.cursor >= len(m.entries) || m.entries[m.cursor].Err != nil {
		return nil
	}
	return &m.entries[m.cursor]
}

func (m historyModel) view(s Styles, w, h int) string {
	title := s.Title.Render("plexbench history") + s.Dim.Render(fmt.Sprintf("  %s · %d runs", m.dir, len(m.entries)))
	lines := []string{title, ""}
	switch {
	case m.loading:
		return strings.Join(append(lines, s.Dim.Render("reading the results folder…")), "\n")
	case m.err != nil:
		return strings.Join(append(lines, s.Bad.Render(m.err.Error())), "\n")
	case len(m.entries) == 0:
		return strings.Join(append(lines, s.Dim.Render("no runs saved yet: finished and stopped runs land here")), "\n")
	}
	// The rows as one table fitted to the width: the model's name is
	// shortened in the middle, then columns go, never a cell cut.
	t := results.Table{Header: []string{"when", "profile", "model", "windows", "PPL", "done", "base"},
		Drop: []string{"base", "windows", "done"}, Squeeze: "model", MinSqueeze: 16}
	for _, e := range m.entries {
		when := e.Time.Format("2006-01-02 15:04")
		if e.Err != nil {
			t.Rows = append(t.Rows, []string{when}) // drawn below, across the columns
			continue
		}
		r := e.Run
		name := e.Profile.Name
		if !e.HasProfile {
			name = "?"
		}
		done := fmt.Sprintf("%d/%d", r.WindowsScored, r.WindowsTotal)
		if r.Partial {
			done += "✗"
		}
		kept := "–"
		if e.Base != "" {
			kept = "kept"
		}
		ppl := pm(r.Perplexity, r.PerplexityUncertainty)
		if a := r.CorporaAverage; a != nil { // several corpora: no PPL of its own
			ppl, done = fmt.Sprintf("%.4f tok-wt", a.TokenWeighted.Perplexity), fmt.Sprintf("%d texts", len(r.Corpora))
		}
		if c := r.Choice(); c != nil { // a task file: its accuracy over the tasks scored
			ppl, done = fmt.Sprintf("%.2f%% %s", c.Accuracy, scoring.ChoiceMetric(c.Method)), fmt.Sprint(c.Tasks)
			if r.Partial {
				done += "✗"
			}
		}
		t.Rows = append(t.Rows, []string{when, name, base(r.Config.Model.Path, "?"), fmt.Sprintf("%s %d", r.Method, r.Ctx), ppl, done, kept})
	}
	table, _ := t.Fit(w - 2)
	lines = append(lines, s.Header.Render("  "+table[0]))
	rows := max(1, h-len(lines)-3)
	first := max(0, min(m.cursor-rows/2, len(m.entries)-rows))
	for i := first; i < len(m.entries) && i < first+rows; i++ {
		l := "  " + table[1+i]
		if m.entries[i].Err != nil {
			l = "  " + t.Rows[i][0] + "  unreadable: " + m.entries[i].Err.Error()
		}
		if i == m.cursor {
			l = s.Selected.Render(padRight(">"+l[1:], w))
		}
		lines = append(lines, l)
	}
	if e := m.selected(); e != nil {
		lines = append(lines, "", s.Dim.Render("report "+e.Report))
		if k := e.Run.KLD; k != nil {
			lines = append(lines, s.Dim.Render(fmt.Sprintf("vs     %s: mean KLD %s, same top %s", k.Base,
				pm(k.MeanKLD, k.MeanKLDUncertainty), pct(k.SameTop, 1))))
		}
		if e.Base != "" {
			lines = append(lines, s.Dim.Render("base   "+e.Base+"  (b: start a run against it)"))
		} else {
			lines = append(lines, s.Dim.Render("no base kept"))
		}
	}
	return strings.Join(lines, "\n")
}
