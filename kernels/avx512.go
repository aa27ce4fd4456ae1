package kernels

// This file owns the float arithmetic of ggml's x86 AVX-512 CPU build, the
// build llama.cpp's reference figures come from, lane for lane:
//   - DotTiny: llamafile tinyBLAS with 16-float vectors (F32 and F16
//     mul_mat when the row length is a multiple of 16 and the batch has at
//     least two rows): lane l takes elements i ≡ l (mod 16) with fused
//     multiply-adds, then _mm512_reduce_add_ps (reduce16);
//   - DotVec: ggml_vec_dot_f16 / ggml_vec_dot_f32 (every other float
//     mul_mat): 64-element steps into four 16-lane accumulators, reduced
//     pairwise and then by reduce16, leftovers added one by one (in float64
//     for F16; for F32 in float32 as GCC vectorises that loop, see DotVec);
//   - ExpV and SiLUV: one lane of ggml_v_expf / ggml_v_silu for __m512, the
//     polynomial exp that softmax and SwiGLU run on 16-element groups;
//   - softmaxGo and swigluGo, the "go" variants of KernelSet.Softmax and
//     SwiGLU: ggml's soft_max and ggml_vec_swiglu_f32, 16-element groups
//     through ExpV/SiLUV and the C library's expf (ExpfC) on the tail;
//   - AttnScores and AttnValues: the K·Q and V·P products of -fa off
//     attention on F32/F16 caches (attention=go).

import "math"

// reduce16 adds sixteen lanes as GCC's _mm512_reduce_add_ps does: upper
// half onto lower half three times (8, 4, then lanes 2 apart), then the
// last pair.
func reduce16(v *[16]float32) float32 {
	var h [8]float32
	for i := range 8 {
		h[i] = v[i+8] + v[i]
	}
	q0, q1, q2, q3 := h[4]+h[0], h[5]+h[1], h[6]+h[2], h[7]+h[3]
	return (q0 + q2) + (q1 + q3)
}

// DotTiny is Σ w[i]·x[i] (len(x) ≥ len(w), len(w) a multiple of 16) in
// llamafile tinyBLAS's AVX-512 order. exact says every product w[i]·x[i]
// is exact in float32 (both operands F16 or BF16 values), so a float32 add
// rounds as the fused multiply-add does.
func DotTiny(w, x []float32, exact bool) float32 {
	x = x[:len(w)]
	var acc [16]float32
	for i := 0; i+16 <= len(w); i += 16 {
		ww, xx := (*[16]float32)(w[i:]), (*[16]float32)(x[i:])
		for l := range 16 {
			if exact {
				acc[l] += ww[l] * xx[l]
			} else {
				acc[l] = fma32(ww[l], xx[l], acc[l])
			}
		}
	}
	return reduce16(&acc)
}

// DotVec is Σ w[i]·x[i] (len(x) ≥ len(w)) as ggml_vec_dot_f16 (exact, both
// operands F16 values) or ggml_vec_dot_f32 (not exact) compute it on
// AVX-512.
func DotVec(w, x []float32, exact bool) float32 {
	n := len(w)
	x = x[:n]
	np := n &^ 63
	var acc [4][16]float32
	for i := 0; i < np; i += 64 {
		for j := range 4 {
			ww, xx := (*[16]float32)(w[i+16*j:]), (*[16]float32)(x[i+16*j:])
			for l := range 16 {
				if exact {
					acc[j][l] += ww[l] * xx[l]
				} else {
					acc[j][l] = fma32(ww[l], xx[l], acc[j][l])
				}
			}
		}
	}
	for l := range 16 {
		acc[0][l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l])
	}
	if exact {
		sum := float64(reduce16(&acc[0]))
		for i := np; i < n; i++ {
			sum += float64(w[i] * x[i])
		}
		return float32(sum)
	}
	// The leftover loop `sumf += x[i]*y[i]` as GCC vectorises it: products
	// rounded in 16- and then one 8-wide vector, added in order, and the
	// last (at most 7) fused one by one.
	sum := reduce16(&acc[0])
	i := np
	for ; n-i >= 16; i += 16 {
		for l := i; l < i+16; l++ {
			sum += float32(w[l] * x[l])
		}
	}
	if n-i >= 8 {
		for l := i; l < i+8; l++ {
			sum += float32(w[l] * x[l])
		}
		i += 8
	}
	for ; i < n; i++ {
		sum = fma32(w[i], x[i], sum)
	}
	return sum
}

// FMA32 is a·b+c rounded once to float32, what a C compiler emits for
// `a*b + c` once it contracts the expression into a fused multiply-add.
func FMA32(a, b, c float32) float32 { return fma32(a, b, c) }

// fnma32 is −(a·b)+c rounded once (VFNMADD).
func fnma32(a, b, c float32) float32 { return fma32(-a, b, c) }

// ExpV is one lane of ggml_v_expf for __m512: e^x = 2^n·p(b) with n the
// nearest integer to x·log2(e), b = x − n·ln2 in two fused steps, and a
// degree-5 polynomial; 0 or +inf when |n| > 192.
func ExpV(x float32) float32 {
	const r = 0x1.8p23
	z := fma32(x, 0x1.715476p+0, r)
	n := z - r
	if math.IsNaN(float64(n)) {
		return n
	}
	if math.Abs(float64(n)) > 192 {
		if n <= 0 {
			return 0
		}
		return float32(math.Inf(1))
	}
	b := fnma32(n, 0x1.7f7d1cp-20, fnma32(n, 0x1.62e4p-1, x))
	u := b * b
	j := fma32(fma32(fma32(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fma32(0x1.555e66p-3, b, 0x1.fffdb6p-2)),
		u, fma32(0x1.ffffecp-1, b, 1))
	// VSCALEFPS: j·2^n rounded once (the float64 product is exact).
	return float32(float64(j) * math.Ldexp(1, int(n)))
}

// SiLUV is one lane of ggml_v_silu: x / (1 + ExpV(0 − x)), each step in
// float32.
func SiLUV(x float32) float32 {
	return x / (1 + ExpV(0-x))
}

// softmaxGo is ggml's soft_max of one attention row with a scale and a
// causal mask: scores scaled in float32 (keys from valid on are masked to
// −inf), then ggml_vec_soft_max_f32 over the whole row — e^(x − max)
// sixteen at a time through ExpV, each group summed by reduce16 and added
// in float64, the tail through ExpfC — and the row multiplied by
// float32(1/sum). Which elements fall in the tail depends on len(s), so s
// is the full (padded) row. Masked entries are left for the caller.
func softmaxGo(s []float32, valid int, scale float32) {
	mx := float32(math.Inf(-1))
	for i := range s[:valid] {
		s[i] *= scale
		mx = max(mx, s[i])
	}
	// Masked keys' exp is 0 in every lane group and adds 0 to the sum, so
	// the groups past valid are skipped.
	n := len(s)
	var sum float64
	for i := 0; i < valid; i += 16 {
		if i+16 > n {
			for j := i; j < valid; j++ {
				s[j] = ExpfC(s[j] - mx)
				sum += float64(s[j])
			}
			break
		}
		g := (*[16]float32)(s[i:])
		for l := range g {
			if i+l < valid {
				g[l] = ExpV(g[l] - mx)
			} else {
				g[l] = 0
			}
		}
		sum += float64(reduce16(g))
	}
	inv := float32(1 / sum)
	for i := range s[:valid] {
		s[i] *= inv
	}
}

// swigluGo is ggml_vec_swiglu_f32 on one row: g[i] = silu(g[i])·u[i] with
// SiLUV on sixteen-element groups from g[0], x/(1+expf(−x)) on the tail.
func swigluGo(g, u []float32) {
	n := len(g)
	u = u[:n]
	i := 0
	for ; i+16 <= n; i += 16 {
		for l := i; l < i+16; l++ {
			g[l] = SiLUV(g[l]) * u[l]
		}
	}
	for ; i < n; i++ {
		g[i] = g[i] / (1 + ExpfC(-g[i])) * u[i]
	}
}

// AttnScores writes s[r*k.Rows + j] = K_j·q_r for the rows of q (k.Cols
// each) against the keys of k, an F32 or F16 cache matrix, as ggml's
// mul_mat(K, Q) does with -fa off on AVX-512: for F16, Q is rounded to F16
// and llamafile's tinyBLAS runs when the head dimension is a multiple of 16
// and the batch has nTok ≥ 2 tokens, ggml_vec_dot_f16 otherwise; for F32,
// Q is a permuted view llamafile does not take, so ggml_vec_dot_f32 always.
// buf is grown scratch; the (possibly new) buffer is returned.
func AttnScores(s []float32, k *Matrix, q []float32, rows, nTok int, buf []float32) []float32 {
	hd, nk := k.Cols, k.Rows
	buf = Grow(buf, nk*hd+hd)
	keys, qr := buf[:nk*hd], buf[nk*hd:]
	descOf(k.Type).dequant(k.Data[:nk*k.RowBytes()], keys)
	half := k.Type == F16
	tiny := half && hd%16 == 0 && nk%4 == 0 && nTok >= 2
	for r := range rows {
		copy(qr, q[r*hd:(r+1)*hd])
		if half {
			for i, v := range qr {
				qr[i] = RoundF16(v)
			}
		}
		out := s[r*nk : (r+1)*nk]
		for j := range nk {
			kj := keys[j*hd : (j+1)*hd]
			if tiny {
				out[j] = DotTiny(kj, qr, true)
			} else {
				out[j] = DotVec(kj, qr, half)
			}
		}
	}
	return buf
}

// AttnValues writes o[r*v.Rows + d] = V_d·p_r for the probability rows of
// p (v.Cols each) against v, the transposed F32 or F16 values (row d holds
// dimension d of every key), as ggml's mul_mat(V, KQ) on AVX-512: P rounded
// to F16 for F16 values, then llamafile's tinyBLAS when the key count is a
// multiple of 16, the head dimension a multiple of 4 and nTok ≥ 2,
// ggml_vec_dot otherwise.
func AttnValues(o []float32, v *Matrix, p []float32, rows, nTok int, buf []float32) []float32 {
	hd, nk := v.Rows, v.Cols
	buf = Grow(buf, hd*nk+nk)
	vals, pr := buf[:hd*nk], buf[hd*nk:]
	descOf(v.Type).dequant(v.Data[:hd*v.RowBytes()], vals)
	half := v.Type == F16
	tiny := nk%16 == 0 && hd%4 == 0 && nTok >= 2
	for r := range rows {
		copy(pr, p[r*nk:(r+1)*nk])
		if half {
			for i, x := range pr {
				pr[i] = RoundF16(x)
			}
		}
		for d := range hd {
			vd := vals[d*nk : (d+1)*nk]
			if tiny {
				o[r*hd+d] = DotTiny(vd, pr, half)
			} else {
				o[r*hd+d] = DotVec(vd, pr, half)
			}
		}
	}
	return buf
}
