package kernels

// This file owns FlashPrefillRef, the float64 reference of FlashPrefill V2
// (../shared/spec/flashprefill.md §2–5) in plain loops: what the block selection and the
// engine's sparse attention are checked against. Single-threaded and
// allocating; for tests.

import "math"

// FlashPrefillRef runs FlashPrefill V2 prefill attention over an L-token
// sequence in float64: q is (L, nh, d), k and v are (L, nkv, d), the
// layout of the engine's pass buffers (token-major, heads concatenated).
// It returns the output (L, nh, d), the selection sel[(h·M + qb)·M + kb]
// (M = f.Blocks(L)) and the number of active (qb, kb, head) blocks.
// Scores use τ = 1/sqrt(d); the attention uses scale.
func FlashPrefillRef(f FlashPrefill, q, k, v []float32, L, nh, nkv, d int, scale float64) (out []float64, sel []bool, kept int) {
	b, m := f.BlockSize, f.Blocks(L)
	grp := nh / nkv
	tau := FlashPrefillScale(d)
	out = make([]float64, L*nh*d)
	sel = make([]bool, nh*m*m)
	dot := func(x []float32, y []float64) float64 {
		s := 0.0
		for i := range d {
			s += float64(x[i]) * y[i]
		}
		return s
	}
	key := make([]float64, d)
	pooled := make([]float64, m*d)
	a := make([]float64, m)
	order := make([]int32, m)
	for h := range nh {
		g := h / grp
		// Step 1: the mean key of every block, over the keys it has.
		clear(pooled)
		for kb := range m {
			k0, k1 := kb*b, min(kb*b+b, L)
			for t := k0; t < k1; t++ {
				for i := range d {
					pooled[kb*d+i] += float64(k[(t*nkv+g)*d+i])
				}
			}
			for i := range d {
				pooled[kb*d+i] /= float64(k1 - k0)
			}
		}
		for qb := range m {
			// Step 2: s(q, kb) for the valid queries, re-based on the row max.
			mx := math.Inf(-1)
			for kb := 0; kb <= qb; kb++ {
				for t := max(kb*b+b-1, qb*b); t < min(qb*b+b, L); t++ {
					mx = max(mx, tau*dot(q[(t*nh+h)*d:], pooled[kb*d:]))
				}
			}
			for kb := 0; kb <= qb; kb++ {
				a[kb] = 0
				for t := max(kb*b+b-1, qb*b); t < min(qb*b+b, L); t++ {
					a[kb] += math.Exp(tau*dot(q[(t*nh+h)*d:], pooled[kb*d:]) - mx)
				}
			}
			// Step 3.
			row := sel[(h*m+qb)*m:][:m]
			kept += selectRow(f, a, qb, m, row, order)
			// Step 4: exact softmax over the active blocks' keys ≤ t.
			for t := qb * b; t < min(qb*b+b, L); t++ {
				qt := q[(t*nh+h)*d:][:d]
				best := math.Inf(-1)
				for j := 0; j <= t; j++ {
					if row[j/b] {
						for i := range d {
							key[i] = float64(k[(j*nkv+g)*d+i])
						}
						best = max(best, scale*dot(qt, key))
					}
				}
				o := out[(t*nh+h)*d:][:d]
				sum := 0.0
				for j := 0; j <= t; j++ {
					if !row[j/b] {
						continue
					}
					for i := range d {
						key[i] = float64(k[(j*nkv+g)*d+i])
					}
					e := math.Exp(scale*dot(qt, key) - best)
					sum += e
					for i := range d {
						o[i] += e * float64(v[(j*nkv+g)*d+i])
					}
				}
				for i := range o {
					o[i] /= sum
				}
			}
		}
	}
	return out, sel, kept
}
