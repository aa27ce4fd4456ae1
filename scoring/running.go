package scoring

// running.go owns the running perplexity of a finished run: the
// cumulative PPL ± after each window, rebuilt from the report's windows
// exactly as the run accumulated it. Plots and the TUI's chart of a
// re-opened run draw it.

import (
	"math"
	"slices"
)

// RunningPoint is the perplexity after the first Windows windows.
type RunningPoint struct {
	Windows, Tokens int
	PPLResult
}

// RunningPPL is the cumulative perplexity and its ± after each window
// (in index order). With every window's nll_sum_sq it is exactly the
// report's statistic, llama.cpp's PPL·sqrt(var(nll)/(N−1)) over tokens,
// accumulated as the run does; a record without it gets a window-clustered
// (CR1) ±, and clustered is true.
func RunningPPL(ws []WindowReport) (pts []RunningPoint, clustered bool) {
	ws = slices.Clone(ws)
	slices.SortStableFunc(ws, func(a, b WindowReport) int { return a.Index - b.Index })
	for _, w := range ws {
		if w.Scored > 0 && w.NLLSumSq == 0 {
			clustered = true
		}
	}
	var s NLLStats
	var sg2, sgn, sn2 float64 // Σ S_g², Σ S_g·N_g, Σ N_g² over windows
	for i, w := range ws {
		s.Merge(NLLStats{N: w.Scored, Sum: w.NLLSum, Sum2: w.NLLSumSq})
		r := s.Result()
		if clustered {
			n := float64(w.Scored)
			sg2, sgn, sn2 = sg2+w.NLLSum*w.NLLSum, sgn+w.NLLSum*n, sn2+n*n
			r.Uncertainty = 0
			if g := float64(i + 1); g > 1 && s.N > 0 {
				m, tot := s.Sum/float64(s.N), float64(s.N)
				if ss := sg2 - 2*m*sgn + m*m*sn2; ss > 0 {
					r.Uncertainty = r.Perplexity * math.Sqrt(g/(g-1)*ss) / tot
				}
			}
		}
		pts = append(pts, RunningPoint{Windows: i + 1, Tokens: s.N, PPLResult: r})
	}
	return pts, clustered
}
