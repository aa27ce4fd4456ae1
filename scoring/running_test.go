package scoring

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// windows makes per-window reports from token NLLs as the runner does.
func windowsOf(nlls [][]float64, withSq bool) []WindowReport {
	var ws []WindowReport
	for i, w := range nlls {
		var s NLLStats
		for _, x := range w {
			s.Add(x)
		}
		wr := WindowReport{Index: i, Scored: len(w), NLLSum: s.Sum}
		if withSq {
			wr.NLLSumSq = s.Sum2
		}
		ws = append(ws, wr)
	}
	return ws
}

// TestRunningPPLMatchesNLLStats: after every window the running PPL and
// ± equal NLLStats over the same tokens added one by one (to rounding);
// windows out of order are taken in index order; without nll_sum_sq the
// ± is the window-clustered one and says so.
func TestRunningPPLMatchesNLLStats(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var nlls [][]float64
	for range 40 {
		w := make([]float64, 20+rng.IntN(100))
		for i := range w {
			w[i] = rng.ExpFloat64() * 1.5
		}
		nlls = append(nlls, w)
	}
	ws := windowsOf(nlls, true)
	rev := slices.Clone(ws)
	slices.Reverse(rev)
	pts, clustered := RunningPPL(rev)
	if clustered || len(pts) != len(nlls) {
		t.Fatalf("%d points, clustered %v", len(pts), clustered)
	}
	var s NLLStats
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b)) }
	for i, w := range nlls {
		for _, x := range w {
			s.Add(x)
		}
		want := s.Result()
		p := pts[i]
		if p.Windows != i+1 || p.Tokens != want.N || !near(p.Perplexity, want.Perplexity) || !near(p.Uncertainty, want.Uncertainty) || p.Uncertainty <= 0 {
			t.Fatalf("window %d: running %+v, NLLStats %+v", i, p, want)
		}
	}
	old, clustered := RunningPPL(windowsOf(nlls, false))
	if !clustered {
		t.Fatal("windows without nll_sum_sq not flagged")
	}
	for i, p := range old {
		if !near(p.Perplexity, pts[i].Perplexity) || (i > 0 && !(p.Uncertainty > 0)) || math.IsNaN(p.Uncertainty) {
			t.Fatalf("window %d: clustered %+v, exact %+v", i, p, pts[i])
		}
	}
}
