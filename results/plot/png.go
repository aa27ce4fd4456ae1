package plot

// png.go renders a Canvas as a PNG raster: paths anti-aliased with
// golang.org/x/image/vector, text in Go Regular.

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"
)

// PNG renders c.
func PNG(c *Canvas) ([]byte, error) {
	img := Raster(c)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Raster draws c into an RGBA image.
func Raster(c *Canvas) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, c.W, c.H))
	draw.Draw(img, img.Bounds(), image.NewUniform(rgba(c.Background)), image.Point{}, draw.Src)
	r := rasterizer{img: img, full: img.Bounds(),
		plot: image.Rect(int(math.Floor(c.Plot.X0)), int(math.Floor(c.Plot.Y0)), int(math.Ceil(c.Plot.X1)), int(math.Ceil(c.Plot.Y1))).Intersect(img.Bounds())}
	for _, it := range c.Items {
		switch it := it.(type) {
		case *Polyline:
			r.fill(r.clip(it.Clip), strokePaths(dashed(it.Pts, it.Dash), it.Width), it.Stroke)
		case *Polygon:
			r.fill(r.clip(it.Clip), [][]Point{it.Pts}, it.Fill)
		case *Marker:
			var outline []Point
			if it.Shape == ShapeCircle {
				outline = circle(it.At, it.Size/2, 24)
			} else {
				outline = markerPath(it)
			}
			r.fill(r.clip(it.Clip), [][]Point{outline}, it.Fill)
			r.fill(r.clip(it.Clip), strokePaths([][]Point{append(outline, outline[0])}, 1.2), it.Stroke)
		case *Text:
			r.text(it)
		}
	}
	return img
}

func rgba(c Color) color.NRGBA { return color.NRGBA{c.R, c.G, c.B, c.A} }

type rasterizer struct {
	img        *image.RGBA
	full, plot image.Rectangle
	z          vector.Rasterizer
	fonts      fonts
}

func (r *rasterizer) clip(plot bool) image.Rectangle {
	if plot {
		return r.plot
	}
	return r.full
}

// fill fills the union of closed paths (all wound the same way, so
// overlaps saturate rather than cancel) inside clip.
func (r *rasterizer) fill(clip image.Rectangle, paths [][]Point, c Color) {
	if c.A == 0 {
		return
	}
	bx0, by0, bx1, by1 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, p := range paths {
		for _, q := range p {
			bx0, by0 = min(bx0, q.X), min(by0, q.Y)
			bx1, by1 = max(bx1, q.X), max(by1, q.Y)
		}
	}
	if math.IsInf(bx0, 0) {
		return
	}
	box := image.Rect(int(math.Floor(bx0)), int(math.Floor(by0)), int(math.Ceil(bx1))+1, int(math.Ceil(by1))+1).Intersect(clip)
	if box.Empty() {
		return
	}
	r.z.Reset(box.Dx(), box.Dy())
	ox, oy := float64(box.Min.X), float64(box.Min.Y)
	for _, p := range paths {
		if len(p) < 3 {
			continue
		}
		r.z.MoveTo(float32(p[0].X-ox), float32(p[0].Y-oy))
		for _, q := range p[1:] {
			r.z.LineTo(float32(q.X-ox), float32(q.Y-oy))
		}
		r.z.ClosePath()
	}
	r.z.DrawOp = draw.Over
	r.z.Draw(r.img, box, image.NewUniform(rgba(c)), image.Point{})
}

// strokePaths turns polylines into filled outlines: a quad per segment
// and a round cap at every vertex, all wound clockwise.
func strokePaths(lines [][]Point, width float64) [][]Point {
	h := width / 2
	var out [][]Point
	for _, pts := range lines {
		for i := range pts {
			out = append(out, circle(pts[i], h, 12))
			if i == 0 {
				continue
			}
			a, b := pts[i-1], pts[i]
			dx, dy := b.X-a.X, b.Y-a.Y
			l := math.Hypot(dx, dy)
			if l == 0 {
				continue
			}
			nx, ny := -dy/l*h, dx/l*h
			out = append(out, []Point{{a.X + nx, a.Y + ny}, {b.X + nx, b.Y + ny}, {b.X - nx, b.Y - ny}, {a.X - nx, a.Y - ny}})
		}
	}
	return out
}

// circle is a regular n-gon of radius r about c, wound as strokePaths' quads.
func circle(c Point, r float64, n int) []Point {
	pts := make([]Point, n)
	for i := range pts {
		a := -2 * math.Pi * float64(i) / float64(n)
		pts[i] = Point{c.X + r*math.Cos(a), c.Y + r*math.Sin(a)}
	}
	return pts
}

// dashed splits a polyline into its dashes (on, off, on, …).
func dashed(pts []Point, dash []float64) [][]Point {
	if len(dash) == 0 || len(pts) < 2 {
		return [][]Point{pts}
	}
	var out [][]Point
	cur := []Point{pts[0]}
	k, left, on := 0, dash[0], true
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		seg := math.Hypot(b.X-a.X, b.Y-a.Y)
		pos := 0.0
		for seg-pos > left {
			pos += left
			t := pos / seg
			p := Point{a.X + t*(b.X-a.X), a.Y + t*(b.Y-a.Y)}
			if on {
				out = append(out, append(cur, p))
			}
			cur = []Point{p}
			on = !on
			k = (k + 1) % len(dash)
			left = dash[k]
		}
		left -= seg - pos
		cur = append(cur, b)
	}
	if on && len(cur) > 1 {
		out = append(out, cur)
	}
	return out
}

// markerPath is a square, diamond or triangle marker's outline.
func markerPath(m *Marker) []Point {
	r := m.Size / 2
	x, y := m.At.X, m.At.Y
	switch m.Shape {
	case ShapeSquare:
		r *= 0.9
		return []Point{{x - r, y - r}, {x + r, y - r}, {x + r, y + r}, {x - r, y + r}}
	case ShapeDiamond:
		r *= 1.2
		return []Point{{x, y - r}, {x + r, y}, {x, y + r}, {x - r, y}}
	}
	r *= 1.15
	return []Point{{x, y - r}, {x + r*0.87, y + r*0.5}, {x - r*0.87, y + r*0.5}}
}

// text draws t: straight onto the image, or, rotated, into a mask turned
// a quarter turn.
func (r *rasterizer) text(t *Text) {
	w := r.fonts.textWidth(t)
	shift := 0.0
	switch t.Anchor {
	case AnchorMiddle:
		shift = w / 2
	case AnchorEnd:
		shift = w
	}
	src := image.NewUniform(rgba(t.Color))
	if !t.Rotate {
		r.drawString(r.img, src, t, t.At.X-shift, t.At.Y+baselineOffset(t.VAnchor, t.Size))
		return
	}
	// Lay the text out horizontally in a mask, then turn it: mask (x, y)
	// lands at (At.X + y − top, At.Y + shift − x).
	asc := 1.1 * t.Size
	mw, mh := int(math.Ceil(w))+2, int(math.Ceil(asc+0.35*t.Size))
	mask := image.NewAlpha(image.Rect(0, 0, mw, mh))
	r.drawString(mask, image.Opaque, t, 1, asc)
	top := asc - baselineOffset(t.VAnchor, t.Size)
	rot := image.NewAlpha(image.Rect(0, 0, mh, mw))
	for y := range mh {
		for x := range mw {
			rot.SetAlpha(y, mw-1-x, mask.AlphaAt(x, y))
		}
	}
	x0 := int(math.Round(t.At.X - top))
	y0 := int(math.Round(t.At.Y + shift - float64(mw-1) + 1))
	dst := image.Rect(x0, y0, x0+mh, y0+mw)
	draw.DrawMask(r.img, dst, src, image.Point{}, rot, image.Point{}, draw.Over)
}

// drawString draws t.S and its superscript with the baseline at y.
func (r *rasterizer) drawString(dst draw.Image, src image.Image, t *Text, x, y float64) {
	d := font.Drawer{Dst: dst, Src: src, Face: r.fonts.face(t.Size),
		Dot: fixed.Point26_6{X: fixed.Int26_6(x * 64), Y: fixed.Int26_6(y * 64)}}
	d.DrawString(t.S)
	if t.Sup != "" {
		d.Face = r.fonts.face(t.Size * supScale)
		d.Dot.Y = fixed.Int26_6((y - supRaise*t.Size) * 64)
		d.DrawString(t.Sup)
	}
}
