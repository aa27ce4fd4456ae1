package tui

// worstview.go owns the worst-tokens view's child model: a finished run's
// (or an A/B's B's) worst tokens or windows, the list `plexbench worst`
// prints (scoring.Worst, scoring.WorstLines), scrollable. The list comes
// from the run's report (its token trace), or for a run re-opened from
// history from the trace kept beside its report.

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"plexbench/results"
	"plexbench/scoring"
)

type worstModel struct {
	title       string
	by          string
	tokens      []string // scoring.WorstLines: two per entry
	windows     []string
	showWindows bool
	top         int // the first entry shown
}

// newWorstModel lists tr as `plexbench worst` does by default.
func newWorstModel(title string, tr *scoring.TokenTrace) (worstModel, error) {
	by := scoring.DefaultWorstBy(tr)
	l, err := scoring.Worst(tr, by, scoring.WorstN)
	if err != nil {
		return worstModel{}, err
	}
	return worstModel{title: title, by: by, tokens: scoring.WorstLines(l, false), windows: scoring.WorstLines(l, true)}, nil
}

// traceMsg carries a re-opened run's token trace.
type traceMsg struct {
	title string
	trace *scoring.TokenTrace
	err   error
}

// loadTrace reads the trace kept beside the report at path.
func loadTrace(title, path string, rep scoring.Report) tea.Cmd {
	return func() tea.Msg {
		tr, err := results.ReadTrace(path, &rep)
		return traceMsg{title: title, trace: tr, err: err}
	}
}

func (m worstModel) lines() []string {
	if m.showWindows {
		return m.windows
	}
	return m.tokens
}

// key scrolls or toggles; back says the root should leave the view.
func (m worstModel) key(k keyMap, msg tea.KeyPressMsg) (worstModel, bool) {
	n := len(m.lines()) / 2
	switch {
	case key.Matches(msg, k.Up):
		m.top = max(0, m.top-1)
	case key.Matches(msg, k.Down):
		m.top = max(0, min(n-1, m.top+1))
	case key.Matches(msg, k.Toggle):
		m.showWindows, m.top = !m.showWindows, 0
	case key.Matches(msg, k.Back):
		return m, true
	}
	return m, false
}

// view draws the entries from top on, each line wrapped to the width.
func (m worstModel) view(s Styles, w, h int) string {
	what := "tokens"
	if m.showWindows {
		what = "windows"
	}
	lines := m.lines()
	out := []string{s.Title.Render("worst "+what) + s.Dim.Render(fmt.Sprintf("  %s · by %s · %d–%d of %d",
		m.title, m.by, min(m.top+1, len(lines)/2), len(lines)/2, len(lines)/2)), ""}
	for i := 2 * m.top; i+1 < len(lines); i += 2 {
		entry := append(strings.Split(lipgloss.Wrap(lines[i], w, " "), "\n"), cut(lines[i+1], w)...)
		for j := range entry[1:] {
			entry[1+j] = s.Dim.Render(entry[1+j])
		}
		if len(out)+len(entry) > h && len(out) > 2 {
			break
		}
		out = append(out, entry...)
	}
	if len(lines) == 0 {
		out = append(out, s.Dim.Render("no "+what+" scored"))
	}
	return strings.Join(out, "\n")
}

// cut splits s into lines of at most w cells, anywhere: an excerpt is
// read as it stands, and word wrapping would move it off its indent.
func cut(s string, w int) []string {
	var out []string
	var line strings.Builder
	n := 0
	for _, r := range s {
		c := lipgloss.Width(string(r))
		if n+c > w && n > 0 {
			out, n = append(out, line.String()), 0
			line.Reset()
		}
		line.WriteRune(r)
		n += c
	}
	return append(out, line.String())
}
