package engine

// This file owns one pass of the device stack: the same block sequence as
// llama.go / qwen2.go / qwen3.go forward, launched on the device stream.

import (
	"plexbench/hip"
	"plexbench/kernels"
)

// forward runs p's blocks on the device: p.x (embedded on the CPU) goes
// up with the pass's RoPE table, the final residual rows come back into
// p.x.
func (st *deviceStack) forward(p *pass) error {
	hp := st.m.hp
	e, half := hp.nEmbd, hp.nRot/2
	s := st.s
	if err := s.Upload(st.x, 0, kernels.BytesOf(p.x[:p.n*e])); err != nil {
		return errDevice("upload", err)
	}
	if half > 0 {
		if err := s.Upload(st.cos, 0, kernels.BytesOf(p.cos[:p.n*half])); err != nil {
			return errDevice("upload", err)
		}
		if err := s.Upload(st.sin, 0, kernels.BytesOf(p.sin[:p.n*half])); err != nil {
			return errDevice("upload", err)
		}
	}
	for l := range st.blocks {
		if p.pos0 == 0 {
			p.attn.fp.heads += int64(hp.nHead[l]) // for the block counts, as the CPU's attention counts them
		}
		if err := st.block(p, l); err != nil {
			return err
		}
	}
	if err := s.Download(kernels.BytesOf(p.x[:p.n*e]), st.x, 0); err != nil {
		return errDevice("download", err)
	}
	if err := s.Sync(); err != nil {
		return errDevice("sync", err)
	}
	return nil
}

// block runs block l: attention, then the FFN, each added to x.
func (st *deviceStack) block(p *pass, l int) error {
	b, hp, n := &st.blocks[l], st.m.hp, p.n
	heads, kv, hd, e := hp.nHead[l], hp.nHeadKV[l], hp.headDim, hp.nEmbd
	steps := []func() error{
		func() error { return st.rmsNorm(st.xn, st.x, b.attnNorm, n, e) },
		func() error { return st.linear(st.q, b.wq, b.bq, st.xn, n) },
		func() error { return st.linear(st.k, b.wk, b.bk, st.xn, n) },
		func() error { return st.linear(st.v, b.wv, b.bv, st.xn, n) },
		func() error { return st.rmsNorm(st.q, st.q, b.qNorm, n*heads, hd) },
		func() error { return st.rmsNorm(st.k, st.k, b.kNorm, n*kv, hd) },
		func() error { return st.rope(st.q, n, heads) },
		func() error { return st.rope(st.k, n, kv) },
		func() error { return st.store(st.k, b.k, n, kv, p.pos0) },
		func() error { return st.store(st.v, b.v, n, kv, p.pos0) },
		func() error { return st.attention(b, n, heads, kv, p.pos0) },
		func() error { return st.linear(st.tmp, b.wo, b.bo, st.att, n) },
		func() error { return st.add(st.x, st.tmp, n*e) },
		func() error { return st.rmsNorm(st.xn, st.x, b.ffnNorm, n, e) },
		func() error { return st.linear(st.gate, b.gate, b.bGate, st.xn, n) },
		func() error { return st.linear(st.up, b.up, b.bUp, st.xn, n) },
		func() error { return st.swiglu(n * b.gate.rows) },
		func() error { return st.linear(st.tmp, b.down, b.bDown, st.gate, n) },
		func() error { return st.add(st.x, st.tmp, n*e) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// launch queues kernel name; a failure names it.
func (st *deviceStack) launch(name string, grid, block hip.Dim3, shared int) error {
	if err := st.s.Launch(st.fn[name], grid, block, shared, &st.args); err != nil {
		return errDevice(name, err)
	}
	return nil
}

// rmsNorm normalizes rows rows of n floats of in into out with w (nothing
// for an absent w: the optional head norms).
func (st *deviceStack) rmsNorm(out, in, w hip.Buffer, rows, n int) error {
	if w.Len() == 0 {
		return nil
	}
	st.args.Reset()
	st.args.Ptr(in, 0).Ptr(w, 0).Ptr(out, 0).I32(int32(n)).F32(st.m.hp.eps)
	return st.launch("rms_norm_f32", hip.Dim3{X: rows}, hip.Dim3{X: 256}, 0)
}

// linear computes out = W·in (+ bias) for n rows of in.
func (st *deviceStack) linear(out hip.Buffer, w devMatrix, bias, in hip.Buffer, n int) error {
	a := &st.args
	switch w.typ {
	case kernels.Q8_0:
		nb := n * w.cols / 32
		a.Reset()
		a.Ptr(in, 0).Ptr(st.xq, 0).U64(uint64(nb))
		if err := st.launch("quantize_q8_0", hip.Dim3{X: (nb + 255) / 256}, hip.Dim3{X: 256}, 0); err != nil {
			return err
		}
		a.Reset()
		a.Ptr(w.b, 0).Ptr(st.xq, 0).Ptr(out, 0).I32(int32(w.rows)).I32(int32(w.cols)).I32(int32(n))
		if err := st.launch("mm_q8_0", hip.Dim3{X: w.rows, Y: n}, hip.Dim3{X: st.d.Warp}, 0); err != nil {
			return err
		}
	default:
		a.Reset()
		a.Ptr(w.b, 0).Ptr(in, 0).Ptr(out, 0).I32(int32(w.rows)).I32(int32(w.cols)).I32(int32(n))
		name := "matmul_f32"
		if w.typ == kernels.F16 {
			name = "matmul_f16"
		}
		if err := st.launch(name, hip.Dim3{X: (w.rows + 15) / 16, Y: (n + 15) / 16}, hip.Dim3{X: 16, Y: 16}, 0); err != nil {
			return err
		}
	}
	if bias.Len() == 0 {
		return nil
	}
	a.Reset()
	a.Ptr(out, 0).Ptr(bias, 0).I32(int32(w.rows))
	return st.launch("add_rows_f32", hip.Dim3{X: (w.rows + 255) / 256, Y: n}, hip.Dim3{X: 256}, 0)
}

// rope rotates the first n_rot dims of each of heads heads of n tokens.
func (st *deviceStack) rope(x hip.Buffer, n, heads int) error {
	half := st.m.hp.nRot / 2
	if half == 0 {
		return nil
	}
	neox := int32(0)
	if st.mode == ropeNeox {
		neox = 1
	}
	st.args.Reset()
	st.args.Ptr(x, 0).Ptr(st.cos, 0).Ptr(st.sin, 0).I32(int32(heads)).I32(int32(st.m.hp.headDim)).I32(int32(half)).I32(neox)
	return st.launch("rope_f32", hip.Dim3{X: n, Y: heads}, hip.Dim3{X: min(half, 256)}, 0)
}

// store writes n tokens' rows of kv heads into cache at pos0.
func (st *deviceStack) store(src, cache hip.Buffer, n, kv, pos0 int) error {
	hd, capacity := st.m.hp.headDim, st.m.kv.cap
	name := "kv_store_f32"
	if st.kvF16 {
		name = "kv_store_f16"
	}
	st.args.Reset()
	st.args.Ptr(src, 0).Ptr(cache, 0).I32(int32(kv)).I32(int32(hd)).I32(int32(capacity)).I32(int32(pos0))
	return st.launch(name, hip.Dim3{X: (hd + 255) / 256, Y: kv, Z: n}, hip.Dim3{X: 256}, 0)
}

// attention attends n queries of heads heads over the cached keys.
func (st *deviceStack) attention(b *devBlock, n, heads, kv, pos0 int) error {
	hd := st.m.hp.headDim
	name := "attn_f32"
	if st.kvF16 {
		name = "attn_f16"
	}
	st.args.Reset()
	st.args.Ptr(st.q, 0).Ptr(b.k, 0).Ptr(b.v, 0).Ptr(st.att, 0).I32(int32(heads)).I32(int32(kv)).I32(int32(hd)).
		I32(int32(st.m.kv.cap)).I32(int32(pos0)).F32(attnScale(hd))
	return st.launch(name, hip.Dim3{X: n, Y: heads}, hip.Dim3{X: 128}, 4*(pos0+n))
}

// add adds n floats of y into x.
func (st *deviceStack) add(x, y hip.Buffer, n int) error {
	st.args.Reset()
	st.args.Ptr(x, 0).Ptr(y, 0).U64(uint64(n))
	return st.launch("add_f32", hip.Dim3{X: (n + 255) / 256}, hip.Dim3{X: 256}, 0)
}

// swiglu sets gate = silu(gate)·up over n floats.
func (st *deviceStack) swiglu(n int) error {
	st.args.Reset()
	st.args.Ptr(st.gate, 0).Ptr(st.up, 0).U64(uint64(n))
	return st.launch("swiglu_f32", hip.Dim3{X: (n + 255) / 256}, hip.Dim3{X: 256}, 0)
}
