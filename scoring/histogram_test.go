package scoring

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKLDHistogramMatchesBruteForce: KLDStats.Result's histogram counts
// every finite KLD once (non-finite ones not at all), each in the bin a
// linear scan of the edges gives it, zeros and values below 1e-9 under,
// values at or above 1e2 over; exact edges fall in the bin they open.
func TestKLDHistogramMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 13))
	edges := HistogramEdges()
	if len(edges) != 45 || edges[0] != 1e-9 || edges[44] != 1e2 || edges[4] != 1e-8 {
		t.Fatalf("edges %v", edges)
	}
	var s KLDStats
	var finite []float64
	for i := range 5000 {
		var k float64
		switch rng.IntN(10) {
		case 0:
			k = 0
		case 1:
			k = math.Inf(1)
		case 2:
			k = edges[rng.IntN(len(edges))] // on an edge
		case 3:
			k = -1e-12
		default:
			k = math.Pow(10, -12+15*rng.Float64())
		}
		s.Add(i/100, TokenComparison{NLL: 1, BaseNLL: 1, KLD: k})
		if !math.IsInf(k, 0) {
			finite = append(finite, float64(float32(k))) // the accumulator keeps f32, as llama.cpp
		}
	}
	h := s.Result().Histogram
	if h == nil {
		t.Fatal("no histogram")
	}
	if h.Total() != len(finite) || len(finite) == 0 {
		t.Fatalf("histogram counts %d values, %d finite", h.Total(), len(finite))
	}
	want := make([]int, len(edges)-1)
	under, over := 0, 0
	for _, x := range finite {
		b := -1
		for i, e := range edges {
			if x >= e {
				b = i
			}
		}
		switch {
		case b < 0:
			under++
		case b == len(edges)-1:
			over++
		default:
			want[b]++
		}
	}
	if h.Under != under || h.Over != over {
		t.Errorf("under %d over %d, brute force %d %d", h.Under, h.Over, under, over)
	}
	for i := range want {
		if h.Counts[i] != want[i] {
			t.Errorf("bin %d [%g, %g): %d, brute force %d", i, edges[i], edges[i+1], h.Counts[i], want[i])
		}
	}
	for i, e := range h.Edges() {
		if e != edges[i] {
			t.Errorf("Edges()[%d] = %g, want %g", i, e, edges[i])
		}
	}
	if NewKLDHistogram(nil) != nil {
		t.Error("a histogram of nothing")
	}
}
