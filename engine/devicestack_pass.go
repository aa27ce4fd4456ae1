package engine

// This file owns one pass of the device stack: the transfers around it,
// the architecture's own forward over devOps (the ops on the device
// stream), and the launches of the dense block's kernels.

import (
	"plexbench/hip"
	"plexbench/kernels"
	"plexbench/kernels/gpu"
)

// forward runs p's pass on the device: the tokens (or, for an embedding
// type with no device lookup, the rows the CPU embedded) and the pass's
// RoPE table go up, the embedding, the blocks and the output norm run there,
// and the output-normed rows come back into p.hidden (p.normed). A failed
// launch stops the pass; the first failure is its error.
func (st *deviceStack) forward(p *pass) error {
	hp := st.m.hp
	e, half := hp.nEmbd, hp.nRot/2
	s := st.s
	st.err = nil
	st.traffic.passes.Add(1)
	if st.embd.b.Len() > 0 {
		st.send("tokens", st.tok, kernels.BytesOf(p.tokens))
		st.embed(p.n)
	} else {
		p.embed()
		st.send("embedded rows", st.x, kernels.BytesOf(p.x[:p.n*e]))
	}
	if half > 0 {
		st.send("rope table", st.cos, kernels.BytesOf(p.cos[:p.n*half]))
		st.send("rope table", st.sin, kernels.BytesOf(p.sin[:p.n*half]))
	}
	if p.pos0 == 0 {
		st.resetStates() // a new sequence: the GDN layers start from zero
	}
	st.startKept(p)
	st.p = p
	st.m.layers.forward(devOps{st})
	st.p = nil
	st.addKept(p)
	st.rmsNorm(st.xn, st.x, st.outNorm, p.n, e)
	if st.err != nil {
		return st.err
	}
	if err := s.Download(kernels.BytesOf(p.hidden[:p.n*e]), st.xn, 0); err != nil {
		return errDevice("download", err)
	}
	if err := s.Sync(); err != nil {
		return errDevice("sync", err)
	}
	p.normed = true
	return nil
}

// send uploads b into dst unless the pass has failed already.
func (st *deviceStack) send(what string, dst hip.Buffer, b []byte) {
	if st.err != nil {
		return
	}
	if err := st.s.Upload(dst, 0, b); err != nil {
		st.err = errDevice("upload of the "+what, err)
	}
}

// resetStates zeroes every GDN layer's conv and SSM state, as
// recurrentState.reset does on the CPU.
func (st *deviceStack) resetStates() {
	for l := range st.conv {
		for _, b := range []hip.Buffer{st.conv[l], st.ssm[l]} {
			if b.Len() == 0 || st.err != nil {
				continue
			}
			if err := st.s.Memset(b, 0, b.Len(), 0); err != nil {
				st.err = errDevice("reset of the recurrent state", err)
			}
		}
	}
}

// devOps runs the ops (ops.go) on the device stack's buffers for its pass
// st.p: the same forward as the CPU's, launched on the device stream.
type devOps struct{ st *deviceStack }

func (o devOps) buf(a act) hip.Buffer {
	st := o.st
	switch a {
	case actX:
		return st.x
	case actXN:
		return st.xn
	case actOut:
		return st.tmp
	case actQ:
		return st.q
	case actK:
		return st.k
	case actV:
		return st.v
	case actAtt:
		return st.att
	}
	panic("engine: unknown activation")
}

func (o devOps) rmsNorm(out, in act, w []float32) {
	o.st.rmsNorm(o.buf(out), o.buf(in), o.st.vec(w), o.st.p.n, o.st.m.hp.nEmbd)
}

func (o devOps) headNorm(x act, heads int, w []float32) {
	o.st.rmsNorm(o.buf(x), o.buf(x), o.st.vec(w), o.st.p.n*heads, o.st.m.hp.headDim)
}

func (o devOps) linear(out act, w *kernels.Matrix, b []float32, in act) {
	o.st.linear(o.buf(out), o.st.mat(w), o.st.vec(b), o.buf(in), o.st.p.n)
}

func (o devOps) gatedQuery(w *kernels.Matrix, heads int) { o.st.gatedQuery(w, heads) }

func (o devOps) rope(x act, heads int) { o.st.rope(o.buf(x), o.st.p.n, heads) }

// attention stores the pass's keys and values in layer l's cache and
// attends over it.
func (o devOps) attention(l, heads, kv int) {
	st, p := o.st, o.st.p
	if p.pos0 == 0 {
		p.attn.fp.heads += int64(heads) // for the block counts, as the CPU's attention counts them
	}
	st.store(st.k, st.kc[l], p.n, kv, p.pos0)
	st.store(st.v, st.vc[l], p.n, kv, p.pos0)
	st.attention(p, st.kc[l], st.vc[l], p.n, heads, kv)
}

func (o devOps) outputGate(heads int) { o.st.outputGate(heads) }

func (o devOps) add(x, y act) { o.st.add(o.buf(x), o.buf(y), o.st.p.n*o.st.m.hp.nEmbd) }

func (o devOps) swiglu(out, in act, f *denseFFN) { o.st.ffn(o.buf(out), o.buf(in), f, o.st.p.n) }

func (o devOps) moe(out, in act, f *moeFFN) { o.st.moeFFN(o.buf(out), o.buf(in), f, o.st.p.n) }

func (o devOps) gdn(l int, g *gdnLayer) { o.st.gdnLayer(l, g, o.st.p.n) }

// ffn writes the SwiGLU FFN of n rows of in to out, through st.gate and
// st.up.
func (st *deviceStack) ffn(out, in hip.Buffer, f *denseFFN, n int) {
	gate := st.mat(f.gate)
	st.linear(st.gate, gate, st.vec(f.bGate), in, n)
	st.linear(st.up, st.mat(f.up), st.vec(f.bUp), in, n)
	st.swiglu(st.gate, st.up, n*gate.rows)
	st.linear(out, st.mat(f.down), st.vec(f.bDown), st.gate, n)
}

// launch queues kernel name unless the pass has failed already; a
// failure names the kernel and stops the pass.
func (st *deviceStack) launch(name string, grid, block hip.Dim3, shared int) {
	if st.err != nil {
		return
	}
	if err := st.s.Launch(st.fn[name], grid, block, shared, &st.args); err != nil {
		st.err = errDevice(name, err)
	}
}

// queueNamed is launch as a launcher: the pass's error so far.
func (st *deviceStack) queueNamed(name string, grid, block hip.Dim3) error {
	st.launch(name, grid, block, 0)
	return st.err
}

// embed expands the pass's n token rows of token_embd into x.
func (st *deviceStack) embed(n int) {
	e := st.m.hp.nEmbd
	dt, _ := deviceTypeOf(st.embd.typ)
	st.args.Reset()
	st.args.Ptr(st.embd.b, 0).Ptr(st.tok, 0).Ptr(st.x, 0).I32(int32(e))
	st.launch(dt.rows, hip.Dim3{X: (e + 255) / 256, Y: n}, hip.Dim3{X: 256}, 0)
}

// rmsNorm normalizes rows rows of n floats of in into out with w (nothing
// for an absent w: the optional head norms).
func (st *deviceStack) rmsNorm(out, in, w hip.Buffer, rows, n int) {
	if w.Len() == 0 {
		return
	}
	st.args.Reset()
	st.args.Ptr(in, 0).Ptr(w, 0).Ptr(out, 0).I32(int32(n)).F32(st.m.hp.eps)
	st.launch("rms_norm_f32", hip.Dim3{X: rows}, hip.Dim3{X: 256}, 0)
}

// linear computes out = W·in (+ bias) for n rows of in.
func (st *deviceStack) linear(out hip.Buffer, w devMatrix, bias, in hip.Buffer, n int) {
	if st.err != nil {
		return
	}
	if err := st.prod.product(w, in, st.xq, out, n); err != nil {
		if st.err == nil {
			st.err = err // a vendor BLAS call's (a launch's is st.err already)
		}
		return
	}
	if bias.Len() == 0 {
		return
	}
	a := &st.args
	a.Reset()
	a.Ptr(out, 0).Ptr(bias, 0).I32(int32(w.rows))
	st.launch("add_rows_f32", hip.Dim3{X: (w.rows + 255) / 256, Y: n}, hip.Dim3{X: 256}, 0)
}

// rope rotates the first n_rot dims of each of heads heads of n tokens.
func (st *deviceStack) rope(x hip.Buffer, n, heads int) {
	half := st.m.hp.nRot / 2
	if half == 0 {
		return
	}
	neox := int32(0)
	if st.mode == ropeNeox {
		neox = 1
	}
	st.args.Reset()
	st.args.Ptr(x, 0).Ptr(st.cos, 0).Ptr(st.sin, 0).I32(int32(heads)).I32(int32(st.m.hp.headDim)).I32(int32(half)).I32(neox)
	st.launch("rope_f32", hip.Dim3{X: n, Y: heads}, hip.Dim3{X: min(half, 256)}, 0)
}

// store writes n tokens' rows of kv heads into cache at pos0.
func (st *deviceStack) store(src, cache hip.Buffer, n, kv, pos0 int) {
	hd, capacity := st.m.hp.headDim, st.m.kv.cap
	st.args.Reset()
	st.args.Ptr(src, 0).Ptr(cache, 0).I32(int32(kv)).I32(int32(hd)).I32(int32(capacity)).I32(int32(pos0))
	grid, block := hip.Dim3{X: (hd + 255) / 256, Y: kv, Z: n}, hip.Dim3{X: 256}
	if st.m.opt.KVType == kernels.Q8_0 { // one thread per block of 32
		grid, block = hip.Dim3{X: (hd/32 + 63) / 64, Y: kv, Z: n}, hip.Dim3{X: 64}
	}
	st.launch("kv_store_"+st.kv, grid, block, 0)
}

// attention attends p's n queries of heads heads over the cached keys k,
// v (FlashPrefill's kept blocks in a prefill pass that runs it); a q8_0
// cache takes the queries quantized to Q8_0 (into xq), as the CPU's K·Q
// converts them to the cache type.
func (st *deviceStack) attention(p *pass, k, v hip.Buffer, n, heads, kv int) {
	hd, pos0 := st.m.hp.headDim, p.pos0
	q := st.q
	if st.m.opt.KVType == kernels.Q8_0 {
		nb := n * heads * hd / 32
		st.args.Reset()
		st.args.Ptr(st.q, 0).Ptr(st.xq, 0).U64(uint64(nb))
		st.launch("quantize_q8_0", hip.Dim3{X: (nb + 255) / 256}, hip.Dim3{X: 256}, 0)
		q = st.xq
	}
	if st.flashPrefillOn(p) {
		st.sparseAttention(p, q, k, v, n, heads, kv)
		return
	}
	g, ok := st.attnLaunch(n, heads)
	if !ok {
		return
	}
	st.args.Reset()
	st.args.Ptr(q, 0).Ptr(k, 0).Ptr(v, 0).Ptr(st.att, 0).I32(int32(n)).I32(int32(heads)).I32(int32(kv)).I32(int32(hd)).
		I32(int32(st.m.kv.cap)).I32(int32(pos0)).F32(attnScale(hd)).I32(int32(g.KeyTile)).I32(int32(g.KeyStride))
	st.launchGeom("attn_"+st.kv, g.Launch)
}

// attnLaunch is attention.cu's geometry for n tokens of heads heads over
// the stack's cache (gpu.Attention); false with st.err set when the head
// dim does not fit (canRunStack refuses such models first).
func (st *deviceStack) attnLaunch(n, heads int) (gpu.AttnLaunch, bool) {
	hd := st.m.hp.headDim
	rb, qrb := st.m.opt.KVType.RowBytes(hd), 4*hd
	if st.m.opt.KVType == kernels.Q8_0 {
		qrb = rb // the queries as Q8_0 blocks
	}
	g, err := gpu.Attention(n, heads, hd, rb, qrb, st.d.Warp)
	if err != nil && st.err == nil {
		st.err = errDevice("attention", err)
	}
	return g, err == nil
}

// launchGeom is launch with a geometry of kernels/gpu/launch.go.
func (st *deviceStack) launchGeom(name string, l gpu.Launch) {
	st.launch(name, hip.Dim3(l.Grid), hip.Dim3(l.Block), l.Shared)
}

// add adds n floats of y into x.
func (st *deviceStack) add(x, y hip.Buffer, n int) {
	st.args.Reset()
	st.args.Ptr(x, 0).Ptr(y, 0).U64(uint64(n))
	st.launch("add_f32", hip.Dim3{X: (n + 255) / 256}, hip.Dim3{X: 256}, 0)
}

// swiglu sets g = silu(g)·u over n floats.
func (st *deviceStack) swiglu(g, u hip.Buffer, n int) {
	st.args.Reset()
	st.args.Ptr(g, 0).Ptr(u, 0).U64(uint64(n))
	st.launch("swiglu_f32", hip.Dim3{X: (n + 255) / 256}, hip.Dim3{X: 256}, 0)
}
