package plot

// data.go owns what the charts show, computed from records: the Pareto
// front of KLD against bits per weight, the running perplexity ± window
// by window, and the KLD histogram with its percentiles; and the three
// charts built from them.

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"plexbench/scoring"
)

// ErrNoData marks records that lack what a chart needs.
var ErrNoData = errors.New("nothing to plot")

// XY is a data point.
type XY struct{ X, Y float64 }

// ParetoFront returns the indices of the points no other point dominates
// (has X ≤ and Y ≤ with one strictly less), sorted by X then Y; equal
// points are on the front together. Points with a NaN are left out.
func ParetoFront(pts []XY) []int {
	idx := make([]int, 0, len(pts))
	for i, p := range pts {
		if !math.IsNaN(p.X) && !math.IsNaN(p.Y) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if c := cmp.Compare(pts[a].X, pts[b].X); c != 0 {
			return c
		}
		return cmp.Compare(pts[a].Y, pts[b].Y)
	})
	var front []int
	best := math.Inf(1) // the least Y at a smaller X
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && pts[idx[j]].X == pts[idx[i]].X {
			j++
		}
		low := pts[idx[i]].Y // this X's least Y
		if low < best {
			for k := i; k < j && pts[idx[k]].Y == low; k++ {
				front = append(front, idx[k])
			}
			best = low
		}
		i = j
	}
	return front
}

// Options are what every chart takes.
type Options struct {
	LogY bool
}

// modelLabel is a record's model file name without ".gguf".
func modelLabel(r *scoring.Report) string {
	if r.Record == nil {
		return "run"
	}
	return strings.TrimSuffix(r.Record.Model.File, filepath.Ext(r.Record.Model.File))
}

// labels names records by model, adding the KV cache type, then the
// record name, where two would read the same.
func labels(recs []*scoring.Report) []string {
	out := make([]string, len(recs))
	count := map[string]int{}
	for i, r := range recs {
		out[i] = modelLabel(r)
		count[out[i]]++
	}
	for i, r := range recs {
		if count[out[i]] > 1 {
			out[i] += " (kv " + r.Config.KVCacheDType + ")"
		}
	}
	count = map[string]int{}
	for _, l := range out {
		count[l]++
	}
	for i, r := range recs {
		if count[out[i]] > 1 && r.Record != nil {
			out[i] += " " + r.Record.Digest[:min(6, len(r.Record.Digest))]
		}
	}
	return out
}

// KLDvsBPW charts mean KLD (± CR1) against effective bits per weight for
// the records of one protocol group, with the Pareto front as a step.
// The reference that recorded the base has no KLD and is left out, with
// a note.
func KLDvsBPW(g scoring.RecordGroup, opt Options) (*Chart, error) {
	var recs []*scoring.Report
	var notes []string
	var floor *scoring.FloorReport
	for _, r := range g.Records {
		switch {
		case r.Floor != nil:
			floor = r.Floor // the newest last: records are sorted by KLD, floors are 0 or near it
			notes = append(notes, fmt.Sprintf("%s against its own top-%d base (plexbench floor): mean KLD %s, the measured floor; not drawn.",
				modelLabel(r), r.Floor.TopK, short(r.Floor.Floor)))
			if a := r.Floor.Against; a != nil {
				notes = append(notes, fmt.Sprintf("A top-%d base saw %.1f%% of %s's full-vocabulary KLD: top-k KLDs are lower bounds.",
					r.Floor.TopK, 100*a.SeenFraction, r.Floor.AgainstModel))
			}
		case r.KLD == nil && g.Protocol.Base != "":
			notes = append(notes, fmt.Sprintf("%s recorded the base (KLD 0 by definition): not drawn.", modelLabel(r)))
		case r.KLD == nil:
		case r.Record.Model.EffectiveBPW <= 0:
			notes = append(notes, fmt.Sprintf("%s: no effective bits per weight in its record: not drawn.", modelLabel(r)))
		default:
			recs = append(recs, r)
		}
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no record of protocol %s compared against a base (none has a kld object)", ErrNoData, g.Digest)
	}
	names := labels(recs)
	pts := make([]XY, len(recs))
	s := Series{Kind: Points, Name: "mean KLD ± CR1 (window-clustered)", Color: palette[0], Class: "point"}
	zeros := 0
	for i, r := range recs {
		k := r.KLD
		pts[i] = XY{r.Record.Model.EffectiveBPW, k.MeanKLD}
		if opt.LogY && !(k.MeanKLD > 0) {
			zeros++
		}
		s.X = append(s.X, pts[i].X)
		s.Y = append(s.Y, k.MeanKLD)
		s.Lo = append(s.Lo, k.MeanKLD-k.MeanKLDUncertaintyCR1)
		s.Hi = append(s.Hi, k.MeanKLD+k.MeanKLDUncertaintyCR1)
		s.Labels = append(s.Labels, names[i])
	}
	if zeros > 0 {
		notes = append(notes, fmt.Sprintf("%d record(s) with a mean KLD of 0 cannot sit on a log axis: not drawn.", zeros))
	}
	front := Series{Kind: Step, Name: "Pareto front (less KLD at fewer bits)", Color: palette[2], Width: 2, Class: "front"}
	for _, i := range ParetoFront(pts) {
		if opt.LogY && !(pts[i].Y > 0) {
			continue
		}
		front.X, front.Y = append(front.X, pts[i].X), append(front.Y, pts[i].Y)
	}
	frontMark := Series{Kind: Points, Name: "on the front", Color: palette[2], Shape: ShapeDiamond, X: front.X, Y: front.Y, Class: "front-point"}
	series := []Series{front, s, frontMark}
	if floor != nil && floor.Floor > 0 {
		lo, hi := slices.Min(s.X), slices.Max(s.X)
		series = append(series, Series{Kind: Line, Name: "2× the measured floor (below: floor-limited)", Color: gray,
			Dash: []float64{5, 4}, Width: 1.5, X: []float64{lo, hi}, Y: []float64{2 * floor.Floor, 2 * floor.Floor}, Class: "floor"})
	}
	c := &Chart{
		Title:    "Mean KLD vs effective bits per weight",
		Subtitle: g.Protocol.Title(),
		X:        Axis{Label: "effective bits per weight (tensor bits / tensor elements)"},
		Y:        Axis{Label: "mean KLD vs base (nats)", Log: opt.LogY, ZeroBased: true},
		Series:   series,
		Notes:    notes,
	}
	return c, nil
}

// PPLConvergence charts the running perplexity ± of each record against
// scored tokens, a line and a shaded band per record.
func PPLConvergence(groups []scoring.RecordGroup, opt Options) (*Chart, error) {
	var recs []*scoring.Report
	for _, g := range groups {
		recs = append(recs, g.Records...)
	}
	names := labels(recs)
	if len(groups) > 1 { // say which protocol each line ran
		for i, r := range recs {
			if r.Record != nil {
				names[i] += fmt.Sprintf(", ctx %d", r.Record.Protocol.Ctx)
			}
		}
	}
	c := &Chart{Title: "Perplexity convergence: running PPL ± after each window",
		X: Axis{Label: "scored tokens", ZeroBased: true}, Y: Axis{Label: "perplexity", Log: opt.LogY}}
	var clusteredAny []string
	for i, r := range recs {
		if len(r.Windows) == 0 {
			return nil, fmt.Errorf("%w: record %s has no windows", ErrNoData, recordName(r))
		}
		pts, clustered := scoring.RunningPPL(r.Windows)
		col := palette[i%len(palette)]
		var dash []float64
		if i >= len(palette) {
			dash = []float64{6, 4}
		}
		band := Series{Kind: Band, Color: col, Class: "band"}
		line := Series{Kind: Line, Name: names[i], Color: col, Dash: dash, BandSwatch: true, Class: "ppl-line"}
		for _, p := range pts {
			x := float64(p.Tokens)
			line.X, line.Y = append(line.X, x), append(line.Y, p.Perplexity)
			band.X = append(band.X, x)
			band.Lo, band.Hi = append(band.Lo, p.Perplexity-p.Uncertainty), append(band.Hi, p.Perplexity+p.Uncertainty)
		}
		if clustered {
			clusteredAny = append(clusteredAny, names[i])
			line.Name += " (± window-clustered)"
		}
		c.Series = append(c.Series, band)
		c.Series = append(c.Series, line)
	}
	if len(groups) == 1 {
		c.Subtitle = groups[0].Protocol.Title()
	} else if len(groups) > 1 {
		c.Subtitle = fmt.Sprintf("%d protocols (%s): lines of different protocols are not comparable",
			len(groups), strings.Join(scoring.ProtocolDifferences(groups), ", "))
	}
	c.Notes = append(c.Notes, "Band: ± of the running PPL, llama.cpp's PPL·sqrt(var(nll)/(N−1)) over the tokens so far.")
	if len(clusteredAny) > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%s: the record has no nll_sum_sq (written before it existed); its band is the window-clustered (CR1) ±, not the report's.",
			strings.Join(clusteredAny, ", ")))
	}
	return c, nil
}

func recordName(r *scoring.Report) string {
	if r.Record != nil {
		return r.Record.Name
	}
	return "(no record)"
}

// KLDHist charts a record's per-token KLD histogram on log-spaced bins
// with its percentiles and mean as labelled vertical lines.
func KLDHist(r *scoring.Report, p scoring.Protocol, opt Options) (*Chart, error) {
	k := r.KLD
	switch {
	case k == nil:
		return nil, fmt.Errorf("%w: record %s has no KLD (it did not compare against a base)", ErrNoData, recordName(r))
	case k.Histogram == nil || len(k.Histogram.Counts) == 0:
		return nil, fmt.Errorf("%w: record %s has no KLD histogram (written before reports kept one); score it again", ErrNoData, recordName(r))
	}
	h := k.Histogram
	s := Series{Kind: Bars, Name: "tokens per bin (4 per decade)", Edges: h.Edges(), Color: palette[0], Class: "bar"}
	for _, c := range h.Counts {
		s.Y = append(s.Y, float64(c))
	}
	c := &Chart{Title: fmt.Sprintf("Per-token KLD of %s", modelLabel(r)),
		X: Axis{Label: "per-token KLD vs base (nats, log scale)", Log: true},
		Y: Axis{Label: "tokens", Log: opt.LogY, ZeroBased: true}, Series: []Series{s}}
	// The x axis spans the decades of the non-empty bins, exactly (bins
	// start on decades, so no padding is needed to show them whole).
	first, last := -1, -1
	for i, n := range h.Counts {
		if n > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first >= 0 {
		lo := math.Floor(math.Log10(s.Edges[first]) + 1e-9)
		hi := math.Ceil(math.Log10(s.Edges[last+1]) - 1e-9)
		if m := math.Log10(max(k.MeanKLD, k.KLDPercentiles.Max)); m > hi {
			hi = math.Ceil(m - 1e-9)
		}
		if hi-lo < 2 {
			lo, hi = lo-1, hi+1
		}
		c.X.Min, c.X.Max, c.X.Fixed = math.Pow(10, lo), math.Pow(10, hi), true
	}
	c.Subtitle = p.Title()
	pc := k.KLDPercentiles
	marks := []struct {
		name string
		v    float64
		col  Color
		dash []float64
	}{
		{"median", pc.Median, palette[3], []float64{5, 3}},
		{"mean", k.MeanKLD, palette[2], nil},
		{"p90", pc.P90, palette[1], []float64{5, 3}},
		{"p99", pc.P99, palette[4], []float64{5, 3}},
		{"p99.9", pc.P99_9, palette[6], []float64{5, 3}},
		{"max", pc.Max, gray, []float64{2, 3}},
	}
	var skipped []string
	for _, m := range marks {
		if !(m.v > 0) {
			skipped = append(skipped, m.name)
			continue
		}
		label := fmt.Sprintf("%s %s", m.name, short(m.v))
		c.Series = append(c.Series, Series{Kind: VLine, Name: label, X: []float64{m.v}, Labels: []string{m.name}, Color: m.col, Dash: m.dash, Width: 1.6, Class: "percentile"})
	}
	total := h.Total()
	c.Notes = append(c.Notes, fmt.Sprintf("%d tokens with a finite KLD; mean %s ± %s (CR1).", total, short(k.MeanKLD), short(k.MeanKLDUncertaintyCR1)))
	if h.Under > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%d tokens (%.1f%%) below %s, exact zeros included: not drawn.", h.Under, 100*float64(h.Under)/float64(total), short(h.MinEdge)))
	}
	if h.Over > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%d tokens at or above %s: not drawn.", h.Over, short(h.MaxEdge)))
	}
	if k.NonFiniteTokens > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%d tokens with a non-finite KLD are not counted.", k.NonFiniteTokens))
	}
	if len(skipped) > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%s is 0, off the log axis: not drawn.", strings.Join(skipped, ", ")))
	}
	return c, nil
}

// short writes a figure to 3 significant digits.
func short(v float64) string { return fmt.Sprintf("%.3g", v) }
