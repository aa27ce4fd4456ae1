package plot

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"plexbench/scoring"
)

// TestPlotParetoFrontBruteForce: on random point sets, with many ties, the
// front is exactly the points that no other dominates by the O(n²)
// definition.
func TestPlotParetoFrontBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 500 {
		n := rng.IntN(30)
		pts := make([]XY, n)
		for i := range pts {
			if trial%2 == 0 { // coarse grid: ties in x, y and whole points
				pts[i] = XY{float64(rng.IntN(6)), float64(rng.IntN(6))}
			} else {
				pts[i] = XY{rng.Float64() * 16, rng.ExpFloat64()}
			}
		}
		var want []int
		for i, p := range pts {
			dominated := false
			for j, q := range pts {
				if j != i && q.X <= p.X && q.Y <= p.Y && (q.X < p.X || q.Y < p.Y) {
					dominated = true
				}
			}
			if !dominated {
				want = append(want, i)
			}
		}
		got := ParetoFront(pts)
		for k := 1; k < len(got); k++ {
			if a, b := pts[got[k-1]], pts[got[k]]; a.X > b.X || (a.X == b.X && a.Y > b.Y) {
				t.Fatalf("trial %d: front not sorted by x: %v", trial, got)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: front %v, brute force %v, points %v", trial, got, want, pts)
		}
	}
}

// TestPlotLinearTicks: ticks lie in the range, are evenly spaced by a 1-2-5
// step, there are between 2 and n+1 of them for a range wider than a
// step, and their labels are distinct.
func TestPlotLinearTicks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		lo := (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(12)-6))
		hi := lo + rng.Float64()*math.Pow(10, float64(rng.IntN(12)-6))
		n := 2 + rng.IntN(10)
		if !(hi > lo) || hi-lo < 1e-6*math.Max(math.Abs(lo), math.Abs(hi)) {
			continue // beyond float64's resolution for evenly spaced ticks
		}
		ts := LinearTicks(lo, hi, n)
		step := NiceStep(hi-lo, n)
		m := step / math.Pow(10, math.Floor(math.Log10(step)+1e-9))
		if math.Abs(m-1) > 1e-9 && math.Abs(m-2) > 1e-9 && math.Abs(m-5) > 1e-9 {
			t.Fatalf("step %g for [%g, %g] is not 1, 2 or 5 × 10^k", step, lo, hi)
		}
		if len(ts) > n+1 || (hi-lo >= 2*step && len(ts) < 2) {
			t.Fatalf("%d ticks for [%g, %g], n %d, step %g", len(ts), lo, hi, n, step)
		}
		seen := map[string]bool{}
		for i, tk := range ts {
			if tk.V < lo-step*1e-9 || tk.V > hi+step*1e-9 {
				t.Fatalf("tick %g outside [%g, %g]", tk.V, lo, hi)
			}
			if i > 0 && math.Abs(tk.V-ts[i-1].V-step) > step*1e-6 {
				t.Fatalf("ticks %g, %g not %g apart", ts[i-1].V, tk.V, step)
			}
			if seen[tk.Label] {
				t.Fatalf("label %q twice in %+v", tk.Label, ts)
			}
			seen[tk.Label] = true
		}
	}
	if got := LinearTicks(0, 1, 5); len(got) != 6 || got[1].Label != "0.2" || got[5].Label != "1.0" {
		t.Errorf("ticks of [0, 1]: %+v", got)
	}
}

// TestPlotLogTicks: labelled ticks are whole decades in range, labelled 10
// with the exponent as superscript, in order; unlabelled ones are 2..9
// times a decade.
func TestPlotLogTicks(t *testing.T) {
	for _, c := range []struct{ lo, hi float64 }{{1e-9, 1e2}, {3e-4, 0.2}, {1e-3, 1e-2}, {5, 5e7}, {0.02, 0.09}} {
		ts := LogTicks(c.lo, c.hi, 8)
		var majors int
		for i, tk := range ts {
			if tk.V < c.lo*(1-1e-9) || tk.V > c.hi*(1+1e-9) {
				t.Errorf("[%g, %g]: tick %g outside", c.lo, c.hi, tk.V)
			}
			k := math.Log10(tk.V)
			whole := math.Abs(k-math.Round(k)) < 1e-9
			if tk.Major {
				majors++
				want := strings.Replace(fmt.Sprint(int(math.Round(k))), "-", "−", 1)
				if !whole || tk.Label != "10" || tk.Sup != want {
					t.Errorf("[%g, %g]: major tick %g labelled %q^%q", c.lo, c.hi, tk.V, tk.Label, tk.Sup)
				}
			} else if !whole {
				m := tk.V / math.Pow(10, math.Floor(k+1e-9))
				if math.Abs(m-math.Round(m)) > 1e-6 || m < 2 || m > 9 {
					t.Errorf("[%g, %g]: minor tick %g is not 2..9 × 10^k", c.lo, c.hi, tk.V)
				}
			}
			if i > 0 && tk.Major && ts[i-1].Major && tk.V <= ts[i-1].V {
				t.Errorf("decades out of order: %+v", ts)
			}
		}
		decades := int(math.Floor(math.Log10(c.hi)+1e-9)) - int(math.Ceil(math.Log10(c.lo)-1e-9)) + 1
		if majors == 0 && decades > 0 || majors > 8 {
			t.Errorf("[%g, %g]: %d labelled decades of %d", c.lo, c.hi, majors, decades)
		}
	}
}

// windows makes per-window reports from token NLLs as the runner does.
func windows(nlls [][]float64, withSq bool) []scoring.WindowReport {
	var ws []scoring.WindowReport
	for i, w := range nlls {
		var s scoring.NLLStats
		for _, x := range w {
			s.Add(x)
		}
		wr := scoring.WindowReport{Index: i, Scored: len(w), NLLSum: s.Sum}
		if withSq {
			wr.NLLSumSq = s.Sum2
		}
		ws = append(ws, wr)
	}
	return ws
}

// fakeGroup is a protocol group of n compared records and the reference.
func fakeGroup(n int) scoring.RecordGroup {
	proto := scoring.Protocol{Method: "chunks", Ctx: 128, TokenIDsSHA256: strings.Repeat("ab", 32), Text: "tiny.txt",
		Base: "plexbench:0123", BaseName: "f32.kld", TopK: 32}
	g := scoring.RecordGroup{Protocol: proto, Digest: proto.Digest()}
	rec := func(name string, bpw float64) *scoring.Report {
		return &scoring.Report{Perplexity: 4, Windows: windows([][]float64{{1, 2, 1.5}, {0.5, 1, 3}}, true),
			Record: &scoring.RecordInfo{Name: name, Protocol: proto, Model: scoring.RecordModel{File: name + ".gguf", EffectiveBPW: bpw}}}
	}
	g.Records = append(g.Records, rec("model-f32", 32))
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range n {
		r := rec(fmt.Sprintf("model-q%d", i), 4+float64(i)*0.8)
		k := 0.2 * math.Exp(-float64(i)*0.5) * (0.7 + 0.6*rng.Float64())
		r.KLD = &scoring.KLDReport{MeanKLD: k, MeanKLDUncertaintyCR1: k * 0.08, KLDPercentiles: scoring.KLDPercentiles{Median: k / 2, P90: 2 * k, P99: 6 * k, P99_9: 15 * k, Max: 30 * k}}
		vals := make([]float32, 3000)
		for j := range vals {
			vals[j] = float32(k * rng.ExpFloat64() * math.Exp(rng.NormFloat64()))
		}
		r.KLD.Histogram = scoring.NewKLDHistogram(vals)
		g.Records = append(g.Records, r)
	}
	return g
}

type svgDoc struct {
	texts   map[string][]string // class → texts
	classes map[string]int      // class → elements
	tags    map[string]map[string]int
}

func parseSVG(t *testing.T, data []byte) svgDoc {
	t.Helper()
	d := svgDoc{texts: map[string][]string{}, classes: map[string]int{}, tags: map[string]map[string]int{}}
	dec := xml.NewDecoder(bytes.NewReader(data))
	var cur string
	var inText bool
	var text strings.Builder
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = e.Name.Local
			}
			class := ""
			for _, a := range e.Attr {
				if a.Name.Local == "class" {
					class = a.Value
				}
			}
			if class != "" {
				d.classes[class]++
				if d.tags[class] == nil {
					d.tags[class] = map[string]int{}
				}
				d.tags[class][e.Name.Local]++
			}
			if e.Name.Local == "text" {
				inText, cur = true, class
				text.Reset()
			}
		case xml.CharData:
			if inText {
				text.Write(e)
			}
		case xml.EndElement:
			if e.Name.Local == "text" {
				inText = false
				d.texts[cur] = append(d.texts[cur], text.String())
			}
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q", root)
	}
	return d
}

// TestPlotKLDvsBPWSVG: the SVG parses; it has the axis labels, a legend
// entry per series, one marker per compared record, each labelled with
// its model, the front, and a note for the reference it leaves out.
func TestPlotKLDvsBPWSVG(t *testing.T) {
	g := fakeGroup(6)
	for _, logY := range []bool{false, true} {
		c, err := KLDvsBPW(g, Options{LogY: logY})
		if err != nil {
			t.Fatal(err)
		}
		d := parseSVG(t, SVG(Layout(c, 960, 600)))
		if got := d.tags["point"]["circle"]; got != 6 {
			t.Errorf("log %v: %d point markers, want 6", logY, got)
		}
		if d.classes["front"] != 1 {
			t.Errorf("log %v: %d front lines", logY, d.classes["front"])
		}
		var pts []XY
		for _, r := range g.Records[1:] {
			pts = append(pts, XY{r.Record.Model.EffectiveBPW, r.KLD.MeanKLD})
		}
		if got, want := d.classes["front-point"], len(ParetoFront(pts)); got != want {
			t.Errorf("log %v: %d front markers, front has %d", logY, got, want)
		}
		labels := strings.Join(d.texts["point-label"], "|")
		for i := range 6 {
			if !strings.Contains(labels, fmt.Sprintf("model-q%d", i)) {
				t.Errorf("no label for model-q%d in %q", i, labels)
			}
		}
		axes := strings.Join(d.texts["axis-label"], "|")
		if !strings.Contains(axes, "effective bits per weight") || !strings.Contains(axes, "mean KLD") {
			t.Errorf("axis labels %q", axes)
		}
		if legend := strings.Join(d.texts["legend"], "|"); !strings.Contains(legend, "Pareto front") || !strings.Contains(legend, "CR1") {
			t.Errorf("legend %q", legend)
		}
		if notes := strings.Join(d.texts["note"], " "); !strings.Contains(notes, "model-f32 recorded the base") {
			t.Errorf("notes %q", notes)
		}
		if title := strings.Join(d.texts["subtitle"], " "); !strings.Contains(title, "ctx 128") || !strings.Contains(title, "f32.kld") || !strings.Contains(title, "top-32") {
			t.Errorf("subtitle %q", title)
		}
	}
	// A zero KLD on a log axis is left out with a note, not a crash.
	g.Records[1].KLD.MeanKLD, g.Records[1].KLD.MeanKLDUncertaintyCR1 = 0, 0
	c, _ := KLDvsBPW(g, Options{LogY: true})
	d := parseSVG(t, SVG(Layout(c, 960, 600)))
	if d.tags["point"]["circle"] != 5 || !strings.Contains(strings.Join(d.texts["note"], " "), "log axis") {
		t.Errorf("zero KLD on a log axis: %d markers, notes %q", d.tags["point"]["circle"], d.texts["note"])
	}
	if _, err := KLDvsBPW(scoring.RecordGroup{Records: g.Records[:1], Protocol: g.Protocol}, Options{}); err == nil {
		t.Error("a group without KLD records plotted")
	}
}

// TestPlotKLDvsBPWFloor: a floor record (plexbench floor's self-compare)
// is a note, not a point, and a nonzero floor draws the floor-limited line
// at twice its value.
func TestPlotKLDvsBPWFloor(t *testing.T) {
	g := fakeGroup(4)
	fl := *g.Records[0]
	fl.Record = &scoring.RecordInfo{Name: "model-f32-floor", Protocol: g.Protocol, Model: g.Records[0].Record.Model}
	fl.KLD = &scoring.KLDReport{}
	fl.Floor = &scoring.FloorReport{TopK: 32, Floor: 1e-3, AgainstModel: "model-q0.gguf",
		Against: &scoring.CoarseningReport{SeenFraction: 0.9}}
	g.Records = append(g.Records, &fl)
	c, err := KLDvsBPW(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := parseSVG(t, SVG(Layout(c, 960, 600)))
	notes := strings.Join(d.texts["note"], " ")
	if d.tags["point"]["circle"] != 4 || d.classes["floor"] != 1 || !strings.Contains(notes, "measured floor") || !strings.Contains(notes, "90.0%") {
		t.Errorf("floor record: %d markers, %d floor lines, notes %q", d.tags["point"]["circle"], d.classes["floor"], notes)
	}
	var line *Series
	for i := range c.Series {
		if c.Series[i].Class == "floor" {
			line = &c.Series[i]
		}
	}
	if line == nil || line.Y[0] != 2e-3 || line.Y[1] != 2e-3 {
		t.Errorf("floor line %+v, want at 2e-3", line)
	}
}

// TestPlotHistogramAndPPLSVG: the histogram draws a bar per non-empty bin and
// a line per percentile; the convergence chart a line and a band per
// record, with the clustered fallback named in the legend.
func TestPlotHistogramAndPPLSVG(t *testing.T) {
	g := fakeGroup(3)
	r := g.Records[2]
	c, err := KLDHist(r, g.Protocol, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := parseSVG(t, SVG(Layout(c, 960, 600)))
	nonEmpty := 0
	for _, n := range r.KLD.Histogram.Counts {
		if n > 0 {
			nonEmpty++
		}
	}
	if d.classes["bar"] != nonEmpty || d.classes["percentile"] != 6 {
		t.Errorf("%d bars for %d non-empty bins, %d percentile lines", d.classes["bar"], nonEmpty, d.classes["percentile"])
	}
	if v := strings.Join(d.texts["vline-label"], " "); v != "median mean p90 p99 p99.9 max" {
		t.Errorf("percentile labels %q", v)
	}
	if _, err := KLDHist(g.Records[0], g.Protocol, Options{}); err == nil {
		t.Error("a record without KLD gave a histogram")
	}
	g.Records[3].Windows = windows([][]float64{{1, 2, 1.5}, {0.5, 1, 3}}, false)
	c, err = PPLConvergence([]scoring.RecordGroup{g}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d = parseSVG(t, SVG(Layout(c, 960, 600)))
	if d.classes["ppl-line"] != 4 || d.classes["band"] != 4 {
		t.Errorf("%d lines, %d bands for 4 records", d.classes["ppl-line"], d.classes["band"])
	}
	if l := strings.Join(d.texts["legend"], "|"); !strings.Contains(l, "model-q2 (± window-clustered)") || strings.Contains(l, "model-q1 (±") {
		t.Errorf("legend %q", l)
	}
	g.Records[1].Windows = nil
	if _, err := PPLConvergence([]scoring.RecordGroup{g}, Options{}); err == nil || !strings.Contains(err.Error(), "model-q0") {
		t.Errorf("a record without windows: %v", err)
	}
}

// TestPlotPNG: the PNG decodes at the asked size, has drawn pixels inside the
// plot area (not only background) and text pixels in the title region.
func TestPlotPNG(t *testing.T) {
	c, err := KLDvsBPW(fakeGroup(5), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range [][2]int{{960, 600}, {640, 400}} {
		cv := Layout(c, size[0], size[1])
		data, err := PNG(cv)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != size[0] || b.Dy() != size[1] {
			t.Fatalf("size %v, asked %v", b, size)
		}
		count := func(r image.Rectangle) int {
			n := 0
			for y := r.Min.Y; y < r.Max.Y; y++ {
				for x := r.Min.X; x < r.Max.X; x++ {
					if r, g, b, _ := img.At(x, y).RGBA(); r < 0xc000 || g < 0xc000 || b < 0xc000 {
						n++ // darker than the grid: data or text
					}
				}
			}
			return n
		}
		p := cv.Plot
		inner := image.Rect(int(p.X0)+3, int(p.Y0)+3, int(p.X1)-3, int(p.Y1)-3)
		if n := count(inner); n < 200 {
			t.Errorf("%v: %d drawn pixels inside the plot area", size, n)
		}
		if n := count(image.Rect(0, 0, size[0]/2, int(p.Y0)-20)); n < 100 {
			t.Errorf("%v: %d text pixels in the title region", size, n)
		}
		if n := count(image.Rect(size[0]-5, 0, size[0], size[1])); n != 0 {
			t.Errorf("%v: %d pixels drawn in the right margin (clipped legend?)", size, n)
		}
	}
}
