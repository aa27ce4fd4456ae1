package scoring

// histogram.go owns KLDHistogram: the per-token KLDs of a comparison
// counted in fixed log-spaced bins, so a report can show their spread
// without carrying every token.

import (
	"math"
	"slices"
)

// Histogram edges: HistBinsPerDecade bins per decade from 10^HistMinExp
// to 10^HistMaxExp.
const (
	HistMinExp        = -9
	HistMaxExp        = 2
	HistBinsPerDecade = 4
	histBins          = (HistMaxExp - HistMinExp) * HistBinsPerDecade
)

// KLDHistogram counts the finite per-token KLDs (nats). Bin i holds
// values in [e_i, e_{i+1}) with e_i = 10^(−9 + i/4), i = 0..43: four bins
// per decade from 1e-9 to 1e2 (Edges). Under counts the values below
// 1e-9 (exact zeros, and tiny negatives left by rounding, included),
// Over those at or above 1e2. Under + Σ Counts + Over is the number of
// finite KLDs; tokens with a non-finite KLD are not counted.
type KLDHistogram struct {
	MinEdge       float64 `json:"min_edge"` // e_0 = 1e-9
	MaxEdge       float64 `json:"max_edge"` // e_44 = 1e2
	BinsPerDecade int     `json:"bins_per_decade"`
	Counts        []int   `json:"counts"`
	Under         int     `json:"under"`
	Over          int     `json:"over"`
}

// HistogramEdges are the 45 bin edges e_0..e_44, ascending.
func HistogramEdges() []float64 {
	e := make([]float64, histBins+1)
	for i := range e {
		e[i] = math.Pow(10, HistMinExp+float64(i)/HistBinsPerDecade)
	}
	return e
}

// Edges are the histogram's bin edges (len(Counts)+1 of them).
func (h *KLDHistogram) Edges() []float64 {
	n := len(h.Counts)
	if h.BinsPerDecade <= 0 || n == 0 {
		return nil
	}
	lo := math.Round(math.Log10(h.MinEdge)) // an integer exponent, as written
	e := make([]float64, n+1)
	for i := range e {
		e[i] = math.Pow(10, lo+float64(i)/float64(h.BinsPerDecade))
	}
	return e
}

// Total is the number of values counted.
func (h *KLDHistogram) Total() int {
	t := h.Under + h.Over
	for _, c := range h.Counts {
		t += c
	}
	return t
}

// NewKLDHistogram bins the finite KLDs v (any order); nil when v is empty.
func NewKLDHistogram(v []float32) *KLDHistogram {
	if len(v) == 0 {
		return nil
	}
	edges := HistogramEdges()
	h := &KLDHistogram{MinEdge: edges[0], MaxEdge: edges[histBins], BinsPerDecade: HistBinsPerDecade,
		Counts: make([]int, histBins)}
	for _, x := range v {
		f := float64(x)
		// i edges are <= f: f lies in [e_{i−1}, e_i).
		i, found := slices.BinarySearch(edges, f)
		if found {
			i++
		}
		switch {
		case i == 0:
			h.Under++
		case i > histBins:
			h.Over++
		default:
			h.Counts[i-1]++
		}
	}
	return h
}
