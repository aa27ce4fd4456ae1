package engine

// This file owns the mixture-of-experts FFN of qwen35moe and qwen3next
// (../shared/spec/architectures.md §1.8): softmax router, top-k experts
// with renormalised weights, each expert's SwiGLU, and the shared expert
// behind a sigmoid gate. The pass's tokens are grouped by expert, so each
// selected expert's weights are read once per pass, not once per token.

import "plexbench/kernels"

// moeFFN is one layer's experts. E experts of width ff_exp; the shared
// expert has width ff_sh.
type moeFFN struct {
	router   *kernels.Matrix   // (n_embd, E) ffn_gate_inp
	gate, up []*kernels.Matrix // E × (n_embd, ff_exp) ffn_gate_exps, ffn_up_exps (or ffn_gate_up_exps split)
	down     []*kernels.Matrix // E × (ff_exp, n_embd) ffn_down_exps
	// The shared expert, when the file has one.
	shGate, shUp *kernels.Matrix // (n_embd, ff_sh)
	shDown       *kernels.Matrix // (ff_sh, n_embd)
	shGateInp    *kernels.Matrix // (n_embd, 1) ffn_gate_inp_shexp: one gate logit per token
}

func loadMoE(ld *loader, hp *hparams, pre string) *moeFFN {
	e, ms := hp.nEmbd, hp.moe
	f := &moeFFN{
		router: ld.matrix(pre+"ffn_gate_inp.weight", e, ms.nExpert),
		down:   ld.experts(pre+"ffn_down_exps.weight", ms.ffExp, e, ms.nExpert),
	}
	if _, fused := ld.f.Tensor(pre + "ffn_gate_up_exps.weight"); fused {
		// Rows [0, ff_exp) of each expert are the gate, [ff_exp, 2·ff_exp) the up.
		gu := ld.experts(pre+"ffn_gate_up_exps.weight", e, 2*ms.ffExp, ms.nExpert)
		for _, w := range gu {
			parts := splitRows(w, ms.ffExp, ms.ffExp)
			f.gate, f.up = append(f.gate, parts[0]), append(f.up, parts[1])
		}
	} else {
		f.gate = ld.experts(pre+"ffn_gate_exps.weight", e, ms.ffExp, ms.nExpert)
		f.up = ld.experts(pre+"ffn_up_exps.weight", e, ms.ffExp, ms.nExpert)
	}
	if _, shared := ld.f.Tensor(pre + "ffn_up_shexp.weight"); shared {
		f.shUp = ld.matrix(pre+"ffn_up_shexp.weight", e, ms.ffShared)
		f.shGate = ld.matrix(pre+"ffn_gate_shexp.weight", e, ms.ffShared)
		f.shDown = ld.matrix(pre+"ffn_down_shexp.weight", ms.ffShared, e)
		f.shGateInp = ld.matrix(pre+"ffn_gate_inp_shexp.weight", e, 1)
	}
	return f
}

// moeScratch holds the MoE pass buffers (grown on first use).
type moeScratch struct {
	probs  []float32 // (ub, E) router softmax
	sel    []int32   // (ub, k) selected experts, descending probability
	w      []float32 // (ub, k) their renormalised weights
	fill   []int32   // (E) next free row of each expert's group
	rows   []int32   // (ub·k) (token·k + slot) of each assignment, grouped by expert
	start  []int     // (E+1) expert e's assignments are rows[start[e]:start[e+1]]
	x      []float32 // (ub, n_embd) one expert's gathered input rows
	g, u   []float32 // (ub, ff) one expert's gate and up
	y      []float32 // (ub, n_embd) one expert's output rows
	slots  []float32 // (ub·k, n_embd) every assignment's weighted output
	shGate []float32 // (ub) the shared expert's gate logits
}

// forward writes the MoE FFN of the pass's normed rows xn to out.
func (f *moeFFN) forward(p *pass, out, xn []float32, s *moeScratch) {
	hp, ks := p.m.hp, p.m.opt.Kernels
	n, e, E, k := p.n, hp.nEmbd, hp.moe.nExpert, hp.moe.nUsed
	s.grow(p)

	// Router: softmax over every expert, then the top k.
	probs := s.probs[:n*E]
	p.linear(probs, f.router, nil, xn)
	for t := range n {
		row := probs[t*E : (t+1)*E]
		ks.Softmax(row, E, 1)
		kernels.Route(row, s.sel[t*k:(t+1)*k], s.w[t*k:(t+1)*k])
	}

	// Group the (token, slot) assignments by expert.
	start := s.start[:E+1]
	clear(start)
	for _, x := range s.sel[:n*k] {
		start[x+1]++
	}
	for x := range E {
		start[x+1] += start[x]
	}
	fill := s.fill[:E]
	for x := range E {
		fill[x] = int32(start[x])
	}
	for i, x := range s.sel[:n*k] {
		s.rows[fill[x]] = int32(i)
		fill[x]++
	}

	// Each expert once over its tokens; its weighted rows go to their slots.
	for x := range E {
		rows := s.rows[start[x]:start[x+1]]
		if len(rows) == 0 {
			continue
		}
		m := len(rows)
		X, ff := s.x[:m*e], f.gate[x].Rows
		for i, r := range rows {
			t := int(r) / k
			copy(X[i*e:(i+1)*e], xn[t*e:(t+1)*e])
		}
		G, U, Y := s.g[:m*ff], s.u[:m*ff], s.y[:m*e]
		p.matmul(G, f.gate[x], X, m)
		p.matmul(U, f.up[x], X, m)
		for i := range m {
			ks.SwiGLU(G[i*ff:(i+1)*ff], U[i*ff:(i+1)*ff])
		}
		p.matmul(Y, f.down[x], G, m)
		for i, r := range rows {
			w, dst := s.w[r], s.slots[int(r)*e:(int(r)+1)*e]
			for c, v := range Y[i*e : (i+1)*e] {
				dst[c] = v * w
			}
		}
	}
	// y = Σ_i w_i·y_i, summed in slot order as ggml adds the views.
	for t := range n {
		o := out[t*e : (t+1)*e]
		copy(o, s.slots[t*k*e:(t*k+1)*e])
		for i := 1; i < k; i++ {
			for c, v := range s.slots[(t*k+i)*e : (t*k+i+1)*e] {
				o[c] += v
			}
		}
	}

	if f.shUp == nil {
		return
	}
	// The shared expert: out += sigmoid(gate_inp_shexp·xn) · FFN_shexp(xn).
	gs := s.shGate[:n]
	p.linear(gs, f.shGateInp, nil, xn)
	ys := s.y[:n*e]
	p.swiglu(ys, xn, f.shGate, nil, f.shUp, nil, f.shDown, nil)
	for t := range n {
		g := kernels.Sigmoid(gs[t])
		o := out[t*e : (t+1)*e]
		for c, v := range ys[t*e : (t+1)*e] {
			o[c] += v * g
		}
	}
}

func (s *moeScratch) grow(p *pass) {
	hp, ub := p.m.hp, p.m.ub
	e, E, k := hp.nEmbd, hp.moe.nExpert, hp.moe.nUsed
	if len(s.probs) >= ub*E {
		return
	}
	ff := max(hp.moe.ffExp, hp.moe.ffShared)
	s.probs = make([]float32, ub*E)
	s.sel = make([]int32, ub*k)
	s.w = make([]float32, ub*k)
	s.fill = make([]int32, E)
	s.rows = make([]int32, ub*k)
	s.start = make([]int, E+1)
	s.x = make([]float32, ub*e)
	s.g = make([]float32, ub*ff)
	s.u = make([]float32, ub*ff)
	s.y = make([]float32, ub*e)
	s.slots = make([]float32, ub*k*e)
	s.shGate = make([]float32, ub)
}
