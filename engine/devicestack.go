package engine

// This file owns the layer stack on a GPU: every block weight uploaded
// once as stored (any type of the device table, devicetypes.go), the KV
// cache on the device (f32, f16, bf16 or q8_0) and the hybrids' recurrent
// states beside it, and each pass run there from the token embedding
// (embed.cu; for a token_embd type outside the table the CPU embeds and
// the rows go up) to the output norm: a pass's token ids go up, its
// output-normed rows come back (hidden-sized, never vocabulary-sized) and
// the head (devicehead.go) takes them up again. The blocks are the
// architectures' own forward (block.go, qwen35.go) over devOps
// (deviceops.go): what they hand their ops is what is uploaded here
// (stackWalk), so no block is described twice. FlashPrefill's prefill
// attention runs there too (deviceflashprefill.go). Any model this cannot
// run (a weight type or KV cache type outside the table) keeps its layers
// on the CPU.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"plexbench/hip"
	"plexbench/kernels"
	"plexbench/kernels/gpu"
)

// devMatrix is a weight on the device.
type devMatrix struct {
	typ        kernels.Type
	rows, cols int
	b          hip.Buffer
}

// deviceStack runs a layer stack's passes on the device.
type deviceStack struct {
	m     *Model
	d     *hip.Device
	s     *hip.Stream
	mods  []*hip.Module
	fn    map[string]*hip.Function
	mode  ropeMode
	kv    string       // the KV cache type's name: kv_store_<kv>, attn_<kv>
	bufs  []hip.Buffer // everything allocated, for close
	args  hip.Args
	err   error        // the pass's first failed launch or upload (launch, send)
	queue launcher     // st.queueNamed, bound once
	prod  productQueue // the products: st.queue, and the vendor BLAS when loaded

	// The pass's activations, as pass has them (row t is token t).
	x, xn, tmp   hip.Buffer // (ub, n_embd) residual stream; a sub-block's normed input; its output
	q, att       hip.Buffer // (ub, n_head·hd) queries; attention output, heads concatenated
	k, v         hip.Buffer // (ub, n_head_kv·hd)
	gate, up     hip.Buffer // (ub, n_ff)
	cos, sin     hip.Buffer // (ub, n_rot/2) the RoPE table of the pass's positions
	xq           hip.Buffer // (ub, the widest product's quantized row) activations quantized for a product; a q8_0 cache's queries
	tok, outNorm hip.Buffer // (ub) int32 the pass's token ids; (n_embd) the output norm's weight
	embd         devMatrix  // (n_embd, n_vocab) token_embd; zero when the CPU embeds
	fp           devFlashPrefill
	traffic      deviceTraffic // the weight-traffic count (devicetraffic.go)

	p      *pass                         // the pass running (devOps's)
	ops    []string                      // what runs on the device, for the report
	mats   map[*kernels.Matrix]devMatrix // the blocks' matrices, by the host matrix each was uploaded from
	vecs   map[vecKey]hip.Buffer         // their norms, biases and GDN vectors, likewise
	kc, vc []hip.Buffer                  // by layer: an attention layer's K and V caches, (nkv, cap, hd) each
	conv   []hip.Buffer                  // by layer: a GDN layer's conv state, (d_conv−1, conv_dim) oldest row first
	ssm    []hip.Buffer                  // by layer: a GDN layer's delta-rule state, (H_v, d_k, d_v)
	hyb    devHybridScratch              // the hybrids' pass buffers (devicehybrid.go)
}

// deviceStackOps are the ops a device stack runs.
var deviceStackOps = []string{"attention", "matmul", "rmsnorm", "rope", "swiglu", "kv_store", "add"}

// embedsOnDevice reports whether m's token embedding runs on the device.
func embedsOnDevice(m *Model) bool { return onDevice(m.tokEmbd.Type) }

// deviceKVTypes are the KV cache types kvstore.cu and attention.cu have.
var deviceKVTypes = []kernels.Type{kernels.F32, kernels.F16, kernels.BF16, kernels.Q8_0}

// canRunStack says why m's layers cannot run on the device ("" when they
// can); ws are the matrices they multiply by (stackWalk's).
func canRunStack(m *Model, ws []*kernels.Matrix) string {
	switch {
	case !slices.Contains(deviceKVTypes, m.opt.KVType):
		return "a " + strings.ToLower(m.opt.KVType.String()) + " KV cache"
	case m.hp.headDim > gpu.AttnMaxHeadDim:
		return fmt.Sprintf("a head dim of %d (attention.cu takes at most %d)", m.hp.headDim, gpu.AttnMaxHeadDim)
	}
	for _, w := range ws {
		if !onDevice(w.Type) {
			return kernels.MatMulOp(w.Type) + " weights"
		}
	}
	return ""
}

// newDeviceStack uploads m's blocks to d and allocates a pass's buffers;
// blas (nil: none) takes the F16/BF16 products of prefill passes.
func newDeviceStack(m *Model, d *hip.Device, blas *hip.BLAS) (_ *deviceStack, err error) {
	w := walkStack(m)
	mode, _ := archRope(m.hp.arch) // the arch was checked at load
	st := &deviceStack{m: m, d: d, mode: mode, kv: strings.ToLower(m.opt.KVType.String())}
	st.queue = st.queueNamed
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	if st.s, err = d.NewStream(); err != nil {
		return nil, err
	}
	st.prod = productQueue{launch: st.queue, args: &st.args, warp: d.Warp, blas: blas, stream: st.s}
	if err := st.compile(stackKernels); err != nil {
		return nil, err
	}
	if err := st.allocPass(w.mats); err != nil {
		return nil, err
	}
	if err := st.initFlashPrefill(); err != nil {
		return nil, err
	}
	if err := st.uploadStack(w); err != nil {
		return nil, err
	}
	if st.outNorm, err = st.vector(m.outNorm); err != nil {
		return nil, err
	}
	if embedsOnDevice(m) {
		if st.embd, err = st.matrix(m.tokEmbd); err != nil {
			return nil, err
		}
	}
	return st, st.s.Sync()
}

// stackKernels are the kernels a device stack launches besides the weight
// types' (deviceTypeEntries), by file.
var stackKernels = map[string][]string{
	"rmsnorm.cu": {"rms_norm_f32"}, "add.cu": {"add_f32", "add_rows_f32"}, "rope.cu": {"rope_f32"},
	"kvstore.cu":   {"kv_store_f32", "kv_store_f16", "kv_store_bf16", "kv_store_q8_0"},
	"attention.cu": {"attn_f32", "attn_f16", "attn_bf16", "attn_q8_0"}, "swiglu.cu": {"swiglu_f32"},
}

// compile builds the entry points of files (file → entries) into st.fn,
// and on the first call every weight type's, so that any matrix of the
// table multiplies (a q8_0 cache's queries take quantize_q8_0).
func (st *deviceStack) compile(files map[string][]string) error {
	var names []string
	if st.fn == nil {
		st.fn, names = map[string]*hip.Function{}, deviceTypeEntries()
	}
	for _, file := range slices.Sorted(maps.Keys(files)) {
		names = append(names, files[file]...)
	}
	fn, mods, err := compileEntries(st.d, names)
	st.mods = append(st.mods, mods...)
	maps.Copy(st.fn, fn)
	return err
}

// alloc allocates n bytes, remembered for close.
func (st *deviceStack) alloc(n int) (hip.Buffer, error) {
	b, err := st.d.Alloc(max(n, 4))
	if err == nil {
		st.bufs = append(st.bufs, b)
	}
	return b, err
}

// allocPass allocates one pass's activations (as newPass sizes them) and
// the quantized activations of the largest product of ws (or of the
// queries, for a q8_0 cache).
func (st *deviceStack) allocPass(ws []*kernels.Matrix) error {
	p, ub := st.m.p, st.m.ub
	for _, b := range []struct {
		b *hip.Buffer
		n int
	}{
		{&st.x, len(p.x)}, {&st.xn, len(p.xn)}, {&st.tmp, len(p.tmp)}, {&st.q, len(p.q)}, {&st.k, len(p.k)},
		{&st.v, len(p.v)}, {&st.att, len(p.att)}, {&st.gate, len(p.gate)}, {&st.up, len(p.up)},
		{&st.cos, len(p.cos)}, {&st.sin, len(p.sin)}, {&st.tok, ub},
	} {
		var err error
		if *b.b, err = st.alloc(4 * b.n); err != nil {
			return err
		}
	}
	xq := 0
	if st.m.opt.KVType == kernels.Q8_0 {
		xq = kernels.Q8_0.RowBytes(len(p.q) / ub)
	}
	for _, w := range ws {
		if w != nil {
			xq = max(xq, actBytes(w.Type, w.Cols, st.prod.blas != nil))
		}
	}
	var err error
	st.xq, err = st.alloc(ub * xq)
	return err
}

// vector uploads v ("" Buffer for nil).
func (st *deviceStack) vector(v []float32) (hip.Buffer, error) {
	if v == nil {
		return hip.Buffer{}, nil
	}
	b, err := st.alloc(4 * len(v))
	if err != nil {
		return b, err
	}
	return b, st.s.Upload(b, 0, kernels.BytesOf(v))
}

// matrix uploads w as stored.
func (st *deviceStack) matrix(w *kernels.Matrix) (devMatrix, error) {
	b, err := st.alloc(len(w.Data))
	if err != nil {
		return devMatrix{}, err
	}
	return devMatrix{typ: w.Type, rows: w.Rows, cols: w.Cols, b: b}, st.s.Upload(b, 0, w.Data)
}

// vecKey names a host vector by its first element and length.
type vecKey struct {
	p *float32
	n int
}

// uploadStack puts everything w found on the device: the matrices (marked
// as weights for the traffic count), the vectors, an attention layer's KV
// cache, a GDN layer's states; then compiles the ops beyond the dense
// block's and allocates their pass buffers.
func (st *deviceStack) uploadStack(w *stackWalk) error {
	st.mats, st.vecs = make(map[*kernels.Matrix]devMatrix, len(w.mats)), make(map[vecKey]hip.Buffer, len(w.vecs))
	for _, m := range w.mats {
		if _, ok := st.mats[m]; ok {
			continue
		}
		d, err := st.matrix(m)
		if err == nil {
			err = st.markWeights(d)
		}
		if err != nil {
			return err
		}
		st.mats[m] = d
	}
	for _, v := range w.vecs {
		b, err := st.vector(v)
		if err != nil {
			return err
		}
		st.vecs[vecKey{&v[0], len(v)}] = b
	}
	nl := st.m.hp.nLayer
	st.kc, st.vc, st.conv, st.ssm = make([]hip.Buffer, nl), make([]hip.Buffer, nl), make([]hip.Buffer, nl), make([]hip.Buffer, nl)
	for _, l := range w.attnLayers {
		var err error
		if st.kc[l], st.vc[l], err = st.kvCache(l); err != nil {
			return err
		}
	}
	sh := st.m.hp.ssm
	for _, l := range w.gdnLayers {
		var err error
		if st.conv[l], err = st.alloc(4 * (sh.dConv - 1) * sh.convDim()); err != nil {
			return err
		}
		if st.ssm[l], err = st.alloc(4 * sh.hv * sh.dk * sh.dv); err != nil {
			return err
		}
	}
	st.ops = append(slices.Clone(deviceStackOps), w.extra()...)
	for _, op := range w.extra() {
		if err := st.compile(opKernels[op]); err != nil {
			return err
		}
	}
	return st.hyb.alloc(st, w)
}

// mat is w's device copy; the stack's forward hands its ops the same
// weights on every pass, so one missing is a bug.
func (st *deviceStack) mat(w *kernels.Matrix) devMatrix {
	d, ok := st.mats[w]
	if !ok {
		panic("engine: a weight the device stack was never given (a forward that hands its ops different weights per pass)")
	}
	return d
}

// vec is v's device copy; a zero Buffer for nil (an absent bias).
func (st *deviceStack) vec(v []float32) hip.Buffer {
	if v == nil {
		return hip.Buffer{}
	}
	b, ok := st.vecs[vecKey{&v[0], len(v)}]
	if !ok {
		panic("engine: a vector the device stack was never given")
	}
	return b
}

// stackWalk is an ops that runs nothing: walking a layer stack's forward
// with it lists what the stack hands its ops (every weight, the layers
// that attend or recur, the ops beyond the dense block's), so that the
// device uploads exactly what its passes use.
type stackWalk struct {
	mats       []*kernels.Matrix
	vecs       [][]float32
	attnLayers []int // the layers with a KV cache
	gdnLayers  []int // the layers with a recurrent state
	gatedQ     int   // the most heads of a gated attention layer; 0: none
	hasMoE     bool
}

// walkStack walks m's layer stack.
func walkStack(m *Model) *stackWalk {
	w := &stackWalk{}
	m.layers.forward(w)
	return w
}

// extra are the ops w's stack runs beyond the dense block's.
func (w *stackWalk) extra() []string {
	var ops []string
	if len(w.gdnLayers) > 0 {
		ops = append(ops, "gdn")
	}
	if w.gatedQ > 0 {
		ops = append(ops, "attn_gate")
	}
	if w.hasMoE {
		ops = append(ops, "moe")
	}
	return ops
}

func (w *stackWalk) mat(ms ...*kernels.Matrix) {
	for _, m := range ms {
		if m != nil {
			w.mats = append(w.mats, m)
		}
	}
}

func (w *stackWalk) vec(vs ...[]float32) {
	for _, v := range vs {
		if len(v) > 0 {
			w.vecs = append(w.vecs, v)
		}
	}
}

func (w *stackWalk) rmsNorm(_, _ act, v []float32)                       { w.vec(v) }
func (w *stackWalk) headNorm(_ act, _ int, v []float32)                  { w.vec(v) }
func (w *stackWalk) linear(_ act, m *kernels.Matrix, b []float32, _ act) { w.mat(m); w.vec(b) }
func (w *stackWalk) gatedQuery(m *kernels.Matrix, heads int) {
	w.mat(m)
	w.gatedQ = max(w.gatedQ, heads)
}
func (w *stackWalk) rope(act, int)         {}
func (w *stackWalk) attention(l, _, _ int) { w.attnLayers = append(w.attnLayers, l) }
func (w *stackWalk) outputGate(int)        {}
func (w *stackWalk) add(_, _ act)          {}

func (w *stackWalk) swiglu(_, _ act, f *denseFFN) {
	w.mat(f.gate, f.up, f.down)
	w.vec(f.bGate, f.bUp, f.bDown)
}

func (w *stackWalk) moe(_, _ act, f *moeFFN) {
	w.hasMoE = true
	w.mat(f.router, f.shGate, f.shUp, f.shDown, f.shGateInp)
	w.mat(f.gate...)
	w.mat(f.up...)
	w.mat(f.down...)
}

func (w *stackWalk) gdn(l int, g *gdnLayer) {
	w.gdnLayers = append(w.gdnLayers, l)
	w.mat(g.qkv, g.z, g.beta, g.alpha, g.ba, g.out)
	w.vec(g.conv, g.dt, g.a, g.norm)
}

// kvCache allocates layer l's K and V caches, (nkv, cap, hd) each.
func (st *deviceStack) kvCache(l int) (k, v hip.Buffer, err error) {
	kv := st.m.kv
	n := st.m.hp.nHeadKV[l] * kv.cap * kv.rb
	if k, err = st.alloc(n); err != nil {
		return k, v, err
	}
	v, err = st.alloc(n)
	return k, v, err
}

// close frees the stack's device memory and modules.
func (st *deviceStack) close() {
	for _, b := range st.bufs {
		st.d.Free(b)
	}
	st.bufs = nil
	for _, m := range st.mods {
		m.Unload()
	}
	st.mods = nil
	if st.s != nil {
		st.s.Destroy()
		st.s = nil
	}
}

// errDevice wraps a device failure with the op it happened in.
func errDevice(op string, err error) error { return fmt.Errorf("device %s: %w", op, err) }
