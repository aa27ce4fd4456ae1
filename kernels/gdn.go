package kernels

// This file owns the Gated DeltaNet recurrence (../shared/spec/architectures.md §5.6 step
// 8, ggml's GATED_DELTA_NET as llama.cpp runs it on the CPU for prefill and
// decode): for one value head, token by token,
//
//	S    ← exp(g)·S                       S is (d_k, d_v), row r = key dim r
//	u    = Sᵀk,  δ = (v − u)·β
//	S    ← S + k δᵀ
//	o    = scale · Sᵀq
//
// The "go" variant is the per-token recurrence in plain Go, the reference;
// "avx2" runs the same loops eight columns at a time, with the same
// products and sums in the same order (every sum over r accumulates one
// column in r order, no fused multiply-adds), so the two give the same bits.

// OpGDN is the op name of the Gated DeltaNet recurrence.
const OpGDN = "gdn"

// DeltaHead is one value head's recurrence over N tokens. Token t reads
// Q[t·QKStride:][:Dk], K[t·QKStride:][:Dk], V[t·VStride:][:Dv], Decay[t]
// (= exp(g_t)) and Beta[t], and writes Out[t·OutStride:][:Dv]. S is the
// head's state, updated in place; U is Dv floats of scratch.
type DeltaHead struct {
	S           []float32
	Dk, Dv, N   int
	Q, K        []float32
	QKStride    int
	V           []float32
	VStride     int
	Out         []float32
	OutStride   int
	Decay, Beta []float32
	Scale       float32
	U           []float32
}

// DeltaRule runs h with the set's gdn variant.
func (ks KernelSet) DeltaRule(h *DeltaHead) { ks.table().gdn(h) }

// deltaRuleGo is the reference. The explicit float32 conversions keep the
// compiler from fusing a product into the following sum, so every CPU
// rounds each product and each sum.
func deltaRuleGo(h *DeltaHead) {
	dk, dv := h.Dk, h.Dv
	S, u := h.S[:dk*dv], h.U[:dv]
	for t := range h.N {
		q, k := h.Q[t*h.QKStride:][:dk], h.K[t*h.QKStride:][:dk]
		v, o := h.V[t*h.VStride:][:dv], h.Out[t*h.OutStride:][:dv]
		e, b := h.Decay[t], h.Beta[t]
		clear(u)
		for r, kr := range k {
			row := S[r*dv : (r+1)*dv]
			for c, s := range row {
				s *= e
				row[c] = s
				u[c] = u[c] + float32(s*kr)
			}
		}
		for c := range u {
			u[c] = (v[c] - u[c]) * b // δ
		}
		clear(o)
		for r, kr := range k {
			row, qr := S[r*dv:(r+1)*dv], q[r]
			for c := range row {
				s := row[c] + float32(kr*u[c])
				row[c] = s
				o[c] = o[c] + float32(s*qr)
			}
		}
		for c := range o {
			o[c] *= h.Scale
		}
	}
}

// deltaRuleAVX2 is deltaRuleGo with the two passes over S in assembly
// (a head whose Dv is not a multiple of 8 runs deltaRuleGo).
func deltaRuleAVX2(h *DeltaHead) {
	dk, dv := h.Dk, h.Dv
	if dv%8 != 0 || dk < 1 {
		deltaRuleGo(h)
		return
	}
	S, u := h.S[:dk*dv], h.U[:dv]
	for t := range h.N {
		q, k := h.Q[t*h.QKStride:][:dk], h.K[t*h.QKStride:][:dk]
		v, o := h.V[t*h.VStride:][:dv], h.Out[t*h.OutStride:][:dv]
		gdnDecayDot(&S[0], &k[0], &u[0], h.Decay[t], dk, dv)
		b := h.Beta[t]
		for c := range u {
			u[c] = (v[c] - u[c]) * b
		}
		gdnUpdateDot(&S[0], &k[0], &q[0], &u[0], &o[0], dk, dv)
		for c := range o {
			o[c] *= h.Scale
		}
	}
}

// gdnVariants lists the gdn op's variants.
func gdnVariants() []variant {
	return []variant{
		{op: OpGDN, name: "go", prio: 10,
			desc: "the per-token gated delta rule in plain Go (the reference)",
			bind: func(t *kernelTable, _ CPUFeatures) { t.gdn = deltaRuleGo }},
		{op: OpGDN, name: "avx2", prio: 20, needs: needAVX2,
			desc: "the per-token gated delta rule, 8 state columns per instruction (AVX2): the same bits as go",
			bind: func(t *kernelTable, _ CPUFeatures) { t.gdn = deltaRuleAVX2 }},
	}
}
