package engine

// This file owns the mixture-of-experts FFN on the device (moe.go's
// forward, ../shared/spec/architectures.md §1.8): the router's product and
// moe_route's softmax and top k run there; the chosen experts (tokens·k
// int32s) come back so that the host groups the assignments by expert as
// the CPU does and launches each chosen expert's SwiGLU once over its
// gathered rows (the stack's linear, any weight type it has); moe_combine
// sums the weighted rows in slot order, and the shared expert is added
// behind its sigmoid gate.

import (
	"fmt"

	"plexbench/hip"
	"plexbench/kernels"
	"plexbench/kernels/gpu"
)

// devMoEScratch is the MoE pass buffers (moeScratch's on the device) and
// the host's grouping of the pass's assignments.
type devMoEScratch struct {
	probs      hip.Buffer // (ub, E) router logits, then probabilities
	sel, w     hip.Buffer // (ub, k) chosen experts, descending; their weights
	rows, slot hip.Buffer // (ub·k) assignment (token·k + slot) of each grouped row; grouped row of each assignment
	x, y       hip.Buffer // (ub·k, n_embd) the grouped input rows; the experts' output rows (then the shared expert's)
	g, u       hip.Buffer // (ub·k, ff_exp) the experts' gate and up
	gs         hip.Buffer // (ub) the shared expert's gate logits

	hostSel, hostRows, hostSlot []int32 // (ub·k)
	start                       []int   // (E+1) expert e's grouped rows are [start[e], start[e+1])
	fill                        []int   // (E) the next grouped row of each expert
}

func (s *devMoEScratch) alloc(st *deviceStack, hp *hparams) error {
	ms := hp.moe
	if ms.nExpert == 0 {
		return nil
	}
	ub, e, nk := st.m.ub, hp.nEmbd, st.m.ub*ms.nUsed
	for _, b := range []struct {
		b *hip.Buffer
		n int
	}{{&s.probs, ub * ms.nExpert}, {&s.sel, nk}, {&s.w, nk}, {&s.rows, nk}, {&s.slot, nk},
		{&s.x, nk * e}, {&s.y, nk * e}, {&s.g, nk * ms.ffExp}, {&s.u, nk * ms.ffExp}, {&s.gs, ub}} {
		var err error
		if *b.b, err = st.alloc(4 * b.n); err != nil {
			return err
		}
	}
	s.hostSel, s.hostRows, s.hostSlot = make([]int32, nk), make([]int32, nk), make([]int32, nk)
	s.start, s.fill = make([]int, ms.nExpert+1), make([]int, ms.nExpert)
	return nil
}

// moeFFN writes the MoE FFN of n rows of in to out.
func (st *deviceStack) moeFFN(out, in hip.Buffer, f *moeFFN, n int) {
	hp, s := st.m.hp, &st.hyb.moe
	e, E, k := hp.nEmbd, hp.moe.nExpert, hp.moe.nUsed
	if E > gpu.MoERouteMaxExperts && st.err == nil {
		st.err = fmt.Errorf("device moe_route: %d experts, over its %d", E, gpu.MoERouteMaxExperts)
	}
	st.linear(s.probs, st.mat(f.router), hip.Buffer{}, in, n)
	st.args.Reset()
	st.args.Ptr(s.probs, 0).Ptr(s.sel, 0).Ptr(s.w, 0).I32(int32(E)).I32(int32(k)).I32(int32(n))
	st.launchGeom("moe_route", gpu.MoERoute(n))
	if !s.group(st, n, E, k) {
		return
	}
	st.args.Reset()
	st.args.Ptr(in, 0).Ptr(s.rows, 0).Ptr(s.x, 0).I32(int32(e)).I32(int32(k))
	st.launch("moe_gather", hip.Dim3{X: (e + 255) / 256, Y: n * k}, hip.Dim3{X: 256}, 0)
	ff := hp.moe.ffExp
	for x := range E {
		lo, m := s.start[x], s.start[x+1]-s.start[x]
		if m == 0 {
			continue
		}
		X, Y := s.x.View(4*lo*e, 4*m*e), s.y.View(4*lo*e, 4*m*e)
		G, U := s.g.View(4*lo*ff, 4*m*ff), s.u.View(4*lo*ff, 4*m*ff)
		st.linear(G, st.mat(f.gate[x]), hip.Buffer{}, X, m)
		st.linear(U, st.mat(f.up[x]), hip.Buffer{}, X, m)
		st.swiglu(G, U, m*ff)
		st.linear(Y, st.mat(f.down[x]), hip.Buffer{}, G, m)
	}
	st.args.Reset()
	st.args.Ptr(s.y, 0).Ptr(s.slot, 0).Ptr(s.w, 0).Ptr(out, 0).I32(int32(e)).I32(int32(k))
	st.launch("moe_combine", hip.Dim3{X: (e + 255) / 256, Y: n}, hip.Dim3{X: 256}, 0)
	if f.shGateInp == nil {
		return
	}
	// The shared expert: out += sigmoid(gate_inp_shexp·in)·FFN_shexp(in),
	// its rows in y (free once combined).
	ys := s.y.View(0, 4*n*e)
	st.linear(s.gs, st.mat(f.shGateInp), hip.Buffer{}, in, n)
	st.ffn(ys, in, &denseFFN{gate: f.shGate, up: f.shUp, down: f.shDown}, n)
	st.args.Reset()
	st.args.Ptr(out, 0).Ptr(ys, 0).Ptr(s.gs, 0).I32(int32(e))
	st.launch("moe_shared", hip.Dim3{X: (e + 255) / 256, Y: n}, hip.Dim3{X: 256}, 0)
}

// group brings the chosen experts back and groups the (token, slot)
// assignments by expert as moe.go does, uploading each grouped row's
// assignment and each assignment's grouped row. It reports whether the
// pass goes on.
func (s *devMoEScratch) group(st *deviceStack, n, E, k int) bool {
	if st.err != nil {
		return false
	}
	sel := s.hostSel[:n*k]
	if err := st.s.Download(kernels.BytesOf(sel), s.sel, 0); err != nil {
		st.err = errDevice("download of the chosen experts", err)
		return false
	}
	start := s.start
	clear(start)
	for _, x := range sel {
		if x < 0 || int(x) >= E {
			st.err = fmt.Errorf("device moe_route: expert %d chosen of %d", x, E)
			return false
		}
		start[x+1]++
	}
	for x := range E {
		start[x+1] += start[x]
	}
	fill := s.fill
	copy(fill, start[:E])
	for i, x := range sel {
		s.hostRows[fill[x]], s.hostSlot[i] = int32(i), int32(fill[x])
		fill[x]++
	}
	st.send("expert rows", s.rows, kernels.BytesOf(s.hostRows[:n*k]))
	st.send("expert slots", s.slot, kernels.BytesOf(s.hostSlot[:n*k]))
	return st.err == nil
}
