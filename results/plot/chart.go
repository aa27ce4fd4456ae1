package plot

// chart.go owns the chart model and its layout: title, axes with ticks
// and grid, the series, point labels placed to avoid each other, and a
// legend beside the plot area (never over the data).

import (
	"fmt"
	"math"
	"strings"
)

// SeriesKind is how a series is drawn.
type SeriesKind int

const (
	Points SeriesKind = iota // markers, with error bars when Lo/Hi are set
	Line                     // a polyline through (X, Y)
	Step                     // a staircase: right from each point, then to the next's Y
	Band                     // the area between Lo and Hi over X
	Bars                     // Y[i] over [Edges[i], Edges[i+1])
	VLine                    // a vertical line at X[0], labelled Labels[0]
)

// Series is one thing plotted.
type Series struct {
	Kind   SeriesKind
	Name   string // its legend entry; "" for none
	X, Y   []float64
	Lo, Hi []float64
	Labels []string
	Edges  []float64
	Color  Color
	Shape  Shape
	Dash   []float64
	Width  float64
	Class  string
	// BandSwatch draws the legend entry as a line over a band.
	BandSwatch bool
}

// Chart is what Layout draws.
type Chart struct {
	Title    string
	Subtitle string
	X, Y     Axis
	Series   []Series
	Notes    []string // below the legend
}

var (
	white     = Color{255, 255, 255, 255}
	ink       = Color{34, 34, 34, 255}
	gray      = Color{110, 110, 110, 255}
	gridColor = Color{225, 225, 225, 255}
	// palette is Tableau 10, the series colours in order (read only).
	palette = []Color{{78, 121, 167, 255}, {242, 142, 43, 255}, {225, 87, 89, 255}, {89, 161, 79, 255},
		{176, 122, 161, 255}, {118, 183, 178, 255}, {156, 117, 95, 255}, {237, 201, 72, 255}, {255, 157, 167, 255}, {186, 176, 172, 255}}
)

// Text sizes in pixels.
const (
	titleSize    = 18
	subtitleSize = 12.5
	axisSize     = 14
	tickSize     = 12
	legendSize   = 12.5
	noteSize     = 11.5
	labelSize    = 11.5
)

// Layout draws c on a w × h canvas.
func Layout(c *Chart, w, h int) *Canvas {
	var f fonts
	cv := &Canvas{W: w, H: h, Background: white, Title: c.Title}
	W, H := float64(w), float64(h)

	top := drawTitles(&f, cv, c, W)
	entries := legendEntries(c)
	legendW := legendWidth(&f, c, entries, W)
	right := W - 20
	if legendW > 0 {
		right = W - 24 - legendW - 16
	}
	bottom := H - (10 + tickSize*1.2 + 10 + axisSize*1.3 + 8)
	sc, xt, yt := fitAxes(&f, c, top, right, bottom)
	plot := sc.plot
	cv.Plot = plot
	drawYAxis(cv, sc, yt)
	drawXAxis(&f, cv, sc, xt)
	cv.add(&Text{At: Point{(plot.X0 + plot.X1) / 2, H - 12}, S: c.X.Label, Size: axisSize, Color: ink, Anchor: AnchorMiddle, Class: "axis-label"})
	cv.add(&Text{At: Point{16, (plot.Y0 + plot.Y1) / 2}, S: c.Y.Label, Size: axisSize, Color: ink, Anchor: AnchorMiddle, VAnchor: VTop, Rotate: true, Class: "axis-label"})

	p := seriesPainter{plotScale: sc, cv: cv}
	p.drawAll()
	placeLabels(&f, cv, plot, p.labelled, p.obstacles)
	placeVLineLabels(&f, cv, plot, p.vlines)
	cv.add(&Polyline{Pts: []Point{{plot.X0, plot.Y0}, {plot.X1, plot.Y0}, {plot.X1, plot.Y1}, {plot.X0, plot.Y1}, {plot.X0, plot.Y0}},
		Stroke: gray, Width: 1, Class: "frame"})
	if legendW > 0 {
		drawLegend(&f, cv, c, entries, W-16-legendW, top, legendW, H)
	}
	return cv
}

// drawTitles draws the title and subtitle, wrapped to the width W, and
// returns the top of the plot area below them.
func drawTitles(f *fonts, cv *Canvas, c *Chart, W float64) float64 {
	y := 12.0
	for _, line := range wrap(f, c.Title, titleSize, (W-32)/svgSlack) {
		y += titleSize * 1.25
		cv.add(&Text{At: Point{16, y}, S: line, Size: titleSize, Color: ink, Class: "title"})
	}
	for _, line := range wrap(f, c.Subtitle, subtitleSize, (W-32)/svgSlack) {
		y += subtitleSize * 1.35
		cv.add(&Text{At: Point{16, y}, S: line, Size: subtitleSize, Color: gray, Class: "subtitle"})
	}
	return y + 18
}

// legendEntries are the named series, in order.
func legendEntries(c *Chart) []*Series {
	var entries []*Series
	for i := range c.Series {
		if c.Series[i].Name != "" {
			entries = append(entries, &c.Series[i])
		}
	}
	return entries
}

// legendWidth is the width of the legend column on the right of a W-wide
// canvas: 0 with no entries and no notes, else at least 150, wide enough
// for the longest name, at most 0.3 W.
func legendWidth(f *fonts, c *Chart, entries []*Series, W float64) float64 {
	if len(entries) == 0 && len(c.Notes) == 0 {
		return 0
	}
	legendW := 150.0
	for _, s := range entries {
		legendW = max(legendW, 34+f.width(s.Name, legendSize)*svgSlack)
	}
	return min(legendW, 0.3*W)
}

// plotScale maps data values to positions in the plot area.
type plotScale struct {
	c    *Chart
	plot Rect
}

func (sc plotScale) px(v float64) float64 { return sc.c.X.pos(v, sc.plot.X0, sc.plot.X1) }
func (sc plotScale) py(v float64) float64 { return sc.c.Y.pos(v, sc.plot.Y1, sc.plot.Y0) }

// fitAxes fits both axes to the data and places the plot area between
// top, right and bottom, its left edge leaving room for the y tick labels;
// it returns the scale and the ticks of each axis.
func fitAxes(f *fonts, c *Chart, top, right, bottom float64) (sc plotScale, xt, yt []Tick) {
	xlo, xhi, ylo, yhi := dataRange(c)
	c.Y.fit(ylo, yhi, 0.06, bottom-top, false)
	yt = c.Y.ticks(bottom-top, false)
	tw := 0.0
	for _, t := range yt {
		if t.Major {
			tw = max(tw, f.textWidth(&Text{S: t.Label, Sup: t.Sup, Size: tickSize})*svgSlack)
		}
	}
	left := 16 + axisSize*1.2 + 10 + tw + 8
	c.X.fit(xlo, xhi, 0.04, right-left, true)
	xt = c.X.ticks(right-left, true)
	return plotScale{c: c, plot: Rect{left, top, right, bottom}}, xt, yt
}

// drawYAxis draws the y axis's grid lines, ticks and tick labels.
func drawYAxis(cv *Canvas, sc plotScale, yt []Tick) {
	plot := sc.plot
	for _, t := range yt {
		yy := sc.py(t.V)
		if t.OnGrid {
			cv.add(&Polyline{Pts: []Point{{plot.X0, yy}, {plot.X1, yy}}, Stroke: gridColor, Width: 1, Class: "grid"})
		}
		l := 3.0
		if t.Major {
			l = 6
			cv.add(&Text{At: Point{plot.X0 - 9, yy}, S: t.Label, Sup: t.Sup, Size: tickSize, Color: ink, Anchor: AnchorEnd, VAnchor: VMiddle, Class: "tick-label"})
		}
		cv.add(&Polyline{Pts: []Point{{plot.X0 - l, yy}, {plot.X0, yy}}, Stroke: ink, Width: 1})
	}
}

// drawXAxis draws the x axis's grid lines, ticks and tick labels, leaving
// out a label that would touch the one before it.
func drawXAxis(f *fonts, cv *Canvas, sc plotScale, xt []Tick) {
	plot := sc.plot
	lastEnd := math.Inf(-1)
	for _, t := range xt {
		xx := sc.px(t.V)
		if t.OnGrid {
			cv.add(&Polyline{Pts: []Point{{xx, plot.Y0}, {xx, plot.Y1}}, Stroke: gridColor, Width: 1, Class: "grid"})
		}
		l := 3.0
		if t.Major {
			l = 6
			lt := &Text{At: Point{xx, plot.Y1 + 10}, S: t.Label, Sup: t.Sup, Size: tickSize, Color: ink, Anchor: AnchorMiddle, VAnchor: VTop, Class: "tick-label"}
			if b := f.box(lt); b.X0 > lastEnd+6 { // never two labels on top of each other
				cv.add(lt)
				lastEnd = b.X1
			}
		}
		cv.add(&Polyline{Pts: []Point{{xx, plot.Y1}, {xx, plot.Y1 + l}}, Stroke: ink, Width: 1})
	}
}

// seriesPainter draws the series and collects what label placement must
// avoid and place.
type seriesPainter struct {
	plotScale
	cv        *Canvas
	obstacles []Rect       // markers, error bars, step segments
	labelled  []pointLabel // points with a label
	vlines    []pointLabel // vertical lines with a label
}

// seriesPass is the pass that draws kind: areas first, then lines, then
// markers (-1: none).
func seriesPass(kind SeriesKind) int {
	switch kind {
	case Band, Bars:
		return 0
	case Line, Step, VLine:
		return 1
	case Points:
		return 2
	}
	return -1
}

// drawAll draws every series, pass by pass, each pass in series order.
func (p *seriesPainter) drawAll() {
	for pass := range 3 {
		for i := range p.c.Series {
			s := &p.c.Series[i]
			if seriesPass(s.Kind) != pass {
				continue
			}
			switch s.Kind {
			case Band:
				p.drawBand(s)
			case Bars:
				p.drawBars(s)
			case Line, Step:
				p.drawLine(s)
			case VLine:
				p.drawVLine(s)
			case Points:
				p.drawPoints(s)
			}
		}
	}
}

// strokeWidth is s's line width, 2 when unset.
func strokeWidth(s *Series) float64 {
	if s.Width == 0 {
		return 2
	}
	return s.Width
}

// drawBand fills the area between s.Lo and s.Hi.
func (p *seriesPainter) drawBand(s *Series) {
	c := p.c
	var pts []Point
	for j := range s.X {
		pts = append(pts, Point{p.px(s.X[j]), p.py(clampLog(&c.Y, s.Hi[j]))})
	}
	for j := len(s.X) - 1; j >= 0; j-- {
		pts = append(pts, Point{p.px(s.X[j]), p.py(clampLog(&c.Y, s.Lo[j]))})
	}
	fill := s.Color
	fill.A = bandAlpha(c)
	p.cv.add(&Polygon{Pts: pts, Fill: fill, Clip: true, Class: s.Class})
}

// drawBars draws a bar per positive bin, outlined in white.
func (p *seriesPainter) drawBars(s *Series) {
	fill := s.Color
	fill.A = 200
	for j, v := range s.Y {
		if v <= 0 {
			continue
		}
		x0, x1 := p.px(s.Edges[j]), p.px(s.Edges[j+1])
		y0, y1 := p.py(clampLog(&p.c.Y, v)), p.plot.Y1
		p.cv.add(&Polygon{Pts: []Point{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}}, Fill: fill, Clip: true, Class: s.Class})
		p.cv.add(&Polyline{Pts: []Point{{x0, y1}, {x0, y0}, {x1, y0}, {x1, y1}}, Stroke: white, Width: 0.8, Clip: true})
	}
}

// drawLine draws a Line or Step series (leaving out values a log axis
// cannot show); a step's segments are obstacles for labels.
func (p *seriesPainter) drawLine(s *Series) {
	var pts []Point
	for j := range s.X {
		if p.c.Y.Log && !(s.Y[j] > 0) {
			continue
		}
		pt := Point{p.px(s.X[j]), p.py(s.Y[j])}
		if s.Kind == Step && len(pts) > 0 {
			pts = append(pts, Point{pt.X, pts[len(pts)-1].Y})
		}
		pts = append(pts, pt)
	}
	p.cv.add(&Polyline{Pts: pts, Stroke: s.Color, Width: strokeWidth(s), Dash: s.Dash, Clip: true, Class: s.Class})
	if s.Kind == Step {
		for j := 1; j < len(pts); j++ {
			p.obstacles = append(p.obstacles, segRect(pts[j-1], pts[j], 2))
		}
	}
}

// drawVLine draws a vertical line across the plot area and keeps its
// label for placeVLineLabels.
func (p *seriesPainter) drawVLine(s *Series) {
	xx := p.px(s.X[0])
	p.cv.add(&Polyline{Pts: []Point{{xx, p.plot.Y0}, {xx, p.plot.Y1}}, Stroke: s.Color, Width: strokeWidth(s), Dash: s.Dash, Clip: true, Class: s.Class})
	if len(s.Labels) > 0 {
		p.vlines = append(p.vlines, pointLabel{at: Point{xx, p.plot.Y0}, text: s.Labels[0], color: s.Color})
	}
}

// drawPoints draws a marker per point (leaving out values a log axis
// cannot show), with its error bar, and keeps the labels for placeLabels.
func (p *seriesPainter) drawPoints(s *Series) {
	for j := range s.X {
		if p.c.Y.Log && !(s.Y[j] > 0) {
			continue
		}
		pt := Point{p.px(s.X[j]), p.py(s.Y[j])}
		if s.Lo != nil {
			p.drawErrorBar(s, pt.X, s.Lo[j], s.Hi[j])
		}
		size := 9.0
		p.cv.add(&Marker{At: pt, Shape: s.Shape, Size: size, Fill: s.Color, Stroke: white, Clip: true, Class: s.Class})
		p.obstacles = append(p.obstacles, Rect{pt.X - size/2 - 1, pt.Y - size/2 - 1, pt.X + size/2 + 1, pt.Y + size/2 + 1})
		if j < len(s.Labels) && s.Labels[j] != "" {
			p.labelled = append(p.labelled, pointLabel{at: pt, text: s.Labels[j], color: ink})
		}
	}
}

// drawErrorBar draws a capped bar from lo to hi at x when it is at least
// 2 pixels long.
func (p *seriesPainter) drawErrorBar(s *Series, x, lo, hi float64) {
	ylo, yhi := p.py(clampLog(&p.c.Y, lo)), p.py(clampLog(&p.c.Y, hi))
	if math.Abs(ylo-yhi) >= 2 {
		p.cv.add(&Polyline{Pts: []Point{{x, ylo}, {x, yhi}}, Stroke: s.Color, Width: 1.5, Clip: true, Class: "error-bar"})
		p.cv.add(&Polyline{Pts: []Point{{x - 4, ylo}, {x + 4, ylo}}, Stroke: s.Color, Width: 1.5, Clip: true})
		p.cv.add(&Polyline{Pts: []Point{{x - 4, yhi}, {x + 4, yhi}}, Stroke: s.Color, Width: 1.5, Clip: true})
		p.obstacles = append(p.obstacles, Rect{x - 4, min(ylo, yhi), x + 4, max(ylo, yhi)})
	}
}

// drawLegend draws the legend column, lx from the left and legendW wide,
// from top down: an entry per series, then the notes. Entries close up
// when many, and those that still do not fit above the notes are counted
// instead of drawn off the canvas.
func drawLegend(f *fonts, cv *Canvas, c *Chart, entries []*Series, lx, top, legendW, H float64) {
	ly := top + 4
	gap := 1.7
	if float64(len(entries))*gap*legendSize > 0.6*(H-top) {
		gap = 1.3
	}
	notes := c.Notes
	for i, s := range entries {
		if ly+gap*legendSize*2 > H-0.25*(H-top) && i < len(entries)-1 {
			notes = append([]string{fmt.Sprintf("… and %d more lines, not listed.", len(entries)-i)}, notes...)
			break
		}
		ly += legendSize * gap
		drawSwatch(cv, s, Point{lx + 12, ly - legendSize*capHeight/2})
		for i, line := range wrap(f, s.Name, legendSize, (legendW-34)/svgSlack) {
			if i > 0 {
				ly += legendSize * 1.25
			}
			cv.add(&Text{At: Point{lx + 30, ly}, S: ellipsize(f, line, legendSize, (legendW-34)/svgSlack), Size: legendSize, Color: ink, Class: "legend"})
		}
	}
	if len(entries) > 0 {
		ly += 8
	}
	for _, n := range notes {
		ly += 6
		for _, line := range wrap(f, n, noteSize, legendW/svgSlack) {
			ly += noteSize * 1.35
			cv.add(&Text{At: Point{lx, ly}, S: line, Size: noteSize, Color: gray, Class: "note"})
		}
	}
}

// bandAlpha is the opacity of bands: lighter the more there are, so
// overlapping ones stay readable.
func bandAlpha(c *Chart) uint8 {
	n := 0
	for _, s := range c.Series {
		if s.Kind == Band {
			n++
		}
	}
	return uint8(max(16, min(56, 112/max(n, 1))))
}

// dataRange is the extent of the data on each axis (positive values only
// on a log axis).
func dataRange(c *Chart) (xlo, xhi, ylo, yhi float64) {
	xlo, ylo, xhi, yhi = math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	ok := func(a *Axis, v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && (!a.Log || v > 0) }
	addX := func(v float64) {
		if ok(&c.X, v) {
			xlo, xhi = min(xlo, v), max(xhi, v)
		}
	}
	addY := func(v float64) {
		if ok(&c.Y, v) {
			ylo, yhi = min(ylo, v), max(yhi, v)
		}
	}
	for _, s := range c.Series {
		switch s.Kind {
		case Bars:
			for j, v := range s.Y {
				if v > 0 {
					addX(s.Edges[j])
					addX(s.Edges[j+1])
					addY(v)
				}
			}
			if !c.Y.Log {
				addY(0)
			}
		case VLine:
			addX(s.X[0])
		default:
			for j := range s.X {
				addX(s.X[j])
				if s.Kind != Band {
					addY(s.Y[j])
				}
				if s.Lo != nil {
					addY(s.Lo[j])
					addY(s.Hi[j])
				}
			}
		}
	}
	if math.IsInf(xlo, 0) {
		xlo, xhi = 0, 1
	}
	if math.IsInf(ylo, 0) {
		ylo, yhi = 0, 1
	}
	return
}

// clampLog keeps v on a log axis's scale: values at or below 0 go to
// the axis minimum.
func clampLog(a *Axis, v float64) float64 {
	if a.Log && !(v > a.Min) {
		return a.Min
	}
	return v
}

func segRect(a, b Point, h float64) Rect {
	return Rect{min(a.X, b.X) - h, min(a.Y, b.Y) - h, max(a.X, b.X) + h, max(a.Y, b.Y) + h}
}

type pointLabel struct {
	at    Point
	text  string
	color Color
}

// placeLabels puts each label at the first of sixteen spots around its
// point (eight near, eight farther out) that stays in the plot area and
// covers no marker, error bar, front segment or earlier label; failing
// that, where it covers least (leaving the plot area counts most).
func placeLabels(f *fonts, cv *Canvas, plot Rect, labels []pointLabel, obstacles []Rect) {
	type spot struct {
		dx, dy float64
		a      Anchor
		v      VAnchor
	}
	var spots []spot
	for _, d := range []float64{8, 20} {
		spots = append(spots, spot{d, 0, AnchorStart, VMiddle}, spot{-d, 0, AnchorEnd, VMiddle}, spot{d - 2, -d, AnchorStart, VBaseline},
			spot{d - 2, d, AnchorStart, VTop}, spot{-d + 2, -d, AnchorEnd, VBaseline}, spot{-d + 2, d, AnchorEnd, VTop},
			spot{0, -d - 2, AnchorMiddle, VBaseline}, spot{0, d + 2, AnchorMiddle, VTop})
	}
	inner := Rect{plot.X0 + 2, plot.Y0 + 2, plot.X1 - 2, plot.Y1 - 2}
	for _, l := range labels {
		var best *Text
		bestCost := math.Inf(1)
		var bestBox Rect
		far := false
		for i, s := range spots {
			t := &Text{At: Point{l.at.X + s.dx, l.at.Y + s.dy}, S: l.text, Size: labelSize, Color: l.color, Anchor: s.a, VAnchor: s.v, Class: "point-label"}
			b := f.box(t)
			cost := 50 * (b.W()*b.H() - inner.overlap(b))
			for _, o := range obstacles {
				cost += o.overlap(b) * 10
			}
			if i >= 8 {
				cost += 1 // near spots first
			}
			if cost < bestCost {
				best, bestCost, bestBox, far = t, cost, b, i >= 8
			}
			if cost == 0 {
				break
			}
		}
		if far { // a leader from the marker to the label says whose it is
			q := Point{min(max(l.at.X, bestBox.X0), bestBox.X1), min(max(l.at.Y, bestBox.Y0+2), bestBox.Y1-2)}
			if d := math.Hypot(q.X-l.at.X, q.Y-l.at.Y); d > 8 {
				p := Point{l.at.X + (q.X-l.at.X)*6/d, l.at.Y + (q.Y-l.at.Y)*6/d}
				cv.add(&Polyline{Pts: []Point{p, q}, Stroke: gray, Width: 0.8, Class: "leader"})
			}
		}
		cv.add(best)
		obstacles = append(obstacles, Rect{bestBox.X0 - 3, bestBox.Y0 - 2, bestBox.X1 + 3, bestBox.Y1 + 2})
	}
}

// placeVLineLabels writes vertical lines' labels along the top of the plot
// area, each on the first row where it overlaps no other, beside its line
// (right of it, or left near the right edge).
func placeVLineLabels(f *fonts, cv *Canvas, plot Rect, labels []pointLabel) {
	var rows [][]Rect
	for _, l := range labels {
		t := &Text{At: Point{l.at.X + 4, 0}, S: l.text, Size: labelSize, Color: l.color, VAnchor: VTop, Class: "vline-label"}
		if f.box(t).X1 > plot.X1-4 {
			t.At.X, t.Anchor = l.at.X-4, AnchorEnd
		}
		row := 0
		for ; ; row++ {
			t.At.Y = plot.Y0 + 6 + float64(row)*labelSize*1.4
			b := f.box(t)
			if row == len(rows) {
				rows = append(rows, nil)
			}
			free := true
			for _, o := range rows[row] {
				if o.overlap(Rect{b.X0 - 3, b.Y0, b.X1 + 3, b.Y1}) > 0 {
					free = false
					break
				}
			}
			if free {
				rows[row] = append(rows[row], b)
				break
			}
		}
		// A white halo keeps the label readable over bars and grid.
		b := f.box(t)
		cv.add(&Polygon{Pts: []Point{{b.X0 - 2, b.Y0 - 1}, {b.X1 + 2, b.Y0 - 1}, {b.X1 + 2, b.Y1}, {b.X0 - 2, b.Y1}}, Fill: white})
		cv.add(t)
	}
}

// drawSwatch draws a legend entry's sample centred at c.
func drawSwatch(cv *Canvas, s *Series, c Point) {
	switch s.Kind {
	case Points:
		cv.add(&Marker{At: c, Shape: s.Shape, Size: 9, Fill: s.Color, Stroke: white, Class: "legend-swatch"})
	case Bars:
		fill := s.Color
		fill.A = 200
		cv.add(&Polygon{Pts: []Point{{c.X - 9, c.Y - 6}, {c.X + 9, c.Y - 6}, {c.X + 9, c.Y + 6}, {c.X - 9, c.Y + 6}}, Fill: fill, Class: "legend-swatch"})
	default:
		if s.BandSwatch {
			fill := s.Color
			fill.A = 56
			cv.add(&Polygon{Pts: []Point{{c.X - 11, c.Y - 6}, {c.X + 11, c.Y - 6}, {c.X + 11, c.Y + 6}, {c.X - 11, c.Y + 6}}, Fill: fill})
		}
		cv.add(&Polyline{Pts: []Point{{c.X - 11, c.Y}, {c.X + 11, c.Y}}, Stroke: s.Color, Width: strokeWidth(s), Dash: s.Dash, Class: "legend-swatch"})
	}
}

// wrap breaks s into lines at most width wide (a longer word stands alone).
func wrap(f *fonts, s string, size, width float64) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		try := w
		if line != "" {
			try = line + " " + w
		}
		if line != "" && f.width(try, size) > width {
			lines = append(lines, line)
			line = w
			continue
		}
		line = try
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// ellipsize shortens s with "…" to fit width.
func ellipsize(f *fonts, s string, size, width float64) string {
	if f.width(s, size) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 1 && f.width(string(r)+"…", size) > width {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}
