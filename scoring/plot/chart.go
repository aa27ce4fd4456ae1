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

	// Title and subtitle, wrapped to the width.
	y := 12.0
	for _, line := range wrap(&f, c.Title, titleSize, (W-32)/svgSlack) {
		y += titleSize * 1.25
		cv.add(&Text{At: Point{16, y}, S: line, Size: titleSize, Color: ink, Class: "title"})
	}
	for _, line := range wrap(&f, c.Subtitle, subtitleSize, (W-32)/svgSlack) {
		y += subtitleSize * 1.35
		cv.add(&Text{At: Point{16, y}, S: line, Size: subtitleSize, Color: gray, Class: "subtitle"})
	}
	top := y + 18

	// The legend column on the right.
	var entries []*Series
	for i := range c.Series {
		if c.Series[i].Name != "" {
			entries = append(entries, &c.Series[i])
		}
	}
	legendW := 0.0
	if len(entries) > 0 || len(c.Notes) > 0 {
		legendW = 150
		for _, s := range entries {
			legendW = max(legendW, 34+f.width(s.Name, legendSize)*svgSlack)
		}
		legendW = min(legendW, 0.3*W)
	}
	right := W - 20
	if legendW > 0 {
		right = W - 24 - legendW - 16
	}
	bottom := H - (10 + tickSize*1.2 + 10 + axisSize*1.3 + 8)

	// Axis ranges from the data, then the left margin from the y labels.
	xlo, xhi, ylo, yhi := dataRange(c)
	c.Y.fit(ylo, yhi, 0.06, bottom-top, false)
	yt := c.Y.ticks(bottom-top, false)
	tw := 0.0
	for _, t := range yt {
		if t.Major {
			tw = max(tw, f.textWidth(&Text{S: t.Label, Sup: t.Sup, Size: tickSize})*svgSlack)
		}
	}
	left := 16 + axisSize*1.2 + 10 + tw + 8
	c.X.fit(xlo, xhi, 0.04, right-left, true)
	xt := c.X.ticks(right-left, true)
	plot := Rect{left, top, right, bottom}
	cv.Plot = plot
	px := func(v float64) float64 { return c.X.pos(v, plot.X0, plot.X1) }
	py := func(v float64) float64 { return c.Y.pos(v, plot.Y1, plot.Y0) }

	// Grid, ticks, labels.
	for _, t := range yt {
		yy := py(t.V)
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
	lastEnd := math.Inf(-1)
	for _, t := range xt {
		xx := px(t.V)
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
	cv.add(&Text{At: Point{(plot.X0 + plot.X1) / 2, H - 12}, S: c.X.Label, Size: axisSize, Color: ink, Anchor: AnchorMiddle, Class: "axis-label"})
	cv.add(&Text{At: Point{16, (plot.Y0 + plot.Y1) / 2}, S: c.Y.Label, Size: axisSize, Color: ink, Anchor: AnchorMiddle, VAnchor: VTop, Rotate: true, Class: "axis-label"})

	// Series: areas first, then lines, then markers, then labels.
	var obstacles []Rect
	var labelled []pointLabel
	var vlines []pointLabel
	for pass := range 3 {
		for i := range c.Series {
			s := &c.Series[i]
			switch {
			case pass == 0 && (s.Kind == Band || s.Kind == Bars):
			case pass == 1 && (s.Kind == Line || s.Kind == Step || s.Kind == VLine):
			case pass == 2 && s.Kind == Points:
			default:
				continue
			}
			width := s.Width
			if width == 0 {
				width = 2
			}
			switch s.Kind {
			case Band:
				var pts []Point
				for j := range s.X {
					pts = append(pts, Point{px(s.X[j]), py(clampLog(&c.Y, s.Hi[j]))})
				}
				for j := len(s.X) - 1; j >= 0; j-- {
					pts = append(pts, Point{px(s.X[j]), py(clampLog(&c.Y, s.Lo[j]))})
				}
				fill := s.Color
				fill.A = bandAlpha(c)
				cv.add(&Polygon{Pts: pts, Fill: fill, Clip: true, Class: s.Class})
			case Bars:
				fill := s.Color
				fill.A = 200
				for j, v := range s.Y {
					if v <= 0 {
						continue
					}
					x0, x1 := px(s.Edges[j]), px(s.Edges[j+1])
					y0, y1 := py(clampLog(&c.Y, v)), plot.Y1
					cv.add(&Polygon{Pts: []Point{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}}, Fill: fill, Clip: true, Class: s.Class})
					cv.add(&Polyline{Pts: []Point{{x0, y1}, {x0, y0}, {x1, y0}, {x1, y1}}, Stroke: white, Width: 0.8, Clip: true})
				}
			case Line, Step:
				var pts []Point
				for j := range s.X {
					if c.Y.Log && !(s.Y[j] > 0) {
						continue
					}
					p := Point{px(s.X[j]), py(s.Y[j])}
					if s.Kind == Step && len(pts) > 0 {
						pts = append(pts, Point{p.X, pts[len(pts)-1].Y})
					}
					pts = append(pts, p)
				}
				cv.add(&Polyline{Pts: pts, Stroke: s.Color, Width: width, Dash: s.Dash, Clip: true, Class: s.Class})
				if s.Kind == Step {
					for j := 1; j < len(pts); j++ {
						obstacles = append(obstacles, segRect(pts[j-1], pts[j], 2))
					}
				}
			case VLine:
				xx := px(s.X[0])
				cv.add(&Polyline{Pts: []Point{{xx, plot.Y0}, {xx, plot.Y1}}, Stroke: s.Color, Width: width, Dash: s.Dash, Clip: true, Class: s.Class})
				if len(s.Labels) > 0 {
					vlines = append(vlines, pointLabel{at: Point{xx, plot.Y0}, text: s.Labels[0], color: s.Color})
				}
			case Points:
				for j := range s.X {
					if c.Y.Log && !(s.Y[j] > 0) {
						continue
					}
					p := Point{px(s.X[j]), py(s.Y[j])}
					if s.Lo != nil {
						lo, hi := py(clampLog(&c.Y, s.Lo[j])), py(clampLog(&c.Y, s.Hi[j]))
						if math.Abs(lo-hi) >= 2 {
							cv.add(&Polyline{Pts: []Point{{p.X, lo}, {p.X, hi}}, Stroke: s.Color, Width: 1.5, Clip: true, Class: "error-bar"})
							cv.add(&Polyline{Pts: []Point{{p.X - 4, lo}, {p.X + 4, lo}}, Stroke: s.Color, Width: 1.5, Clip: true})
							cv.add(&Polyline{Pts: []Point{{p.X - 4, hi}, {p.X + 4, hi}}, Stroke: s.Color, Width: 1.5, Clip: true})
							obstacles = append(obstacles, Rect{p.X - 4, min(lo, hi), p.X + 4, max(lo, hi)})
						}
					}
					size := 9.0
					cv.add(&Marker{At: p, Shape: s.Shape, Size: size, Fill: s.Color, Stroke: white, Clip: true, Class: s.Class})
					obstacles = append(obstacles, Rect{p.X - size/2 - 1, p.Y - size/2 - 1, p.X + size/2 + 1, p.Y + size/2 + 1})
					if j < len(s.Labels) && s.Labels[j] != "" {
						labelled = append(labelled, pointLabel{at: p, text: s.Labels[j], color: ink})
					}
				}
			}
		}
	}
	placeLabels(&f, cv, plot, labelled, obstacles)
	placeVLineLabels(&f, cv, plot, vlines)
	cv.add(&Polyline{Pts: []Point{{plot.X0, plot.Y0}, {plot.X1, plot.Y0}, {plot.X1, plot.Y1}, {plot.X0, plot.Y1}, {plot.X0, plot.Y0}},
		Stroke: gray, Width: 1, Class: "frame"})

	// Legend.
	if legendW > 0 {
		lx, ly := W-16-legendW, top+4
		// Entries close up when many, and those that still do not fit
		// above the notes are counted instead of drawn off the canvas.
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
			for i, line := range wrap(&f, s.Name, legendSize, (legendW-34)/svgSlack) {
				if i > 0 {
					ly += legendSize * 1.25
				}
				cv.add(&Text{At: Point{lx + 30, ly}, S: ellipsize(&f, line, legendSize, (legendW-34)/svgSlack), Size: legendSize, Color: ink, Class: "legend"})
			}
		}
		if len(entries) > 0 {
			ly += 8
		}
		for _, n := range notes {
			ly += 6
			for _, line := range wrap(&f, n, noteSize, legendW/svgSlack) {
				ly += noteSize * 1.35
				cv.add(&Text{At: Point{lx, ly}, S: line, Size: noteSize, Color: gray, Class: "note"})
			}
		}
	}
	return cv
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
		w := s.Width
		if w == 0 {
			w = 2
		}
		cv.add(&Polyline{Pts: []Point{{c.X - 11, c.Y}, {c.X + 11, c.Y}}, Stroke: s.Color, Width: w, Dash: s.Dash, Class: "legend-swatch"})
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
