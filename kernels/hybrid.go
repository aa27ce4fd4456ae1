package kernels

// This file owns the small scalar ops of the Gated DeltaNet hybrids
// (../shared/spec/architectures.md §1.8, §5.6) that the engine's CPU
// layers run and the device kernels (kernels/gpu gdn.cu, moe.cu,
// gated.cu) are checked against: ggml's sigmoid and softplus, the GDN's
// gates, its causal conv taps and L2 norm, and the MoE router's top-k.

import (
	"math"
	"slices"
)

// Sigmoid is ggml's: 1/(1 + expf(−x)) in f32 (§1.9).
func Sigmoid(x float32) float32 { return 1 / (1 + ExpfC(-x)) }

// Softplus is ggml's: x above 20, else logf(1 + expf(x)).
func Softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log(float64(1 + ExpfC(x))))
}

// GDNGates turns one token's β and α projections (H_v each) into the
// delta rule's β = sigmoid(b) and decay exp(g), g = softplus(a + dt)·A
// (A = ssm_a = −exp(A_log)), in place.
func GDNGates(beta, alpha, dt, a []float32) {
	for j := range beta {
		beta[j] = Sigmoid(beta[j])
		alpha[j] = ExpfC(Softplus(alpha[j]+dt[j]) * a[j])
	}
}

// ConvRow is the GDN's causal depthwise conv for token t of a pass: out[c]
// = Σ_k window[k][c]·taps[c·dc+k] over the window [state (dc−1 rows,
// oldest first), mixed] ending at token t, each product rounded, summed
// in k order. mixed and state rows are cd wide.
func ConvRow(out []float32, t int, mixed, state, taps []float32, cd, dc int) {
	for c := range out[:cd] {
		var sum float32
		for k, w := range taps[c*dc : (c+1)*dc] {
			src := t - (dc - 1) + k // row of mixed; < 0: of the state
			var x float32
			if src >= 0 {
				x = mixed[src*cd+c]
			} else {
				x = state[(src+dc-1)*cd+c]
			}
			sum += float32(x * w)
		}
		out[c] = sum
	}
}

// L2Norm divides x by max(‖x‖, eps) as ggml's l2_norm: the squares summed
// in float64, the root in f32, then one multiply by the reciprocal.
func L2Norm(x []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	scale := 1 / max(float32(math.Sqrt(float64(float32(sum)))), eps)
	for i := range x {
		x[i] *= scale
	}
}

// Route picks the len(sel) most probable experts of one token, in
// descending probability, and their weights p_i / max(Σ p_sel, 2⁻¹⁴).
// Ties go to the lower expert id: ggml's top_k sorts with a plain
// "greater" comparison (std::partial_sort, not stable), so its order among
// equal probabilities is unspecified; this choice is deterministic, and
// real-valued router logits practically never tie.
func Route(probs []float32, sel []int32, w []float32) {
	for i := range sel {
		best := int32(-1)
		for x, v := range probs {
			if (best < 0 || v > probs[best]) && !slices.Contains(sel[:i], int32(x)) {
				best = int32(x)
			}
		}
		sel[i] = best
	}
	var sum float64 // ggml's sum_rows: float64, rounded once
	for _, x := range sel {
		sum += float64(probs[x])
	}
	den := max(float32(sum), 6.103515625e-5)
	for i, x := range sel {
		w[i] = probs[x] / den
	}
}
