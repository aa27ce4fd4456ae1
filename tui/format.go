package tui

// format.go owns how numbers, durations and text blocks are written in the
// views: values with their uncertainty, clocks, and fitting a block to the
// terminal.

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"plexbench/scoring"
)

// The formats the verdict line shares with the views live in scoring.
func decimalsFor(u float64) int          { return scoring.Decimals(u) }
func pm(v, u float64) string             { return scoring.PM(v, u) }
func pmSigned(v, u float64) string       { return scoring.PMSigned(v, u) }
func pct(f float64, decimals int) string { return scoring.Percent(f, decimals) }

// ppl writes a perplexity with six significant digits.
func ppl(x float64) string {
	if x <= 0 || !isFinite(x) {
		return "–"
	}
	d := 5 - int(math.Floor(math.Log10(x)))
	return fmt.Sprintf("%.*f", max(0, min(6, d)), x)
}

// pctPM writes a fraction and its uncertainty as percentages at the
// uncertainty's precision (at least one decimal).
func pctPM(f, u float64) string {
	d := max(1, min(6, decimalsFor(100*u)))
	if u == 0 {
		d = 1
	}
	return pct(f, d) + " ± " + fmt.Sprintf("%.*f%%", d, 100*u)
}

// signedPct writes a signed fraction as a percentage with three
// significant digits.
func signedPct(f float64) string {
	x := 100 * f
	if x == 0 || !isFinite(x) {
		return fmt.Sprintf("%+.3f%%", x)
	}
	d := max(3, min(8, 2-int(math.Floor(math.Log10(math.Abs(x))))))
	return fmt.Sprintf("%+.*f%%", d, x)
}

// small writes a small non-negative statistic (a KLD, say) with about
// three significant digits, in e-notation below 1e-4.
func small(x float64) string {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Sprintf("%.4f", x)
	}
	if math.Abs(x) < 1e-4 {
		return fmt.Sprintf("%.2e", x)
	}
	d := 2 - int(math.Floor(math.Log10(math.Abs(x))))
	return fmt.Sprintf("%.*f", max(2, min(8, d)), x)
}

// rate writes tokens per second.
func rate(x float64) string {
	switch {
	case x <= 0 || math.IsNaN(x) || math.IsInf(x, 0):
		return "–"
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// clock writes a duration as m:ss or h:mm:ss.
func clock(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// base is a path's file name; "demo" for the embedded defaults.
func base(path, empty string) string {
	if path == "" {
		return empty
	}
	return filepath.Base(path)
}

// fit crops or pads s to exactly width × height cells, so a view never
// wraps or scrolls the terminal.
func fit(s string, width, height int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > height {
		lines = lines[:height]
	}
	for i, l := range lines {
		if lipgloss.Width(l) > width {
			lines[i] = truncate(l, width)
		}
	}
	for len(lines) < height {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// wrap word-wraps s (styled or not) to w cells.
func wrap(s string, w int) string {
	return lipgloss.Wrap(s, w, "")
}

// truncate cuts a styled line to w cells, the last one an ellipsis: at
// the end of a word when one ends in the line's last third, so a word is
// not cut in two.
func truncate(s string, w int) string {
	if lipgloss.Width(s) <= w {
		return s
	}
	if w < 1 {
		return ""
	}
	cut := w - 1
	plain := []rune(ansi.Strip(s))
	for i := cut; i > 2*cut/3 && i < len(plain); i-- {
		if plain[i] == ' ' && (i == 0 || plain[i-1] != ' ') {
			cut = i
			break
		}
	}
	return ansi.Truncate(s, cut, "") + "…"
}

// padRight pads s with spaces to w cells (no-op when wider).
func padRight(s string, w int) string {
	if n := lipgloss.Width(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

// spread lays out left and right parts on one line of width w; when both
// do not fit, left gives way (cut at a word's end) so right, a state
// badge, stays on screen.
func spread(left, right string, w int) string {
	gap := w - lipgloss.Width(left) - lipgloss.Width(right)
	if gap < 1 {
		if room := w - 1 - lipgloss.Width(right); room >= 8 {
			left = truncate(left, room)
			gap = w - lipgloss.Width(left) - lipgloss.Width(right)
			return left + strings.Repeat(" ", max(1, gap)) + right
		}
		return left + " " + right
	}
	return left + strings.Repeat(" ", gap) + right
}
