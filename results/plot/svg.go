package plot

// svg.go renders a Canvas as SVG text.

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

// fontFamily is Go Regular first (the face layout measured with), then
// look-alikes.
const fontFamily = "Go, 'Go Regular', Helvetica, Arial, 'DejaVu Sans', sans-serif"

// SVG renders c.
func SVG(c *Canvas) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s">`+"\n",
		c.W, c.H, c.W, c.H, esc(fontFamily))
	if c.Title != "" {
		fmt.Fprintf(&b, "<title>%s</title>\n", esc(c.Title))
	}
	p := c.Plot
	fmt.Fprintf(&b, `<defs><clipPath id="plot-area"><rect x="%s" y="%s" width="%s" height="%s"/></clipPath></defs>`+"\n",
		num(p.X0), num(p.Y0), num(p.W()), num(p.H()))
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="%s"/>`+"\n", c.Background.hex())
	for _, it := range c.Items {
		switch it := it.(type) {
		case *Polyline:
			if len(it.Pts) < 2 {
				continue
			}
			fmt.Fprintf(&b, `<polyline%s points="%s" fill="none" stroke="%s"%s stroke-width="%s" stroke-linejoin="round" stroke-linecap="round"`,
				attrs(it.Class, it.Clip), points(it.Pts), it.Stroke.hex(), opacity("stroke-opacity", it.Stroke), num(it.Width))
			if len(it.Dash) > 0 {
				var d []string
				for _, x := range it.Dash {
					d = append(d, num(x))
				}
				fmt.Fprintf(&b, ` stroke-dasharray="%s"`, strings.Join(d, " "))
			}
			b.WriteString("/>\n")
		case *Polygon:
			if len(it.Pts) < 3 {
				continue
			}
			fmt.Fprintf(&b, `<polygon%s points="%s" fill="%s"%s/>`+"\n",
				attrs(it.Class, it.Clip), points(it.Pts), it.Fill.hex(), opacity("fill-opacity", it.Fill))
		case *Marker:
			paint := fmt.Sprintf(`fill="%s"%s stroke="%s"%s stroke-width="1.2"`, it.Fill.hex(), opacity("fill-opacity", it.Fill),
				it.Stroke.hex(), opacity("stroke-opacity", it.Stroke))
			r := it.Size / 2
			switch it.Shape {
			case ShapeCircle:
				fmt.Fprintf(&b, `<circle%s cx="%s" cy="%s" r="%s" %s/>`+"\n", attrs(it.Class, it.Clip), num(it.At.X), num(it.At.Y), num(r), paint)
			default:
				fmt.Fprintf(&b, `<polygon%s points="%s" %s/>`+"\n", attrs(it.Class, it.Clip), points(markerPath(it)), paint)
			}
		case *Text:
			x, y := it.At.X, it.At.Y+baselineOffset(it.VAnchor, it.Size)
			rot := ""
			if it.Rotate {
				// Rotated about At: the baseline offset moves along the new
				// vertical, which is x.
				x, y = it.At.X, it.At.Y
				rot = fmt.Sprintf(` transform="rotate(-90 %s %s) translate(0 %s)"`, num(x), num(y), num(baselineOffset(it.VAnchor, it.Size)))
			}
			anchor := [...]string{"start", "middle", "end"}[it.Anchor]
			fmt.Fprintf(&b, `<text%s x="%s" y="%s" font-size="%s" fill="%s"%s text-anchor="%s"%s>%s`,
				attrs(it.Class, false), num(x), num(y), num(it.Size), it.Color.hex(), opacity("fill-opacity", it.Color), anchor, rot, esc(it.S))
			if it.Sup != "" {
				fmt.Fprintf(&b, `<tspan dy="%s" font-size="%s">%s</tspan>`, num(-supRaise*it.Size), num(supScale*it.Size), esc(it.Sup))
			}
			b.WriteString("</text>\n")
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func attrs(class string, clip bool) string {
	s := ""
	if class != "" {
		s += fmt.Sprintf(` class="%s"`, esc(class))
	}
	if clip {
		s += ` clip-path="url(#plot-area)"`
	}
	return s
}

func opacity(name string, c Color) string {
	if c.A == 255 {
		return ""
	}
	return fmt.Sprintf(` %s="%s"`, name, strconv.FormatFloat(float64(c.A)/255, 'f', 3, 64))
}

func points(pts []Point) string {
	var b strings.Builder
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(num(p.X))
		b.WriteByte(',')
		b.WriteString(num(p.Y))
	}
	return b.String()
}

// num writes a coordinate to 0.01 px.
func num(x float64) string {
	s := strconv.FormatFloat(x, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" || s == "" {
		return "0"
	}
	return s
}

func esc(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
