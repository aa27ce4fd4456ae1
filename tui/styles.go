package tui

// styles.go owns the one Styles struct every view draws with. Colors are
// the terminal's own 16 ANSI colors, so they follow its theme; with NO_COLOR
// every style is plain and the views stay readable by their characters.

import (
	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"
)

// Styles is every style the views use.
type Styles struct {
	Title    lipgloss.Style // app name and view title
	Label    lipgloss.Style // "PPL", "model", ...
	Value    lipgloss.Style // the numbers
	Dim      lipgloss.Style // secondary text
	Good     lipgloss.Style // verdict: matches, faster
	Bad      lipgloss.Style // verdict: worse, errors
	Warn     lipgloss.Style // stopped, partial, guard warnings
	Badge    lipgloss.Style // run state badge
	Selected lipgloss.Style // the history cursor row
	Header   lipgloss.Style // table headers

	ChartBand lipgloss.Style // the ± band
	ChartLine lipgloss.Style // the running value
	ChartDot  lipgloss.Style // per-window values
	ChartZero lipgloss.Style // the zero line of a Δ chart

	BarFull, BarEmpty lipgloss.Style // progress bar cells

	Help help.Styles
}

// DefaultStyles returns the app's styles; noColor drops every color.
func DefaultStyles(noColor bool) Styles {
	if noColor {
		p := lipgloss.NewStyle()
		return Styles{
			Title: p.Bold(true), Label: p, Value: p.Bold(true), Dim: p, Good: p.Bold(true),
			Bad: p.Bold(true), Warn: p.Bold(true), Badge: p.Bold(true), Selected: p.Reverse(true),
			Header: p.Underline(true), ChartBand: p, ChartLine: p, ChartDot: p, ChartZero: p,
			BarFull: p, BarEmpty: p,
			Help: help.Styles{Ellipsis: p, ShortKey: p.Bold(true), ShortDesc: p, ShortSeparator: p,
				FullKey: p.Bold(true), FullDesc: p, FullSeparator: p},
		}
	}
	c := lipgloss.Color
	p := lipgloss.NewStyle()
	hs := help.DefaultDarkStyles()
	hs.ShortKey, hs.FullKey = p.Foreground(c("6")), p.Foreground(c("6"))
	hs.ShortDesc, hs.FullDesc = p.Foreground(c("8")), p.Foreground(c("8"))
	return Styles{
		Title:     p.Bold(true).Foreground(c("5")),
		Label:     p.Foreground(c("8")),
		Value:     p.Bold(true),
		Dim:       p.Foreground(c("8")),
		Good:      p.Bold(true).Foreground(c("2")),
		Bad:       p.Bold(true).Foreground(c("1")),
		Warn:      p.Bold(true).Foreground(c("3")),
		Badge:     p.Bold(true).Foreground(c("0")).Background(c("6")).Padding(0, 1),
		Selected:  p.Reverse(true),
		Header:    p.Bold(true).Foreground(c("8")),
		ChartBand: p.Foreground(c("4")),
		ChartLine: p.Bold(true).Foreground(c("6")),
		ChartDot:  p.Foreground(c("3")),
		ChartZero: p.Foreground(c("8")),
		BarFull:   p.Foreground(c("6")),
		BarEmpty:  p.Foreground(c("8")),
		Help:      hs,
	}
}
