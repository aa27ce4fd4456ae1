package results

// table.go owns fitting aligned text tables to a width: `compare` in a
// terminal, the TUI's sweep table and its history. A table too wide drops
// whole columns, the least important first, and shortens one column (the
// model's name) in the middle; it never cuts a cell mid-word. Prose around
// it (titles, notes) wraps at spaces.

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Table is a header and rows of cells, printed as columns two spaces
// apart, as text/tabwriter prints them.
type Table struct {
	Header []string
	Rows   [][]string
	// Drop names the columns (by header) that may be left out, in the
	// order they go when the table is too wide; the others always stay.
	Drop []string
	// Squeeze names the column whose cells may be shortened in the middle
	// ("Qwen3-8…Q4_K_M.gguf"), down to MinSqueeze cells: by up to a quarter
	// before a column is dropped, further once none is left to drop.
	Squeeze    string
	MinSqueeze int
	// SqueezeFirst shortens the Squeeze column down to MinSqueeze before
	// any column is dropped (a list whose every column matters).
	SqueezeFirst bool
}

const tableGap = 2

// Fit lays t out in at most width cells per line (width ≤ 0: no limit)
// and returns its lines and the headers of the columns left out. When even
// the columns that always stay are too wide, the lines are wider than
// width.
func (t Table) Fit(width int) (lines []string, dropped []string) {
	keep := make([]bool, len(t.Header))
	for i := range keep {
		keep[i] = true
	}
	widths := make([]int, len(t.Header))
	for i, h := range t.Header {
		widths[i] = ansi.StringWidth(h)
	}
	for _, r := range t.Rows {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], ansi.StringWidth(c))
			}
		}
	}
	sq := -1
	for i, h := range t.Header {
		if h == t.Squeeze {
			sq = i
		}
	}
	total := func() int {
		n, cols := 0, 0
		for i, w := range widths {
			if keep[i] {
				n, cols = n+w, cols+1
			}
		}
		return n + tableGap*max(0, cols-1)
	}
	room := func() int { // how far the squeezed column can shrink
		if sq < 0 {
			return 0
		}
		return max(0, widths[sq]-max(t.MinSqueeze, ansi.StringWidth(t.Header[sq])))
	}
	next := 0
	for width > 0 && total() > width {
		// A little off the name rather than a whole column; a lot only
		// once nothing else can go.
		if over := total() - width; over <= room() && (t.SqueezeFirst || over <= widths[sq]/4) {
			widths[sq] -= over
			break
		}
		for next < len(t.Drop) && column(t.Header, t.Drop[next]) < 0 {
			next++
		}
		if next == len(t.Drop) {
			if sq >= 0 {
				widths[sq] -= room()
			}
			break
		}
		i := column(t.Header, t.Drop[next])
		keep[i] = false
		dropped = append(dropped, t.Header[i])
		next++
	}
	row := func(cells []string) string {
		var b strings.Builder
		last := -1
		for i := range cells {
			if i < len(keep) && keep[i] {
				last = i
			}
		}
		for i, c := range cells {
			if i >= len(keep) || !keep[i] {
				continue
			}
			if i == sq {
				c = MiddleEllipsis(c, widths[i])
			}
			b.WriteString(c)
			if i != last {
				b.WriteString(strings.Repeat(" ", widths[i]-ansi.StringWidth(c)+tableGap))
			}
		}
		return b.String()
	}
	lines = append(lines, row(t.Header))
	for _, r := range t.Rows {
		lines = append(lines, row(r))
	}
	return lines, dropped
}

func column(header []string, name string) int {
	for i, h := range header {
		if h == name {
			return i
		}
	}
	return -1
}

// MiddleEllipsis shortens s to at most n cells by replacing its middle with
// "…", keeping both ends (a model file's family and its type).
func MiddleEllipsis(s string, n int) string {
	if ansi.StringWidth(s) <= n {
		return s
	}
	if n < 2 {
		return ansi.Truncate(s, n, "")
	}
	r := []rune(s)
	tail := (n - 1) / 2
	head := n - 1 - tail
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// WrapWords wraps s at spaces to lines of at most width cells (width ≤ 0:
// one line); continuation lines start with indent. A single word wider
// than the line stays whole on its own line.
func WrapWords(s string, width int, indent string) []string {
	if width <= 0 || ansi.StringWidth(s) <= width {
		return []string{s}
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
			if len(lines) > 0 {
				line = indent + word
			}
		case ansi.StringWidth(line)+1+ansi.StringWidth(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = indent + word
		}
	}
	return append(lines, line)
}
