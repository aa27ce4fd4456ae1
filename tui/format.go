// format.go owns how numbers, durations and text blocks are written in the
// views: values with their uncertainty, clocks, and fitting a block to the
// terminal.
package tui

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// decimalsFor returns how many decimals show two significant digits of u,
// clamped to 0..8; 4 when u is zero or not finite.
func decimalsFor(u float64) int {
	if u == 0 || math.IsNaN(u) || math.IsInf(u, 0) {
		return 4
	}
	d := 1 - int(math.Floor(math.Log10(math.Abs(u))))
	return max(0, min(8, d))
}

// pm writes v ± u with both at u's precision (two significant digits of u).
func pm(v, u float64) string {
	d := decimalsFor(u)
	return fmt.Sprintf("%.*f ± %.*f", d, v, d, u)
}

// pmSigned is pm with an explicit sign on v.
func pmSigned(v, u float64) string {
	d := decimalsFor(u)
	return fmt.Sprintf("%+.*f ± %.*f", d, v, d, u)
}

// ppl writes a perplexity with six significant digits.
func ppl(x float64) string {
	if x <= 0 || !isFinite(x) {
		return "–"
	}
	d := 5 - int(math.Floor(math.Log10(x)))
	return fmt.Sprintf("%.*f", max(0, min(6, d)), x)
}

// pct writes a fraction as a percentage with the given decimals.
func pct(f float64, decimals int) string { return fmt.Sprintf("%.*f%%", decimals, 100*f) }

// small writes a small non-negative statistic (a KLD, say) with about
// three significant digits and no exponent.
func small(x float64) string {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Sprintf("%.4f", x)
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
			lines[i] = ansi.Truncate(l, width, "…")
		}
	}
	for len(lines) < height {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// wrap word-wraps s (styled or not) to w cells.
func wrap(s string, w int) string {
	return ansi.Wrap(s, w, "")
}

// padRight pads s with spaces to w cells (no-op when wider).
func padRight(s string, w int) string {
	if n := lipgloss.Width(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

// spread lays out left and right parts on one line of width w.
func spread(left, right string, w int) string {
	gap := w - lipgloss.Width(left) - lipgloss.Width(right)
	if gap < 1 {
		return left + " " + right
	}
	return left + strings.Repeat(" ", gap) + right
}
