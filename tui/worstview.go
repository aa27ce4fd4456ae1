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

// view draws the entries from top on: each entry's figures wrapped
// between fields (never inside one) under a hanging indent, its excerpt
// on one line, shortened around the token when the width is short.
func (m worstModel) view(s Styles, w, h int) string {
	what := "tokens"
	if m.showWindows {
		what = "windows"
	}
	lines := m.lines()
	out := []string{s.Title.Render("worst "+what) + s.Dim.Render(fmt.Sprintf("  %s · by %s · %d–%d of %d",
		m.title, m.by, min(m.top+1, len(lines)/2), len(lines)/2, len(lines)/2)), ""}
	for i := 2 * m.top; i+1 < len(lines); i += 2 {
		entry := append(wrapFields(lines[i], w, "     "), s.Dim.Render(excerpt(lines[i+1], w)))
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

// wrapFields wraps a line of fields two spaces apart (scoring.WorstLines'
// "KLD 0.01182  NLL 7.7925 (base 7.7398)  token \" b\"") at field
// boundaries, continuation lines under indent; a field wider than the
// line wraps at its spaces.
func wrapFields(line string, w int, indent string) []string {
	if lipgloss.Width(line) <= w {
		return []string{line}
	}
	var out []string
	rest := strings.TrimLeft(line, " ")
	lead := line[:len(line)-len(rest)] // the entry's number, right-aligned
	cur := ""
	for _, f := range strings.Split(rest, "  ") {
		if f == "" {
			continue
		}
		switch {
		case cur == "":
			cur = lead + f
		case lipgloss.Width(cur)+2+lipgloss.Width(f) <= w:
			cur += "  " + f
		default:
			out = append(out, cur)
			cur = indent + f
		}
		if lipgloss.Width(cur) > w {
			parts := results.WrapWords(cur, w, indent)
			out, cur = append(out, parts[:len(parts)-1]...), parts[len(parts)-1]
		}
	}
	return append(out, cur)
}

// excerpt fits an entry's text line in w cells: a token's ("…before⟦token⟧
// after…") loses text from both ends alike, the token in the middle; a
// window's opening text is cut at its end. The text is read as it stands,
// so it never wraps.
func excerpt(line string, w int) string {
	if lipgloss.Width(line) <= w {
		return line
	}
	open, shut := strings.Index(line, "⟦"), strings.LastIndex(line, "⟧")
	if open < 0 || shut < open {
		return truncate(line, w)
	}
	// WorstLines indents the text by 5; more spaces are the text's own.
	indent := min(5, len(line)-len(strings.TrimLeft(line, " ")))
	before := []rune(line[indent:open])
	mid := line[open : shut+len("⟧")]
	after := []rune(line[shut+len("⟧"):])
	room := w - indent - lipgloss.Width(mid)
	if room < 4 {
		return truncate(line, w)
	}
	// Each side gets half the room (the marks included); a side shorter
	// than its half lends the rest to the other.
	nb, na := len(before), len(after)
	for nb+na > room-2 {
		if nb >= na {
			nb--
		} else {
			na--
		}
	}
	b, a := string(before[len(before)-nb:]), string(after[:na])
	if nb < len(before) {
		b = "…" + b
	}
	if na < len(after) {
		a += "…"
	}
	return line[:indent] + b + mid + a
}
