package engine

// The float64 attention the tests' reference forward passes share (the
// dense llama/qwen2/qwen3 pass, the hybrids' gated attention layers) and
// the attention op's own tests compare with.

import "math"

// causalAttention64 is causal multi-head attention with grouped KV heads
// in float64: for every position t, each query head h of Q[t] (heads, hd)
// attends over K[0..t] and V[0..t] (kvHeads, hd) of its KV head
// h / (heads/kvHeads) with scores q·k·scale and a plain softmax (max
// subtracted, sums in position order). It returns (len(Q), heads·hd).
func causalAttention64(Q, K, V [][]float64, heads, kvHeads, hd int, scale float64) [][]float64 {
	grp := heads / kvHeads
	out := make([][]float64, len(Q))
	for t := range Q {
		att := make([]float64, heads*hd)
		sc := make([]float64, t+1)
		for h := range heads {
			g := h / grp
			q := Q[t][h*hd : (h+1)*hd]
			mx := math.Inf(-1)
			for j := range t + 1 {
				var d float64
				for i, qv := range q {
					d += qv * K[j][g*hd+i]
				}
				sc[j] = d * scale
				mx = max(mx, sc[j])
			}
			var sum float64
			for j := range sc {
				sc[j] = math.Exp(sc[j] - mx)
				sum += sc[j]
			}
			o := att[h*hd : (h+1)*hd]
			for j, p := range sc {
				for i := range o {
					o[i] += p / sum * V[j][g*hd+i]
				}
			}
		}
		out[t] = att
	}
	return out
}

// rows64 splits x (n rows of width w, float32) into float64 rows.
func rows64(x []float32, n, w int) [][]float64 {
	out := make([][]float64, n)
	for t := range out {
		out[t] = make([]float64, w)
		for i := range w {
			out[t][i] = float64(x[t*w+i])
		}
	}
	return out
}
