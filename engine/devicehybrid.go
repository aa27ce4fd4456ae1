package engine

// This file owns what the Gated DeltaNet hybrids (qwen35, qwen35moe,
// qwen3next; ../shared/spec/architectures.md §5) run on the device beyond
// the dense block's ops: the gated attention's query split and output
// gate (gated.cu) here, the GDN layer (devicehybrid_gdn.go) and the MoE
// FFN (devicehybrid_moe.go), with the pass buffers only they use. Their
// layer sequence is qwen35.go's forward. IMROPE is rope.cu's NEOX over the
// pass's table (ropeTable: its still pairs rotate by 0).

import (
	"plexbench/hip"
	"plexbench/kernels"
)

// opKernels are the kernels each op beyond the dense block's launches,
// by file (stackWalk.extra names the ops).
var opKernels = map[string]map[string][]string{
	"gdn":       {"gdn.cu": {"gdn_gates", "gdn_split_ba", "gdn_conv", "gdn_conv_state", "gdn_l2norm", "gdn_delta"}},
	"attn_gate": {"gated.cu": {"gated_split", "gated_mul"}},
	"moe":       {"moe.cu": {"moe_route", "moe_gather", "moe_combine", "moe_shared"}},
}

// devHybridScratch is the pass buffers of the hybrids' ops, allocated
// for the ops a stack runs.
type devHybridScratch struct {
	qg   hip.Buffer // (ub, 2·heads·hd) Wq's query and gate rows
	gate hip.Buffer // (ub, heads·hd) the attention output gate
	g    devGDNScratch
	moe  devMoEScratch
}

func (h *devHybridScratch) alloc(st *deviceStack, w *stackWalk) error {
	hp, ub := st.m.hp, st.m.ub
	if q := w.gatedQ * hp.headDim; q > 0 {
		var err error
		if h.qg, err = st.alloc(4 * ub * 2 * q); err != nil {
			return err
		}
		if h.gate, err = st.alloc(4 * ub * q); err != nil {
			return err
		}
	}
	if len(w.gdnLayers) > 0 {
		if err := h.g.alloc(st, hp.ssm); err != nil {
			return err
		}
	}
	if w.hasMoE {
		return h.moe.alloc(st, hp)
	}
	return nil
}

// gatedQuery writes Wq·xn's queries to st.q and its gates aside (§5.5).
func (st *deviceStack) gatedQuery(w *kernels.Matrix, heads int) {
	hd, n, h := st.m.hp.headDim, st.p.n, &st.hyb
	nq := n * heads * hd
	st.linear(h.qg, st.mat(w), hip.Buffer{}, st.xn, n)
	st.args.Reset()
	st.args.Ptr(h.qg, 0).Ptr(st.q, 0).Ptr(h.gate, 0).I32(int32(hd)).U64(uint64(nq))
	st.launch("gated_split", hip.Dim3{X: (nq + 255) / 256}, hip.Dim3{X: 256}, 0)
}

// outputGate multiplies the attention output by sigmoid(gate).
func (st *deviceStack) outputGate(heads int) {
	nq := st.p.n * heads * st.m.hp.headDim
	st.args.Reset()
	st.args.Ptr(st.att, 0).Ptr(st.hyb.gate, 0).U64(uint64(nq))
	st.launch("gated_mul", hip.Dim3{X: (nq + 255) / 256}, hip.Dim3{X: 256}, 0)
}
