package tui

// chart.go owns the text chart of a run: per-window values as dots, the
// running value as a line inside its ± band, over the run's full window
// count so the picture fills in as the run goes. Characters carry the
// meaning (· ─ ░), colors only help, so NO_COLOR loses nothing.

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// chartPoint is one finished window.
type chartPoint struct {
	Value  float64 // this window's value (a dot)
	Run    float64 // running value after this window (the line)
	Lo, Hi float64 // running ± band
}

// chart describes what to draw.
type chart struct {
	Points []chartPoint
	Total  int  // windows the run will have; the x axis spans them
	Zero   bool // draw a reference line at 0 (for Δ charts)
	// Mark is the window (1-based) a stopping rule was met at, drawn as a
	// dotted column over the axis's ┴; 0 for none.
	Mark int
	// Within, when its second value is above its first, bounds the y
	// range: an accuracy's chart never spans past 0 or 100%.
	Within [2]float64
}

const (
	cellBand = '░'
	cellLine = '─'
	cellDot  = '·'
	cellUp   = '˄' // a window above the visible range
	cellDown = '˅' // a window below it
	cellZero = '┄'
	cellMark = '┆'
)

// render draws the chart in width × height cells, y labels included. The
// running line is drawn last: with many windows per column the dots would
// hide it, and it is what converges.
func (c chart) render(s Styles, width, height int) string {
	if height < 3 || width < 20 {
		return ""
	}
	lo, hi, ok := c.yRange()
	rows := height - 1 // last row is the x axis
	mid := (rows - 1) / 2
	labels := []string{"", ""}
	if ok {
		// The middle label names the value its row stands for.
		midV := hi - float64(mid)/float64(rows-1)*(hi-lo)
		labels = []string{axisLabel(hi, hi-lo), axisLabel(midV, hi-lo), axisLabel(lo, hi-lo)}
	}
	lw := 0
	for _, l := range labels {
		lw = max(lw, len(l))
	}
	plotW := width - lw - 2
	grid := make([][]rune, rows)
	for r := range grid {
		grid[r] = []rune(strings.Repeat(" ", plotW))
	}
	total := max(c.Total, len(c.Points), 1)
	col := func(i int) int { return min(plotW-1, i*plotW/total) }
	row := func(v float64) (int, int) { // row, and -1/+1 when clipped below/above
		if !ok {
			return rows / 2, 0
		}
		f := (hi - v) / (hi - lo)
		r := int(math.Round(f * float64(rows-1)))
		switch {
		case r < 0:
			return 0, 1
		case r > rows-1:
			return rows - 1, -1
		}
		return r, 0
	}
	if c.Zero && ok && lo <= 0 && hi >= 0 {
		r, _ := row(0)
		for x := range plotW {
			grid[r][x] = cellZero
		}
	}
	// Band and line run from each point's column to the next point's.
	span := func(i int) (int, int) {
		x0, x1 := col(i), 0
		if i+1 < len(c.Points) {
			x1 = col(i + 1)
		} else {
			x1 = min(plotW, x0+max(1, plotW/total))
		}
		return x0, max(x1, x0+1)
	}
	if c.Mark > 0 {
		for r := range rows {
			grid[r][col(c.Mark-1)] = cellMark
		}
	}
	for i, p := range c.Points {
		x0, x1 := span(i)
		rHi, _ := row(p.Hi)
		rLo, _ := row(p.Lo)
		for x := x0; x < x1 && x < plotW; x++ {
			for r := rHi; r <= rLo; r++ {
				grid[r][x] = cellBand
			}
		}
	}
	for i, p := range c.Points {
		r, clip := row(p.Value)
		ch := cellDot
		switch clip {
		case 1:
			ch = cellUp
		case -1:
			ch = cellDown
		}
		grid[r][col(i)] = ch
	}
	for i, p := range c.Points {
		x0, x1 := span(i)
		rl, _ := row(p.Run)
		for x := x0; x < x1 && x < plotW; x++ {
			grid[rl][x] = cellLine
		}
	}
	var b strings.Builder
	for r := range rows {
		label := ""
		switch {
		case r == 0:
			label = labels[0]
		case ok && r == mid && rows >= 5:
			label = labels[1]
		case r == rows-1:
			label = labels[len(labels)-1]
		}
		b.WriteString(s.Dim.Render(fmt.Sprintf("%*s", lw, label)))
		b.WriteString(s.Dim.Render(" │"))
		b.WriteString(styleCells(s, grid[r]))
		b.WriteByte('\n')
	}
	ax := []rune(strings.Repeat("─", plotW))
	if c.Mark > 0 {
		ax[col(c.Mark-1)] = '┴'
	}
	axis := fmt.Sprintf("%*s └%s", lw, "", string(ax))
	b.WriteString(s.Dim.Render(axis))
	// Window numbers under the axis ends would cost a row; the progress
	// line above the chart already says which window is which.
	return b.String()
}

// styleCells colors a row of cells run by run.
func styleCells(s Styles, cells []rune) string {
	var b strings.Builder
	for i := 0; i < len(cells); {
		j := i + 1
		for j < len(cells) && cells[j] == cells[i] {
			j++
		}
		run := string(cells[i:j])
		switch cells[i] {
		case cellBand:
			run = s.ChartBand.Render(run)
		case cellLine:
			run = s.ChartLine.Render(run)
		case cellDot, cellUp, cellDown:
			run = s.ChartDot.Render(run)
		case cellZero:
			run = s.ChartZero.Render(run)
		}
		b.WriteString(run)
		i = j
	}
	return b.String()
}

// yRange covers the band and the middle 90% of the window values, so one
// odd window does not flatten the running line; the rest are clipped.
func (c chart) yRange() (lo, hi float64, ok bool) {
	if len(c.Points) == 0 {
		return 0, 0, false
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	vals := make([]float64, 0, len(c.Points))
	for _, p := range c.Points {
		for _, v := range []float64{p.Lo, p.Hi, p.Run} {
			if isFinite(v) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		if isFinite(p.Value) {
			vals = append(vals, p.Value)
		}
	}
	if len(vals) > 0 {
		slices.Sort(vals)
		lo = min(lo, vals[len(vals)*5/100])
		hi = max(hi, vals[(len(vals)-1)*95/100])
	}
	if c.Zero {
		lo, hi = min(lo, 0), max(hi, 0)
	}
	if !isFinite(lo) || !isFinite(hi) {
		return 0, 0, false
	}
	if hi-lo < 1e-12 {
		pad := math.Max(math.Abs(hi)*0.01, 1e-6)
		lo, hi = lo-pad, hi+pad
	}
	pad := (hi - lo) * 0.05
	lo, hi = lo-pad, hi+pad
	if b := c.Within; b[1] > b[0] && lo < b[1] && hi > b[0] {
		lo, hi = max(lo, b[0]), min(hi, b[1])
	}
	return lo, hi, true
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// axisLabel writes v with enough decimals to tell the axis ends apart.
func axisLabel(v, span float64) string {
	d := 0
	if span > 0 {
		d = max(0, min(6, 2-int(math.Floor(math.Log10(span)))))
	}
	return fmt.Sprintf("%.*f", d, v)
}
