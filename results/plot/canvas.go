// Package plot turns records into charts and draws them without outside
// tools: data preparation (series from records, the Pareto front, the
// running perplexity ±, the KLD histogram) builds a Chart; Layout places
// a Chart's axes, ticks, series, labels and legend on a Canvas, a small
// drawing model (polylines, filled polygons, markers, anchored text,
// clipped to the plot area); SVG and PNG render a Canvas.
package plot

import (
	"fmt"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// Color is 8-bit sRGB with alpha.
type Color struct{ R, G, B, A uint8 }

func (c Color) hex() string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// Point is a position in pixels, y down.
type Point struct{ X, Y float64 }

// Rect is [X0, X1] × [Y0, Y1] in pixels.
type Rect struct{ X0, Y0, X1, Y1 float64 }

func (r Rect) W() float64 { return r.X1 - r.X0 }
func (r Rect) H() float64 { return r.Y1 - r.Y0 }

// overlap is the area r and o share.
func (r Rect) overlap(o Rect) float64 {
	w := min(r.X1, o.X1) - max(r.X0, o.X0)
	h := min(r.Y1, o.Y1) - max(r.Y0, o.Y0)
	if w <= 0 || h <= 0 {
		return 0
	}
	return w * h
}

// Anchor places text horizontally about its point.
type Anchor int

const (
	AnchorStart Anchor = iota
	AnchorMiddle
	AnchorEnd
)

// VAnchor places text vertically about its point: its cap height's top,
// middle or the baseline.
type VAnchor int

const (
	VBaseline VAnchor = iota
	VMiddle
	VTop
)

// Shape is a marker's shape.
type Shape int

const (
	ShapeCircle Shape = iota
	ShapeSquare
	ShapeDiamond
	ShapeTriangle
)

// Item is one thing drawn; Class names it in the SVG (tests read it).
type Item interface{ class() string }

// Polyline is an open stroked path.
type Polyline struct {
	Pts    []Point
	Stroke Color
	Width  float64
	Dash   []float64 // on, off lengths in pixels; nil for solid
	Clip   bool      // to the canvas's plot area
	Class  string
}

// Polygon is a closed filled path.
type Polygon struct {
	Pts   []Point
	Fill  Color
	Clip  bool
	Class string
}

// Marker is a symbol centred on At, Size pixels across.
type Marker struct {
	At     Point
	Shape  Shape
	Size   float64
	Fill   Color
	Stroke Color
	Clip   bool
	Class  string
}

// Text is a line of text; Sup is a superscript that follows it (10 and
// −3 for 10⁻³). Rotate turns it 90° counter-clockwise about At.
type Text struct {
	At      Point
	S, Sup  string
	Size    float64
	Color   Color
	Anchor  Anchor
	VAnchor VAnchor
	Rotate  bool
	Class   string
}

func (p *Polyline) class() string { return p.Class }
func (p *Polygon) class() string  { return p.Class }
func (m *Marker) class() string   { return m.Class }
func (t *Text) class() string     { return t.Class }

// Canvas is a picture: items drawn in order over the background; Plot is
// the area clipped items stay inside.
type Canvas struct {
	W, H       int
	Background Color
	Plot       Rect
	Title      string // the SVG's <title>
	Items      []Item
}

func (c *Canvas) add(it Item) { c.Items = append(c.Items, it) }

// Text metrics: cap height and superscript geometry as fractions of the
// font size, shared by both renderers so layout holds in either.
const (
	capHeight = 0.72
	supScale  = 0.72
	supRaise  = 0.42
)

// baselineOffset is how far below At the baseline lies.
func baselineOffset(v VAnchor, size float64) float64 {
	switch v {
	case VTop:
		return capHeight * size
	case VMiddle:
		return capHeight * size / 2
	}
	return 0
}

// Go Regular, parsed once; faces by size, made as needed.
var goRegular = sync.OnceValue(func() *sfnt.Font {
	f, err := opentype.Parse(goregular.TTF)
	if err != nil {
		panic(err) // the embedded font always parses
	}
	return f
})

// fonts holds faces of Go Regular by pixel size, for one layout or render.
type fonts struct{ faces map[float64]font.Face }

func (f *fonts) face(size float64) font.Face {
	if f.faces == nil {
		f.faces = map[float64]font.Face{}
	}
	if fc, ok := f.faces[size]; ok {
		return fc
	}
	fc, err := opentype.NewFace(goRegular(), &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingNone})
	if err != nil {
		panic(err) // positive sizes only
	}
	f.faces[size] = fc
	return fc
}

func (f *fonts) width(s string, size float64) float64 {
	if s == "" {
		return 0
	}
	return fixedF(font.MeasureString(f.face(size), s))
}

// textWidth is the width of t with its superscript.
func (f *fonts) textWidth(t *Text) float64 {
	return f.width(t.S, t.Size) + f.width(t.Sup, t.Size*supScale)
}

// svgSlack widens measured text for layout: an SVG viewer without Go
// Regular substitutes a face up to about a tenth wider (DejaVu Sans).
const svgSlack = 1.1

// box is the rectangle t covers (unrotated text only), with svgSlack.
func (f *fonts) box(t *Text) Rect {
	w := f.textWidth(t) * svgSlack
	x0 := t.At.X
	switch t.Anchor {
	case AnchorMiddle:
		x0 -= w / 2
	case AnchorEnd:
		x0 -= w
	}
	base := t.At.Y + baselineOffset(t.VAnchor, t.Size)
	top := base - capHeight*t.Size
	if t.Sup != "" {
		top = base - (supRaise+capHeight*supScale)*t.Size
	}
	return Rect{x0, top, x0 + w, base + 0.22*t.Size}
}

func fixedF(x fixed.Int26_6) float64 { return float64(x) / 64 }
